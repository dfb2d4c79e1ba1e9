/* Oracle of host task "row_sum": sums[r] = x[r][0] + x[r][1] + ... + x[r][cols-1]. The host
 * variant of tasks/cuda/row_sum.
 *
 * Input  x: f32 [512, 2048] (4 MiB)   Output sums: f32 [512]
 * Tolerance: atol 1e-3, rtol 1e-4. Any summation order is accepted: a sequential f32 sum of
 * 2048 values in [-1, 1] is off by ~1e-5, and sums of mixed signs cross 0, where only atol
 * helps. The integers set (values in [-1000, 1000)) has exact answers in f32.
 *
 * Each row summed sequentially in double and rounded once. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || kb_tensor_numel(&out[0]) != in[0].shape[0])
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *sums = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0.0;
    for (int64_t c = 0; c < cols; c++)
      acc += (double)x[r * cols + c];
    sums[r] = (float)acc;
  }
  return 0;
}
