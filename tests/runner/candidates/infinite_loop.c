/* Never returns: the watchdog must kill it. */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)stream;
  volatile unsigned long spins = 0;
  for (;;)
    spins++;
  return 0;
}
