/* Deterministic input generation and element-type conversions.
 *
 * Every input element is a pure function of (set seed, tensor index, element index): a
 * counter-based splitmix64 stream, hand-written so that the same task gives bit-identical inputs
 * on every machine, in every process, and later in a CUDA kernel that draws element i in thread i
 * without any sequential state. Values are computed in double, rounded to f32 when the dtype is
 * f32, f16 or bf16 (f16 and bf16 are then rounded from that f32, to nearest even), and converted to
 * the integer dtypes by rounding toward minus infinity and clamping to the dtype's range.
 *
 * Distributions (struct kb_input_set, kb/task.h):
 *   uniform   low + (high - low) * u, u in [0, 1) with 53 random bits
 *   normal    low + high * z, z = (sum of 12 such u) - 6: an Irwin-Hall approximation of a
 *             standard normal (mean 0, variance 1, tails cut at +-6). Chosen over Box-Muller
 *             because it needs only integer sums and one rounding, so no libm (whose log and
 *             cos differ between glibc and CUDA) can change a bit
 *   integers  an integer drawn uniformly from [ceil(low), ceil(high)), then converted
 *
 * The generator (written once in inputs_gen.h, which the CUDA fill kernel includes too; each
 * element uses stream position p = element * draws + draw, where draws is 12 for normal and 1
 * otherwise):
 *   key  = mix(seed + (tensor + 1) * GOLDEN)      mix = the splitmix64 finalizer
 *   x(p) = mix(key + (p + 1) * GOLDEN)            GOLDEN = 0x9e3779b97f4a7c15
 *   u(p) = (x(p) >> 11) * 2^-53
 */
#ifndef KB_SANDBOX_INPUTS_H
#define KB_SANDBOX_INPUTS_H

#include <stdint.h>

#include "kb/task.h"

struct kb_error;

/* The splitmix64 finalizer: a bijective 64-bit mix. */
uint64_t kb__rand_mix(uint64_t x);
/* Key of the stream of tensor `tensor` (0-based position among the task's inputs) of a set. */
uint64_t kb__rand_key(uint64_t seed, int tensor);
/* Raw 64 random bits at stream position `pos` of the stream `key`. */
uint64_t kb__rand_u64(uint64_t key, uint64_t pos);

/* Value of element `i` of the stream `key` under `set`'s distribution, before the dtype
 * conversion (what a f64 input receives). */
double kb__input_value(const struct kb_input_set *set, uint64_t key, int64_t i);

/* Fills `n` elements of `dtype` at `data` (borrowed, caller-sized to n * kb_dtype_size(dtype))
 * with the values of input `tensor` of `set`. Errors: KB_EINVAL for an unknown dtype or
 * distribution, or integer bounds that leave an empty range. */
int kb__inputs_fill(const struct kb_input_set *set, int tensor, int dtype, void *data, int64_t n,
                   struct kb_error *err);

/* IEEE half and bfloat16 conversions; rounding to nearest even, NaN stays NaN, overflow gives
 * infinity. */
uint16_t kb__f32_to_f16(float f);
float kb__f16_to_f32(uint16_t h);
uint16_t kb__f32_to_bf16(float f);
float kb__bf16_to_f32(uint16_t h);

/* Converts `v` to one element of `dtype` stored at `dst` (borrowed) with the rules above.
 * Returns KB_OK or KB_EINVAL for an unknown dtype. */
int kb__dtype_store(int dtype, void *dst, double v);
/* Element `i` of the array `data` (borrowed) of `dtype` as a double; NAN for an unknown dtype.
 * I64 values beyond 2^53 lose their low bits. */
double kb__dtype_load(int dtype, const void *data, int64_t i);
/* `v` as `dtype` holds it (kb__dtype_store's rounding or clamp, read back); NAN for an unknown
 * dtype. */
double kb__dtype_round(int dtype, double v);

#endif
