/* Oracle of task "matmul_f32": c = a b, c[i][j] = sum_p a[i][p] * b[p][j].
 *
 * Inputs  a: f32 [4096, 4096], b: f32 [4096, 4096] (64 MiB each)   Output c: f32 [4096, 4096]
 * 137 GFLOP per call.
 * Tolerance: atol 2e-3, rtol 1e-4. Any f32 accumulation order passes: over K = 4096 a
 * sequential f32 dot product of normal values (|c| ~ 64) is typically off by ~1e-4, and entries
 * near 0 need the absolute slack. TF32 tensor cores (10-bit mantissa) are off by ~1e-2 and do
 * not pass: this task is true f32. The integers set has an exact answer.
 *
 * One thread per output element, accumulating in double, rounded once. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void matmul_oracle(const float *a, const float *b, float *c, int64_t m, int64_t n,
                              int64_t k) {
  int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n)
    return;
  double acc = 0.0;
  for (int64_t p = 0; p < k; p++)
    acc += (double)a[i * k + p] * (double)b[p * n + j];
  c[i * n + j] = (float)acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 || out[0].ndim != 2 ||
      in[0].dtype != KB_F32 || in[1].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  if (in[1].shape[0] != k || out[0].shape[0] != m || out[0].shape[1] != n)
    return 1;
  dim3 block(32, 8);
  dim3 grid((unsigned)((n + 31) / 32), (unsigned)((m + 7) / 8));
  matmul_oracle<<<grid, block, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (float *)out[0].data, m, n, k);
  return cudaGetLastError() != cudaSuccess;
}
