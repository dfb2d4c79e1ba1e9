/* layernorm, tuned: the two reductions of each row (sum, then squared deviations from the
 * mean) in LANES independent lanes each, so they vectorize; the output pass is one fused
 * multiply-add per element with the row's mean and scale applied. */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

// kb:param LANES 4 8 16 32
#ifndef LANES
#define LANES 16
#endif

#if LANES & (LANES - 1)
#error "LANES must be a power of two (pairwise combination)"
#endif

/* Sums in LANES lanes, combined pairwise: of the n floats at p (squares = 0), or of their
 * squared deviations from `mean` (squares = 1). */
static inline float lane_sum(const float *restrict p, int64_t n, int squares, float mean) {
  float lane[LANES];
  for (int j = 0; j < LANES; j++)
    lane[j] = 0.0f;
  int64_t c = 0;
  for (; c + LANES <= n; c += LANES)
    for (int j = 0; j < LANES; j++) {
      float d = p[c + j] - mean;
      lane[j] += squares ? d * d : p[c + j];
    }
  for (; c < n; c++) {
    float d = p[c] - mean;
    lane[0] += squares ? d * d : p[c];
  }
  for (int width = LANES / 2; width > 0; width /= 2)
    for (int j = 0; j < width; j++)
      lane[j] += lane[j + width];
  return lane[0];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *restrict x = in[0].data, *restrict w = in[1].data, *restrict b = in[2].data;
  float *restrict y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    const float *restrict row = x + r * cols;
    float *restrict yr = y + r * cols;
    float m = lane_sum(row, cols, 0, 0.0f) / (float)cols;
    float s = 1.0f / sqrtf(lane_sum(row, cols, 1, m) / (float)cols + 1e-5f);
    for (int64_t c = 0; c < cols; c++)
      yr[c] = (row[c] - m) * s * w[c] + b[c];
  }
  return 0;
}
