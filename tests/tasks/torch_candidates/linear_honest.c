/* tests/tasks/kernelbench/12_small_linear.py: y = x W^T + b, with the module's weight W [N, K]
 * and bias b [N] passed as inputs 1 and 2 (parameters are inputs too). */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1 || in[1].ndim != 2 || in[2].ndim != 1)
    return 1;
  const float *x = in[0].data, *w = in[1].data, *b = in[2].data;
  float *y = out[0].data;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[0];
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = b[j];
      for (int64_t q = 0; q < k; q++)
        s += (double)x[i * k + q] * w[j * k + q];
      y[i * n + j] = (float)s;
    }
  return 0;
}
