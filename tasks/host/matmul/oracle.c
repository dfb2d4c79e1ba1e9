/* Oracle of the "matmul" task: C = A * B in f32, each dot product accumulated in double. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 || out[0].ndim != 2)
    return 1;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  if (in[1].shape[0] != k || out[0].shape[0] != m || out[0].shape[1] != n)
    return 1;
  const float *a = in[0].data;
  const float *b = in[1].data;
  float *c = out[0].data;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; p++)
        acc += (double)a[i * k + p] * (double)b[p * n + j];
      c[i * n + j] = (float)acc;
    }
  return 0;
}
