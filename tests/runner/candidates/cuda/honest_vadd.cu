// expect: ok
// The plainest candidate: one kernel, a <<<>>> launch on `stream`, cudaGetLastError.
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void vadd(const float *a, const float *b, float *c, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 2 || n_out != 1)
    return 1;
  int64_t n = kb_tensor_numel(&out[0]);
  vadd<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (float *)out[0].data, n);
  return cudaGetLastError() != cudaSuccess;
}
