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

uint16_t kb__f32_to_f16(float f) { return kb_gen_f32_to_f16(f); }

float kb__f16_to_f32(uint16_t h) { return kb_gen_f16_to_f32(h); }

uint16_t kb__f32_to_bf16(float f) { return kb_gen_f32_to_bf16(f); }

float kb__bf16_to_f32(uint16_t h) { return kb_gen_bf16_to_f32(h); }
