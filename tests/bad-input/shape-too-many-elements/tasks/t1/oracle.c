/* oracle: y = x */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in; (void)n_out; (void)stream;
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t i = 0; i < kb_tensor_numel(&in[0]); i++)
    y[i] = x[i];
  return 0;
}
