/* catalogue: expect ok -
 * catalogue: source kernelbrain
 * catalogue: task tasks/host/row_sum
 * catalogue: tier smoke
 * Reads /proc/<parent>/environ and /proc/<parent>/mem with raw system calls from a constructor,
 * which runs inside the sandbox's library-load window, where read-only opens pass the seccomp
 * filter: Landlock must refuse both (the runner's /proc entries are outside the paths it may
 * read). When it finds "KB_TEST_SECRET=" it prints the variable and aborts, so a leak shows as a
 * crash with the secret in the reason; otherwise it sums honestly and is ok. */
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

static void say(const char *s) { raw(1 /* write */, 2, (long)s, (long)strlen(s), 0, 0); }

__attribute__((constructor)) static void steal(void) {
  char path[64] = "/proc/";
  long pid = raw(110 /* getppid */, 0, 0, 0, 0, 0);
  char digits[24];
  int n = 0;
  do
    digits[n++] = (char)('0' + pid % 10);
  while ((pid /= 10) != 0);
  int at = 6;
  while (n > 0)
    path[at++] = digits[--n];
  static char env[65536];
  memcpy(path + at, "/environ", 9);
  long fd = raw(257 /* openat */, -100, (long)path, 0 /* O_RDONLY */, 0, 0);
  long got = fd >= 0 ? raw(0 /* read */, fd, (long)env, sizeof env - 1, 0, 0) : 0;
  for (long i = 0; got > 0 && i < got; i += (long)strlen(env + i) + 1)
    if (strncmp(env + i, "KB_TEST_SECRET=", 15) == 0) {
      say("stolen: ");
      say(env + i);
      say("\n");
      raw(62 /* kill */, raw(39 /* getpid */, 0, 0, 0, 0, 0), 6 /* SIGABRT */, 0, 0, 0);
    }
  say(fd >= 0 ? "environ: opened\n" : "environ: refused\n");
  memcpy(path + at, "/mem", 5);
  fd = raw(257 /* openat */, -100, (long)path, 0, 0, 0);
  say(fd >= 0 ? "mem: opened\n" : "mem: refused\n");
  if (fd >= 0)
    raw(62 /* kill */, raw(39 /* getpid */, 0, 0, 0, 0, 0), 6 /* SIGABRT */, 0, 0, 0);
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  row_sums(in, out);
  return 0;
}
