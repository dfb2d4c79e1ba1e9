/* Deterministic inputs and dtype conversions (see inputs.h); the generator and the f16/bf16
 * conversions themselves are in inputs_gen.h, shared with the CUDA sandbox's fill kernel. */
#include "inputs.h"

#include <math.h>
#include <string.h>

#include "kb/error.h"
#include "inputs_gen.h"

uint64_t kb__rand_mix(uint64_t x) { return kb_gen_mix(x); }

uint64_t kb__rand_key(uint64_t seed, int tensor) { return kb_gen_key(seed, tensor); }

uint64_t kb__rand_u64(uint64_t key, uint64_t pos) { return kb_gen_u64(key, pos); }

double kb__input_value(const struct kb_input_set *set, uint64_t key, int64_t i) {
  switch ((enum kb_dist)set->dist) {
  case KB_DIST_UNIFORM:
    return kb_gen_uniform(key, i, set->low, set->high);
  case KB_DIST_NORMAL:
    return kb_gen_normal(key, i, set->low, set->high);
  case KB_DIST_INTEGERS: {
    int64_t lo;
    uint64_t span;
    if (!kb_gen_integer_range(set->low, set->high, &lo, &span))
      return NAN;
    return kb_gen_integer(key, i, lo, span);
  }
  }
  return NAN;
}

/* One element of any dtype, as it lies in memory (kb_dtype_size(dtype) bytes of it). */
union element {
  float f32;
  double f64;
  uint16_t half; /* f16 and bf16 bits */
  int32_t i32;
  int64_t i64;
  uint8_t u8; /* u8 and bool */
};

int kb__dtype_store(int dtype, void *dst, double v) {
  union element x;
  switch ((enum kb_dtype)dtype) {
  case KB_F32: x.f32 = (float)v; break;
  case KB_F16: x.half = kb__f32_to_f16((float)v); break;
  case KB_BF16: x.half = kb__f32_to_bf16((float)v); break;
  case KB_F64: x.f64 = v; break;
  case KB_I32: x.i32 = (int32_t)kb_gen_int_clamp(v, -2147483648.0, 2147483647.0); break;
  case KB_I64: {
    double c = kb_gen_int_clamp(v, -0x1p63, 0x1p63);
    x.i64 = c >= 0x1p63 ? INT64_MAX : (int64_t)c;
    break;
  }
  case KB_U8: x.u8 = (uint8_t)kb_gen_int_clamp(v, 0.0, 255.0); break;
  case KB_BOOL: x.u8 = (uint8_t)kb_gen_int_clamp(v, 0.0, 1.0); break;
  default: return KB_EINVAL;
  }
  memcpy(dst, &x, (size_t)kb_dtype_size(dtype));
  return KB_OK;
}

double kb__dtype_load(int dtype, const void *data, int64_t i) {
  int size = kb_dtype_size(dtype);
  if (size == 0)
    return NAN;
  union element x;
  memcpy(&x, (const unsigned char *)data + i * size, (size_t)size);
  switch ((enum kb_dtype)dtype) {
  case KB_F32: return x.f32;
  case KB_F16: return kb__f16_to_f32(x.half);
  case KB_BF16: return kb__bf16_to_f32(x.half);
  case KB_F64: return x.f64;
  case KB_I32: return x.i32;
  case KB_I64: return (double)x.i64;
  case KB_U8:
  case KB_BOOL: return x.u8;
  }
  return NAN;
}

double kb__dtype_round(int dtype, double v) {
  union element x;
  if (kb__dtype_store(dtype, &x, v) != KB_OK)
    return NAN;
  return kb__dtype_load(dtype, &x, 0);
}

int kb__inputs_fill(const struct kb_input_set *set, int tensor, int dtype, void *data, int64_t n,
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
    if (!kb_gen_integer_range(set->low, set->high, &lo, &span))
      return kb_error_set(err, KB_EINVAL,
                          "cannot generate inputs: integers range [%g, %g) is empty or too wide",
                          set->low, set->high);
    break;
  }
  default:
    return kb_error_set(err, KB_EINVAL, "cannot generate inputs: unknown distribution %d",
                        set->dist);
  }
  uint64_t key = kb__rand_key(set->seed, tensor);
  unsigned char *p = data;
  for (int64_t i = 0; i < n; i++)
    kb__dtype_store(dtype, p + i * size, kb__input_value(set, key, i));
  return KB_OK;
}

/* For each byte value, the mask (all ones or zero) of each of its eight bits, lowest first:
 * made once (the first call; the sandbox is one thread). */
