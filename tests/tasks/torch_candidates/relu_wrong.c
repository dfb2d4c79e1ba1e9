/* ReLU that lets negative values through (a copy): wrong_output. */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in; (void)n_out; (void)stream;
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i];
  return 0;
}
