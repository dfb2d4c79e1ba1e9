/* Says something on stderr, then aborts (SIGABRT), as a failed CHECK macro does. */
#include <stdio.h>
#include <stdlib.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)stream;
  fputs("candidate: CHECK failed: n % 4 == 0\n", stderr);
  abort();
}
