/* The stored form of candidates (common/src/cand_codec_private.h) against a real server: plain
 * frames for a task's first KB__CAND_SAMPLES candidates, then its dictionary in
 * kb:{cid}:zdict:<task> and frames made with it, every candidate read back equal by a process
 * that knows no dictionary yet; a value stored before dictionaries read as it is; corrupt,
 * truncated and orphaned values refused with KB_EPARSE naming the key; a writer whose
 * dictionary vanished from Redis goes back to plain frames. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cand_codec_private.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/catalog.h"
#include "kb/compress.h"
#include "kb/error.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "queue_helpers.h"
#include "redis_group.h"

#define TASK "t-codec"
#define N (KB__CAND_SAMPLES + 8)

/* A CUDA-like source of about 2 KB, different for each `i`. */
static void make_source(int i, struct kb_buf *b) {
  static const char *const lines[] = {
      "    acc += a[row * K + k] * b[k * N + col];\n",
      "    __syncthreads();\n",
      "    s_a[threadIdx.y][threadIdx.x] = a[row * K + t * TILE + threadIdx.x];\n",
      "    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);\n",
      "    // tile the output so that each block computes a TILE x TILE square\n",
      "    if (idx < n) out[idx] = fmaxf(acc, 0.0f);\n",
      "    float m = fmaxf(m, in[idx]);\n"};
  kb_buf_reset(b);
  assert_int_equal(kb_buf_addf(b, "#include <cuda_runtime.h>\n// candidate %d\n"
                                  "__global__ void k%d(const float *a, float *out, int n) {\n",
                               i, i),
                   KB_OK);
  uint32_t s = 2654435761u * (uint32_t)(i + 1);
  for (int l = 0; l < 40; l++) {
    s = s * 1103515245u + 12345u;
    assert_int_equal(kb_buf_adds(b, lines[(s >> 16) % 7]), KB_OK);
    if (s % 3 == 0)
      assert_int_equal(kb_buf_addf(b, "    float x%d = __expf(in[idx]) * %d.%03df;\n", l,
                                   (int)(s % 97), (int)(s % 1000)),
                       KB_OK);
  }
  assert_int_equal(kb_buf_adds(b, "}\n"), KB_OK);
}

static void make_candidate(int i, const char *parent, struct kb_candidate *c) {
  struct kb_buf src;
  kb_buf_init(&src);
  make_source(i, &src);
  char name[32];
  snprintf(name, sizeof name, "llm-%03d", i);
  struct kb_error err = {0};
  if (kb_candidate_init(c, TASK, name, i ? "llm" : "seed", src.data, "", "", &err))
    fail_msg("candidate %d: %s", i, err.msg);
  if (parent)
    snprintf(c->parents[0], sizeof c->parents[0], "%s", parent);
  kb_buf_release(&src);
}

/* The stored "json" field of candidate `id` of `cid` into *out (new, kb_free). */
static size_t stored(struct kb_redis *r, const char *cid, const char *id, char **out) {
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(r, &rep, &err, "HGET kb:{%s}:cand:%s json", cid, id))
    fail_msg("HGET: %s", err.msg);
  assert_int_equal(rep->type, REDIS_REPLY_STRING);
  *out = kb_malloc(rep->len);
  assert_non_null(*out);
  memcpy(*out, rep->str, rep->len);
  size_t len = rep->len;
  freeReplyObject(rep);
  return len;
}

static void store_value(struct kb_redis *r, const char *cid, const char *id, const void *v,
                        size_t len) {
  char key[200];
  snprintf(key, sizeof key, "kb:{%s}:cand:%s", cid, id);
  const char *argv[] = {"HSET", key, "json", v};
  size_t lens[] = {4, strlen(key), 4, len};
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_command(r, 4, argv, lens, 0, &rep, &err))
    fail_msg("HSET %s: %s", key, err.msg);
  freeReplyObject(rep);
}

/* Reading `id` must fail with KB_EPARSE and a message holding `key` and `words`. */
static void expect_refused2(struct kb_queue *q, const char *id, const char *words,
                            const char *or_words);

static void expect_refused(struct kb_queue *q, const char *id, const char *words) {
  expect_refused2(q, id, words, NULL);
}

/* Reading `id` must fail with KB_EPARSE and a message holding `key` and `words` (or
 * `or_words`, when not NULL). */
static void expect_refused2(struct kb_queue *q, const char *id, const char *words,
                            const char *or_words) {
  struct kb_candidate c;
  struct kb_error err = {0};
  int rc = kb_catalog_get_candidate(q, id, &c, &err);
  char key[200];
  snprintf(key, sizeof key, "kb:{%s}:cand:%s", q->cid, id);
  int said = strstr(err.msg, words) != NULL || (or_words && strstr(err.msg, or_words) != NULL);
  if (rc != KB_EPARSE || strstr(err.msg, key) == NULL || !said)
    fail_msg("read of %.12s: rc %s \"%s\", want KB_EPARSE naming %s and \"%s\"", id,
             kb_err_name(rc), err.msg, key, words);
}

