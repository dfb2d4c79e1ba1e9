/* The generator framework (see gen_core.h). */
#include "gen_core.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gen_archive.h"
#include "gen_llm.h"
#include "gen_tune.h"
#include "kb/alloc.h"
#include "kb/catalog.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/ladder.h"
#include "kb/log.h"
#include "kb/redis.h"
#include "llm_key.h"

enum { GEN_TUNE = 0, GEN_LLM = 1, GEN_KINDS };

/* A string field of the campaign's meta hash into `*out` (new), "" when absent. */
static int meta_string(struct kb_gen *g, const char *field, char **out, struct kb_error *err) {
  char key[200];
  kb_queue_key(g->q, key, sizeof key, KB_KEY_META);
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(g->q->redis, &rep, err, "HGET %s %s", key, field);
  if (rc)
    return rc;
  *out = kb_strdup(rep->type == REDIS_REPLY_STRING ? rep->str : "");
  freeReplyObject(rep);
  return *out ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
}

static int load_tasks(struct kb_gen *g, struct kb_error *err) {
  char *text = NULL;
  int rc = meta_string(g, "tasks", &text, err);
  if (rc)
    return rc;
  json_t *arr = json_loads(text, 0, NULL);
  kb_free(text);
  if (!json_is_array(arr)) {
    json_decref(arr);
    return kb_error_set(err, KB_EPARSE, "campaign %s: meta field \"tasks\" is not a json array",
                        g->q->cid);
  }
  size_t n = json_array_size(arr);
  g->tasks = kb_calloc(n ? n : 1, sizeof *g->tasks);
  if (g->tasks == NULL) {
    json_decref(arr);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    const char *id = json_string_value(json_array_get(arr, i));
    if (id == NULL || !kb_id_valid(id)) {
      json_decref(arr);
      return kb_error_set(err, KB_EPARSE, "campaign %s: bad task id in meta \"tasks\"",
                          g->q->cid);
    }
    snprintf(g->tasks[i].id, sizeof g->tasks[i].id, "%s", id);
    g->n_tasks++;
  }
  json_decref(arr);
  return KB_OK;
}

static int load_task(struct kb_gen *g, struct kb_gen_task *t, struct kb_error *err);

static struct kb_gen_task *find_task(struct kb_gen *g, const char *id) {
  for (int i = 0; i < g->n_tasks; i++)
    if (strcmp(g->tasks[i].id, id) == 0)
      return &g->tasks[i];
  return NULL;
}

/* Hooks of the llm generator into the archive. */
static int archive_examples(void *arg, const struct kb_task *task, char **out,
                            struct kb_error *err) {
  struct kb_gen *g = arg;
  return kb__gen_archive_examples(g->archive, task, out, err);
}

static int archive_parent(void *arg, const struct kb_task_pop *pop, struct kb_candidate *c,
                          char *summary, size_t size, int *found, struct kb_error *err) {
  struct kb_gen *g = arg;
  struct kb_gen_task *t = find_task(g, pop->task);
  *found = 0;
  if (t == NULL || load_task(g, t, err) != KB_OK)
    return t ? err->code : KB_OK;
  kb__gen_archive_can_propose(g->archive, &t->spec); /* binds the task's fitting entries */
  return kb__gen_archive_parent(g->archive, pop, c, summary, size, found, err);
}

/* Opens the archive: generators.archive.path, else $KB_ARCHIVE (also when the section is
 * absent). A folder that is missing here is logged and the campaign runs without it. */
