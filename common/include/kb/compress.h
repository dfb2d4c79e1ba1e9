/* zstd compression of texts stored in Redis (candidate sources and their JSON). */
#ifndef KB_COMPRESS_H
#define KB_COMPRESS_H

#include <stddef.h>

struct kb_error;

/* Compresses `len` bytes of `src` into `*out` (new, `*out_len` bytes). Errors: KB_ENOMEM,
 * KB_EINTERNAL. */
int kb_compress(const void *src, size_t len, void **out, size_t *out_len, struct kb_error *err);
/* Decompresses one zstd frame into `*out` (new, NUL-terminated, `*out_len` bytes without the
 * NUL). Refuses frames that declare more than `max_len` bytes. Errors: KB_EPARSE for a corrupt
 * or oversized frame, KB_ENOMEM. */
int kb_decompress(const void *src, size_t len, size_t max_len, char **out, size_t *out_len,
                  struct kb_error *err);

#endif
