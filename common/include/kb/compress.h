/* zstd compression of texts stored in Redis (candidate sources and their JSON), plain or with a
 * trained dictionary (the candidates of one task share one: common/src/cand_codec.c). */
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
 * the declared size (truncated, corrupt, followed by more bytes, made with a dictionary) or an
 * oversized one, KB_ENOMEM. */
int kb_decompress(const void *src, size_t len, size_t max_len, char **out, size_t *out_len,
                  struct kb_error *err);

/* As kb_compress, with the zstd dictionary `dict` (`dict_len` bytes, borrowed, as
 * kb_dict_train makes it) at zstd level `level`: the frame names the dictionary's id. Errors:
 * KB_ENOMEM, KB_EINTERNAL (zstd failed, e.g. `dict` is not a dictionary). */
int kb_compress_dict(const void *src, size_t len, const void *dict, size_t dict_len, int level,
                     void **out, size_t *out_len, struct kb_error *err);
/* As kb_decompress, for a frame made with `dict` (`dict_len` bytes, borrowed); a frame that
 * names another dictionary is KB_EPARSE ("made with dictionary N, not M"). */
int kb_decompress_dict(const void *src, size_t len, const void *dict, size_t dict_len,
                       size_t max_len, char **out, size_t *out_len, struct kb_error *err);
/* The dictionary id a zstd frame `src` (`len` bytes, borrowed) names: 0 for a frame made
 * without a dictionary, and for input too short or not a frame (kb_decompress then says why). */
unsigned kb_frame_dict_id(const void *src, size_t len);
/* The id of dictionary `dict` (`dict_len` bytes, borrowed); 0 when it is not a zstd
 * dictionary. */
unsigned kb_dict_id(const void *dict, size_t dict_len);
/* Trains a zstd dictionary of at most `capacity` bytes on `n` samples laid end to end in
 * `samples` (borrowed; sample i is `sizes[i]` bytes) into `*dict` (new, kb_free; `*dict_len`
 * bytes). Errors: KB_EINVAL (too few or too small samples to learn from: zstd's message),
 * KB_ENOMEM. */
int kb_dict_train(const void *samples, const size_t *sizes, unsigned n, size_t capacity,
                  void **dict, size_t *dict_len, struct kb_error *err);

#endif
