/* tests/tasks/kernelbench/2_sum_over_dim.py: x [16, 256, 256] summed over dim 1, kept. */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 3)
    return 1;
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t b = in[0].shape[0], r = in[0].shape[1], c = in[0].shape[2];
  for (int64_t i = 0; i < b; i++)
    for (int64_t k = 0; k < c; k++) {
      double s = 0;
      for (int64_t j = 0; j < r; j++)
        s += x[(i * r + j) * c + k];
      y[i * c + k] = (float)s;
    }
  return 0;
}