static int open_archive(struct kb_gen *g, struct kb_error *err) {
  struct kb_gen_archive_cfg *cfg = &g->camp.gen.archive;
  const char *env = getenv("KB_ARCHIVE");
  const char *dir = cfg->path ? cfg->path : env && env[0] ? env : NULL;
  if (dir == NULL) {
    if (cfg->enabled)
      kb_warn("archive: \"generators.archive\" has no \"path\" and $KB_ARCHIVE is not set: "
              "running without the archive");
    return KB_OK;
  }
  struct kb_error aerr = {0};
  int rc = kb__gen_archive_new(g->q, cfg, dir, &g->archive, &aerr);
  if (rc == KB_ENOMEM)
    return kb_error_set(err, rc, "%s", aerr.msg);
  if (rc) {
    kb_warn("archive: %s (from %s): running without the archive", aerr.msg,
            cfg->path ? "\"generators.archive.path\"" : "$KB_ARCHIVE");
    return KB_OK;
  }
  kb_info("archive: %s: %d entries; propose up to %d per task, %d prompt examples, save the "
          "best %d per task",
          dir, kb__gen_archive_size(g->archive), cfg->propose, cfg->examples, cfg->save);
  if (g->llm) {
    struct kb_gen_llm_archive h = {.examples = archive_examples, .parent = archive_parent,
                                   .arg = g};
    kb__gen_llm_set_archive(g->llm, &h);
  }
  return KB_OK;
}

int kb__gen_init(struct kb_gen *g, struct kb_queue *q, const char *work_dir,
                struct kb_error *err) {
  memset(g, 0, sizeof *g);
  g->q = q;
  g->work_dir = work_dir;
  g->rng = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
  if (g->rng == 0)
    g->rng = 1;
  kb_queue_key(q, g->key_count, sizeof g->key_count, KB_KEY_GEN_COUNT);
  char *spec = NULL;
  int rc = meta_string(g, "spec", &spec, err);
  char where[200];
  snprintf(where, sizeof where, "redis kb:{%s}:meta spec", q->cid);
  if (rc == KB_OK)
    rc = kb_campaign_parse(where, spec, "/", 0, &g->camp, err);
  kb_free(spec);
  if (rc == KB_OK)
    rc = load_tasks(g, err);
  const struct kb_generators *cfg = &g->camp.gen;
  if (rc == KB_OK && cfg->tune)
    rc = kb__tune_new(q, g->rng * 2654435761u, &g->tune, err);
  if (rc == KB_OK && cfg->llm.enabled) {
    char key[1024] = ""; /* "auth": "none": no key, no key header (llm_client.h) */
    if (!cfg->llm.auth_none)
      rc = kb__llm_key_read(cfg->llm.key_env, cfg->llm.key_file, key, sizeof key, err);
    if (rc == KB_OK)
      rc = kb__gen_llm_new(q, &cfg->llm, key, g->rng * 40503u + 1, &g->llm, err);
    memset(key, 0, sizeof key);
  }
  if (rc == KB_OK)
    rc = open_archive(g, err);
  if (rc) {
    kb__gen_release(g);
    return rc;
  }
  if (kb__gen_enabled(g))
    kb_info("generators: tune %s, llm %s%s%s; low water %d open items per task, at most %d attempts per task",
            cfg->tune ? "on" : "off", cfg->llm.enabled ? "on (" : "off",
            cfg->llm.enabled ? cfg->llm.model : "", cfg->llm.enabled ? ")" : "", cfg->low_water,
            cfg->max_per_task);
  return KB_OK;
}

void kb__gen_release(struct kb_gen *g) {
  if (g == NULL)
    return;
  kb__gen_llm_free(g->llm);
  kb__tune_free(g->tune);
  kb__gen_archive_free(g->archive);
  for (int i = 0; i < g->n_tasks; i++) {
    kb_task_release(&g->tasks[i].spec);
    kb_free(g->tasks[i].reference);
  }
  kb_free(g->tasks);
  kb_campaign_release(&g->camp);
  memset(g, 0, sizeof *g);
}

int kb__gen_enabled(const struct kb_gen *g) {
  return g->tune != NULL || g->llm != NULL ||
         (g->archive != NULL && g->camp.gen.archive.propose > 0);
}

int kb__gen_busy(const struct kb_gen *g) { return kb__gen_llm_pending(g->llm) > 0; }

int kb__gen_observe(struct kb_gen *g, const struct kb_result *r, const struct kb_candidate *c,
                   struct kb_error *err) {
  if (g->llm && kb__gen_llm_observe(g->llm, r, c) != KB_OK)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  if (g->archive && kb__gen_archive_observe(g->archive, r) != KB_OK)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  return KB_OK;
}

