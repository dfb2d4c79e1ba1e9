/* Oracle of host task "scan": y[r][c] = x[r][0] + x[r][1] + ... + x[r][c] (inclusive prefix
 * sum of each row, torch.cumsum(x, dim=1)). The host variant of tasks/cuda/scan.
 *
 * Input  x: f32 [512, 2048] (4 MiB)   Output y: f32 [512, 2048] (4 MiB)
 * Tolerance: atol 1e-3, rtol 1e-4. Any summation order passes (sequential, blocked, tree): a
 * sequential f32 running sum of values in [-1, 1] drifts by ~1e-5 over 2048 terms, and running
 * sums cross 0, where only atol helps. The uniform [0, 10) set has running sums up to 2e4; the
 * integers set has exact answers.
 *
 * Each row added sequentially in double, each prefix rounded once. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || kb_tensor_numel(&out[0]) != kb_tensor_numel(&in[0]))
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0.0;
    for (int64_t c = 0; c < cols; c++) {
      acc += (double)x[r * cols + c];
      y[r * cols + c] = (float)acc;
    }
  }
  return 0;
}
