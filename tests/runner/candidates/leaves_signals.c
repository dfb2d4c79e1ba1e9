/* A candidate that leaves the sandbox's process set up differently for the candidates after it,
 * with no trace the check between candidates looked at before 2026-12-07 (both variants were ok,
 * and so were the honest candidates after them in that process):
 *   -DKB_LEAVE=1: SIGTERM back at its default action. The sandbox ignores it (Slurm signals
 *   every process of a job; the runner ends the sandbox itself), so a later SIGTERM would kill
 *   the sandbox in the middle of another candidate's evaluation: a crash blamed on that one.
 *   -DKB_LEAVE=2: the sandbox's descriptor of /proc/self/maps (the one the check reads, opened
 *   before confinement) closed and /dev/null put in its place: the check then read no mapping.
 * Both are set with inline system calls (no import shows). The check now compares every
 * signal's action and the signal mask with the snapshot, and the maps descriptor's file:
 * rejected, "changed the sandbox's own process: ...". Since 2026-12-07 the host's filter refuses
 * the first at the call ("called rt_sigaction(2), which candidates may not use": a handler is
 * code that runs after the call returned, tests/catalogue/host/lazy_fault.c); the check between
 * candidates still sees it where the filter allows it (CUDA). It sums the rows of row_sum
 * honestly. */
#include <stdint.h>
#include <sys/stat.h>

#include "kb_kernel.h"

#ifndef KB_LEAVE
#define KB_LEAVE 1
#endif

#if defined(__x86_64__)
static long sys4(long n, long a, long b, long c, long d) {
  long r;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return r;
}

static void leave(void) {
  if (KB_LEAVE == 1) {
    struct {
      void *handler;
      unsigned long flags;
      void *restorer;
      unsigned long mask;
    } dfl = {0, 0, 0, 0};
    sys4(13 /* rt_sigaction */, 15 /* SIGTERM */, (long)&dfl, 0, 8);
    return;
  }
  /* /proc/self/maps: a regular file of size 0, mode 0444, among its descriptors */
  for (int fd = 3; fd < 64; fd++) {
    struct stat sb;
    if (sys4(5 /* fstat */, fd, (long)&sb, 0, 0) == 0 && (sb.st_mode & 0170000) == 0100000 &&
        sb.st_size == 0 && (sb.st_mode & 0777) == 0444) {
      sys4(3 /* close */, fd, 0, 0, 0);
      sys4(72 /* fcntl */, 0, 0 /* F_DUPFD: the lowest free from fd on */, fd, 0);
    }
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
    leave();
#endif
  done = 1;
  const float *x = in[0].data;
  float *s = out[0].data;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    s[r] = (float)acc;
  }
  return 0;
}
