/* Returns early: computes only the first half of the rows of C = A B and leaves the rest as it
 * found it (poisoned). For the built-in task tasks/host/matmul ([256, 256] f32). */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  const float *a = in[0].data, *b = in[1].data;
  float *c = out[0].data;
  for (int64_t i = 0; i < m / 2; i++)
    for (int64_t j = 0; j < n; j++) {
      float acc = 0.f;
      for (int64_t p = 0; p < k; p++)
        acc += a[i * k + p] * b[p * n + j];
      c[i * n + j] = acc;
    }
  return 0;
}
