/* Writes NaN. */
#include <math.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)n_out;
  (void)stream;
  *(float *)out[0].data = NAN;
  return 0;
}
