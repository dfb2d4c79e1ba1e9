/* catalogue: expect wrong_output "nan"
 * catalogue: source robust-kbench (arXiv:2509.14279: kernels that omit part of the work and
 *            pass narrow verification)
 * catalogue: tier smoke
 * Computes only the first half of the rows and leaves the rest as the buffer holds it. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0] / 2, cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc;
  }
  return 0;
}
