/* A candidate that leaves code of its own in the sandbox's process and hides it from the check
 * between candidates: it maps a page executable that no file backs (what a hook left in the
 * sandbox's writable data would jump to) high in the address space, and below it 5,000 one-page
 * mappings of alternating protection, which the kernel cannot merge. /proc/self/maps lists
 * mappings by address, and the check read at most 4,096 of them (and 1 MiB of the file): the
 * executable page came after the last one it read, and the evaluation was ok before 2026-12-07.
 * Now the check reads the whole file: rejected, "an executable mapping that no file backs". All
 * with inline system calls (no import). It sums the rows of row_sum honestly. */
#include <stdint.h>

#include "kb_kernel.h"

#define PADDING 5000
#define PAGE 4096L
#define LOW 0x100000000L      /* 4 GiB: below the sandbox's own image and libraries */
#define HIGH 0x7e0000000000L  /* below the libraries, above the padding */

#if defined(__x86_64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
  long r;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return r;
}

static void leave(void) {
  const long prot_r = 1, prot_rx = 5, priv_anon_fixed_noreplace = 0x02 | 0x20 | 0x100000;
  long low = sys6(9 /* mmap */, LOW, PADDING * PAGE, prot_r, priv_anon_fixed_noreplace, -1, 0);
  if (low == LOW)
    for (long i = 1; i < PADDING; i += 2)
      sys6(10 /* mprotect */, LOW + i * PAGE, PAGE, 0 /* PROT_NONE */, 0, 0, 0);
  sys6(9 /* mmap */, HIGH, PAGE, prot_rx, priv_anon_fixed_noreplace, -1, 0);
}
#else
static void leave(void) {}
#endif

static int left;

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in, (void)n_out, (void)stream;
  if (!left) {
    left = 1;
    leave();
  }
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc;
  }
  return 0;
}
