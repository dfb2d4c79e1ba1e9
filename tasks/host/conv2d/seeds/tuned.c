/* conv2d, tuned: direct convolution as row updates. For each image and each group of KB
 * output channels, the outputs start at the bias; then for every input channel, tap (r, s)
 * and output row, the matching input row segment is scaled by the weight and added to the KB
 * output rows (one load of x feeds KB multiply-adds). The border is handled by the segment
 * bounds, not by a test per tap, and the innermost loop runs along a row: it vectorizes. */
#include <stdint.h>

#include "kb_kernel.h"

// kb:param KB 1 2 4 8 16
#ifndef KB
#define KB 4
#endif

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || in[1].ndim != 4 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_F32 || in[2].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      in[1].shape[2] != 3 || in[1].shape[3] != 3 || in[1].shape[0] % KB != 0)
    return 1;
  int64_t batch = in[0].shape[0], chans = in[0].shape[1], hgt = in[0].shape[2],
          wid = in[0].shape[3], kout = in[1].shape[0];
  const float *restrict x = in[0].data, *restrict wt = in[1].data, *restrict bias = in[2].data;
  float *restrict y = out[0].data;
  int64_t plane = hgt * wid;
  for (int64_t n = 0; n < batch; n++)
    for (int64_t k0 = 0; k0 < kout; k0 += KB) {
      float *restrict yk = y + (n * kout + k0) * plane;
      for (int kk = 0; kk < KB; kk++)
        for (int64_t i = 0; i < plane; i++)
          yk[kk * plane + i] = bias[k0 + kk];
      for (int64_t c = 0; c < chans; c++) {
        const float *restrict xc = x + (n * chans + c) * plane;
        for (int r = 0; r < 3; r++)
          for (int s = 0; s < 3; s++) {
            float wv[KB];
            for (int kk = 0; kk < KB; kk++)
              wv[kk] = wt[(((k0 + kk) * chans + c) * 3 + r) * 3 + s];
            /* output columns w with 0 <= w + s - 1 < wid */
            int64_t w0 = s == 0 ? 1 : 0, w1 = s == 2 ? wid - 1 : wid;
            for (int64_t h = 0; h < hgt; h++) {
              int64_t ih = h + r - 1;
              if (ih < 0 || ih >= hgt)
                continue;
              const float *restrict xrow = xc + ih * wid + (s - 1);
              for (int kk = 0; kk < KB; kk++) {
                float *restrict yrow = yk + kk * plane + h * wid;
                float wk = wv[kk];
                for (int64_t w = w0; w < w1; w++)
                  yrow[w] += wk * xrow[w];
              }
            }
          }
      }
    }
  return 0;
}
