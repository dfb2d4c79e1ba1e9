/* Oracle of task "row_sum": sums[r] = x[r][0] + x[r][1] + ... + x[r][cols-1].
 *
 * Input  x: f32 [65536, 4096] (1 GiB)   Output sums: f32 [65536]
 * Tolerance: atol 1e-3, rtol 1e-4. Any summation order is accepted: a sequential f32 sum of 4096
 * values in [-1, 1] is typically off by ~1e-4 from the exact sum, and rows of mixed signs can
 * sum to nearly 0, where only atol helps. The uniform [0, 100) set makes partial sums reach 4e5
 * (f32 ulp 0.03); the integers set has an exact answer.
 *
 * One block of 256 threads per row; each thread adds its strided elements in double, then a
 * plain shared-memory tree adds the 256 partial sums, in double. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

#define THREADS 256

__global__ void row_sum_oracle(const float *x, float *sums, int64_t cols) {
  __shared__ double part[THREADS];
  const float *row = x + (int64_t)blockIdx.x * cols;
  double acc = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += THREADS)
    acc += (double)row[c];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    sums[blockIdx.x] = (float)part[0];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || kb_tensor_numel(&out[0]) != in[0].shape[0])
    return 1;
  row_sum_oracle<<<(unsigned)in[0].shape[0], THREADS, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, in[0].shape[1]);
  return cudaGetLastError() != cudaSuccess;
}
