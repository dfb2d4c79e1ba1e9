/* Finding a task's baseline candidate in Redis (see baseline.h). */
#include "baseline.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "kb/catalog.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/redis.h"

/* The value of `r` (a bulk string) equals `s`. */
static int equals(const redisReply *r, const char *s) {
  return r != NULL && r->type == REDIS_REPLY_STRING && r->len == strlen(s) &&
         memcmp(r->str, s, r->len) == 0;
}

int kb__baseline_find(struct kb_queue *q, const char *task_id, const char *name,
                      struct kb_candidate *c, int *found, struct kb_error *err) {
  *found = 0;
  memset(c, 0, sizeof *c);
  char pattern[200];
  if (kb_queue_key(q, pattern, sizeof pattern, KB_KEY_CAND_ANY))
    return kb_error_set(err, KB_EINVAL, "candidate key too long");
  size_t prefix = strlen(pattern) - 1;
  char cursor[32] = "0";
  char id[KB_CAND_ID_LEN + 1] = "";
  int rc = KB_OK;
  do {
    redisReply *rep = NULL;
    const char *argv[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
    rc = kb_redis_command(q->redis, 6, argv, NULL, 0, &rep, err);
    if (rc)
      return rc;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_ARRAY) {
      freeReplyObject(rep);
      return kb_error_set(err, KB_EREDIS, "unexpected reply to SCAN %s", pattern);
    }
    snprintf(cursor, sizeof cursor, "%s", rep->element[0]->str);
    const redisReply *keys = rep->element[1];
    for (size_t i = 0; i < keys->elements && rc == KB_OK && !id[0]; i++) {
      const redisReply *k = keys->element[i];
      if (k->type != REDIS_REPLY_STRING || k->len != prefix + KB_CAND_ID_LEN)
        continue;
      redisReply *f = NULL;
      const char *hargv[] = {"HMGET", k->str, "task", "name"};
      rc = kb_redis_command(q->redis, 4, hargv, NULL, 0, &f, err);
      if (rc == KB_OK && f->type == REDIS_REPLY_ARRAY && f->elements == 2 &&
          equals(f->element[0], task_id) && equals(f->element[1], name))
        snprintf(id, sizeof id, "%s", k->str + prefix);
      if (f)
        freeReplyObject(f);
    }
    freeReplyObject(rep);
  } while (rc == KB_OK && !id[0] && strcmp(cursor, "0") != 0);
  if (rc || !id[0])
    return rc;
  rc = kb_catalog_get_candidate(q, id, c, err);
  if (rc == KB_OK)
    *found = 1;
  return rc;
}
