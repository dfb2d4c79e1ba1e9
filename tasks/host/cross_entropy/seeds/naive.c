/* cross_entropy, naive: per row, the maximum, the sum of expf(x - max) in one f32
 * accumulator, then max + log(sum) - x[label mod C]. */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_I32 || out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], classes = in[0].shape[1];
  const float *logits = in[0].data;
  const int32_t *labels = in[1].data;
  float *loss = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    const float *row = logits + r * classes;
    float m = row[0];
    for (int64_t c = 1; c < classes; c++)
      if (row[c] > m)
        m = row[c];
    float s = 0.0f;
    for (int64_t c = 0; c < classes; c++)
      s += expf(row[c] - m);
    int64_t t = ((int64_t)labels[r] % classes + classes) % classes;
    loss[r] = m + logf(s) - row[t];
  }
  return 0;
}
