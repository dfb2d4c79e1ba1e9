// expect: ok
// A template over the block size with a static shared-memory reduction (1024 bytes of shared
// memory per block: the resource usage must say so).
#include <cuda_runtime.h>
#include <float.h>

#include "kb_kernel.h"

template <int BLOCK>
__global__ void softmax_rows(const float *x, float *y, int64_t cols) {
  __shared__ float red[BLOCK];
  const float *row = x + blockIdx.x * cols;
  float *out = y + blockIdx.x * cols;
  float m = -FLT_MAX;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK)
    m = fmaxf(m, row[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK)
    sum += __expf(row[c] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  float inv = 1.f / red[0];
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK)
    out[c] = __expf(row[c] - m) * inv;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  softmax_rows<256><<<(unsigned)rows, 256, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, cols);
  return cudaGetLastError() != cudaSuccess;
}