static void test_round_trip_and_refusals(void **state) {
  (void)state;
  kb__cand_codec_reset();
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  kbq_make_campaign(r, "codec", 1000, 60000, 3, &q);
  struct kb_candidate c[N];
  struct kb_error err = {0};
  for (int i = 0; i < N; i++) {
    make_candidate(i, i ? c[i - 1].id : NULL, &c[i]);
    if (kb_catalog_put_candidate(&q, &c[i], &err))
      fail_msg("put %d: %s", i, err.msg);
  }
  /* the dictionary, and which frames use it */
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "GET kb:{codec}:zdict:" TASK), KB_OK);
  assert_int_equal(rep->type, REDIS_REPLY_STRING);
  unsigned dict_id = kb_dict_id(rep->str, rep->len);
  assert_true(dict_id != 0);
  assert_true(rep->len <= KB__CAND_DICT_BYTES);
  freeReplyObject(rep);
  size_t plain_bytes = 0, dict_bytes = 0;
  for (int i = 0; i < N; i++) {
    char *v = NULL;
    size_t len = stored(r, "codec", c[i].id, &v);
    unsigned want = i < KB__CAND_SAMPLES ? 0 : dict_id;
    if (kb_frame_dict_id(v, len) != want)
      fail_msg("candidate %d: frame names dictionary %u, want %u", i, kb_frame_dict_id(v, len),
               want);
    *(i < KB__CAND_SAMPLES ? &plain_bytes : &dict_bytes) += len;
    kb_free(v);
  }
  /* the dictionary must pay: its frames smaller than the plain ones on average */
  if (dict_bytes * KB__CAND_SAMPLES >= plain_bytes * (N - KB__CAND_SAMPLES))
    fail_msg("dictionary frames %zu bytes for %d, plain %zu for %d", dict_bytes,
             N - KB__CAND_SAMPLES, plain_bytes, KB__CAND_SAMPLES);
  /* read back as a process that has no dictionary cached, then with it cached */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 0)
      kb__cand_codec_reset();
    for (int i = 0; i < N; i++) {
      struct kb_candidate got;
      if (kb_catalog_get_candidate(&q, c[i].id, &got, &err))
        fail_msg("pass %d, get %d: %s", pass, i, err.msg);
      assert_string_equal(got.source, c[i].source);
      assert_string_equal(got.name, c[i].name);
      assert_string_equal(got.parents[0], c[i].parents[0]);
      kb_candidate_release(&got);
    }
  }
  /* a value stored before dictionaries (a plain frame of the JSON) reads as it is */
  char *json = NULL;
  void *z = NULL;
  size_t zlen = 0;
  assert_int_equal(kb_candidate_to_json(&c[N - 1], &json, &err), KB_OK);
  assert_int_equal(kb_compress(json, strlen(json), &z, &zlen, &err), KB_OK);
  store_value(r, "codec", c[N - 1].id, z, zlen);
  struct kb_candidate got;
  assert_int_equal(kb_catalog_get_candidate(&q, c[N - 1].id, &got, &err), KB_OK);
  assert_string_equal(got.source, c[N - 1].source);
  kb_candidate_release(&got);
  kb_free(z);
  kb_free(json);

  /* a corrupt frame made with the dictionary: a byte of its payload flipped, then cut short */
  char *v = NULL;
  size_t len = stored(r, "codec", c[N - 2].id, &v);
  v[len / 2] ^= 0x5a;
  store_value(r, "codec", c[N - 2].id, v, len);
  /* a flipped byte inside a literals section still decodes (the frames carry no checksum): the
   * content-addressed id, checked on every read, refuses it then */
  expect_refused2(&q, c[N - 2].id, "corrupt zstd frame", "does not match the candidate's");
  v[len / 2] ^= 0x5a;
  store_value(r, "codec", c[N - 2].id, v, len - 3);
  expect_refused(&q, c[N - 2].id, "corrupt zstd frame");
  kb_free(v);
  /* the dictionary replaced by something else, then gone: a clear refusal, after a reset (a
   * process that has none cached) */
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "SET kb:{codec}:zdict:" TASK " garbage"),
                   KB_OK);
  freeReplyObject(rep);
  kb__cand_codec_reset();
  expect_refused(&q, c[N - 3].id, "not a zstd dictionary");
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "DEL kb:{codec}:zdict:" TASK), KB_OK);
  freeReplyObject(rep);
  expect_refused(&q, c[N - 3].id, "is not in redis");

  for (int i = 0; i < N; i++)
    kb_candidate_release(&c[i]);
  kb__cand_codec_reset();
  kb_redis_free(r);
}

/* A writer that trained a dictionary, whose dictionary key is then deleted (a flushed or new
 * server with the same campaign id): its next candidate is a plain frame, readable. */
static void test_writer_after_dictionary_gone(void **state) {
  (void)state;
  kb__cand_codec_reset();
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  kbq_make_campaign(r, "codec-gone", 1000, 60000, 3, &q);
  struct kb_error err = {0};
  struct kb_candidate c;
  for (int i = 0; i <= KB__CAND_SAMPLES; i++) {
    make_candidate(i, NULL, &c);
    if (kb_catalog_put_candidate(&q, &c, &err))
      fail_msg("put %d: %s", i, err.msg);
    if (i < KB__CAND_SAMPLES)
      kb_candidate_release(&c);
  }
  char *v = NULL;
  size_t len = stored(r, "codec-gone", c.id, &v);
  assert_true(kb_frame_dict_id(v, len) != 0); /* the cached dictionary was used */
  kb_free(v);
  kb_candidate_release(&c);
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "DEL kb:{codec-gone}:zdict:" TASK), KB_OK);
  freeReplyObject(rep);
  make_candidate(1000, NULL, &c);
  assert_int_equal(kb_catalog_put_candidate(&q, &c, &err), KB_OK);
  len = stored(r, "codec-gone", c.id, &v);
  assert_int_equal(kb_frame_dict_id(v, len), 0);
  kb_free(v);
  struct kb_candidate got;
  assert_int_equal(kb_catalog_get_candidate(&q, c.id, &got, &err), KB_OK);
  assert_string_equal(got.source, c.source);
  kb_candidate_release(&got);
  kb_candidate_release(&c);
  kb__cand_codec_reset();
  kb_redis_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_and_refusals),
      cmocka_unit_test(test_writer_after_dictionary_gone),
  };
  return cmocka_run_group_tests(tests, kbt_redis_group_setup, kbt_redis_group_teardown);
}
