// expect: rejected clock_gettime
// Reads the clock on the host (to detect a timing run, or to pace itself).
#include <cuda_runtime.h>
#include <time.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)stream;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec < 0;
}
