/* Redis LLM audit stream to the task's HDF5 file (see llm_audit.h). */
#include "llm_audit.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kb/alloc.h"
#include "kb/compress.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "store.h"

#define SYNC_BATCH 64
#define LOST_LOOKBACK 64 /* stream entries searched for a charge already completed */
#define TEXT_MAX (64u << 20) /* bytes a prompt or response may expand to */

/* The value of field `name` of a stream entry's field array, or NULL. */
static const redisReply *field(const redisReply *fields, const char *name) {
  for (size_t i = 0; fields->type == REDIS_REPLY_ARRAY && i + 1 < fields->elements; i += 2)
    if (fields->element[i]->type == REDIS_REPLY_STRING &&
        strcmp(fields->element[i]->str, name) == 0 &&
        fields->element[i + 1]->type == REDIS_REPLY_STRING)
      return fields->element[i + 1];
  return NULL;
}

static const char *text_of(const redisReply *fields, const char *name) {
  const redisReply *v = field(fields, name);
  return v != NULL ? v->str : "";
}

static long long int_of(const redisReply *fields, const char *name) {
  const redisReply *v = field(fields, name);
  if (v == NULL)
    return 0;
  char *end = NULL;
  long long x = strtoll(v->str, &end, 10);
  return end != v->str && *end == '\0' ? x : 0;
}

/* Decompresses field `name` into `*out` (new); a missing field gives "", a corrupt one a note. */
static int unpack(const redisReply *fields, const char *name, char **out, size_t *len,
                  struct kb_error *err) {
  const redisReply *v = field(fields, name);
  struct kb_error zerr = {0};
  *out = NULL;
  *len = 0;
  if (v == NULL || v->len == 0)
    return KB_OK;
  int rc = kb_decompress(v->str, v->len, TEXT_MAX, out, len, &zerr);
  if (rc == KB_ENOMEM)
    return kb_error_set(err, rc, "out of memory");
  if (rc == KB_OK)
    return KB_OK;
  char note[300];
  int n = snprintf(note, sizeof note, "(the %s in redis could not be decompressed: %s)", name,
                   zerr.msg);
  *out = kb_strdup(note);
  if (*out == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  *len = n > 0 && (size_t)n < sizeof note ? (size_t)n : strlen(note);
  return KB_OK;
}

/* Stores one stream entry (`id`, `fields`). */
static int store_entry(struct kb_store *store, const char *id, const redisReply *fields,
                       long *added, struct kb_error *err) {
  const char *charge = text_of(fields, "charge");
  if (charge[0] == '\0' || kb__store_has_llm(store, charge))
    return KB_OK;
  char *prompt = NULL, *response = NULL;
  size_t plen = 0, rlen = 0;
  int rc = unpack(fields, "prompt", &prompt, &plen, err);
  if (rc == KB_OK)
    rc = unpack(fields, "response", &response, &rlen, err);
  char parents[2][KB_CAND_ID_LEN + 1] = {"", ""};
  const char *ps = text_of(fields, "parents");
  const char *comma = strchr(ps, ',');
  size_t n0 = comma != NULL ? (size_t)(comma - ps) : strlen(ps);
  snprintf(parents[0], sizeof parents[0], "%.*s", (int)(n0 < KB_CAND_ID_LEN ? n0 : KB_CAND_ID_LEN),
           ps);
  if (comma != NULL)
    snprintf(parents[1], sizeof parents[1], "%s", comma + 1);
  struct kb_store_llm x = {
      .request = charge,
      .entry = id,
      .time = (double)strtoll(id, NULL, 10) / 1000.0, /* the entry id's milliseconds */
      .kind = text_of(fields, "kind"),
      .status = text_of(fields, "status"),
      .model = text_of(fields, "model"),
      .attempts = (int)int_of(fields, "attempts"),
      .tokens_in = int_of(fields, "tokens_in"),
      .tokens_out = int_of(fields, "tokens_out"),
      .candidate = text_of(fields, "candidate"),
      .parents = {parents[0], parents[1]},
      .error = text_of(fields, "error"),
      .prompt = prompt,
      .prompt_len = plen,
      .response = response,
      .response_len = rlen,
  };
  int was_added = 0;
  if (rc == KB_OK)
    rc = kb__store_add_llm(store, &x, &was_added, err);
  if (rc == KB_OK && was_added && added != NULL)
    (*added)++;
  kb_free(prompt);
  kb_free(response);
  return rc;
}

int kb__llm_audit_sync(struct kb_queue *q, struct kb_store *store, const char *task, long *added,
                      struct kb_error *err) {
  char key[200], suffix[100], start[64];
  snprintf(suffix, sizeof suffix, KB_KEY_LLM_AUDIT_FMT, task);
  kb_queue_key(q, key, sizeof key, suffix);
  const char *last = kb__store_llm_last_entry(store);
  snprintf(start, sizeof start, "%s%s", last[0] ? "(" : "", last[0] ? last : "-");
  if (added != NULL)
    *added = 0;
  for (;;) {
    redisReply *rep = NULL;
    int rc = kb_redis_commandf(q->redis, &rep, err, "XRANGE %s %s + COUNT %d", key, start,
                               SYNC_BATCH);
    if (rc)
      return rc;
    size_t got = rep->type == REDIS_REPLY_ARRAY ? rep->elements : 0;
    for (size_t i = 0; rc == KB_OK && i < got; i++) {
      const redisReply *ent = rep->element[i];
      if (ent->type != REDIS_REPLY_ARRAY || ent->elements != 2 ||
          ent->element[0]->type != REDIS_REPLY_STRING)
        continue;
      snprintf(start, sizeof start, "(%s", ent->element[0]->str);
      rc = store_entry(store, ent->element[0]->str, ent->element[1], added, err);
    }
    freeReplyObject(rep);
    if (rc)
      return rc;
    if (got < SYNC_BATCH)
      return KB_OK;
  }
}

/* ---- Written ahead ------------------------------------------------------------------------- */

static void sent_key(struct kb_queue *q, char *key, size_t size) {
  kb_queue_key(q, key, size, KB_KEY_GEN_LLM_SENT);
}

int kb__llm_audit_ahead(struct kb_queue *q, const struct kb_llm_sent *s, struct kb_error *err) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  json_int_t ms = (json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s}", "task", s->task, "kind", s->kind,
                        "model", s->model, "sent_ms", ms, "parents", s->parents, "prompt",
                        s->prompt);
  char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (text == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  char key[200];
  sent_key(q, key, sizeof key);
  const char *argv[] = {"HSET", key, s->charge, text};
  redisReply *rep = NULL;
  int rc = kb_redis_command(q->redis, 4, argv, NULL, 0, &rep, err);
  if (rep)
    freeReplyObject(rep);
  free(text);
  return rc;
}

