/* zstd wrappers (see kb/compress.h). */
#include "kb/compress.h"

#include <zstd.h>

#include "kb/alloc.h"
#include "kb/error.h"

int kb_compress(const void *src, size_t len, void **out, size_t *out_len, struct kb_error *err) {
  *out = NULL;
  size_t cap = ZSTD_compressBound(len);
  void *dst = kb_malloc(cap);
  if (dst == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory compressing %zu bytes", len);
  size_t n = ZSTD_compress(dst, cap, src, len, 3);
  if (ZSTD_isError(n)) {
    kb_free(dst);
    return kb_error_set(err, KB_EINTERNAL, "zstd: %s", ZSTD_getErrorName(n));
  }
  *out = dst;
  *out_len = n;
  return KB_OK;
}

int kb_decompress(const void *src, size_t len, size_t max_len, char **out, size_t *out_len,
                  struct kb_error *err) {
  *out = NULL;
  unsigned long long size = ZSTD_getFrameContentSize(src, len);
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
    return kb_error_set(err, KB_EPARSE, "not a zstd frame with a known size");
  if (size > max_len)
    return kb_error_set(err, KB_EPARSE, "zstd frame of %llu bytes exceeds the %zu byte limit",
                        size, max_len);
  char *dst = kb_malloc((size_t)size + 1);
  if (dst == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory decompressing %llu bytes", size);
  size_t n = ZSTD_decompress(dst, (size_t)size, src, len);
  if (ZSTD_isError(n) || n != size) {
    kb_free(dst);
    return kb_error_set(err, KB_EPARSE, "corrupt zstd frame: %s",
                        ZSTD_isError(n) ? ZSTD_getErrorName(n) : "size mismatch");
  }
  dst[n] = '\0';
  *out = dst;
  *out_len = n;
  return KB_OK;
}
