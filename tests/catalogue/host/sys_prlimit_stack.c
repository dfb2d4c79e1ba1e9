/* catalogue: expect ok -
 * catalogue: source kernelbrain
 * catalogue: task tasks/host/row_sum
 * catalogue: tier smoke
 * Sets its own stack limit (to the value it reads first) with a raw prlimit64, as NVRTC does
 * before compiling (cuDNN's runtime-compiled convolutions under torch.compile, measured on the
 * H200), then sums honestly: allowed, the stack bounds nothing the confinement holds.
 * x86-64 system call numbers. */
#include <string.h>

#include "kb_kernel.h"

static long raw(long n, long a, long b, long c, long d, long e) {
#if defined(__x86_64__)
  long r;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                   : "rcx", "r11", "memory");
  return r;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  return x0;
#endif
}

/* the honest row sums */
static void row_sums(const kb_tensor *in, kb_tensor *out) {
  const float *x = in[0].data;
  float *s = out[0].data;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    s[r] = (float)acc;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  long lim[2] = {0, 0};
  raw(302 /* prlimit64 */, 0, 3 /* RLIMIT_STACK */, 0, (long)lim, 0);
  if (raw(302 /* prlimit64 */, 0, 3 /* RLIMIT_STACK */, (long)lim, 0, 0) != 0)
    return 1;
  row_sums(in, out);
  return 0;
}
