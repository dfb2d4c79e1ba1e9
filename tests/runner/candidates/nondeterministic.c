/* Nondeterministic within the tolerance: the row sums (in double, rounded once) plus 0.8 of
 * tasks/host/row_sum's tolerance (atol 1e-3, rtol 1e-4) on its first call and minus that on
 * every later one, as an order-dependent reduction or a read of uninitialised memory may drift.
 * Every call is within the tolerance of the reference; two calls on the same inputs are not
 * within it of each other: `not deterministic`. For tasks/host/row_sum. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  static int calls;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2)
    return 1;
  double sign = calls++ == 0 ? 1.0 : -1.0;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *sums = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0.0;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    sums[r] = (float)(acc + sign * 0.8 * (1e-3 + 1e-4 * (acc < 0 ? -acc : acc)));
  }
  return 0;
}
