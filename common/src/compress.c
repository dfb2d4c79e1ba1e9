/* zstd wrappers (see kb/compress.h). */
#include "kb/compress.h"

#include <zdict.h>
#include <zstd.h>

#include "kb/alloc.h"
#include "kb/error.h"

/* Compresses into a new buffer (see kb_compress); `dict` NULL makes a plain frame. */
static int compress_with(const void *src, size_t len, const void *dict, size_t dict_len,
                         int level, void **out, size_t *out_len, struct kb_error *err) {
  *out = NULL;
  size_t cap = ZSTD_compressBound(len);
  void *dst = kb_malloc(cap);
  ZSTD_CCtx *ctx = dict ? ZSTD_createCCtx() : NULL;
  if (dst == NULL || (dict && ctx == NULL)) {
    kb_free(dst);
    ZSTD_freeCCtx(ctx);
    return kb_error_set(err, KB_ENOMEM, "out of memory compressing %zu bytes", len);
  }
  size_t n = dict ? ZSTD_compress_usingDict(ctx, dst, cap, src, len, dict, dict_len, level)
                  : ZSTD_compress(dst, cap, src, len, level);
  ZSTD_freeCCtx(ctx);
  if (ZSTD_isError(n)) {
    kb_free(dst);
    return kb_error_set(err, KB_EINTERNAL, "zstd: %s", ZSTD_getErrorName(n));
  }
  *out = dst;
  *out_len = n;
  return KB_OK;
}

int kb_compress(const void *src, size_t len, void **out, size_t *out_len, struct kb_error *err) {
  return compress_with(src, len, NULL, 0, 3, out, out_len, err);
}

int kb_compress_dict(const void *src, size_t len, const void *dict, size_t dict_len, int level,
                     void **out, size_t *out_len, struct kb_error *err) {
  if (kb_dict_id(dict, dict_len) == 0) {
    *out = NULL;
    return kb_error_set(err, KB_EINTERNAL, "zstd: not a dictionary (%zu bytes)", dict_len);
  }
  return compress_with(src, len, dict, dict_len, level, out, out_len, err);
}

/* Decompresses with `dict` (NULL: none); see kb_decompress. */
static int decompress_with(const void *src, size_t len, const void *dict, size_t dict_len,
                           size_t max_len, char **out, size_t *out_len, struct kb_error *err) {
  *out = NULL;
  unsigned long long size = ZSTD_getFrameContentSize(src, len);
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
    return kb_error_set(err, KB_EPARSE, "not a zstd frame with a known size");
  if (size > max_len)
    return kb_error_set(err, KB_EPARSE, "zstd frame of %llu bytes exceeds the %zu byte limit",
                        size, max_len);
  unsigned want = kb_frame_dict_id(src, len);
  unsigned have = dict ? kb_dict_id(dict, dict_len) : 0;
  if (want != have)
    return kb_error_set(err, KB_EPARSE, "zstd frame made with dictionary %u, not %u", want,
                        have);
  char *dst = kb_malloc((size_t)size + 1);
  ZSTD_DCtx *ctx = dict ? ZSTD_createDCtx() : NULL;
  if (dst == NULL || (dict && ctx == NULL)) {
    kb_free(dst);
    ZSTD_freeDCtx(ctx);
    return kb_error_set(err, KB_ENOMEM, "out of memory decompressing %llu bytes", size);
  }
  size_t n = dict ? ZSTD_decompress_usingDict(ctx, dst, (size_t)size, src, len, dict, dict_len)
                  : ZSTD_decompress(dst, (size_t)size, src, len);
  ZSTD_freeDCtx(ctx);
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

int kb_decompress(const void *src, size_t len, size_t max_len, char **out, size_t *out_len,
                  struct kb_error *err) {
  return decompress_with(src, len, NULL, 0, max_len, out, out_len, err);
}

int kb_decompress_dict(const void *src, size_t len, const void *dict, size_t dict_len,
                       size_t max_len, char **out, size_t *out_len, struct kb_error *err) {
  return decompress_with(src, len, dict, dict_len, max_len, out, out_len, err);
}

unsigned kb_frame_dict_id(const void *src, size_t len) {
  return ZSTD_getDictID_fromFrame(src, len);
}

unsigned kb_dict_id(const void *dict, size_t dict_len) {
  return dict ? ZSTD_getDictID_fromDict(dict, dict_len) : 0;
}

int kb_dict_train(const void *samples, const size_t *sizes, unsigned n, size_t capacity,
                  void **dict, size_t *dict_len, struct kb_error *err) {
  *dict = NULL;
  void *buf = kb_malloc(capacity);
  if (buf == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory training a %zu byte dictionary",
                        capacity);
  size_t got = ZDICT_trainFromBuffer(buf, capacity, samples, sizes, n);
  if (ZDICT_isError(got)) {
    kb_free(buf);
    return kb_error_set(err, KB_EINVAL, "zstd dictionary from %u samples: %s", n,
                        ZDICT_getErrorName(got));
  }
  *dict = buf;
  *dict_len = got;
  return KB_OK;
}
