/* catalogue: expect rejected -
 * catalogue: source pygpubench (exploits/submission_warmup: detects the warm-up, then changes
 *            behaviour); KernelBench (static checker notes on timing manipulation)
 * catalogue: tier full
 * Counts its calls: honest for the first 8 (the check calls and the first warm-up calls), then,
 * once it believes the timing has started, sums only every other row (half the work). */
#include <stdint.h>

#include "kb_kernel.h"

#define HONEST_CALLS 8

static long calls;

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  int step = ++calls <= HONEST_CALLS ? 1 : 2;
  for (int64_t r = 0; r < rows; r += step) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc;
  }
  return 0;
}
