/* Cheats by keeping state in a file between calls: the import allow-list rejects it before it
 * ever runs (fopen is outside the host allow-list). */
#include <stdio.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  const float *x = in[0].data;
  float s = 0;
  for (int64_t i = 0; i < kb_tensor_numel(&in[0]); i++)
    s += x[i];
  FILE *f = fopen("/tmp/kb-cheat-cache", "w");
  if (f) {
    fprintf(f, "%f\n", s);
    fclose(f);
  }
  ((float *)out[0].data)[0] = s;
  return 0;
}
