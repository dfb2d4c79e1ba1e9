/* Allocation wrappers: every heap allocation kernelbrain's own code makes goes through these
 * (the libraries it calls, jansson, zstd, libcrypto, hiredis, allocate on their own; a test may
 * route jansson through them with json_set_alloc_funcs).
 *
 * Sizes are overflow-checked (n * size never wraps). For fault-injection tests,
 * kb_alloc_fail_after(n) lets the next n allocations succeed and makes every one after them
 * fail until disarmed; this lets a test walk every failure path of a function. All functions
 * return NULL on failure; callers map that to KB_ENOMEM. kb_free() accepts NULL.
 */
#ifndef KB_ALLOC_H
#define KB_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" { /* includable from the CUDA sources (C++) */
#endif

/* Returns new memory of `size` bytes (uninitialised), or NULL. size 0 allocates 1 byte. */
void *kb_malloc(size_t size);
/* Returns new zeroed memory for `n` objects of `size` bytes, or NULL (also on overflow). */
void *kb_calloc(size_t n, size_t size);
/* Resizes `p` (stolen; may be NULL) to `n` * `size` bytes. Returns the new block (new), or NULL
 * with `p` left untouched and still owned by the caller. */
void *kb_reallocarray(void *p, size_t n, size_t size);
/* Returns a new copy of `s` (borrowed, not NULL), or NULL. */
char *kb_strdup(const char *s);
/* Returns a new NUL-terminated copy of at most `n` bytes of `s` (borrowed; read up to its NUL
 * or `n` bytes), or NULL. */
char *kb_strndup(const char *s, size_t n);
/* Frees memory from the functions above (stolen); NULL is fine. */
void kb_free(void *p);

/* Test hook: after `n` more successful allocations, every allocation fails until
 * kb_alloc_fail_after(-1) disarms it. -1 (the default) never fails. */
void kb_alloc_fail_after(long n);

#ifdef __cplusplus
}
#endif

#endif
