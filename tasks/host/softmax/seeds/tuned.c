/* softmax, tuned: per row, the maximum with LANES independent lanes; exp(x - max) written to
 * the output and summed in LANES lanes; then one multiplication by 1 / sum. exp is computed
 * inline (2^k times a degree-7 polynomial of the remainder, relative error ~1e-7) with no
 * branch, so every loop vectorizes, where libm's expf is a scalar call. */
#include <stdint.h>

#include "kb_kernel.h"

// kb:param LANES 4 8 16 32 64
#ifndef LANES
#define LANES 16
#endif

#if LANES & (LANES - 1)
#error "LANES must be a power of two (pairwise combination)"
#endif

/* exp(x) for x <= 88; below -87 it returns exp(-87) (~2e-38) instead of a denormal or 0. */
static inline float exp_inline(float x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  float t = x * 1.44269504088896341f;
  int k = (int)(t + 128.5f) - 128; /* round to nearest: t + 128.5 > 0 here */
  float r = x - (float)k * 0.693145751953125f - (float)k * 1.428606765330187045e-06f;
  float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
            r * (1.0f / 720 + r * (1.0f / 5040)))))));
  union { uint32_t u; float f; } scale = {.u = (uint32_t)(k + 127) << 23};
  return p * scale.f;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *restrict x = in[0].data;
  float *restrict y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    const float *restrict row = x + r * cols;
    float *restrict yr = y + r * cols;
    float lane[LANES];
    for (int j = 0; j < LANES; j++)
      lane[j] = row[0];
    int64_t c = 0;
    for (; c + LANES <= cols; c += LANES)
      for (int j = 0; j < LANES; j++) {
        float v = row[c + j], l = lane[j]; /* both loaded first: a select, not a branch */
        lane[j] = v > l ? v : l;
      }
    for (; c < cols; c++) {
      float v = row[c];
      lane[0] = v > lane[0] ? v : lane[0];
    }
    for (int width = LANES / 2; width > 0; width /= 2)
      for (int j = 0; j < width; j++)
        lane[j] = lane[j + width] > lane[j] ? lane[j + width] : lane[j];
    float m = lane[0];
    for (int j = 0; j < LANES; j++)
      lane[j] = 0.0f;
    for (c = 0; c + LANES <= cols; c += LANES)
      for (int j = 0; j < LANES; j++) {
        float e = exp_inline(row[c + j] - m);
        yr[c + j] = e;
        lane[j] += e;
      }
    for (; c < cols; c++) {
      yr[c] = exp_inline(row[c] - m);
      lane[0] += yr[c];
    }
    for (int width = LANES / 2; width > 0; width /= 2)
      for (int j = 0; j < width; j++)
        lane[j] += lane[j + width];
    float inv = 1.0f / lane[0];
    for (c = 0; c < cols; c++)
      yr[c] *= inv;
  }
  return 0;
}