/* Stores and enqueues `c` at tier 0 unless its id is known; counts it for its task. */
static int store_candidate(const struct kb_candidate *c, void *arg, struct kb_error *err) {
  struct kb_gen *g = arg;
  char key[200], suffix[100];
  snprintf(suffix, sizeof suffix, KB_KEY_CAND_FMT, c->id);
  kb_queue_key(g->q, key, sizeof key, suffix);
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(g->q->redis, &rep, err, "EXISTS %s", key);
  if (rc)
    return rc;
  int exists = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
  freeReplyObject(rep);
  if (exists) {
    kb_info("%s/%s by %s is candidate %.12s, already known: not evaluated again", c->task,
            c->name, c->generator, c->id);
    return KB_OK;
  }
  rc = kb_catalog_put_candidate(g->q, c, err);
  int added = 0;
  if (rc == KB_OK)
    rc = kb_queue_enqueue(g->q, c->id, c->task, 0, kb_tier_reserve_ms(g->q->tiers, g->q->n_tiers, 0, 0),
                          1000.0 + (double)g->generated, &added, err);
  if (rc == KB_ESTATE) { /* the campaign closed meanwhile */
    kb_error_clear(err);
    return KB_OK;
  }
  if (rc)
    return rc;
  g->generated++;
  kb_info("%s/%s (%.12s): new candidate from %s%s%.12s", c->task, c->name, c->id, c->generator,
          c->parents[0][0] ? ", parent " : "", c->parents[0]);
  return KB_OK;
}

/* Counts one generation attempt for `task`. */
static int count_attempt(struct kb_gen *g, const char *task, struct kb_error *err) {
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(g->q->redis, &rep, err, "HINCRBY %s %s 1", g->key_count, task);
  if (rep)
    freeReplyObject(rep);
  return rc;
}

static int task_count(struct kb_gen *g, const char *task, long *out, struct kb_error *err) {
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(g->q->redis, &rep, err, "HGET %s %s", g->key_count, task);
  if (rc)
    return rc;
  *out = 0;
  if (rep->type == REDIS_REPLY_STRING) {
    char *end = NULL;
    *out = strtol(rep->str, &end, 10);
    if (end == rep->str || *end != '\0')
      rc = kb_error_set(err, KB_EREDIS, "%s field %s is not a number", g->key_count, task);
  }
  freeReplyObject(rep);
  return rc;
}

static struct kb_task_pop *find_pop(struct kb_population *pop, const char *task) {
  for (int i = 0; i < pop->n; i++)
    if (strcmp(pop->tasks[i].task, task) == 0)
      return &pop->tasks[i];
  return NULL;
}

static int load_task(struct kb_gen *g, struct kb_gen_task *t, struct kb_error *err) {
  if (t->loaded)
    return KB_OK;
  int rc = kb_catalog_get_task(g->q, t->id, g->work_dir, &t->spec, err);
  if (rc == KB_OK)
    rc = kb_catalog_get_reference(g->q, t->id, &t->reference, err);
  if (rc == KB_OK)
    t->loaded = 1;
  return rc;
}

/* Whether generator `kind` can propose for task `t` now. */
static int can(struct kb_gen *g, int kind, struct kb_task_pop *tp, const char *task,
               const struct kb_queue_status *st) {
  if (kind == GEN_TUNE)
    return g->tune && tp && g->camp.gen.tune_weight > 0 && !kb__tune_exhausted(g->tune, tp);
  return g->llm && g->camp.gen.llm.weight > 0 && !kb__gen_llm_out_of_tokens(g->llm) &&
         st->llm_available >= g->camp.gen.llm.max_tokens &&
         kb__gen_llm_pending(g->llm) < g->camp.gen.llm.concurrency &&
         kb__gen_llm_pending_task(g->llm, task) < g->camp.gen.llm.concurrency;
}

/* GPU milliseconds a new candidate needs available: the reservations (kb/ladder.h) its compile
 * and first timed tier must be able to claim. */
static int64_t gpu_need(const struct kb_gen *g) {
  return kb_tier_reserve_ms(g->q->tiers, g->q->n_tiers, 0, 0) +
         kb_tier_reserve_ms(g->q->tiers, g->q->n_tiers, 1, 0);
}

