/* Compiles, but exports kb_forwrd instead of kb_forward. */
#include "kb_kernel.h"

int kb_forwrd(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream);

int kb_forwrd(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)stream;
  return 0;
}
