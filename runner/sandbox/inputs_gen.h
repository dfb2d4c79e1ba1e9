/* The input generator and the f16/bf16 conversions, written once for the host (C) and the device
 * (CUDA): runner/sandbox/inputs.c (kb__inputs_fill, kb__dtype_store, ...) and the sandbox's
 * fill kernel
 * (runner/sandbox/devkern.cu) both include this header, so the two cannot drift apart. The
 * method and the distributions are described in inputs.h.
 *
 * Every function is `static inline` and marked KB_HD: `__host__ __device__` when nvcc compiles
 * the including file, nothing in C. Bit-for-bit agreement needs the same roundings on both
 * sides: each double operation of the value functions goes through KB_GEN_ADD/SUB/MUL, which are
 * the round-to-nearest intrinsics on the device (nvcc would otherwise contract a + b * c into one
 * fused multiply-add, which rounds once where the host, strict C11 without FP contraction,
 * rounds twice) and the plain operators on the host. The f16 and bf16 conversions are integer
 * code rather than CUDA's intrinsics: __float2half_rn agrees on finite values but not on the NaN
 * payload kept here.
 *
 * No function allocates, fails or keeps state; pointers are borrowed.
 */
#ifndef KB_SANDBOX_INPUTS_GEN_H
#define KB_SANDBOX_INPUTS_GEN_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define KB_HD __host__ __device__
#else
#define KB_HD
#endif

#ifdef __CUDA_ARCH__
#define KB_GEN_ADD(a, b) __dadd_rn((a), (b))
#define KB_GEN_SUB(a, b) __dsub_rn((a), (b))
#define KB_GEN_MUL(a, b) __dmul_rn((a), (b))
#else
#define KB_GEN_ADD(a, b) ((a) + (b))
#define KB_GEN_SUB(a, b) ((a) - (b))
#define KB_GEN_MUL(a, b) ((a) * (b))
#endif

#define KB_GEN_GOLDEN UINT64_C(0x9e3779b97f4a7c15) /* the stream's increment */
#define KB_GEN_NORMAL_DRAWS 12                      /* uniform draws summed per normal value */

/* The splitmix64 finalizer: a bijective 64-bit mix. */
static inline KB_HD uint64_t kb_gen_mix(uint64_t x) {
  x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

/* Key of the stream of input `tensor` (0-based) of the set seeded `seed`. */
static inline KB_HD uint64_t kb_gen_key(uint64_t seed, int tensor) {
  return kb_gen_mix(seed + ((uint64_t)tensor + 1) * KB_GEN_GOLDEN);
}

/* Raw 64 random bits at position `pos` of stream `key`. */
static inline KB_HD uint64_t kb_gen_u64(uint64_t key, uint64_t pos) {
  return kb_gen_mix(key + (pos + 1) * KB_GEN_GOLDEN);
}

/* Element `i` of the uniform distribution on [low, high). */
static inline KB_HD double kb_gen_uniform(uint64_t key, int64_t i, double low, double high) {
  /* 53 bits convert exactly; the scaling by 2^-53 is exact too */
  double u = KB_GEN_MUL((double)(kb_gen_u64(key, (uint64_t)i) >> 11), 0x1p-53);
  return KB_GEN_ADD(low, KB_GEN_MUL(KB_GEN_SUB(high, low), u));
}

/* Element `i` of the normal distribution (Irwin-Hall) with mean `low` and deviation `high`. */
static inline KB_HD double kb_gen_normal(uint64_t key, int64_t i, double low, double high) {
  uint64_t sum = 0;
  for (uint64_t d = 0; d < KB_GEN_NORMAL_DRAWS; d++)
    sum += kb_gen_u64(key, (uint64_t)i * KB_GEN_NORMAL_DRAWS + d) >> 11;
  /* the conversion of the 57-bit sum rounds to nearest on both sides */
  double z = KB_GEN_SUB(KB_GEN_MUL((double)sum, 0x1p-53), 6.0);
  return KB_GEN_ADD(low, KB_GEN_MUL(high, z));
}

/* Element `i` of the integers distribution on [lo, lo + span) (span > 0, from
 * kb_gen_integer_range). */
static inline KB_HD double kb_gen_integer(uint64_t key, int64_t i, int64_t lo, uint64_t span) {
  return (double)(lo + (int64_t)(kb_gen_u64(key, (uint64_t)i) % span));
}

/* The integer bounds of the integers distribution: [ceil(low), ceil(high)) as `*lo` and `*span`.
 * Returns 0 when they are unusable (not finite, empty, or wider than 2^62). */
static inline int kb_gen_integer_range(double low, double high, int64_t *lo, uint64_t *span) {
  double l = ceil(low);
  double h = ceil(high);
  if (!isfinite(l) || !isfinite(h) || !(h > l) || h - l > 0x1p62 || fabs(l) > 0x1p62 ||
      fabs(h) > 0x1p62)
    return 0;
  *lo = (int64_t)l;
  *span = (uint64_t)((int64_t)h - (int64_t)l);
  return 1;
}

/* floor(v) clamped to [lo, hi]; NaN gives 0 (the conversion to the integer dtypes). */
static inline KB_HD double kb_gen_int_clamp(double v, double lo, double hi) {
  if (isnan(v))
    return 0;
  v = floor(v);
  if (v < lo)
    return lo;
  if (v > hi)
    return hi;
  return v;
}

/* An f32 and its bits: the bit casts below, the same on host and device. */
union kb_gen_f32 {
  float f;
  uint32_t bits;
};

static inline KB_HD uint32_t kb_gen_f32_bits(float f) {
  union kb_gen_f32 c;
  c.f = f;
  return c.bits;
}

static inline KB_HD float kb_gen_bits_f32(uint32_t x) {
  union kb_gen_f32 c;
  c.bits = x;
  return c.f;
}

/* f32 to IEEE half, rounding to nearest even; NaN stays a quiet NaN with its top payload bits,
 * overflow gives infinity. */
static inline KB_HD uint16_t kb_gen_f32_to_f16(float f) {
  uint32_t x = kb_gen_f32_bits(f);
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

/* IEEE half to f32, exact (a subnormal's mant * 2^-24 is exact in f32). */
static inline KB_HD float kb_gen_f16_to_f32(uint16_t h) {
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t exp = ((uint32_t)h >> 10) & 0x1fu;
  uint32_t mant = (uint32_t)h & 0x3ffu;
  if (exp == 0) {
    float v = (float)mant * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31)
    return kb_gen_bits_f32(sign | 0x7f800000u | (mant << 13));
  return kb_gen_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

/* f32 to bfloat16, rounding to nearest even; NaN stays a (quiet) NaN. */
static inline KB_HD uint16_t kb_gen_f32_to_bf16(float f) {
  uint32_t x = kb_gen_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* bfloat16 to f32, exact. */
static inline KB_HD float kb_gen_bf16_to_f32(uint16_t h) {
  return kb_gen_bits_f32((uint32_t)h << 16);
}

#endif
