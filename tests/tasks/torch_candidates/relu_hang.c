/* Never returns: the runner's watchdog kills the worker: timeout. */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in; (void)n_in; (void)out; (void)n_out; (void)stream;
  volatile int spin = 1;
  while (spin)
    ;
  return 0;
}
