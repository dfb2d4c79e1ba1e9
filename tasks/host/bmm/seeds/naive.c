/* bmm, naive: for every batch entry, i-j-p loops, one f32 dot product per output element (b
 * read down a column). */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 2 || n_out != 1 || in[0].ndim != 3 || in[1].ndim != 3 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  int64_t batch = in[0].shape[0], m = in[0].shape[1], k = in[0].shape[2], n = in[1].shape[2];
  for (int64_t t = 0; t < batch; t++) {
    const float *a = (const float *)in[0].data + t * m * k;
    const float *b = (const float *)in[1].data + t * k * n;
    float *c = (float *)out[0].data + t * m * n;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        float acc = 0.0f;
        for (int64_t p = 0; p < k; p++)
          acc += a[i * k + p] * b[p * n + j];
        c[i * n + j] = acc;
      }
  }
  return 0;
}