int kb__llm_audit_settled(struct kb_queue *q, const char *charge, struct kb_error *err) {
  char key[200];
  sent_key(q, key, sizeof key);
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(q->redis, &rep, err, "HDEL %s %s", key, charge);
  if (rep)
    freeReplyObject(rep);
  return rc;
}

/* 1 when one of the last LOST_LOOKBACK entries of stream `key` has charge `charge`. */
static int stream_has(struct kb_queue *q, const char *key, const char *charge, int *has,
                      struct kb_error *err) {
  redisReply *rep = NULL;
  *has = 0;
  int rc = kb_redis_commandf(q->redis, &rep, err, "XREVRANGE %s + - COUNT %d", key,
                             LOST_LOOKBACK);
  for (size_t i = 0; rc == KB_OK && rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
    const redisReply *ent = rep->element[i];
    if (ent->type == REDIS_REPLY_ARRAY && ent->elements == 2 &&
        strcmp(text_of(ent->element[1], "charge"), charge) == 0)
      *has = 1;
  }
  if (rep)
    freeReplyObject(rep);
  return rc;
}

static const char *jstr(json_t *j, const char *name, const char *def) {
  const char *v = json_string_value(json_object_get(j, name));
  return v != NULL ? v : def;
}

/* Writes the "lost" entry of record `charge` = `text` (both borrowed). */
static int write_lost(struct kb_queue *q, const char *charge, const char *text, const char *why,
                      struct kb_error *err) {
  json_t *j = json_loads(text, 0, NULL);
  const char *task = jstr(j, "task", "");
  char task_id[KB_ID_MAX] = "";
  if (task[0] == '\0') { /* the charge names its task: "llm:<task>:<seq>" */
    const char *a = strchr(charge, ':'), *b = a != NULL ? strrchr(charge, ':') : NULL;
    if (a != NULL && b > a + 1)
      snprintf(task_id, sizeof task_id, "%.*s", (int)(b - a - 1), a + 1);
    task = task_id;
  }
  char key[200], suffix[100];
  int rc = KB_OK;
  if (task[0] == '\0' || snprintf(suffix, sizeof suffix, KB_KEY_LLM_AUDIT_FMT, task) >=
                             (int)sizeof suffix) {
    json_decref(j);
    return KB_OK; /* names no task: nowhere to put it; the record is dropped */
  }
  kb_queue_key(q, key, sizeof key, suffix);
  int has = 0;
  rc = stream_has(q, key, charge, &has, err);
  const char *prompt = j != NULL ? jstr(j, "prompt", "") : text;
  void *zp = NULL, *zr = NULL;
  size_t zp_len = 0, zr_len = 0;
  if (rc == KB_OK && !has)
    rc = kb_compress(prompt, strlen(prompt), &zp, &zp_len, err);
  if (rc == KB_OK && !has)
    rc = kb_compress("", 0, &zr, &zr_len, err);
  if (rc == KB_OK && !has) {
    char sent[24];
    snprintf(sent, sizeof sent, "%lld", (long long)json_integer_value(json_object_get(j, "sent_ms")));
    const char *argv[] = {"XADD",     key,   "*",        "kind",       jstr(j, "kind", ""),
                          "charge",   charge, "status",  "lost",       "attempts",
                          "0",        "tokens_in", "0",  "tokens_out", "0",
                          "candidate", "",   "parents",  jstr(j, "parents", ""), "error",
                          why,        "prompt", zp,      "response",   zr,
                          "model",    jstr(j, "model", ""), "sent_ms", sent};
    int n = (int)(sizeof argv / sizeof argv[0]);
    size_t lens[sizeof argv / sizeof argv[0]];
    for (int i = 0; i < n; i++)
      lens[i] = i == 22 ? zp_len : i == 24 ? zr_len : strlen(argv[i]);
    redisReply *rep = NULL;
    rc = kb_redis_command(q->redis, n, argv, lens, 0, &rep, err);
    if (rep)
      freeReplyObject(rep);
  }
  kb_free(zp);
  kb_free(zr);
  json_decref(j);
  return rc;
}

