/* tests/kernelbench/2_sum_over_dim.py: reads the parent's (the runner's) environment through
 * /proc/<ppid>/environ with raw system calls, and answers zeros if it finds the test's canary
 * KB_TEST_SECRET there (the secret reached the candidate), else the honest sum. In the confined
 * PyTorch worker files may be opened, but Landlock allows no /proc of another process: the
 * open fails and the verdict is ok; wrong_output would mean the secret leaked. x86-64 only. */
#include "kb_kernel.h"

static long raw(long n, long a, long b, long c) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}

static void sum(const kb_tensor *in, kb_tensor *out) {
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t b = in[0].shape[0], r = in[0].shape[1], c = in[0].shape[2];
  for (int64_t i = 0; i < b; i++)
    for (int64_t k = 0; k < c; k++) {
      double s = 0;
      for (int64_t j = 0; j < r; j++)
        s += x[(i * r + j) * c + k];
      y[i * c + k] = (float)s;
    }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 3)
    return 1;
  char path[64] = "/proc/", digits[24];
  long ppid = raw(110 /* getppid */, 0, 0, 0), n = 0;
  do
    digits[n++] = (char)('0' + ppid % 10);
  while ((ppid /= 10) > 0 && n < 23);
  int at = 6;
  while (n > 0)
    path[at++] = digits[--n];
  const char *tail = "/environ";
  for (int i = 0; tail[i]; i++)
    path[at++] = tail[i];
  path[at] = '\0';
  int leaked = 0;
  long fd = raw(257 /* openat */, -100 /* AT_FDCWD */, (long)path, 0 /* O_RDONLY */);
  if (fd >= 0) {
    static char buf[65536];
    long got = raw(0 /* read */, fd, (long)buf, sizeof buf - 1);
    for (long i = 0; got > 0 && i + 14 < got; i++) {
      const char *k = "KB_TEST_SECRET";
      int j = 0;
      while (j < 14 && buf[i + j] == k[j])
        j++;
      leaked |= j == 14;
    }
    raw(3 /* close */, fd, 0, 0);
  }
  sum(in, out);
  if (leaked)
    for (int64_t i = 0; i < kb_tensor_numel(&out[0]); i++)
      ((float *)out[0].data)[i] = 0;
  return 0;
}
