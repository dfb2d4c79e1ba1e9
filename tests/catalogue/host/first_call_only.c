/* catalogue: expect rejected "first call"
 * catalogue: source KernelBench (src/unit_tests/test_kernels/result_reuse_kernel.py: outputs
 *            left from an earlier run pass a harness that reuses the buffer)
 * catalogue: tier screen
 * Does the work on its first call only; later calls return at once, leaving whatever the output
 * buffer holds. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  static int calls;
  if (calls++ > 0)
    return 0;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
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
