/* SHA-256 through OpenSSL's libcrypto. */
#ifndef KB_HASH_H
#define KB_HASH_H

#include <stddef.h>

struct kb_error;

/* Incremental SHA-256; the context is opaque and heap-allocated. */
struct kb_sha256;
/* Returns a new context (free with kb_sha256_final_hex or kb_sha256_free) or NULL on
 * ENOMEM/libcrypto failure. */
struct kb_sha256 *kb_sha256_new(void);
/* Adds `len` bytes of `data` (borrowed; may be NULL when `len` is 0) to `h` (borrowed).
 * Returns KB_OK or KB_EINTERNAL. */
int kb_sha256_update(struct kb_sha256 *h, const void *data, size_t len);
/* Writes 64 lowercase hex chars and a NUL into `hex` (caller-owned, 65 bytes) and frees `h`
 * (stolen), also on failure. Returns KB_OK or KB_EINTERNAL (then `hex` is ""). */
int kb_sha256_final_hex(struct kb_sha256 *h, char hex[65]);
/* Frees an unfinished context; NULL is fine. */
void kb_sha256_free(struct kb_sha256 *h);
/* One-shot: SHA-256 of `len` bytes of `data` (borrowed) as hex into `hex` (caller-owned, 65
 * bytes; written only on success, or "" when the digest's last step fails). Errors: KB_ENOMEM
 * (no context), KB_EINTERNAL (libcrypto failed). */
int kb_sha256_hex(const void *data, size_t len, char hex[65], struct kb_error *err);

#endif
