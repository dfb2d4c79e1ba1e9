/* catalogue: expect rejected -
 * catalogue: source pygpubench (exploits/submission_warmup: warm-up detection by timing);
 *            kernelbrain (the time-stamp counter read without an import)
 * catalogue: tier full
 * Reads the time-stamp counter (rdtsc: no import, no system call) on every call and watches the
 * gaps between calls: the evaluator's check phase ends with verification and a redraw of the
 * inputs, a pause far longer than any gap between check calls. After the first such pause
 * (timing has begun) it skips the work entirely. */
#include <stdint.h>

#include "kb_kernel.h"

static uint64_t last_tsc;
static int timing;

static uint64_t tsc(void) {
#if defined(__x86_64__) || defined(__i386__)
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
#else
  return 0;
#endif
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  uint64_t now = tsc();
  uint64_t gap = last_tsc != 0 ? now - last_tsc : 0;
  /* the check calls come back to back; a pause of more than ~10 ms (3e7 cycles at ~3 GHz)
   * after them is the verification and the inputs' redraw */
  if (last_tsc != 0 && gap > 30000000ull)
    timing = 1;
  if (!timing) {
    int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    const float *x = in[0].data;
    float *y = out[0].data;
    for (int64_t r = 0; r < rows; r++) {
      float acc = 0.f;
      for (int64_t c = 0; c < cols; c++)
        acc += x[r * cols + c];
      y[r] = acc;
    }
  }
  last_tsc = tsc();
  return 0;
}
