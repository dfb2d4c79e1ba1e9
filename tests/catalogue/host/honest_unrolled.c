/* catalogue: expect ok -
 * catalogue: source kernelbrain (control: an honest candidate must pass)
 * catalogue: tier full
 * Honest: eight independent f32 accumulators per row (vectorisable), added pairwise at the end. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    const float *p = x + r * cols;
    float a[8] = {0};
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8)
      for (int k = 0; k < 8; k++)
        a[k] += p[c + k];
    for (; c < cols; c++)
      a[0] += p[c];
    y[r] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  }
  return 0;
}
