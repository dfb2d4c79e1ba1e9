/* Computes the right sum, then zeroes the first input element. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  float *x = (float *)in[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  double acc = 0.0;
  for (int64_t i = 0; i < n; i++)
    acc += x[i];
  *(float *)out[0].data = (float)acc;
  x[0] = 0.0f;
  return 0;
}
