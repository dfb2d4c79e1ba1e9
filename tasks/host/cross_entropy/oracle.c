/* Oracle of host task "cross_entropy": for each row r,
 *   t_r = labels[r] mod C (floor modulo, so 0 <= t_r < C for any integer label),
 *   loss[r] = log(sum_c exp(logits[r][c])) - logits[r][t_r]
 * i.e. torch.nn.functional.cross_entropy(logits, t, reduction="none"). Every input set draws
 * labels from its own range (one distribution applies to all inputs of a set), hence the
 * modulo. The host variant of tasks/cuda/cross_entropy.
 *
 * Inputs  logits: f32 [512, 2048] (4 MiB), labels: i32 [512]   Output loss: f32 [512]
 * Tolerance: atol 1e-4, rtol 1e-4 (f32 default); losses are >= 0 and ~7.6 for small logits.
 * The uniform [-40, 40) and integers [0, 2048) sets overflow exp() unless the row maximum is
 * subtracted (log-sum-exp); the integers set also spreads the labels over every class.
 *
 * Maximum, then the sum of exp(x - max), in double. */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_I32 || out[0].dtype != KB_F32 ||
      kb_tensor_numel(&in[1]) != in[0].shape[0] || kb_tensor_numel(&out[0]) != in[0].shape[0])
    return 1;
  int64_t rows = in[0].shape[0], classes = in[0].shape[1];
  const float *logits = in[0].data;
  const int32_t *labels = in[1].data;
  float *loss = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    const float *row = logits + r * classes;
    double m = -INFINITY;
    for (int64_t c = 0; c < classes; c++)
      m = fmax(m, (double)row[c]);
    double s = 0.0;
    for (int64_t c = 0; c < classes; c++)
      s += exp((double)row[c] - m);
    int64_t t = ((int64_t)labels[r] % classes + classes) % classes;
    loss[r] = (float)(m + log(s) - (double)row[t]);
  }
  return 0;
}
