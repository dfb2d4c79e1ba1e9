/* maxpool2d, tuned: separable. For each output row, the element-wise maximum of its (up to)
 * three input rows goes into a row buffer (a vectorized pass), then each output is the
 * maximum of three neighbouring buffer entries; the window's left edge at column -1 is
 * padding and never taken. Rows are processed in bands of BAND output rows per plane, and the
 * horizontal pass is unrolled by UNROLL outputs. */
#include <stdint.h>
#include <stdlib.h>

#include "kb_kernel.h"

// kb:param BAND 1 2 4 8
#ifndef BAND
#define BAND 4
#endif

// kb:param UNROLL 1 2 4 8
#ifndef UNROLL
#define UNROLL 4
#endif

static inline float max2(float a, float b) { return a > b ? a : b; }

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 4 || out[0].ndim != 4 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || in[0].shape[3] < 2)
    return 1;
  int64_t planes = in[0].shape[0] * in[0].shape[1], hgt = in[0].shape[2], wid = in[0].shape[3];
  int64_t oh_n = out[0].shape[2], ow_n = out[0].shape[3];
  const float *restrict x = in[0].data;
  float *restrict y = out[0].data;
  float *buf = malloc((size_t)(BAND * wid) * sizeof(float));
  if (buf == NULL)
    return 2;
  for (int64_t p = 0; p < planes; p++) {
    const float *restrict xp = x + p * hgt * wid;
    float *restrict yp = y + p * oh_n * ow_n;
    for (int64_t oh0 = 0; oh0 < oh_n; oh0 += BAND) {
      int64_t oh1 = oh0 + BAND < oh_n ? oh0 + BAND : oh_n;
      /* vertical: buf row b = max over the input rows of output row oh0 + b */
      for (int64_t oh = oh0; oh < oh1; oh++) {
        float *restrict t = buf + (oh - oh0) * wid;
        int64_t ih = 2 * oh; /* the middle row always exists */
        const float *restrict mid = xp + ih * wid;
        for (int64_t w = 0; w < wid; w++)
          t[w] = mid[w];
        if (ih >= 1) {
          const float *restrict up = mid - wid;
          for (int64_t w = 0; w < wid; w++)
            t[w] = max2(t[w], up[w]);
        }
        if (ih + 1 < hgt) {
          const float *restrict down = mid + wid;
          for (int64_t w = 0; w < wid; w++)
            t[w] = max2(t[w], down[w]);
        }
      }
      /* horizontal: output ow takes buf columns 2ow - 1, 2ow, 2ow + 1 where they exist */
      for (int64_t oh = oh0; oh < oh1; oh++) {
        const float *restrict t = buf + (oh - oh0) * wid;
        float *restrict yr = yp + oh * ow_n;
        yr[0] = max2(t[0], t[1]);
        int64_t ow = 1;
        for (; ow + UNROLL <= ow_n && 2 * (ow + UNROLL - 1) + 1 < wid; ow += UNROLL)
          for (int u = 0; u < UNROLL; u++) {
            int64_t c = 2 * (ow + u);
            yr[ow + u] = max2(max2(t[c - 1], t[c]), t[c + 1]);
          }
        for (; ow < ow_n; ow++) {
          int64_t c = 2 * ow;
          float m = max2(t[c - 1], t[c]);
          yr[ow] = c + 1 < wid ? max2(m, t[c + 1]) : m;
        }
      }
    }
  }
  free(buf);
  return 0;
}