/* The campaign's GPU budget left pays for a new candidate. */
static int gpu_affordable(const struct kb_gen *g, const struct kb_queue_status *st) {
  return st->gpu_available >= gpu_need(g);
}

/* The task's own cap (set by the budget split), when it has one, pays for a new candidate.
 * Errors count as "yes": the caller finds out on its next command. */
static int task_affordable(struct kb_gen *g, const char *task) {
  int64_t cap = -1, held = 0, spent = 0;
  struct kb_error ignore = {0};
  if (kb_queue_task_budget(g->q, task, &cap, &held, &spent, &ignore) != KB_OK || cap < 0)
    return 1;
  return cap - held - spent >= gpu_need(g);
}

static unsigned rnd(struct kb_gen *g) {
  g->rng ^= g->rng << 13;
  g->rng ^= g->rng >> 17;
  g->rng ^= g->rng << 5;
  return g->rng;
}

/* Asks one generator for one candidate for task `t`. `*made` is 1 when something was started
 * or enqueued. */
static int generate_for(struct kb_gen *g, struct kb_gen_task *t, struct kb_task_pop *tp,
                        const struct kb_queue_status *st, int *made, struct kb_error *err) {
  *made = 0;
  if (g->archive && g->camp.gen.archive.propose > 0) {
    int rc = load_task(g, t, err);
    if (rc)
      return rc;
  }
  if (g->archive && kb__gen_archive_can_propose(g->archive, &t->spec)) {
    struct kb_candidate c;
    int rc = kb__gen_archive_propose(g->archive, &t->spec, &c, err);
    if (rc == KB_OK) {
      rc = store_candidate(&c, g, err);
      if (rc == KB_OK)
        rc = count_attempt(g, t->id, err);
      kb_candidate_release(&c);
      if (rc == KB_OK)
        *made = 1;
      return rc;
    }
    if (rc != KB_EEMPTY)
      return rc;
  }
  int tried[GEN_KINDS] = {0, 0};
  for (;;) {
    double w[GEN_KINDS] = {0, 0}, total = 0;
    for (int k = 0; k < GEN_KINDS; k++) {
      if (!tried[k] && can(g, k, tp, t->id, st))
        w[k] = k == GEN_TUNE ? g->camp.gen.tune_weight : g->camp.gen.llm.weight;
      total += w[k];
    }
    if (total <= 0)
      return KB_OK;
    double x = (double)(rnd(g) % 1000000u) / 1e6 * total;
    int kind = x < w[GEN_TUNE] ? GEN_TUNE : GEN_LLM;
    if (w[kind] <= 0)
      kind = kind == GEN_TUNE ? GEN_LLM : GEN_TUNE;
    tried[kind] = 1;
    int rc;
    if (kind == GEN_TUNE) {
      struct kb_tune_proposal p;
      rc = kb__tune_propose(g->tune, tp, &p, err);
      if (rc == KB_EEMPTY)
        continue;
      if (rc == KB_OK)
        rc = store_candidate(&p.cand, g, err);
      if (rc == KB_OK)
        rc = kb__tune_commit(g->tune, &p, err);
      if (rc == KB_OK)
        rc = count_attempt(g, t->id, err);
      kb_candidate_release(&p.cand);
    } else {
      rc = load_task(g, t, err);
      if (rc == KB_OK && tp == NULL) {
        /* no result yet for this task: an empty population asks for a translation */
        struct kb_task_pop empty;
        memset(&empty, 0, sizeof empty);
        snprintf(empty.task, sizeof empty.task, "%s", t->id);
        rc = kb__gen_llm_request(g->llm, &t->spec, t->reference, &empty, err);
      } else if (rc == KB_OK) {
        rc = kb__gen_llm_request(g->llm, &t->spec, t->reference, tp, err);
      }
      if (rc == KB_EBUDGET)
        continue;
      if (rc == KB_EINVAL) { /* a prompt that cannot be sent (text not UTF-8): an attempt */
        kb_warn("llm: no request for %s: %s", t->id, err->msg);
        kb_error_clear(err);
        return count_attempt(g, t->id, err);
      }
      if (rc == KB_OK)
        rc = count_attempt(g, t->id, err);
    }
    if (rc == KB_OK)
      *made = 1;
    return rc;
  }
}

