/* Oracle of task "scan": y[r][c] = x[r][0] + x[r][1] + ... + x[r][c] (inclusive prefix sum of
 * each row, torch.cumsum(x, dim=1)).
 *
 * Input  x: f32 [65536, 4096] (1 GiB)   Output y: f32 [65536, 4096] (1 GiB)
 * Tolerance: atol 1e-3, rtol 1e-4. Any summation order passes (sequential, tree or
 * decoupled look-back): a sequential f32 running sum of values in [-1, 1] drifts by ~1e-4 over
 * 4096 terms, and running sums cross 0, where only atol helps. The uniform [0, 10) set has
 * running sums up to 4e4; the integers set has exact answers.
 *
 * One thread per row, adding sequentially in double and rounding each prefix once. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void scan_oracle(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  double acc = 0.0;
  for (int64_t c = 0; c < cols; c++) {
    acc += (double)x[r * cols + c];
    y[r * cols + c] = (float)acc;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || kb_tensor_numel(&out[0]) != kb_tensor_numel(&in[0]))
    return 1;
  int64_t rows = in[0].shape[0];
  scan_oracle<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, in[0].shape[1]);
  return cudaGetLastError() != cudaSuccess;
}
