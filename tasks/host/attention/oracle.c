/* Oracle of host task "attention": for each batch b, head h and query i (no mask, no dropout),
 *   s[j] = (q[b][h][i] . k[b][h][j]) / sqrt(D),  p = softmax(s),
 *   o[b][h][i] = sum_j p[j] v[b][h][j]
 * i.e. torch.nn.functional.scaled_dot_product_attention(q, k, v). The host variant of
 * tasks/cuda/attention.
 *
 * Inputs  q, k, v: f32 [2, 4, 128, 64] (256 KiB each)   Output o: f32 [2, 4, 128, 64]
 * (17 MFLOP: two 128 x 128 x 64 products per head)
 * Tolerance: atol 1e-3, rtol 1e-4; outputs are averages of v, so |o| <= max |v|. The stddev-4
 * set gives scores up to ~100 (exp overflows f32 past 88 unless the row maximum is subtracted)
 * and nearly one-hot rows, which amplify the f32 rounding of the scores.
 *
 * One query at a time, all in double: the scores, their maximum, the weights exp(s - max) and
 * their sum, then each output column. Scratch for the scores comes from malloc. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || out[0].ndim != 4)
    return 1;
  for (int t = 0; t < 3; t++)
    if (in[t].dtype != KB_F32 || in[t].ndim != 4 || in[t].shape[0] != in[0].shape[0] ||
        in[t].shape[1] != in[0].shape[1] || in[t].shape[2] != in[0].shape[2] ||
        in[t].shape[3] != in[0].shape[3])
      return 1;
  if (out[0].dtype != KB_F32 || kb_tensor_numel(&out[0]) != kb_tensor_numel(&in[0]))
    return 1;
  int64_t heads = in[0].shape[0] * in[0].shape[1], seq = in[0].shape[2], dim = in[0].shape[3];
  double *s = malloc((size_t)seq * sizeof *s);
  if (s == NULL)
    return 2;
  double scale = 1.0 / sqrt((double)dim);
  for (int64_t hd = 0; hd < heads; hd++) {
    const float *q = (const float *)in[0].data + hd * seq * dim;
    const float *k = (const float *)in[1].data + hd * seq * dim;
    const float *v = (const float *)in[2].data + hd * seq * dim;
    float *o = (float *)out[0].data + hd * seq * dim;
    for (int64_t i = 0; i < seq; i++) {
      double m = -INFINITY;
      for (int64_t j = 0; j < seq; j++) {
        double dot = 0.0;
        for (int64_t d = 0; d < dim; d++)
          dot += (double)q[i * dim + d] * (double)k[j * dim + d];
        s[j] = dot * scale;
        m = fmax(m, s[j]);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < seq; j++) {
        s[j] = exp(s[j] - m);
        sum += s[j];
      }
      for (int64_t d = 0; d < dim; d++) {
        double acc = 0.0;
        for (int64_t j = 0; j < seq; j++)
          acc += s[j] * (double)v[j * dim + d];
        o[i * dim + d] = (float)(acc / sum);
      }
    }
  }
  free(s);
  return 0;
}
