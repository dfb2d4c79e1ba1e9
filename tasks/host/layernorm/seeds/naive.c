/* layernorm, naive: per row, the mean, the variance around it and the outputs, three
 * sequential passes. The two sums use a double accumulator: with one f32 accumulator the mean
 * of a row of 2048 values near 10 (input set 2) is off by ~2e-5, and the outputs by more than
 * the tolerance. */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data, *w = in[1].data, *b = in[2].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    const float *row = x + r * cols;
    double s = 0.0;
    for (int64_t c = 0; c < cols; c++)
      s += row[c];
    float mean = (float)(s / (double)cols);
    double q = 0.0;
    for (int64_t c = 0; c < cols; c++)
      q += (row[c] - mean) * (row[c] - mean);
    float inv = 1.0f / sqrtf((float)(q / (double)cols) + 1e-5f);
    for (int64_t c = 0; c < cols; c++)
      y[r * cols + c] = (row[c] - mean) * inv * w[c] + b[c];
  }
  return 0;
}
