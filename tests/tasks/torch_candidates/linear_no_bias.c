/* 12_small_linear without its bias: wrong_output (the bias parameter is drawn nonzero). */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream; (void)n_in; (void)n_out;
  const float *x = in[0].data, *w = in[1].data;
  float *y = out[0].data;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[0];
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t q = 0; q < k; q++)
        s += (double)x[i * k + q] * w[j * k + q];
      y[i * n + j] = (float)s;
    }
  return 0;
}
