/* kb/compress.h: zstd round trips (empty, small, large, binary with NUL bytes), the size limit,
 * refused input (not zstd, truncated, trailing bytes, two frames, no declared size) and
 * allocation failures; a trained dictionary: round trip, a frame read without its dictionary
 * or with another one, a corrupt frame, too little to train on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/compress.h"
#include "kb/error.h"

/* Compresses `len` bytes of `src`, decompresses them with limit `len`, and checks the bytes,
 * the length and the NUL after them. */
static void round_trip(const void *src, size_t len) {
  struct kb_error err = {0};
  void *z = NULL;
  size_t zlen = 0;
  assert_int_equal(kb_compress(src, len, &z, &zlen, &err), KB_OK);
  assert_non_null(z);
  assert_true(zlen > 0);
  char *out = NULL;
  size_t out_len = 12345;
  assert_int_equal(kb_decompress(z, zlen, len, &out, &out_len, &err), KB_OK);
  assert_int_equal(out_len, len);
  if (len > 0)
    assert_memory_equal(out, src, len);
  assert_int_equal(out[len], '\0');
  assert_int_equal(err.code, KB_OK);
  kb_free(out);
  kb_free(z);
}

static void test_round_trips(void **state) {
  (void)state;
  round_trip("", 0);
  round_trip("x", 1);
  const char *text = "__global__ void add(float *y, const float *x) { y[0] += x[0]; }\n";
  round_trip(text, strlen(text));
  /* binary, with NUL bytes, and large enough to span several zstd blocks (128 KiB each) */
  size_t big = 1u << 20;
  unsigned char *b = malloc(big);
  assert_non_null(b);
  uint32_t s = 12345;
  for (size_t i = 0; i < big; i++) {
    s = s * 1103515245u + 12345u;
    b[i] = (unsigned char)(i % 3 == 0 ? 0 : (s >> 16));
  }
  round_trip(b, big);
  free(b);
}

/* Compressed form of `text` (new, kb_free) into *z and *zlen. */
static void compress_text(const char *text, void **z, size_t *zlen) {
  struct kb_error err = {0};
  assert_int_equal(kb_compress(text, strlen(text), z, zlen, &err), KB_OK);
}

/* kb_decompress of `len` bytes of `src` must fail with `code` and exactly `msg`, leaving *out
 * NULL. */
static void expect_refused(const void *src, size_t len, size_t max_len, int code,
                           const char *msg) {
  struct kb_error err = {0};
  char *out = (char *)"untouched";
  size_t out_len = 0;
  int rc = kb_decompress(src, len, max_len, &out, &out_len, &err);
  if (rc != code || err.code != code || strcmp(err.msg, msg) != 0)
    fail_msg("rc %d (recorded %d) \"%s\", want %d \"%s\"", rc, err.code, err.msg, code, msg);
  assert_null(out);
}

static void test_size_limit(void **state) {
  (void)state;
  const char *text = "0123456789abcdef0123456789abcdef";
  void *z = NULL;
  size_t zlen = 0;
  compress_text(text, &z, &zlen);
  expect_refused(z, zlen, 31, KB_EPARSE, "zstd frame of 32 bytes exceeds the 31 byte limit");
  expect_refused(z, zlen, 0, KB_EPARSE, "zstd frame of 32 bytes exceeds the 0 byte limit");
  /* the limit itself is allowed */
  struct kb_error err = {0};
  char *out = NULL;
  size_t out_len = 0;
  assert_int_equal(kb_decompress(z, zlen, 32, &out, &out_len, &err), KB_OK);
  assert_string_equal(out, text);
  kb_free(out);
  kb_free(z);
}

