/* catalogue: expect wrong_output "nan"
 * catalogue: source pygpubench (exploits/submission_gc_nan: NaN that a comparison lets pass)
 * catalogue: tier smoke
 * Right sums except row 7, which gets 0/0: a checker comparing with `abs(a - b) > tol` lets a
 * NaN pass (every comparison with NaN is false); kernelbrain's never passes NaN. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  volatile float zero = 0.f;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = r == 7 ? zero / zero : acc;
  }
  return 0;
}
