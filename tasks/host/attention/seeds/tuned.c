/* attention, tuned: queries in blocks of BQ. For a block, the scores against every key are
 * dot products in LANES independent lanes (vectorized); each score row becomes softmax weights
 * with an inline exp (no libm call, vectorized); then the block's outputs are accumulated as
 * o_i += p_ij v_j along rows of v (contiguous, vectorized), one row of v serving BQ queries
 * while it is in cache. Scratch for the BQ score rows comes from malloc. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kb_kernel.h"

// kb:param BQ 1 2 4 8 16 32
#ifndef BQ
#define BQ 8
#endif

// kb:param LANES 4 8 16
#ifndef LANES
#define LANES 8
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

/* q . k over dim elements, in LANES lanes. */
static inline float dot(const float *restrict q, const float *restrict k, int64_t dim) {
  float lane[LANES];
  for (int l = 0; l < LANES; l++)
    lane[l] = 0.0f;
  int64_t d = 0;
  for (; d + LANES <= dim; d += LANES)
    for (int l = 0; l < LANES; l++)
      lane[l] += q[d + l] * k[d + l];
  for (; d < dim; d++)
    lane[0] += q[d] * k[d];
  for (int width = LANES / 2; width > 0; width /= 2)
    for (int l = 0; l < width; l++)
      lane[l] += lane[l + width];
  return lane[0];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t heads = in[0].shape[0] * in[0].shape[1], seq = in[0].shape[2], dim = in[0].shape[3];
  float *p = malloc((size_t)(BQ * seq) * sizeof *p);
  if (p == NULL)
    return 2;
  float scale = 1.0f / sqrtf((float)dim);
  for (int64_t hd = 0; hd < heads; hd++) {
    const float *restrict q = (const float *)in[0].data + hd * seq * dim;
    const float *restrict k = (const float *)in[1].data + hd * seq * dim;
    const float *restrict v = (const float *)in[2].data + hd * seq * dim;
    float *restrict o = (float *)out[0].data + hd * seq * dim;
    for (int64_t i0 = 0; i0 < seq; i0 += BQ) {
      int nq = seq - i0 < BQ ? (int)(seq - i0) : BQ;
      float inv[BQ];
      for (int b = 0; b < nq; b++) {
        float *restrict pr = p + b * seq;
        const float *restrict qi = q + (i0 + b) * dim;
        for (int64_t j = 0; j < seq; j++)
          pr[j] = dot(qi, k + j * dim, dim) * scale;
        float m = pr[0];
        for (int64_t j = 1; j < seq; j++) {
          float sj = pr[j];
          m = sj > m ? sj : m;
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < seq; j++) {
          pr[j] = exp_inline(pr[j] - m);
          sum += pr[j];
        }
        inv[b] = 1.0f / sum;
      }
      memset(o + i0 * dim, 0, (size_t)(nq * dim) * sizeof *o);
      for (int64_t j = 0; j < seq; j++) {
        const float *restrict vj = v + j * dim;
        for (int b = 0; b < nq; b++) {
          float w = p[b * seq + j];
          float *restrict oi = o + (i0 + b) * dim;
          for (int64_t d = 0; d < dim; d++)
            oi[d] += w * vj[d];
        }
      }
      for (int b = 0; b < nq; b++)
        for (int64_t d = 0; d < dim; d++)
          o[(i0 + b) * dim + d] *= inv[b];
    }
  }
  free(p);
  return 0;
}
