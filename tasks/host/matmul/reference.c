/* Task "matmul": C = A * B.
 *
 * Inputs  A: f32, shape [M, K] = [256, 256]; B: f32, shape [K, N] = [256, 256]
 * Output  C: f32, shape [M, N] = [256, 256], C[i][j] = sum over p of A[i][p] * B[p][j]
 *
 * All tensors are contiguous and row-major. Any accumulation order is accepted: results are
 * compared to a double-precision product with rtol 1e-4 and atol 1e-3. The runner calls
 * kb_forward on the CPU with stream = NULL.
 */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  const float *a = in[0].data;
  const float *b = in[1].data;
  float *c = out[0].data;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; p++)
        acc += a[i * k + p] * b[p * n + j];
      c[i * n + j] = acc;
    }
  return 0;
}
