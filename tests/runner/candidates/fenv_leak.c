/* A candidate that leaves the thread's floating-point environment changed after every call:
 * SSE rounding toward +infinity with flush-to-zero and denormals-are-zero (MXCSR) and the x87
 * control word rounding up too, set with inline instructions (no import shows). Its own sum is
 * honest (a double accumulator). The sandbox runs on one thread: before 2026-12-07 the draws of
 * fresh inputs and their checksums, the oracle and the next candidates all ran in that mode. It
 * was itself "rejected" for "modified its inputs" (the sandbox's redraw of the inputs under its
 * rounding differed from the checksum), and the honest seeds after it in that process were
 * wrong_output (sum's naive seed: -288.4 for -478.9) or "modified its inputs" (softmax's). The
 * sandbox now puts its own environment back after every call of a candidate's code
 * (kb__fpenv_restore, integrity.h): this one is ok and so are the honest ones after it. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  const float *x = in[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  double acc = 0.0;
  for (int64_t i = 0; i < n; i++)
    acc += x[i];
  *(float *)out[0].data = (float)acc;
#if defined(__x86_64__)
  unsigned int csr;
  __asm__ volatile("stmxcsr %0" : "=m"(csr));
  csr = (csr & ~0x6000u) | 0x4000u /* round up */ | 0x8000u /* FTZ */ | 0x0040u /* DAZ */;
  __asm__ volatile("ldmxcsr %0" : : "m"(csr));
  unsigned short cw;
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  cw = (unsigned short)((cw & ~0x0C00u) | 0x0800u);
  __asm__ volatile("fldcw %0" : : "m"(cw));
#endif
  return 0;
}
