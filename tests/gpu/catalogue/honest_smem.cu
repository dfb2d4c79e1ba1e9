// catalogue: expect ok -
// catalogue: source kernelbrain (control: an honest candidate must pass)
// catalogue: tier full
// Honest: one block per row, strided partial sums, a shared-memory tree reduction.
#include <cuda_runtime.h>

#include "kb_kernel.h"

#define BLOCK 256

__global__ void __launch_bounds__(BLOCK)
rowsum_smem(const float *__restrict__ x, float *__restrict__ y, int64_t cols) {
  __shared__ float part[BLOCK];
  const float *row = x + (int64_t)blockIdx.x * cols;
  float acc = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK)
    acc += row[c];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    y[blockIdx.x] = part[0];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_smem<<<(unsigned)rows, BLOCK, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, cols);
  return cudaGetLastError() != cudaSuccess;
}
