/* Deterministic inputs and dtype conversions (see kb/inputs.h). */
#include "kb/inputs.h"

#include <math.h>
#include <string.h>

#include "kb/error.h"

#define GOLDEN UINT64_C(0x9e3779b97f4a7c15)
#define NORMAL_DRAWS 12

uint64_t kb_rand_mix(uint64_t x) {
  x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

uint64_t kb_rand_key(uint64_t seed, int tensor) {
  return kb_rand_mix(seed + ((uint64_t)tensor + 1) * GOLDEN);
}

uint64_t kb_rand_u64(uint64_t key, uint64_t pos) { return kb_rand_mix(key + (pos + 1) * GOLDEN); }

/* Integer bounds of the integers distribution: [lo, lo + span). Returns 0 when they are unusable
 * (not finite, empty, or wider than 2^62). */
static int integer_range(const struct kb_input_set *set, int64_t *lo, uint64_t *span) {
  double l = ceil(set->low);
  double h = ceil(set->high);
  if (!isfinite(l) || !isfinite(h) || !(h > l) || h - l > 0x1p62 || fabs(l) > 0x1p62 ||
      fabs(h) > 0x1p62)
    return 0;
  *lo = (int64_t)l;
  *span = (uint64_t)((int64_t)h - (int64_t)l);
  return 1;
}

double kb_input_value(const struct kb_input_set *set, uint64_t key, int64_t i) {
  uint64_t pos = (uint64_t)i;
  switch ((enum kb_dist)set->dist) {
  case KB_DIST_UNIFORM: {
    double u = (double)(kb_rand_u64(key, pos) >> 11) * 0x1p-53;
    return set->low + (set->high - set->low) * u;
  }
  case KB_DIST_NORMAL: {
    uint64_t sum = 0;
    for (uint64_t d = 0; d < NORMAL_DRAWS; d++)
      sum += kb_rand_u64(key, pos * NORMAL_DRAWS + d) >> 11;
    double z = (double)sum * 0x1p-53 - 6.0;
    return set->low + set->high * z;
  }
  case KB_DIST_INTEGERS: {
    int64_t lo;
    uint64_t span;
    if (!integer_range(set, &lo, &span))
      return NAN;
    return (double)(lo + (int64_t)(kb_rand_u64(key, pos) % span));
  }
  }
  return NAN;
}

/* floor(v) clamped to [lo, hi]; NaN gives 0. */
static double int_clamp(double v, double lo, double hi) {
  if (isnan(v))
    return 0;
  v = floor(v);
  if (v < lo)
    return lo;
  if (v > hi)
    return hi;
  return v;
}

int kb_dtype_store(int dtype, void *dst, double v) {
  switch ((enum kb_dtype)dtype) {
  case KB_F32: {
    float f = (float)v;
    memcpy(dst, &f, sizeof f);
    return KB_OK;
  }
  case KB_F16: {
    uint16_t h = kb_f32_to_f16((float)v);
    memcpy(dst, &h, sizeof h);
    return KB_OK;
  }
  case KB_BF16: {
    uint16_t h = kb_f32_to_bf16((float)v);
    memcpy(dst, &h, sizeof h);
    return KB_OK;
  }
  case KB_F64:
    memcpy(dst, &v, sizeof v);
    return KB_OK;
  case KB_I32: {
    int32_t x = (int32_t)int_clamp(v, -2147483648.0, 2147483647.0);
    memcpy(dst, &x, sizeof x);
    return KB_OK;
  }
  case KB_I64: {
    int64_t x;
    double c = int_clamp(v, -0x1p63, 0x1p63);
    if (c >= 0x1p63)
      x = INT64_MAX;
    else
      x = (int64_t)c;
    memcpy(dst, &x, sizeof x);
    return KB_OK;
  }
  case KB_U8: {
    uint8_t x = (uint8_t)int_clamp(v, 0.0, 255.0);
    memcpy(dst, &x, sizeof x);
    return KB_OK;
  }
  case KB_BOOL: {
    uint8_t x = (uint8_t)int_clamp(v, 0.0, 1.0);
    memcpy(dst, &x, sizeof x);
    return KB_OK;
  }
  }
  return KB_EINVAL;
}

double kb_dtype_load(int dtype, const void *data, int64_t i) {
  const unsigned char *p = data;
  switch ((enum kb_dtype)dtype) {
  case KB_F32: {
    float f;
    memcpy(&f, p + i * 4, sizeof f);
    return f;
  }
  case KB_F16: {
    uint16_t h;
    memcpy(&h, p + i * 2, sizeof h);
    return kb_f16_to_f32(h);
  }
  case KB_BF16: {
    uint16_t h;
    memcpy(&h, p + i * 2, sizeof h);
    return kb_bf16_to_f32(h);
  }
  case KB_F64: {
    double d;
    memcpy(&d, p + i * 8, sizeof d);
    return d;
  }
  case KB_I32: {
    int32_t x;
    memcpy(&x, p + i * 4, sizeof x);
    return x;
  }
  case KB_I64: {
    int64_t x;
    memcpy(&x, p + i * 8, sizeof x);
    return (double)x;
  }
  case KB_U8:
  case KB_BOOL:
    return p[i];
  }
  return NAN;
}

int kb_inputs_fill(const struct kb_input_set *set, int tensor, int dtype, void *data, int64_t n,
                   struct kb_error *err) {
  int size = kb_dtype_size(dtype);
  if (size == 0)
    return kb_error_set(err, KB_EINVAL, "cannot generate inputs: unknown dtype %d", dtype);
  if (n < 0)
    return kb_error_set(err, KB_EINVAL, "cannot generate inputs: negative element count");
  switch ((enum kb_dist)set->dist) {
  case KB_DIST_UNIFORM:
  case KB_DIST_NORMAL:
    if (!isfinite(set->low) || !isfinite(set->high))
      return kb_error_set(err, KB_EINVAL, "cannot generate inputs: bounds must be finite");
    break;
  case KB_DIST_INTEGERS: {
    int64_t lo;
    uint64_t span;
    if (!integer_range(set, &lo, &span))
      return kb_error_set(err, KB_EINVAL,
                          "cannot generate inputs: integers range [%g, %g) is empty or too wide",
                          set->low, set->high);
    break;
  }
  default:
    return kb_error_set(err, KB_EINVAL, "cannot generate inputs: unknown distribution %d",
                        set->dist);
  }
  uint64_t key = kb_rand_key(set->seed, tensor);
  unsigned char *p = data;
  for (int64_t i = 0; i < n; i++)
    kb_dtype_store(dtype, p + i * size, kb_input_value(set, key, i));
  return KB_OK;
}

static uint32_t f32_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static float bits_f32(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

uint16_t kb_f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) /* infinity, or NaN kept quiet with the top payload bits */
    return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
  int32_t e = (int32_t)exp - 127 + 15;
  if (e >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10)
      return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (h & 1u)))
      h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  /* a carry out of the mantissa bumps the exponent, up to infinity: still correct */
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    h++;
  return (uint16_t)(sign | h);
}

float kb_f16_to_f32(uint16_t h) {
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t exp = ((uint32_t)h >> 10) & 0x1fu;
  uint32_t mant = (uint32_t)h & 0x3ffu;
  if (exp == 0) {
    float v = (float)mant * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31)
    return bits_f32(sign | 0x7f800000u | (mant << 13));
  return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t kb_f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a (quiet) NaN */
    return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

float kb_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }
