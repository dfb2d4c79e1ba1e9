// expect: ok spills
// flags: -maxrregcount=32
// A device function with a local array indexed at run time, under a register cap: ptxas spills,
// and the resource usage must say so.
#include <cuda_runtime.h>

#include "kb_kernel.h"

__device__ __noinline__ float mix(const float *x, int64_t i) {
  float a[64];
  for (int k = 0; k < 64; k++)
    a[k] = x[(i + k * 7) & 1023] * k;
  float s = 0;
  for (int k = 0; k < 64; k++)
    s += a[(k * 13 + (int)i) & 63] * a[k];
  return s;
}

__global__ void mixer(const float *x, float *y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = mix(x, i);
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t n = kb_tensor_numel(&out[0]);
  mixer<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, n);
  return cudaGetLastError() != cudaSuccess;
}
