/* Oracle of host task "transpose": y[j][i] = x[i][j]. The host variant of tasks/cuda/transpose.
 *
 * Input  x: f32 [512, 2048] (4 MiB)   Output y: f32 [2048, 512] (4 MiB)
 * Tolerance: exact (atol 0, rtol 0): every output is a copy of an input. The integers set
 * (values up to 10^6) makes misplaced elements obvious.
 *
 * One output element at a time, in output order. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || out[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || out[0].shape[0] != in[0].shape[1] ||
      out[0].shape[1] != in[0].shape[0])
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t j = 0; j < cols; j++)
    for (int64_t i = 0; i < rows; i++)
      y[j * rows + i] = x[i * cols + j];
  return 0;
}
