// expect: ok
// Host-side C++: std::vector (operator new/delete, a throw helper), libm, assert; device printf
// for debugging (imports nothing on the host).
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

#include "kb_kernel.h"

__global__ void offset(const float *x, float *y, float add, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] + add;
  if (i == n)
    printf("thread %lld past the end\n", (long long)i);
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  std::vector<int64_t> dims(in[0].shape, in[0].shape + in[0].ndim);
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  assert(n > 0);
  float add = (float)(std::log2((double)n) + std::sqrt((double)n));
  offset<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, add, n);
  return cudaGetLastError() != cudaSuccess;
}
