/* conv2d, naive: one output element at a time, the 3x3 window of every input channel with a
 * bounds check per tap, one f32 accumulator. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || in[1].ndim != 4 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_F32 || in[2].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      in[1].shape[2] != 3 || in[1].shape[3] != 3)
    return 1;
  int64_t batch = in[0].shape[0], chans = in[0].shape[1], hgt = in[0].shape[2],
          wid = in[0].shape[3], kout = in[1].shape[0];
  const float *x = in[0].data, *wt = in[1].data, *bias = in[2].data;
  float *y = out[0].data;
  for (int64_t n = 0; n < batch; n++)
    for (int64_t k = 0; k < kout; k++)
      for (int64_t h = 0; h < hgt; h++)
        for (int64_t w = 0; w < wid; w++) {
          float acc = bias[k];
          for (int64_t c = 0; c < chans; c++)
            for (int64_t r = 0; r < 3; r++)
              for (int64_t s = 0; s < 3; s++) {
                int64_t ih = h + r - 1, iw = w + s - 1;
                if (ih >= 0 && ih < hgt && iw >= 0 && iw < wid)
                  acc += wt[((k * chans + c) * 3 + r) * 3 + s] *
                         x[((n * chans + c) * hgt + ih) * wid + iw];
              }
          y[((n * kout + k) * hgt + h) * wid + w] = acc;
        }
  return 0;
}