static const uint32_t (*byte_masks(void))[8] {
  static uint32_t t[256][8];
  static int made;
  if (!made) {
    for (int b = 0; b < 256; b++)
      for (int j = 0; j < 8; j++)
        t[b][j] = ((b >> j) & 1) ? UINT32_MAX : 0u;
    made = 1;
  }
  return (const uint32_t (*)[8])t;
}

/* The reflection of kb__inputs_reflect for `set`: v -> `sum` - v, kept within [`lo`, `hi`]. */
struct reflection {
  double sum, lo, hi;
};

/* The reflection of `set` for `dtype` into *r; 0 when it leaves the elements as they are (an
 * integer dtype under a distribution other than integers). */
static int reflection_of(const struct kb_input_set *set, int dtype, struct reflection *r) {
  int integer = dtype == KB_I32 || dtype == KB_I64 || dtype == KB_U8 || dtype == KB_BOOL;
  switch ((enum kb_dist)set->dist) {
  case KB_DIST_UNIFORM:
    if (integer)
      return 0;
    r->sum = set->low + set->high;
    r->lo = kb__dtype_round(dtype, set->low);
    r->hi = kb__dtype_round(dtype, set->high);
    return 1;
  case KB_DIST_NORMAL:
    if (integer)
      return 0;
    r->sum = 2.0 * set->low;
    r->lo = -INFINITY;
    r->hi = INFINITY;
    return 1;
  case KB_DIST_INTEGERS: {
    int64_t lo;
    uint64_t span;
    if (!kb_gen_integer_range(set->low, set->high, &lo, &span))
      return 0;
    r->lo = (double)lo;
    r->hi = (double)lo + (double)(span - 1);
    r->sum = r->lo + r->hi;
    return 1;
  }
  }
  return 0;
}

int kb__inputs_reflect(const struct kb_input_set *set, uint64_t key, int dtype, void *data,
                       int64_t n, struct kb_error *err) {
  int size = kb_dtype_size(dtype);
  if (size == 0)
    return kb_error_set(err, KB_EINVAL, "cannot reflect inputs: unknown dtype %d", dtype);
  struct reflection r;
  if (n <= 0 || !reflection_of(set, dtype, &r))
    return KB_OK;
  if (dtype == KB_F32) { /* the common case, without a conversion per element */
    float *x = data;
    float sum = (float)r.sum, lo = (float)r.lo, hi = (float)r.hi;
    const uint32_t(*masks)[8] = byte_masks();
    for (int64_t w = 0; w * 64 < n; w++) {
      uint64_t bits = kb__rand_u64(key, (uint64_t)w);
      int64_t end = n - w * 64 < 64 ? n - w * 64 : 64;
      float *at = x + w * 64;
      /* each bit as a mask, eight from the table at a time, then a select the compiler makes
       * a vector one: a branch on random bits would miss half the time (6.2 ns an element
       * here against 0.35) */
      uint32_t flip[64];
      for (int g = 0; g < 8; g++)
        memcpy(flip + 8 * g, masks[(bits >> (8 * g)) & 0xff], sizeof masks[0]);
      if (end == 64) {
        for (int j = 0; j < 64; j++) {
          float v = at[j];
          float m = sum - v;
          int keep = (flip[j] != 0) & (m >= lo) & (m <= hi);
          at[j] = keep ? m : v;
        }
        continue;
      }
      for (int64_t j = 0; j < end; j++)
        if (flip[j] != 0 && sum - at[j] >= lo && sum - at[j] <= hi)
          at[j] = sum - at[j];
    }
    return KB_OK;
  }
  unsigned char *p = data;
  uint64_t bits = 0;
  for (int64_t i = 0; i < n; i++, bits >>= 1) {
    if (i % 64 == 0)
      bits = kb__rand_u64(key, (uint64_t)(i / 64));
    if (!(bits & 1))
      continue;
    double m = kb__dtype_round(dtype, r.sum - kb__dtype_load(dtype, p, i));
    if (m >= r.lo && m <= r.hi)
      kb__dtype_store(dtype, p + i * size, m);
  }
  return KB_OK;
}

uint16_t kb__f32_to_f16(float f) { return kb_gen_f32_to_f16(f); }

float kb__f16_to_f32(uint16_t h) { return kb_gen_f16_to_f32(h); }

uint16_t kb__f32_to_bf16(float f) { return kb_gen_f32_to_bf16(f); }

float kb__bf16_to_f32(uint16_t h) { return kb_gen_bf16_to_f32(h); }
