/* matmul_f16, naive: i-j-p loops, one dot product per output element, each f16 operand
 * converted to float where it is used and the sum kept in an f32 accumulator. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 || in[0].dtype != KB_F16 ||
      in[1].dtype != KB_F16 || out[0].dtype != KB_F16)
    return 1;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  const _Float16 *a = in[0].data, *b = in[1].data;
  _Float16 *c = out[0].data;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; p++)
        acc += (float)a[i * k + p] * (float)b[p * n + j];
      c[i * n + j] = (_Float16)acc;
    }
  return 0;
}
