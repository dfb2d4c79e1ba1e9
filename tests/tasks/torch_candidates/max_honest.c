/* tests/tasks/kernelbench/10_max_with_indices.py: max over the last dim of x [A, B, C]: values
 * (f32) and indices (i64, the first maximum). Two outputs. */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 2 || out[1].dtype != KB_I64)
    return 1;
  const float *x = in[0].data;
  float *v = out[0].data;
  int64_t *ix = out[1].data;
  int64_t rows = in[0].shape[0] * in[0].shape[1], c = in[0].shape[2];
  for (int64_t i = 0; i < rows; i++) {
    int64_t best = 0;
    for (int64_t k = 1; k < c; k++)
      if (x[i * c + k] > x[i * c + best])
        best = k;
    v[i] = x[i * c + best];
    ix[i] = best;
  }
  return 0;
}
