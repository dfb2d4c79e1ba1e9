/* gelu, tuned: erfc from Abramowitz and Stegun 7.1.28,
 * erfc(a) = 1 / (1 + a1 a + ... + a6 a^6)^16 for a >= 0 (absolute error <= 3e-7), built from
 * multiplications and one division only, so the loop vectorizes (libm's erff is a scalar
 * call). Elements go LANES at a time through a fixed-length inner loop the compiler turns into
 * vector code. */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

// kb:param LANES 4 8 16 32 64
#ifndef LANES
#define LANES 16
#endif

#define A1 0.0705230784f
#define A2 0.0422820123f
#define A3 0.0092705272f
#define A4 0.0001520143f
#define A5 0.0002765672f
#define A6 0.0000430638f

/* x Phi(x) with Phi(x) = 1 - h for x >= 0 and h below, h = erfc(|x| / sqrt 2) / 2, written
 * as 0.5 + copysign(0.5 - h, x): no branch, so the loop vectorizes. Below 0 that loses h's
 * low bits (an absolute error of 6e-8 in Phi), far inside the tolerance. */
static inline float gelu1(float v) {
  float a = fabsf(v) * 0.70710678118654752f;
  float p = 1.0f + a * (A1 + a * (A2 + a * (A3 + a * (A4 + a * (A5 + a * A6)))));
  p = p * p;
  p = p * p;
  p = p * p;
  p = p * p; /* p^16; infinity for large |x|, which makes erfc 0 as it should */
  float half_erfc = 0.5f / p;
  return v * (0.5f + copysignf(0.5f - half_erfc, v));
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  const float *restrict x = in[0].data;
  float *restrict y = out[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++)
      y[i + j] = gelu1(x[i + j]);
  for (; i < n; i++)
    y[i] = gelu1(x[i]);
  return 0;
}
