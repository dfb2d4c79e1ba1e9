/* Oracle of host task "layernorm": for each row r of x,
 *   mean_r = sum_c x[r][c] / cols,  var_r = sum_c (x[r][c] - mean_r)^2 / cols  (biased, as in
 *   torch.nn.LayerNorm),  y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + 1e-5) * weight[c] + bias[c]
 * The host variant of tasks/cuda/layernorm.
 *
 * Inputs  x: f32 [512, 2048] (4 MiB), weight: f32 [2048], bias: f32 [2048]
 * Output  y: f32 [512, 2048] (4 MiB)
 * Tolerance: atol 1e-4, rtol 1e-4 (f32 default). The set "normal, mean 10, stddev 1" has a mean
 * 10 times the spread, where var = E[x^2] - E[x]^2 in f32 loses digits; a two-pass or Welford
 * variance passes. weight and bias are drawn from each set like x.
 *
 * Mean, then the variance around it (two passes), in double; outputs rounded once. */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_F32 || in[2].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      kb_tensor_numel(&in[1]) != in[0].shape[1] || kb_tensor_numel(&in[2]) != in[0].shape[1] ||
      kb_tensor_numel(&out[0]) != kb_tensor_numel(&in[0]))
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data, *w = in[1].data, *b = in[2].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    const float *row = x + r * cols;
    double s = 0.0;
    for (int64_t c = 0; c < cols; c++)
      s += (double)row[c];
    double mean = s / (double)cols;
    double q = 0.0;
    for (int64_t c = 0; c < cols; c++) {
      double d = (double)row[c] - mean;
      q += d * d;
    }
    double inv = 1.0 / sqrt(q / (double)cols + 1e-5);
    for (int64_t c = 0; c < cols; c++)
      y[r * cols + c] = (float)(((double)row[c] - mean) * inv * (double)w[c] + (double)b[c]);
  }
  return 0;
}