static void test_refuses_bad_frames(void **state) {
  (void)state;
  const char *not_zstd = "this is plain text, not a zstd frame";
  expect_refused(not_zstd, strlen(not_zstd), 1 << 20, KB_EPARSE,
                 "not a zstd frame with a known size");
  expect_refused("", 0, 1 << 20, KB_EPARSE, "not a zstd frame with a known size");

  const char *text = "a text long enough that zstd keeps it as a real block: "
                     "abcdefghijklmnopqrstuvwxyz0123456789 abcdefghijklmnopqrstuvwxyz";
  size_t len = strlen(text);
  void *z = NULL;
  size_t zlen = 0;
  compress_text(text, &z, &zlen);
  /* truncated: the header still declares the size, the payload is cut */
  struct kb_error err = {0};
  char *out = NULL;
  size_t out_len = 0;
  for (size_t cut = 1; cut < zlen; cut++) {
    kb_error_clear(&err);
    int rc = kb_decompress(z, zlen - cut, len, &out, &out_len, &err);
    if (rc != KB_EPARSE)
      fail_msg("frame cut by %zu of %zu bytes: rc %d \"%s\", want KB_EPARSE", cut, zlen, rc,
               err.msg);
    assert_null(out);
  }
  expect_refused(z, zlen - 1, len, KB_EPARSE, "corrupt zstd frame: Src size is incorrect");

  /* one byte after the frame, and a second whole frame after it */
  unsigned char *two = malloc(2 * zlen);
  assert_non_null(two);
  memcpy(two, z, zlen);
  memcpy(two + zlen, z, zlen);
  kb_error_clear(&err);
  assert_int_equal(kb_decompress(two, zlen + 1, len, &out, &out_len, &err), KB_EPARSE);
  assert_non_null(strstr(err.msg, "corrupt zstd frame: "));
  kb_error_clear(&err);
  assert_int_equal(kb_decompress(two, 2 * zlen, 2 * len, &out, &out_len, &err), KB_EPARSE);
  assert_non_null(strstr(err.msg, "corrupt zstd frame: "));
  assert_null(out);
  free(two);
  kb_free(z);
}

/* A frame that does not declare its content size (as a streaming writer makes) is refused:
 * without it the limit cannot be checked before allocating. */
static void test_refuses_unknown_size(void **state) {
  (void)state;
  const char *text = "streamed without a pledged size";
  ZSTD_CCtx *cctx = ZSTD_createCCtx();
  assert_non_null(cctx);
  assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)));
  char z[256];
  size_t zlen = ZSTD_compress2(cctx, z, sizeof z, text, strlen(text));
  ZSTD_freeCCtx(cctx);
  assert_false(ZSTD_isError(zlen));
  assert_int_equal(ZSTD_getFrameContentSize(z, zlen), ZSTD_CONTENTSIZE_UNKNOWN);
  expect_refused(z, zlen, 1 << 20, KB_EPARSE, "not a zstd frame with a known size");
}

static void test_allocation_failures(void **state) {
  (void)state;
  const char *text = "allocation failure paths";
  struct kb_error err = {0};
  void *z = (void *)"untouched";
  size_t zlen = 0;
  kb_alloc_fail_after(0);
  int rc = kb_compress(text, strlen(text), &z, &zlen, &err);
  kb_alloc_fail_after(-1);
  assert_int_equal(rc, KB_ENOMEM);
  assert_string_equal(err.msg, "out of memory compressing 24 bytes");
  assert_null(z);

  compress_text(text, &z, &zlen);
  kb_error_clear(&err);
  char *out = (char *)"untouched";
  size_t out_len = 0;
  kb_alloc_fail_after(0);
  rc = kb_decompress(z, zlen, 100, &out, &out_len, &err);
  kb_alloc_fail_after(-1);
  assert_int_equal(rc, KB_ENOMEM);
  assert_string_equal(err.msg, "out of memory decompressing 24 bytes");
  assert_null(out);
  kb_free(z);
}

/* `n` samples of kernel-like text end to end in `b`, their sizes in `sizes`; `salt` varies
 * them. */
static void make_samples(struct kb_buf *b, size_t *sizes, unsigned n, unsigned salt) {
  kb_buf_reset(b);
  for (unsigned i = 0; i < n; i++) {
    size_t before = b->len;
    for (unsigned l = 0; l < 12; l++)
      assert_int_equal(kb_buf_addf(b, "    acc%u += a[row * K + %u] * b[%u * N + col]; // %s\n",
                                   (i + l) % 5, (i * 7 + l * salt) % 97, l,
                                   l % 2 ? "unrolled" : "tile step"),
                       KB_OK);
    sizes[i] = b->len - before;
  }
}

static void train(unsigned salt, void **dict, size_t *len) {
  struct kb_buf b;
  kb_buf_init(&b);
  size_t sizes[40];
  make_samples(&b, sizes, 40, salt);
  struct kb_error err = {0};
  if (kb_dict_train(b.data, sizes, 40, 4096, dict, len, &err))
    fail_msg("train: %s", err.msg);
  assert_true(kb_dict_id(*dict, *len) != 0);
  kb_buf_release(&b);
}

