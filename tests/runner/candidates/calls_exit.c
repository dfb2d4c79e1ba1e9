/* Ends the whole process from inside kb_forward. */
#include <stdio.h>
#include <stdlib.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)stream;
  fprintf(stderr, "bye from the candidate\n");
  exit(0);
}
