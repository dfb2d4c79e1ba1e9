/* Trusted device kernels of the CUDA sandbox: what the evaluator launches around a candidate.
 *
 * Implemented in devkern.cu (built with nvcc as part of kb-sandbox, linked against the shared
 * CUDA runtime). Every function enqueues its work on `stream` (a cudaStream_t; NULL = the legacy
 * default stream) and returns a cudaError_t as an int: 0 on success. Functions that hand a value
 * back to the host (kb__dk_checksum, kb__dk_compare) synchronize `stream` first. Pointers named
 * `dev` are device memory, borrowed. No function allocates memory that outlives its call, except
 * kb__dk_ctx_new.
 *
 * The values and rules are exactly the host's, so the host and CUDA backends agree bit for bit:
 *   - kb__dk_fill draws element i of an input with the counter-based generator of inputs.h
 *     (same key, same positions, same dtype conversions), one thread per element;
 *   - kb__dk_poison writes kb__poison()'s pattern (verify.h);
 *   - kb__dk_compare applies kb__verify()'s rule (|got - want| <= atol + rtol*|want|, NaN and
 *     infinity never pass, bool exactly 0 or 1) and fills a struct kb_verify_report with the same
 *     meaning (first_bad is the lowest failing flat index).
 */
#ifndef KB_SANDBOX_DEVKERN_H
#define KB_SANDBOX_DEVKERN_H

#include <stddef.h>
#include <stdint.h>

#include "verify.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scratch the kernels below need between calls (a reduction buffer, the L2 flush buffer).
 * Opaque; one per sandbox process. */
struct kb_dk_ctx;

/* Creates the scratch on the current device: `flush_bytes` of flush buffer (0 = twice the
 * device's L2 size). Returns 0 or a cudaError_t; `*out` is new, freed with kb__dk_ctx_free. */
int kb__dk_ctx_new(size_t flush_bytes, struct kb_dk_ctx **out);
void kb__dk_ctx_free(struct kb_dk_ctx *c);

/* Fills `n` elements of `dtype` (enum kb_dtype) at `dev` with input tensor `tensor` of the set
 * {seed, dist (enum kb_dist), low, high} (kb/task.h: struct kb_input_set). */
int kb__dk_fill(void *dev, int dtype, int64_t n, uint64_t seed, int tensor, int dist, double low,
               double high, void *stream);

/* Writes the poison pattern over `n` elements of `dtype` at `dev`. */
int kb__dk_poison(void *dev, int dtype, int64_t n, void *stream);

/* A 64-bit checksum of `bytes` bytes at `dev` (order-sensitive; any changed byte changes it
 * with overwhelming probability). Synchronizes `stream`; result in `*sum`. */
int kb__dk_checksum(struct kb_dk_ctx *c, const void *dev, size_t bytes, uint64_t *sum,
                   void *stream);

/* Compares `n` elements of `dtype` at `got_dev` with `want_dev` under kb__verify()'s rule and
 * fills `*rep` (host memory). Synchronizes `stream`. `*pass` gets 1 when every element passed. */
int kb__dk_compare(struct kb_dk_ctx *c, const void *got_dev, const void *want_dev, int dtype,
                  int64_t n, double atol, double rtol, struct kb_verify_report *rep, int *pass,
                  void *stream);

/* Evicts the L2 cache: writes the context's flush buffer (at least twice the L2 size). */
int kb__dk_flush_l2(struct kb_dk_ctx *c, void *stream);

/* XORs `bytes` bytes at `dev` with the key stream of `key` (kb__mask_word of dev.h: 8-byte word
 * w is XORed with kb__mask_word(key, w), a tail shorter than 8 bytes with the low bytes of the
 * next word's), bit-identical to the host's. Applied twice it restores the data: the evaluator
 * keeps its references masked so that a scan of device memory finds nothing usable. */
int kb__dk_mask(void *dev, size_t bytes, uint64_t key, void *stream);

/* A kernel that spins for about `us` microseconds of GPU time (by %globaltimer), so that the
 * launches queued behind it start back to back: timing short kernels without launch gaps. */
int kb__dk_spin(double us, void *stream);

#ifdef __cplusplus
}
#endif
#endif
