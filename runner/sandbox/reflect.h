/* The reflection of the witness's host inputs: each call's window of a request's one draw
 * made new (witness_calls.c, docs/sandbox.md "The witness").
 *
 * Compiled optimized and without the sanitizers in every build (CMakeLists.txt): it runs
 * before each witness call in both processes, so its time is in both clocks, and its noise is
 * the witness's; under ASan at -O0 it took 13 ns an element against 0.35.
 */
#ifndef KB_SANDBOX_REFLECT_H
#define KB_SANDBOX_REFLECT_H

#include <stdint.h>

#include "kb/error.h"
#include "kb/task.h"

/* Reflects in place, about the centre of `set`'s distribution, each of the `n` elements of
 * `dtype` at `data` (borrowed) whose bit is set in the stream `key` (bit i%64 of
 * kb__rand_u64(key, i/64), inputs.h): uniform [low, high) and normal (mean low) are symmetric about their
 * centre, the integers [lo, lo + span) about lo + (span - 1) / 2, so elements drawn from `set`
 * stay a draw of it, and each one's value is known only to code that reads it or draws its bit.
 * The witness's host calls (witness_calls.c): each call's window of the request's one draw is
 * reflected so, which no work done once for the request can answer. An element whose
 * reflection would leave the range its dtype holds (a rounding at a bound) is kept; integer
 * dtypes are reflected only under the integers distribution (the others' floor is not
 * symmetric). Some 0.35 ns an element for f32 here (more for the
 * others: a conversion each). Errors: KB_EINVAL as kb__inputs_fill. */
int kb__inputs_reflect(const struct kb_input_set *set, uint64_t key, int dtype, void *data,
                       int64_t n, struct kb_error *err);

#endif