int kb__gen_tick(struct kb_gen *g, struct kb_population *pop, const struct kb_queue_status *st,
                int timeout_ms, int *enqueued, struct kb_error *err) {
  long before = g->generated;
  if (enqueued)
    *enqueued = 0;
  int rc = KB_OK;
  if (g->llm)
    rc = kb__gen_llm_poll(g->llm, timeout_ms, store_candidate, g, err);
  if (rc == KB_OK && strcmp(st->state, "running") == 0 && g->camp.gen.low_water > 0 &&
      kb__gen_enabled(g) && gpu_affordable(g, st)) {
    int64_t open = st->open + (g->generated - before) + kb__gen_llm_pending(g->llm);
    /* each task gets a turn; stop when the queue is full enough or no task can get more */
    int idle = 0;
    int64_t want = (int64_t)g->camp.gen.low_water * g->n_tasks;
    while (rc == KB_OK && open < want && idle < g->n_tasks) {
      struct kb_gen_task *t = &g->tasks[g->next_task];
      g->next_task = (g->next_task + 1) % g->n_tasks;
      long count = 0;
      rc = task_count(g, t->id, &count, err);
      if (rc)
        break;
      struct kb_task_pop *tp = find_pop(pop, t->id);
      if ((tp && tp->stopped) || count >= g->camp.gen.max_per_task ||
          !task_affordable(g, t->id)) {
        idle++;
        continue;
      }
      int made = 0;
      rc = generate_for(g, t, tp, st, &made, err);
      if (made) {
        idle = 0;
        open++;
      } else {
        idle++;
      }
    }
  }
  if (enqueued)
    *enqueued = (int)(g->generated - before);
  return rc;
}

int kb__gen_active(struct kb_gen *g, struct kb_population *pop, const struct kb_queue_status *st) {
  if (!kb__gen_enabled(g))
    return 0;
  if (kb__gen_llm_pending(g->llm) > 0)
    return 1;
  if (strcmp(st->state, "running") != 0 || g->camp.gen.low_water == 0 || !gpu_affordable(g, st))
    return 0;
  for (int i = 0; i < g->n_tasks; i++) {
    long count = 0;
    struct kb_error ignore = {0};
    if (task_count(g, g->tasks[i].id, &count, &ignore) != KB_OK)
      return 1; /* cannot tell: not over yet; the next tick reports the error */
    struct kb_task_pop *tp = find_pop(pop, g->tasks[i].id);
    if ((tp && tp->stopped) || count >= g->camp.gen.max_per_task ||
        !task_affordable(g, g->tasks[i].id))
      continue;
    if (can(g, GEN_TUNE, tp, g->tasks[i].id, st) || can(g, GEN_LLM, tp, g->tasks[i].id, st))
      return 1;
    if (g->archive && load_task(g, &g->tasks[i], &ignore) == KB_OK &&
        kb__gen_archive_can_propose(g->archive, &g->tasks[i].spec))
      return 1;
  }
  return 0;
}

int kb__gen_finish(struct kb_gen *g, const struct kb_population *pop) {
  int total = 0;
  for (int i = 0; g->archive && i < g->n_tasks; i++) {
    const struct kb_task_pop *tp = NULL;
    for (int j = 0; j < pop->n && tp == NULL; j++)
      if (strcmp(pop->tasks[j].task, g->tasks[i].id) == 0)
        tp = &pop->tasks[j];
    if (tp == NULL)
      continue;
    struct kb_error err = {0};
    int added = 0;
    int rc = load_task(g, &g->tasks[i], &err);
    if (rc == KB_OK)
      rc = kb__gen_archive_save(g->archive, &g->tasks[i].spec, tp, &added, &err);
    if (rc)
      kb_warn("archive: task %s not added: %s", g->tasks[i].id, err.msg);
    total += added;
  }
  if (g->archive)
    kb_info("archive: %d verified kernel%s added to %s", total, total == 1 ? "" : "s",
            kb__gen_archive_dir(g->archive));
  return total;
}
