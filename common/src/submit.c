/* Campaign submission (see kb/submit.h). */
#include "kb/submit.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/catalog.h"
#include "kb/error.h"
#include "kb/hash.h"
#include "kb/keys.h"
#include "kb/ladder.h"
#include "kb/queue.h"

void kb_submission_release(struct kb_submission *s) {
  if (s == NULL)
    return;
  for (int i = 0; i < s->n_tasks; i++)
    kb_task_release(&s->tasks[i]);
  for (int i = 0; i < s->n_candidates; i++)
    kb_candidate_release(&s->candidates[i]);
  kb_free(s->tasks);
  kb_free(s->candidates);
  kb_campaign_release(&s->campaign);
  memset(s, 0, sizeof *s);
}

static int load_seeds(struct kb_submission *s, const struct kb_task *t, struct kb_error *err) {
  for (int j = 0; j < t->n_seeds; j++) {
    struct kb_buf src;
    kb_buf_init(&src);
    int rc = kb_buf_read_file(&src, t->seeds[j].path, err);
    if (rc == KB_OK)
      rc = kb_candidate_init(&s->candidates[s->n_candidates], t->id, t->seeds[j].name, "seed",
                             src.data, "", t->seeds[j].flags, err);
    if (rc == KB_OK && t->seeds[j].format != KB_FORMAT_NATIVE) {
      rc = kb_candidate_set_format(&s->candidates[s->n_candidates], t->seeds[j].format, err);
      if (rc)
        kb_candidate_release(&s->candidates[s->n_candidates]);
    }
    kb_buf_release(&src);
    if (rc)
      return rc;
    s->n_candidates++;
  }
  return KB_OK;
}

int kb_submission_load(const char *path, struct kb_submission *s, struct kb_error *err) {
  memset(s, 0, sizeof *s);
  int rc = kb_campaign_load(path, &s->campaign, err);
  if (rc)
    return rc;
  const struct kb_campaign *c = &s->campaign;
  s->tasks = kb_calloc((size_t)c->n_tasks, sizeof *s->tasks);
  s->candidates = kb_calloc((size_t)c->n_tasks * KB_MAX_SEEDS, sizeof *s->candidates);
  if (s->tasks == NULL || s->candidates == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    goto out;
  }
  for (int i = 0; i < c->n_tasks; i++) {
    rc = kb_task_load(c->task_dirs[i], &s->tasks[i], err);
    if (rc)
      goto out;
    s->n_tasks++;
    const struct kb_task *t = &s->tasks[i];
    for (int k = 0; k < i; k++)
      if (strcmp(s->tasks[k].id, t->id) == 0) {
        rc = kb_error_set(err, KB_EPARSE, "%s: task id \"%s\" is also used by %s", t->json_path,
                          t->id, s->tasks[k].json_path);
        goto out;
      }
    if (t->backend != c->backend) {
      rc = kb_error_set(err, KB_EPARSE, "%s: task \"%s\" is for the %s backend, the campaign "
                        "%s uses %s", t->json_path, t->id, kb_backend_name(t->backend), c->path,
                        kb_backend_name(c->backend));
      goto out;
    }
    if (c->gen.llm.enabled && c->gen.llm.format == KB_FORMAT_KERNELBENCH &&
        t->oracle_kind != KB_ORACLE_PYTORCH) {
      rc = kb_error_set(err, KB_EPARSE, "%s: generators.llm.format is \"kernelbench\" but task "
                        "\"%s\" (%s) has no pytorch oracle: a ModelNew answer cannot be run "
                        "for it", c->path, t->id, t->json_path);
      goto out;
    }
    if (t->n_seeds == 0) {
      rc = kb_error_set(err, KB_EPARSE, "%s: task \"%s\" has no seeds: nothing to evaluate",
                        t->json_path, t->id);
      goto out;
    }
    rc = load_seeds(s, t, err);
    if (rc)
      goto out;
  }
out:
  if (rc)
    kb_submission_release(s);
  return rc;
}

static char *task_ids_json(const struct kb_submission *s) {
  json_t *arr = json_array();
  for (int i = 0; arr && i < s->n_tasks; i++)
    json_array_append_new(arr, json_string(s->tasks[i].id));
  char *out = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
  json_decref(arr);
  return out;
}

static int register_meta(const struct kb_submission *s, struct kb_redis *redis, const char *who,
                         int *resumed, struct kb_error *err) {
  const struct kb_campaign *c = &s->campaign;
  struct kb_campaign_reg reg = {.cid = c->id, .spec_json = c->spec_json, .tiers = c->tiers,
                                .n_tiers = c->n_tiers, .max_attempts = c->max_attempts,
                                .lease_ms = (int64_t)c->lease_seconds * 1000,
                                .backend = c->backend, .gpu_ms = c->budget_gpu_ms,
                                .llm_tokens = c->budget_llm_tokens};
  return kb_queue_register(redis, &reg, who, resumed, err);
}

int kb_submission_register(const struct kb_submission *s, struct kb_redis *redis, const char *who,
                           int *resumed, struct kb_error *err) {
  const struct kb_campaign *c = &s->campaign;
  int again = 0;
  int rc = register_meta(s, redis, who, &again, err);
  if (rc)
    return rc;
  if (resumed)
    *resumed = again;
  struct kb_queue q;
  rc = kb_queue_open(&q, redis, c->id, err);
  for (int i = 0; rc == KB_OK && i < s->n_tasks; i++)
    rc = kb_catalog_put_task(&q, &s->tasks[i], err);
  if (rc == KB_OK) {
    char *ids = task_ids_json(s);
    char key[200];
    kb_queue_key(&q, key, sizeof key, KB_KEY_META);
    redisReply *rep = NULL;
    rc = ids ? kb_redis_commandf(redis, &rep, err, "HSET %s tasks %s results_dir %s deadline %lld",
                                 key, ids, c->results_dir, (long long)c->deadline)
             : kb_error_set(err, KB_ENOMEM, "out of memory");
    if (rep)
      freeReplyObject(rep);
    free(ids);
  }
  for (int i = 0; rc == KB_OK && i < s->n_candidates; i++) {
    const struct kb_candidate *cand = &s->candidates[i];
    rc = kb_catalog_put_candidate(&q, cand, err);
    if (rc == KB_OK)
      rc = kb_queue_enqueue(&q, cand->id, cand->task, 0,
                            kb_tier_reserve_ms(q.tiers, q.n_tiers, 0, 0), (double)i, NULL, err);
  }
  if (rc == KB_OK)
    rc = kb_queue_set_state(&q, "submitting", "running", "submitted", who, err);
  return rc;
}
