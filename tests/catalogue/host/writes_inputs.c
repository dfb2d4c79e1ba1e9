/* catalogue: expect rejected "modified its inputs"
 * catalogue: source KernelBench (src/unit_tests/test_kernels/zero_out_kernel.py: zeroes the
 *            inputs so that a reference run after it agrees)
 * catalogue: tier screen
 * Computes the right sums, then zeroes the first element of every row of its (read-only) input. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc;
    x[r * cols] = 0.f;
  }
  return 0;
}
