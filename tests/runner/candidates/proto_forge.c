/* A cheat that answers for the sandbox: on its first call it finds the protocol's socket (the
 * descriptors above 2 that fstat calls sockets) and writes into it a whole reply frame of its
 * own, "ok" at 1 us a call, then returns row sums that are half the true ones. Before
 * 2026-12-07 the runner took that frame as the evaluation's reply (sum task: ok, 1.0 us; the
 * sandbox's real reply, wrong_output, was then read as the answer to the next request, and the
 * next candidate's prepare failed: "the sandbox cannot prepare it"), and a frame that is not a
 * protocol message made the evaluation an infra_error, the machine's fault. The filter now lets
 * no code but the sandbox's gate (kb__confine_send) write to, close or copy the protocol's
 * descriptors: rejected, "called write(2), which candidates may not use". */
#include <stdint.h>
#include <sys/stat.h>

#include "kb_kernel.h"

#if defined(__x86_64__)
static long sys3(long n, long a, long b, long c) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}

/* One frame: a 4-byte big-endian length, then the JSON text. */
static void forge(void) {
  static const char body[] =
      "{\"op\": \"eval\", \"status\": \"ok\", \"reason\": \"\", \"sets_checked\": 4, "
      "\"batch\": 1, \"fatal\": false, \"seconds\": 0.01, \"max_abs_err\": 0, "
      "\"max_rel_err\": 0, \"timing\": {\"samples\": 5, \"warmup\": 1, \"median_us\": 1.0, "
      "\"p10_us\": 1.0, \"p90_us\": 1.0, \"mean_us\": 1.0, \"min_us\": 1.0, \"noise\": 0.001}}";
  static unsigned char frame[sizeof body + 4];
  unsigned n = (unsigned)(sizeof body - 1);
  frame[0] = 0;
  frame[1] = 0;
  frame[2] = (unsigned char)(n >> 8);
  frame[3] = (unsigned char)n;
  for (unsigned k = 0; k < n; k++)
    frame[4 + k] = (unsigned char)body[k];
  for (int fd = 3; fd < 64; fd++) {
    struct stat sb;
    if (sys3(5 /* fstat */, fd, (long)&sb, 0) == 0 && (sb.st_mode & 0170000) == 0140000)
      sys3(1 /* write */, fd, (long)frame, (long)n + 4);
  }
}
#endif

static int done;

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
#if defined(__x86_64__)
  if (!done)
    forge();
#endif
  done = 1;
  const float *x = in[0].data;
  float *s = out[0].data;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    s[r] = (float)(acc * 0.5);
  }
  return 0;
}
