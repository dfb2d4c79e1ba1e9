/* tests/tasks/kernelbench/8_cross_entropy.py: mean cross-entropy of logits [B, C] (f32)
 * against i64 targets [B]; a 0-dim f32 output. */
#include <math.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 2 || n_out != 1 || in[1].dtype != KB_I64 || out[0].ndim != 0)
    return 1;
  const float *z = in[0].data;
  const int64_t *t = in[1].data;
  int64_t b = in[0].shape[0], c = in[0].shape[1];
  double total = 0;
  for (int64_t i = 0; i < b; i++) {
    double m = z[i * c];
    for (int64_t k = 1; k < c; k++)
      m = fmax(m, z[i * c + k]);
    double s = 0;
    for (int64_t k = 0; k < c; k++)
      s += exp(z[i * c + k] - m);
    total += m + log(s) - z[i * c + t[i]];
  }
  *(float *)out[0].data = (float)(total / (double)b);
  return 0;
}
