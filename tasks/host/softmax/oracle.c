/* Oracle of host task "softmax": y[r][c] = exp(x[r][c] - max_r) / sum_c' exp(x[r][c'] - max_r),
 * along each row. The host variant of tasks/cuda/softmax.
 *
 * Input  x: f32 [256, 4096] (4 MiB)   Output y: f32 [256, 4096] (4 MiB)
 * Tolerance: atol 1e-6, rtol 1e-4. Outputs average 1/4096 = 2.4e-4, so the f32 default atol
 * of 1e-4 would let a kernel that writes zeros pass most elements; 1e-6 keeps the check
 * meaningful. The uniform [500, 1000) set overflows exp() unless the row maximum is
 * subtracted.
 *
 * Maximum, then exponentials and their sum in double; each output rounded once. */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || kb_tensor_numel(&out[0]) != kb_tensor_numel(&in[0]))
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    const float *row = x + r * cols;
    double m = -INFINITY;
    for (int64_t c = 0; c < cols; c++)
      m = fmax(m, (double)row[c]);
    double s = 0.0;
    for (int64_t c = 0; c < cols; c++)
      s += exp((double)row[c] - m);
    for (int64_t c = 0; c < cols; c++)
      y[r * cols + c] = (float)(exp((double)row[c] - m) / s);
  }
  return 0;
}
