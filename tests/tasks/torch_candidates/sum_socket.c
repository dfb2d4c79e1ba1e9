/* tests/kernelbench/2_sum_over_dim.py: an AF_INET socket opened with a raw system call (inline
 * `syscall`: no import for the allow-list to see), then the honest sum. The confined PyTorch
 * worker's seccomp filter must end it: rejected, "called socket(2), ...". x86-64 only. */
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
  raw(41 /* socket */, 2 /* AF_INET */, 1 /* SOCK_STREAM */, 0);
  sum(in, out);
  return 0;
}
