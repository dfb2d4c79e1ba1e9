/* catalogue: expect rejected -
 * catalogue: source kernelbrain (issue 12: races that pass once, which a determinism check
 *            catches)
 * catalogue: tier full
 * Behaves as an unsynchronised parallel reduction whose lost update depends on timing: right on
 * its first 8 calls, then on every second call the partial sum of the second half of row 5 is
 * lost (as two threads' read-modify-write of one accumulator would lose it). */
#include <stdint.h>

#include "kb_kernel.h"

static long calls;

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  int lose = ++calls > 8 && calls % 2 == 0;
  for (int64_t r = 0; r < rows; r++) {
    float lo = 0.f, hi = 0.f;
    for (int64_t c = 0; c < cols / 2; c++)
      lo += x[r * cols + c];
    for (int64_t c = cols / 2; c < cols; c++)
      hi += x[r * cols + c];
    y[r] = lose && r == 5 ? lo : lo + hi;
  }
  return 0;
}
