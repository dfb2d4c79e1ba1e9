/* Does not compile: the error is on line 7. */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  int x = undeclared_variable + 1
  (void)out;
  (void)n_out;
  (void)stream;
  return x;
}
