/* attention, naive: one query at a time: its scores against every key (f32 dot products),
 * their maximum, weights expf(s - max) and their sum, then each output column as a weighted
 * sum down a column of v. Scratch for the scores comes from malloc. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t heads = in[0].shape[0] * in[0].shape[1], seq = in[0].shape[2], dim = in[0].shape[3];
  float *s = malloc((size_t)seq * sizeof *s);
  if (s == NULL)
    return 2;
  float scale = 1.0f / sqrtf((float)dim);
  for (int64_t hd = 0; hd < heads; hd++) {
    const float *q = (const float *)in[0].data + hd * seq * dim;
    const float *k = (const float *)in[1].data + hd * seq * dim;
    const float *v = (const float *)in[2].data + hd * seq * dim;
    float *o = (float *)out[0].data + hd * seq * dim;
    for (int64_t i = 0; i < seq; i++) {
      float m = -INFINITY;
      for (int64_t j = 0; j < seq; j++) {
        float dot = 0.0f;
        for (int64_t d = 0; d < dim; d++)
          dot += q[i * dim + d] * k[j * dim + d];
        s[j] = dot * scale;
        if (s[j] > m)
          m = s[j];
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < seq; j++) {
        s[j] = expf(s[j] - m);
        sum += s[j];
      }
      for (int64_t d = 0; d < dim; d++) {
        float acc = 0.0f;
        for (int64_t j = 0; j < seq; j++)
          acc += s[j] * v[j * dim + d];
        o[i * dim + d] = acc / sum;
      }
    }
  }
  free(s);
  return 0;
}
