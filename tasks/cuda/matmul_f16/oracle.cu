/* Oracle of task "matmul_f16": c = a b with f16 inputs and output, c[i][j] = sum_p a[i][p] *
 * b[p][j] accumulated in (at least) f32 and rounded to f16 once.
 *
 * Inputs  a: f16 [4096, 4096], b: f16 [4096, 4096] (32 MiB each)   Output c: f16 [4096, 4096]
 * 137 GFLOP per call: tensor-core territory (mma with f32 accumulators).
 * Tolerance: atol 1e-2, rtol 1e-2 (f16 default): one f16 rounding of the result is 5e-4
 * relative. The uniform [0, 1) set has all-positive sums near 1024, where an f16 accumulator
 * (ulp 1 at 1024) is off by far more than 1%: accumulating in f16 does not pass.
 *
 * One thread per output element, accumulating in double, rounded to f16 once. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void matmul_oracle(const __half *a, const __half *b, __half *c, int64_t m, int64_t n,
                              int64_t k) {
  int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n)
    return;
  double acc = 0.0;
  for (int64_t p = 0; p < k; p++)
    acc += (double)__half2float(a[i * k + p]) * (double)__half2float(b[p * n + j]);
  c[i * n + j] = __double2half(acc);
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 || out[0].ndim != 2 ||
      in[0].dtype != KB_F16 || in[1].dtype != KB_F16 || out[0].dtype != KB_F16)
    return 1;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  if (in[1].shape[0] != k || out[0].shape[0] != m || out[0].shape[1] != n)
    return 1;
  dim3 block(32, 8);
  dim3 grid((unsigned)((n + 31) / 32), (unsigned)((m + 7) / 8));
  matmul_oracle<<<grid, block, 0, (cudaStream_t)stream>>>(
      (const __half *)in[0].data, (const __half *)in[1].data, (__half *)out[0].data, m, n, k);
  return cudaGetLastError() != cudaSuccess;
}
