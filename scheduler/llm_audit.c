/* Redis LLM audit stream to the task's HDF5 file (see llm_audit.h). */
#include "llm_audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/compress.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "store.h"

#define SYNC_BATCH 64
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
