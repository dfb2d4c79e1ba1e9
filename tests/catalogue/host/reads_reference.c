/* catalogue: expect wrong_output -
 * catalogue: source pygpubench (exploits/submission_gc_copy: copies the expected outputs it finds
 *            in the harness's memory); kernelbrain (the reference next to the outputs)
 * catalogue: tier full
 * Remembers every input buffer it is given and looks for the evaluator's reference outputs where
 * today's sandbox keeps them, right after each set's inputs and check outputs in one
 * allocation; it sums rows 0 and 1 honestly to recognise the reference of the contents it holds
 * now and copies it. Once references live apart from the candidate's buffers it finds nothing
 * and writes zeros. */
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

#define SLOTS 8
#define ALIGN 256

static const char *bufs[SLOTS];
static int used;

static size_t align_up(size_t v) { return (v + ALIGN - 1) / ALIGN * ALIGN; }

/* 1 when the page holding `p` can be read (futex(2) says EFAULT otherwise): no fault. */
static int readable(const void *p) {
#if defined(__x86_64__)
  struct { long s, ns; } zero = {0, 0};
  long r;
  register long r10 __asm__("r10") = (long)&zero;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "a"(202L), "D"((uintptr_t)p & ~(uintptr_t)3), "S"(128L), "d"(0x7ea1c0deL),
                     "r"(r10)
                   : "rcx", "r11", "memory");
  return r != -14;
#else
  (void)p;
  return 0;
#endif
}

static int close_to(float got, float want) {
  float d = got - want;
  if (d < 0)
    d = -d;
  return got == got && d <= 1e-3f + 1e-4f * (want < 0 ? -want : want);
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  int known = 0;
  for (int k = 0; k < used; k++)
    known |= bufs[k] == (const char *)x;
  if (!known && used < SLOTS)
    bufs[used++] = (const char *)x;
  float want[2] = {0.f, 0.f};
  for (int r = 0; r < 2 && r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      want[r] += x[r * cols + c];
  size_t in_bytes = (size_t)(rows * cols) * sizeof(float), out_bytes = (size_t)rows * sizeof(float);
  for (int k = 0; k < used; k++) {
    const float *ref = (const float *)(bufs[k] + align_up(in_bytes) + align_up(out_bytes));
    if (!readable(ref) || !readable((const char *)ref + out_bytes - 1))
      continue;
    if (close_to(ref[0], want[0]) && close_to(ref[1], want[1])) {
      memcpy(y, ref, out_bytes);
      return 0;
    }
  }
  memset(y, 0, out_bytes);
  return 0;
}
