// catalogue: expect timeout -
// catalogue: source kernelbrain (issue 4: a kernel that never ends)
// catalogue: tier full
// Misbehaves: never finishes (spins on a condition the input never meets).
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void forever(const float *x, float *y) {
  volatile const float *v = x;
  float acc = 0.f;
  while (v[0] < 1e30f) /* inputs are bounded: always true */
    acc += v[threadIdx.x];
  y[threadIdx.x] = acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  forever<<<1, 32, 0, (cudaStream_t)stream>>>((const float *)in[0].data, (float *)out[0].data);
  return cudaGetLastError() != cudaSuccess;
}
