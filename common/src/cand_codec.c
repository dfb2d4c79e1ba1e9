/* The stored form of candidates: zstd frames, plain or with the task's dictionary (see
 * cand_codec_private.h). */
#include "cand_codec_private.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/compress.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/redis.h"

/* What the process knows of one task's dictionary. */
struct entry {
  char cid[KB_ID_MAX];
  char task[KB_ID_MAX];
  void *dict;                      /* the dictionary (owned), NULL until known */
  size_t dict_len;                 /* bytes */
  unsigned dict_id;                /* its zstd id; 0 without one */
  int looked;                      /* 1 once a writer asked Redis for it */
  int training;                    /* 1 while a thread trains from the samples */
  struct kb_buf samples;           /* plain frames stored so far, end to end */
  size_t sizes[KB__CAND_SAMPLES];  /* bytes of each */
  unsigned n;                      /* frames in samples */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry **entries;     /* the cache (owned), under lock */
static size_t n_entries, cap_entries;

/* The entry of (cid, task), or NULL; call with the lock held. */
static struct entry *find(const char *cid, const char *task) {
  for (size_t i = 0; i < n_entries; i++)
    if (strcmp(entries[i]->task, task) == 0 && strcmp(entries[i]->cid, cid) == 0)
      return entries[i];
  return NULL;
}

/* The entry of (cid, task), added when new; NULL on ENOMEM. Call with the lock held. */
static struct entry *find_or_add(const char *cid, const char *task) {
  struct entry *e = find(cid, task);
  if (e)
    return e;
  if (n_entries == cap_entries) {
    size_t cap = cap_entries ? 2 * cap_entries : 64;
    struct entry **grown = kb_reallocarray(entries, cap, sizeof *grown);
    if (grown == NULL)
      return NULL;
    entries = grown;
    cap_entries = cap;
  }
  e = kb_calloc(1, sizeof *e);
  if (e == NULL)
    return NULL;
  snprintf(e->cid, sizeof e->cid, "%s", cid);
  snprintf(e->task, sizeof e->task, "%s", task);
  kb_buf_init(&e->samples);
  entries[n_entries++] = e;
  return e;
}

static void drop_dict(struct entry *e) {
  kb_free(e->dict);
  e->dict = NULL;
  e->dict_len = 0;
  e->dict_id = 0;
}

void kb__cand_codec_reset(void) {
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < n_entries; i++) {
    drop_dict(entries[i]);
    kb_buf_release(&entries[i]->samples);
    kb_free(entries[i]);
  }
  kb_free(entries);
  entries = NULL;
  n_entries = cap_entries = 0;
  pthread_mutex_unlock(&lock);
}

