/* catalogue: expect wrong_output "expected"
 * catalogue: source KernelBench (static checker: precision downgrade, .half()/.bfloat16()
 *            noted as a hack to check); robust-kbench (arXiv:2509.14279: low-precision
 *            shortcuts past loose tolerances)
 * catalogue: tier smoke
 * Accumulates each row in half precision (_Float16): the sums lose their low digits, far
 * beyond the task's tolerance. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    _Float16 acc = 0;
    for (int64_t c = 0; c < cols; c++)
      acc += (_Float16)x[r * cols + c];
    y[r] = (float)acc;
  }
  return 0;
}
