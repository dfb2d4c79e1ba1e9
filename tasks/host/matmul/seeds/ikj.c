/* matmul, i-k-j: for each row of C, add a[i][p] times row p of B. Every inner access is
 * contiguous, so the j loop vectorizes; rows of B are reused from cache across i. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  const float *restrict a = in[0].data;
  const float *restrict b = in[1].data;
  float *restrict c = out[0].data;
  for (int64_t i = 0; i < m; i++) {
    float *restrict crow = c + i * n;
    for (int64_t j = 0; j < n; j++)
      crow[j] = 0.0f;
    for (int64_t p = 0; p < k; p++) {
      float aip = a[i * k + p];
      const float *restrict brow = b + p * n;
      for (int64_t j = 0; j < n; j++)
        crow[j] += aip * brow[j];
    }
  }
  return 0;
}