static void test_dictionary(void **state) {
  (void)state;
  void *d1 = NULL, *d2 = NULL;
  size_t l1 = 0, l2 = 0;
  train(3, &d1, &l1);
  train(11, &d2, &l2);
  assert_true(kb_dict_id(d1, l1) != kb_dict_id(d2, l2));
  const char *text = "    acc2 += a[row * K + 41] * b[7 * N + col]; // unrolled\n"
                     "    acc3 += a[row * K + 12] * b[8 * N + col]; // tile step\n";
  struct kb_error err = {0};
  void *z = NULL, *plain = NULL;
  size_t zlen = 0, plen = 0;
  assert_int_equal(kb_compress_dict(text, strlen(text), d1, l1, 9, &z, &zlen, &err), KB_OK);
  assert_int_equal(kb_compress(text, strlen(text), &plain, &plen, &err), KB_OK);
  assert_int_equal(kb_frame_dict_id(z, zlen), kb_dict_id(d1, l1));
  assert_int_equal(kb_frame_dict_id(plain, plen), 0);
  assert_true(zlen < plen);
  char *out = NULL;
  size_t out_len = 0;
  assert_int_equal(kb_decompress_dict(z, zlen, d1, l1, 1000, &out, &out_len, &err), KB_OK);
  assert_string_equal(out, text);
  kb_free(out);
  /* without its dictionary, with another, and a plain frame given a dictionary */
  char want[128];
  snprintf(want, sizeof want, "zstd frame made with dictionary %u, not 0", kb_dict_id(d1, l1));
  expect_refused(z, zlen, 1000, KB_EPARSE, want);
  out = (char *)"untouched";
  assert_int_equal(kb_decompress_dict(z, zlen, d2, l2, 1000, &out, &out_len, &err), KB_EPARSE);
  snprintf(want, sizeof want, "zstd frame made with dictionary %u, not %u", kb_dict_id(d1, l1),
           kb_dict_id(d2, l2));
  assert_string_equal(err.msg, want);
  assert_null(out);
  kb_error_clear(&err);
  assert_int_equal(kb_decompress_dict(plain, plen, d1, l1, 1000, &out, &out_len, &err),
                   KB_EPARSE);
  /* a corrupt payload and a cut frame: KB_EPARSE, no crash */
  unsigned char *bad = malloc(zlen);
  assert_non_null(bad);
  for (size_t at = 6; at < zlen; at++) {
    memcpy(bad, z, zlen);
    bad[at] ^= 0xa5;
    kb_error_clear(&err);
    int rc = kb_decompress_dict(bad, zlen, d1, l1, 1000, &out, &out_len, &err);
    if (rc == KB_OK) { /* a flip zstd cannot see (no checksum) still gives the declared size */
      assert_int_equal(out_len, strlen(text));
      kb_free(out);
    } else if (rc != KB_EPARSE) {
      fail_msg("byte %zu flipped: rc %d \"%s\"", at, rc, err.msg);
    }
  }
  kb_error_clear(&err);
  assert_int_equal(kb_decompress_dict(z, zlen - 2, d1, l1, 1000, &out, &out_len, &err),
                   KB_EPARSE);
  assert_non_null(strstr(err.msg, "corrupt zstd frame: "));
  free(bad);
  /* a dictionary that is not one */
  kb_free(z);
  kb_error_clear(&err);
  assert_int_equal(kb_compress_dict(text, strlen(text), "not a dictionary", 16, 9, &z, &zlen,
                                    &err),
                   KB_EINTERNAL);
  assert_null(z);
  kb_free(plain);
  kb_free(d1);
  kb_free(d2);
}

static void test_dictionary_too_little(void **state) {
  (void)state;
  size_t sizes[2] = {3, 4};
  void *dict = (void *)"untouched";
  size_t len = 0;
  struct kb_error err = {0};
  assert_int_equal(kb_dict_train("abcdefg", sizes, 2, 4096, &dict, &len, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "zstd dictionary from 2 samples: "));
  assert_null(dict);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trips),
      cmocka_unit_test(test_size_limit),
      cmocka_unit_test(test_refuses_bad_frames),
      cmocka_unit_test(test_refuses_unknown_size),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_dictionary),
      cmocka_unit_test(test_dictionary_too_little),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
