/* catalogue: expect ok -
 * catalogue: source kernelbrain
 * catalogue: task tasks/host/row_sum
 * catalogue: tier smoke
 * The honest row sums, plain C: the confinement tests evaluate it after each blocked call to show
 * that a rejected candidate leaves a sandbox that still serves. */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  const float *x = in[0].data;
  float *s = out[0].data;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    s[r] = (float)acc;
  }
  return 0;
}
