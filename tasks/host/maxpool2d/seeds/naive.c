/* maxpool2d, naive: one output element at a time, the 3x3 window with a bounds check per tap
 * (the running maximum starts at -infinity, so padding never wins). */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 4 || out[0].ndim != 4 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t planes = in[0].shape[0] * in[0].shape[1], hgt = in[0].shape[2], wid = in[0].shape[3];
  int64_t oh_n = out[0].shape[2], ow_n = out[0].shape[3];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < oh_n; oh++)
      for (int64_t ow = 0; ow < ow_n; ow++) {
        float m = -INFINITY;
        for (int64_t r = 0; r < 3; r++)
          for (int64_t s = 0; s < 3; s++) {
            int64_t ih = 2 * oh + r - 1, iw = 2 * ow + s - 1;
            if (ih >= 0 && ih < hgt && iw >= 0 && iw < wid && x[(p * hgt + ih) * wid + iw] > m)
              m = x[(p * hgt + ih) * wid + iw];
          }
        y[(p * oh_n + oh) * ow_n + ow] = m;
      }
  return 0;
}
