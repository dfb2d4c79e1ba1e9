/* Writes through a null pointer: the worker dies of SIGSEGV: crash. */
#include <stddef.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in; (void)n_in; (void)n_out; (void)stream;
  volatile float *p = (volatile float *)out[0].data;
  p = (volatile float *)((size_t)p & 0); /* null, in a way the compiler cannot prove */
  *p = 1.0f;
  return 0;
}
