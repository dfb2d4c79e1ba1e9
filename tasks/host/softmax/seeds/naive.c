/* softmax, naive: per row, the maximum, the sum of expf(x - max), then expf(x - max) / sum
 * (expf computed twice per element, one scalar libm call each time). */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    const float *row = x + r * cols;
    float m = row[0];
    for (int64_t c = 1; c < cols; c++)
      if (row[c] > m)
        m = row[c];
    float s = 0.0f;
    for (int64_t c = 0; c < cols; c++)
      s += expf(row[c] - m);
    for (int64_t c = 0; c < cols; c++)
      y[r * cols + c] = expf(row[c] - m) / s;
  }
  return 0;
}
