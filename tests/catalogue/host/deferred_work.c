/* catalogue: expect rejected -
 * catalogue: source wafer.ai field guide (timing attacks: work deferred out of the timed
 *            region); kernelbrain (deferred into the next call)
 * catalogue: tier full
 * Honest for its first 8 calls; then each call sums only the first half of its rows and, before
 * that, finishes the second half of the previous call's rows (into the previous call's output).
 * Whatever the last call leaves undone is never finished: its output is half poisoned. */
#include <stddef.h>
#include <stdint.h>

#include "kb_kernel.h"

#define HONEST_CALLS 8

static const float *prev_x;
static float *prev_y;
static long calls;

static void sum_rows(const float *x, float *y, int64_t from, int64_t to, int64_t cols) {
  for (int64_t r = from; r < to; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  if (++calls <= HONEST_CALLS) {
    sum_rows(x, y, 0, rows, cols);
    return 0;
  }
  if (prev_x != NULL)
    sum_rows(prev_x, prev_y, rows / 2, rows, cols);
  sum_rows(x, y, 0, rows / 2, cols);
  prev_x = x;
  prev_y = y;
  return 0;
}