int kb__llm_audit_lost(struct kb_queue *q, const char *charge, const char *why, int *n,
                       struct kb_error *err) {
  char key[200];
  sent_key(q, key, sizeof key);
  if (n != NULL)
    *n = 0;
  redisReply *rep = NULL;
  int rc = charge != NULL ? kb_redis_commandf(q->redis, &rep, err, "HMGET %s %s", key, charge)
                          : kb_redis_commandf(q->redis, &rep, err, "HGETALL %s", key);
  if (rc)
    return rc;
  size_t step = charge != NULL ? 1 : 2;
  for (size_t i = 0; rc == KB_OK && rep->type == REDIS_REPLY_ARRAY && i + step - 1 < rep->elements;
       i += step) {
    const redisReply *c = charge != NULL ? NULL : rep->element[i];
    const redisReply *v = rep->element[i + step - 1];
    const char *ch = charge != NULL ? charge : c->type == REDIS_REPLY_STRING ? c->str : NULL;
    if (ch == NULL || v->type != REDIS_REPLY_STRING)
      continue;
    rc = write_lost(q, ch, v->str, why, err);
    if (rc == KB_OK)
      rc = kb__llm_audit_settled(q, ch, err);
    if (rc == KB_OK && n != NULL)
      (*n)++;
  }
  freeReplyObject(rep);
  return rc;
}
