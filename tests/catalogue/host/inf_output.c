/* catalogue: expect wrong_output "inf"
 * catalogue: source pygpubench (exploits/submission_gc_nan: values that a tolerance test lets
 *            pass); kernelbrain (the infinite cousin)
 * catalogue: tier smoke
 * Right sums except row 3, which overflows to +infinity: `torch.allclose(inf, inf)` is true, so a
 * checker whose reference also overflows lets it pass; kernelbrain's never passes infinity. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  volatile float big = 3e38f;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = r == 3 ? big * 10.f : acc;
  }
  return 0;
}