/* Caches a copy of `dict` as the dictionary of (cid, task), replacing the one cached. */
static int cache_dict(const char *cid, const char *task, const void *dict, size_t len,
                      struct kb_error *err) {
  void *copy = kb_malloc(len);
  if (copy)
    memcpy(copy, dict, len);
  pthread_mutex_lock(&lock);
  struct entry *e = copy ? find_or_add(cid, task) : NULL;
  if (e) {
    drop_dict(e);
    e->dict = copy;
    e->dict_len = len;
    e->dict_id = kb_dict_id(dict, len);
    e->looked = 1;
  }
  pthread_mutex_unlock(&lock);
  if (e == NULL) {
    kb_free(copy);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  return KB_OK;
}

/* A copy of the cached dictionary of (cid, task) in `*dict` (new, or NULL when none is cached,
 * or none of id `want` when `want` is not 0); `*looked` says whether a writer asked Redis. */
static int cached_dict(const char *cid, const char *task, unsigned want, void **dict,
                       size_t *len, unsigned *id, int *looked, struct kb_error *err) {
  *dict = NULL;
  int rc = KB_OK;
  pthread_mutex_lock(&lock);
  struct entry *e = find(cid, task);
  *looked = e ? e->looked : 0;
  if (e && e->dict && (want == 0 || e->dict_id == want)) {
    *dict = kb_malloc(e->dict_len);
    if (*dict == NULL) {
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    } else {
      memcpy(*dict, e->dict, e->dict_len);
      *len = e->dict_len;
      *id = e->dict_id;
    }
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

static int dict_key(const struct kb_queue *q, const char *task, char *key, size_t size,
                    struct kb_error *err) {
  char suffix[KB_ID_MAX + 16];
  snprintf(suffix, sizeof suffix, KB_KEY_ZDICT_FMT, task);
  if (kb_queue_key(q, key, size, suffix))
    return kb_error_set(err, KB_EINVAL, "task id \"%s\" too long for a key", task);
  return KB_OK;
}

/* GET of the task's dictionary into `*dict` (new; NULL when the key does not exist). A value
 * that is not a zstd dictionary is KB_EPARSE naming the key. */
static int fetch_dict(struct kb_queue *q, const char *task, void **dict, size_t *len,
                      struct kb_error *err) {
  *dict = NULL;
  char key[200];
  int rc = dict_key(q, task, key, sizeof key, err);
  if (rc)
    return rc;
  const char *argv[] = {"GET", key};
  redisReply *rep = NULL;
  rc = kb_redis_command(q->redis, 2, argv, NULL, 0, &rep, err);
  if (rc)
    return rc;
  if (rep->type == REDIS_REPLY_STRING) {
    if (kb_dict_id(rep->str, rep->len) == 0)
      rc = kb_error_set(err, KB_EPARSE, "%s: not a zstd dictionary (%zu bytes)", key,
                        rep->len);
    else if ((*dict = kb_malloc(rep->len)) == NULL)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    else {
      memcpy(*dict, rep->str, rep->len);
      *len = rep->len;
    }
  } else if (rep->type != REDIS_REPLY_NIL) {
    rc = kb_error_set(err, KB_EREDIS, "GET %s: unexpected reply", key);
  }
  freeReplyObject(rep);
  return rc;
}

/* 1 in `*same` when Redis still holds dictionary `id` for the task (its id is bytes 4-7 of a
 * zstd dictionary, little endian). */
static int still_there(struct kb_queue *q, const char *task, unsigned id, int *same,
                       struct kb_error *err) {
  *same = 0;
  char key[200];
  int rc = dict_key(q, task, key, sizeof key, err);
  if (rc)
    return rc;
  const char *argv[] = {"GETRANGE", key, "4", "7"};
  redisReply *rep = NULL;
  rc = kb_redis_command(q->redis, 4, argv, NULL, 0, &rep, err);
  if (rc)
    return rc;
  if (rep->type == REDIS_REPLY_STRING && rep->len == 4) {
    const unsigned char *b = (const unsigned char *)rep->str;
    unsigned got = (unsigned)b[0] | (unsigned)b[1] << 8 | (unsigned)b[2] << 16 |
                   (unsigned)b[3] << 24;
    *same = got == id;
  }
  freeReplyObject(rep);
  return KB_OK;
}

/* The dictionary a writer uses for the task: the cached one while Redis holds it, else the
 * one in Redis the first time the process looks; `*dict` NULL when there is none. */
static int writer_dict(struct kb_queue *q, const char *task, void **dict, size_t *len,
                       struct kb_error *err) {
  unsigned id = 0;
  int looked = 0;
  int rc = cached_dict(q->cid, task, 0, dict, len, &id, &looked, err);
  if (rc == KB_OK && *dict) {
    int same = 0;
    rc = still_there(q, task, id, &same, err);
    if (rc == KB_OK && same)
      return KB_OK;
    kb_free(*dict);
    *dict = NULL;
    looked = 0; /* gone or replaced: ask again, else sample again */
    pthread_mutex_lock(&lock);
    struct entry *e = find(q->cid, task);
    if (e && e->dict_id == id)
      drop_dict(e);
    pthread_mutex_unlock(&lock);
  }
  if (rc || looked)
    return rc;
  rc = fetch_dict(q, task, dict, len, err);
  if (rc == KB_OK && *dict)
    return cache_dict(q->cid, task, *dict, *len, err);
  if (rc == KB_OK) {
    pthread_mutex_lock(&lock);
    struct entry *e = find_or_add(q->cid, task);
    if (e)
      e->looked = 1;
    pthread_mutex_unlock(&lock);
    if (e == NULL)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  return rc;
}

/* Trains a dictionary from `n` plain frames end to end in `frames` (sizes in `sizes`), stores
 * it unless the task has one (SET NX) and caches what Redis then holds. A sample set zstd
 * cannot learn from is not an error: the task stays plain. */
static int train(struct kb_queue *q, const char *task, const struct kb_buf *frames,
                 const size_t *sizes, unsigned n, struct kb_error *err) {
  struct kb_buf text;
  kb_buf_init(&text);
  size_t lens[KB__CAND_SAMPLES];
  int rc = KB_OK;
  const char *p = frames->data;
  for (unsigned i = 0; i < n && rc == KB_OK; i++) {
    char *json = NULL;
    rc = kb_decompress(p, sizes[i], 16u << 20, &json, &lens[i], err);
    if (rc == KB_OK)
      rc = kb_buf_add(&text, json, lens[i]);
    kb_free(json);
    p += sizes[i];
  }
  void *dict = NULL;
  size_t len = 0;
  struct kb_error terr = {0};
  if (rc == KB_OK) {
    rc = kb_dict_train(text.data, lens, n, KB__CAND_DICT_BYTES, &dict, &len, &terr);
    if (rc == KB_ENOMEM)
      kb_error_set(err, rc, "%s", terr.msg);
    else if (rc)
      rc = KB_OK; /* nothing to learn: stay plain */
  }
  char key[200];
  if (rc == KB_OK && dict)
    rc = dict_key(q, task, key, sizeof key, err);
  if (rc == KB_OK && dict) {
    const char *argv[] = {"SET", key, dict, "NX"};
    size_t argl[] = {3, strlen(key), len, 2};
    redisReply *rep = NULL;
    rc = kb_redis_command(q->redis, 4, argv, argl, 0, &rep, err);
    if (rep)
      freeReplyObject(rep);
  }
  kb_free(dict);
  dict = NULL;
  if (rc == KB_OK && len)
    rc = fetch_dict(q, task, &dict, &len, err);
  if (rc == KB_OK && dict)
    rc = cache_dict(q->cid, task, dict, len, err);
  kb_free(dict);
  kb_buf_release(&text);
  return rc;
}

/* Keeps plain frame `z` of the task as a sample; the KB__CAND_SAMPLES-th trains. */
static int add_sample(struct kb_queue *q, const char *task, const void *z, size_t zlen,
                      struct kb_error *err) {
  struct kb_buf frames;
  kb_buf_init(&frames);
  size_t sizes[KB__CAND_SAMPLES];
  unsigned n = 0;
  int rc = KB_OK;
  pthread_mutex_lock(&lock);
  struct entry *e = find_or_add(q->cid, task);
  if (e == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  } else if (!e->dict && !e->training && e->n < KB__CAND_SAMPLES) {
    rc = kb_buf_add(&e->samples, z, zlen);
    if (rc == KB_OK)
      e->sizes[e->n++] = zlen;
    if (rc == KB_OK && e->n == KB__CAND_SAMPLES) {
      frames = e->samples; /* moved out: trained without the lock */
      kb_buf_init(&e->samples);
      memcpy(sizes, e->sizes, sizeof sizes);
      n = e->n;
      e->n = 0;
      e->training = 1;
    }
    if (rc)
      kb_error_set(err, rc, "out of memory");
  }
  pthread_mutex_unlock(&lock);
  if (n == 0)
    return rc;
  rc = train(q, task, &frames, sizes, n, err);
  pthread_mutex_lock(&lock);
  e->training = 0;
  pthread_mutex_unlock(&lock);
  kb_buf_release(&frames);
  return rc;
}

int kb__cand_encode(struct kb_queue *q, const char *task, const char *json, size_t len,
                    void **out, size_t *out_len, struct kb_error *err) {
  *out = NULL;
  void *dict = NULL;
  size_t dict_len = 0;
  int rc = writer_dict(q, task, &dict, &dict_len, err);
  if (rc == KB_OK && dict)
    rc = kb_compress_dict(json, len, dict, dict_len, KB__CAND_DICT_LEVEL, out, out_len, err);
  else if (rc == KB_OK)
    rc = kb_compress(json, len, out, out_len, err);
  if (rc == KB_OK && dict == NULL)
    rc = add_sample(q, task, *out, *out_len, err);
  if (rc) {
    kb_free(*out);
    *out = NULL;
  }
  kb_free(dict);
  return rc;
}

int kb__cand_decode(struct kb_queue *q, const char *task, const void *z, size_t zlen,
                    size_t max_len, char **json, size_t *json_len, struct kb_error *err) {
  *json = NULL;
  unsigned want = kb_frame_dict_id(z, zlen);
  if (want == 0)
    return kb_decompress(z, zlen, max_len, json, json_len, err);
  void *dict = NULL;
  size_t len = 0;
  unsigned id = 0;
  int looked = 0;
  int rc = cached_dict(q->cid, task, want, &dict, &len, &id, &looked, err);
  if (rc == KB_OK && dict == NULL) {
    rc = fetch_dict(q, task, &dict, &len, err);
    char key[200] = "";
    if (rc == KB_OK)
      rc = dict_key(q, task, key, sizeof key, err);
    if (rc == KB_OK && dict == NULL)
      rc = kb_error_set(err, KB_EPARSE, "made with dictionary %u of task \"%s\", but %s is "
                        "not in redis", want, task, key);
    else if (rc == KB_OK && kb_dict_id(dict, len) != want)
      rc = kb_error_set(err, KB_EPARSE, "made with dictionary %u of task \"%s\", but %s holds "
                        "dictionary %u", want, task, key, kb_dict_id(dict, len));
    if (rc == KB_OK)
      rc = cache_dict(q->cid, task, dict, len, err);
  }
  if (rc == KB_OK)
    rc = kb_decompress_dict(z, zlen, dict, len, max_len, json, json_len, err);
  kb_free(dict);
  return rc;
}
