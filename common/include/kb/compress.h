/* zstd compression of texts stored in Redis (candidate sources and their JSON). */
#ifndef KB_COMPRESS_H
#define KB_COMPRESS_H

#include <stddef.h>

struct kb_error;

/* Compresses `len` bytes of `src` (borrowed) into one zstd frame that declares its size, in
 * `*out` (new, kb_free; `*out_len` bytes). On failure `*out` is NULL and `*out_len` untouched.
 * Errors: KB_ENOMEM, KB_EINTERNAL (zstd failed). */
int kb_compress(const void *src, size_t len, void **out, size_t *out_len, struct kb_error *err);
/* Decompresses `len` bytes of `src` (borrowed), exactly one zstd frame, into `*out` (new,
 * kb_free; NUL-terminated, `*out_len` bytes without the NUL). Refuses, before allocating, a
 * frame that does not declare its size or declares more than `max_len` bytes. On failure `*out`
 * is NULL and `*out_len` untouched. Errors: KB_EPARSE for input that is not one whole frame of
 * the declared size (truncated, corrupt, followed by more bytes) or an oversized one,
 * KB_ENOMEM. */
int kb_decompress(const void *src, size_t len, size_t max_len, char **out, size_t *out_len,
                  struct kb_error *err);

#endif
