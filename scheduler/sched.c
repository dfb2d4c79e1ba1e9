/* Scheduler loop (see sched.h). */
#include "sched.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/campaign.h"
#include "kb/buf.h"
#include "kb/catalog.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/ladder.h"
#include "kb/log.h"
#include "kb/item.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "kb/result.h"
#include "store.h"
#include "budget.h"
#include "gen_core.h"
#include "llm_audit.h"
#include "policy.h"
#include "population.h"
#include "sched_lock.h"
#include "summary.h"

#define GROUP "scheduler"
/* One consumer name for every incarnation of the scheduler: a restarted scheduler must see the
 * entries its killed predecessor read but did not acknowledge (XREADGROUP ... 0 returns only the
 * caller's own pending entries). There is one scheduler per campaign: the scheduler lock
 * (sched_lock.h), taken before anything is read, stops a second one; the HDF5 files' lock
 * stands behind it. */
#define CONSUMER "main"
#define BATCH 128
#define MAX_FILES 1024

struct open_store {
  char task[KB_ID_MAX];
  struct kb_store *store;
  int dirty;
};

struct sched {
  const struct kb_sched_opts *opts;
  char who[KB_ID_MAX];
  struct kb_redis *redis;
  struct kb_queue q;
  char results_dir[1024];     /* <results>/<campaign> */
  char key_results[200];
  struct kb_population pop;
  struct kb_policy policy;
  struct open_store *stores;  /* MAX_FILES */
  int n_stores;
  double deadline;            /* unix seconds, 0 = none */
  struct kb_search search;    /* the campaign's search section (policy.h, budget.h) */
  double next_split;          /* unix seconds of the next budget split */
  int stale_said;             /* stale leases last reported by report_stale, 0 = none */
  struct kb_gen gen;          /* generators: tune, llm (gen_core.h) */
  int generated;              /* candidates the last gen tick enqueued */
  struct kb__sched_lock lock; /* the campaign's one scheduler (sched_lock.h) */
};



/* Reads a string field of the campaign's meta hash into `out` ("" when absent). */
static int meta_field(struct sched *s, const char *field, char *out, size_t size,
                      struct kb_error *err) {
  char key[200];
  kb_queue_key(&s->q, key, sizeof key, KB_KEY_META);
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(s->redis, &rep, err, "HGET %s %s", key, field);
  if (rc)
    return rc;
  out[0] = '\0';
  if (rep->type == REDIS_REPLY_STRING)
    snprintf(out, size, "%s", rep->str);
  freeReplyObject(rep);
  return KB_OK;
}

/* Loads what the scheduler needs about `task` from Redis: the baseline seed's name and whether
 * its oracle is PyTorch (the reservation of its last tier covers the torch timing). */
static struct kb_task_pop *task_pop(struct sched *s, const char *task_id, struct kb_error *err) {
  struct kb_task_pop *t = kb__population_task(&s->pop, task_id);
  if (t == NULL) {
    kb_error_set(err, KB_ENOMEM, "out of memory");
    return NULL;
  }
  if (t->loaded)
    return t;
  struct kb_task task;
  if (kb_catalog_get_task(&s->q, task_id, s->opts->work_dir, &task, err))
    return NULL;
  if (task.baseline >= 0)
    snprintf(t->baseline, sizeof t->baseline, "%s", task.seeds[task.baseline].name);
  t->torch = task.oracle_kind == KB_ORACLE_PYTORCH;
  t->loaded = 1;
  kb_task_release(&task);
  return t;
}

static int rebuild_file(struct sched *s, const char *path, const struct kb_store_task_info *info,
                        struct kb_store **out, struct kb_error *err);

/* 1 when the population holds results of `task` (its file had rows written to it, or was to
 * have them: the stream's results were read at start), else 0. */
static int seen_results(const struct sched *s, const char *task) {
  for (int i = 0; i < s->pop.n; i++)
    if (strcmp(s->pop.tasks[i].task, task) == 0)
      return s->pop.tasks[i].evaluations > 0;
  return 0;
}

static struct open_store *get_store(struct sched *s, const char *task_id, struct kb_error *err) {
  for (int i = 0; i < s->n_stores; i++)
    if (strcmp(s->stores[i].task, task_id) == 0)
      return &s->stores[i];
  if (s->n_stores >= MAX_FILES) {
    kb_error_set(err, KB_EINTERNAL, "more than %d task files open", MAX_FILES);
    return NULL;
  }
  char key[200], suffix[100], path[1200];
  snprintf(suffix, sizeof suffix, KB_KEY_TASK_FMT, task_id);
  kb_queue_key(&s->q, key, sizeof key, suffix);
  redisReply *rep = NULL;
  if (kb_redis_commandf(s->redis, &rep, err, "HMGET %s spec reference", key))
    return NULL;
  struct open_store *os = NULL;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
      rep->element[0]->type != REDIS_REPLY_STRING || rep->element[1]->type != REDIS_REPLY_STRING) {
    kb_error_set(err, KB_ENOTFOUND, "task \"%s\" is not in redis", task_id);
    goto out;
  }
  snprintf(path, sizeof path, "%s/%s.h5", s->results_dir, task_id);
  struct kb_store_task_info info = {.campaign = s->q.cid, .task = task_id,
                                    .spec_json = rep->element[0]->str,
                                    .reference = rep->element[1]->str};
  struct kb_store *store = NULL;
  int rc;
  if (access(path, F_OK) != 0 && errno == ENOENT && seen_results(s, task_id)) {
    /* removed while results of the task were recorded in it: make it again from redis */
    kb_error_set(err, KB_ENOTFOUND, "%s: no such file, though the results stream holds "
                 "results of task \"%s\"", path, task_id);
    rc = rebuild_file(s, path, &info, &store, err);
  } else {
    rc = kb__store_open(path, &info, &store, err);
    if (rc == KB_EHDF5) /* not even recovery could open it: rebuild it from redis */
      rc = rebuild_file(s, path, &info, &store, err);
  }
  if (rc == KB_OK) /* LLM exchanges a killed scheduler had not committed (llm_audit.h) */
    rc = kb__llm_audit_sync(&s->q, store, task_id, NULL, err);
  if (rc) {
    kb__store_close(store);
    goto out;
  }
  os = &s->stores[s->n_stores++];
  snprintf(os->task, sizeof os->task, "%s", task_id);
  os->store = store;
  os->dirty = 0;
out:
  freeReplyObject(rep);
  return os;
}

/* Writes one result to its task's file (and the candidate, once). Does not flush. */
static int store_result(struct sched *s, const struct kb_result *r, struct kb_candidate *cand,
                        struct kb_error *err) {
  struct open_store *os = get_store(s, r->task, err);
  if (os == NULL)
    return err->code;
  int rc = KB_OK;
  if (!kb__store_has_candidate(os->store, r->candidate))
    rc = kb__store_add_candidate(os->store, cand, NULL, err);
  int added = 0;
  if (rc == KB_OK)
    rc = kb__store_add_evaluation(os->store, r, &added, err);
  if (rc == KB_OK)
    os->dirty = 1;
  return rc;
}

static int update_best(struct sched *s, struct kb_task_pop *t, struct kb_error *err) {
  int tier = 0;
  const struct kb_member *best = kb__population_best(t, &tier);
  if (best == NULL)
    return KB_OK;
  const struct kb_member *base = kb__population_baseline(t);
  double speedup = 0;
  if (base) { /* the file's best speedup is at the best's tier only (kb/rank.h) */
    struct kb_rank rb, rbase;
    int at = -1;
    kb__member_rank(best, &rb);
    kb__member_rank(base, &rbase);
    speedup = kb_rank_speedup(&rb, &rbase, &at);
    if (at != tier)
      speedup = 0;
  }
  struct open_store *os = get_store(s, t->task, err);
  if (os == NULL)
    return err->code;
  /* After a restart the population knows every result in the stream, the file only those
   * stored so far: a best whose result is in a later batch is written with that batch. */
  if (!kb__store_has_candidate(os->store, best->id))
    return KB_OK;
  os->dirty = 1;
  return kb__store_set_best(os->store, best->id, best->name, tier, best->tiers[tier].median_us,
                           speedup, err);
}

/* Feeds a recorded result to the search state of its task; logs a task that stops. */
static void observe(struct sched *s, struct kb_task_pop *t, const struct kb_result *r,
                    int write) {
  kb__policy_observe(&s->policy, t, r);
  if (kb__policy_check_stop(&s->policy, t) && write)
    kb_info("%s: stopped: %s", t->task, t->stop_reason);
}

/* One stream entry, decoded. */
struct entry {
  char id[48];             /* stream entry id */
  struct kb_result result;
  int valid;               /* 0 when the entry is not recorded (acked and logged, not stored) */
  int parsed;              /* `result` holds a decoded result (to release) */
  /* the lease the entry says it settles: item and charge (complete_claim.lua), also runner and
   * attempt (reap.lua, and complete_claim.lua before 2026-12-06); without them, the done item's */
  char item[KB_ITEM_ID_MAX];
  char charge[KB_CHARGE_ID_MAX];
  char runner[512];
  long long attempt;
  int has_runner;          /* the entry has a "runner" field */
  int has_attempt;         /* the entry has an "attempt" field */
  char why[320];           /* why it is dropped, when it is (stray or malformed) */
};

/* Marks `x` dropped with the reason. */
static void drop_entry(struct entry *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void drop_entry(struct entry *x, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (vsnprintf(x->why, sizeof x->why, fmt, ap) < 0)
    snprintf(x->why, sizeof x->why, "dropped");
  va_end(ap);
  x->valid = 0;
}

/* The lease item `x` says it settles, as redis holds it: `item` (the item's line, kb/item.h, or NULL) and
 * `charge` (its charge record, or NULL). Drops `x` unless the item was settled by exactly this
 * entry: done (charge posted at the result's cost) or dead-lettered (charge voided, by the
 * reaper), by the runner, at the attempt and with the charge the entry and its result name.
 * An entry without "runner" or "attempt" fields (complete_claim.lua's) names the lease by its
 * charge alone: its runner and attempt are then the item's, which its result must name. */
static void check_lease(const struct sched *s, struct entry *x, const char *item,
                        const char *charge) {
  const struct kb_result *r = &x->result;
  if (item == NULL) {
    drop_entry(x, "unknown item \"%s\"", x->item);
    return;
  }
  struct kb_item it;
  int bad = kb_item_parse(x->item, item, &it, NULL) != KB_OK;
  const char *state = it.state, *cand = it.cand, *task = it.task, *runner = it.runner;
  const char *ch = it.charge, *xid = it.result;
  long long tier = it.tier, attempt = it.attempt;
  int done = strcmp(state, "done") == 0, dead = strcmp(state, "dead") == 0;
  if (!x->has_runner && !bad)
    snprintf(x->runner, sizeof x->runner, "%s", runner);
  if (!x->has_attempt)
    x->attempt = attempt;
  long long posted = -1;
  if (charge != NULL && charge[0] == 'P' && charge[1] == ':')
    posted = strtoll(charge + 2, NULL, 10);
  if (bad)
    drop_entry(x, "item \"%s\" is malformed in redis", x->item);
  else if (!done && !dead)
    drop_entry(x, "item \"%s\" is %s: no lease of it was settled", x->item, state);
  else if (xid[0] == '\0' || strcmp(xid, x->id) != 0)
    drop_entry(x, "item \"%s\" was settled by results entry %s, not by this one (replayed "
               "or forged)", x->item, xid[0] ? xid : "(none recorded)");
  else if (strcmp(ch, x->charge) != 0)
    drop_entry(x, "charge \"%s\", but item \"%s\" settled \"%s\"", x->charge, x->item, ch);
  else if (strcmp(runner, x->runner) != 0)
    drop_entry(x, "runner \"%s\", but the lease of item \"%s\" was \"%s\"'s", x->runner,
               x->item, runner);
  else if (attempt != x->attempt)
    drop_entry(x, "attempt %lld, but item \"%s\" was settled at attempt %lld", x->attempt,
               x->item, attempt);
  else if (charge == NULL || (done && posted < 0) || (dead && charge[0] != 'V'))
    drop_entry(x, "charge \"%s\" is %s, not %s", x->charge, charge ? charge : "unknown",
               done ? "posted" : "voided");
  else if (strcmp(r->campaign, s->q.cid) != 0 || strcmp(r->candidate, cand) != 0 ||
           strcmp(r->task, task) != 0 || r->tier != tier || r->attempt != x->attempt ||
           strcmp(r->charge_id, x->charge) != 0 ||
           strncmp(r->runner, x->runner, sizeof r->runner - 1) != 0)
    drop_entry(x, "its result (campaign %s, candidate %.12s, task %s, tier %d, attempt %d, "
               "charge %.80s) is not item \"%s\"'s lease", r->campaign, r->candidate, r->task,
               r->tier, r->attempt, r->charge_id, x->item);
  else if (done && r->cost_ms != posted)
    drop_entry(x, "its result costs %lld ms, but charge \"%s\" posted %lld",
               (long long)r->cost_ms, x->charge, posted);
}

/* Results only from leases: drops (x->valid = 0, x->why) every entry of `e` that did not settle
 * a lease of this campaign (check_lease), reading the items and charges it names in two
 * commands. Errors: those of redis. */
static int check_leases(struct sched *s, struct entry *e, int n, struct kb_error *err) {
  const char *a_items[2 + BATCH], *a_charges[2 + BATCH];
  int idx[BATCH], m = 0;
  char k_items[200], k_charges[200];
  kb_queue_key(&s->q, k_items, sizeof k_items, KB_KEY_ITEMS);
  kb_queue_key(&s->q, k_charges, sizeof k_charges, KB_KEY_CHARGES);
  a_items[0] = a_charges[0] = "HMGET";
  a_items[1] = k_items;
  a_charges[1] = k_charges;
  for (int i = 0; i < n; i++) {
    if (!e[i].valid)
      continue;
    if (e[i].item[0] == '\0' || e[i].charge[0] == '\0' ||
        (e[i].has_attempt && e[i].attempt <= 0)) {
      drop_entry(&e[i], "no lease named (fields \"item\", \"charge\" missing, or "
                 "\"attempt\" not a positive number)");
      continue;
    }
    idx[m] = i;
    a_items[2 + m] = e[i].item;
    a_charges[2 + m] = e[i].charge;
    m++;
  }
  if (m == 0)
    return KB_OK;
  redisReply *items = NULL, *charges = NULL;
  int rc = kb_redis_command(s->redis, 2 + m, a_items, NULL, 0, &items, err);
  if (rc == KB_OK)
    rc = kb_redis_command(s->redis, 2 + m, a_charges, NULL, 0, &charges, err);
  if (rc == KB_OK && (items->type != REDIS_REPLY_ARRAY || items->elements != (size_t)m ||
                      charges->type != REDIS_REPLY_ARRAY || charges->elements != (size_t)m))
    rc = kb_error_set(err, KB_EREDIS, "HMGET of the results' items: unexpected reply");
  for (int j = 0; rc == KB_OK && j < m; j++) {
    const redisReply *it = items->element[j], *ch = charges->element[j];
    check_lease(s, &e[idx[j]], it->type == REDIS_REPLY_STRING ? it->str : NULL,
                ch->type == REDIS_REPLY_STRING ? ch->str : NULL);
  }
  if (items)
    freeReplyObject(items);
  if (charges)
    freeReplyObject(charges);
  return rc;
}

/* Acknowledges and counts (kb_queue_drop_stray) the entries of `e` dropped, each logged. */
static int drop_strays(struct sched *s, struct entry *e, int n, struct kb_error *err) {
  const char *ids[BATCH], *why[BATCH];
  int m = 0;
  for (int i = 0; i < n; i++)
    if (!e[i].valid) {
      kb_warn("results entry %s dropped as forged or stray: %s", e[i].id, e[i].why);
      ids[m] = e[i].id;
      why[m++] = e[i].why;
    }
  return kb_queue_drop_stray(&s->q, ids, why, m, NULL, err);
}

/* Before the last-tier item of member `m` of `t` is enqueued at `tier`: writes its metrics mark
 * into the campaign's metrics hash, which kb-runner --metrics marked reads (docs/search.md,
 * "Hardware metrics"): the median its evaluation must beat for the hardware-metrics pass, so
 * that it ranks among the task's best at that tier (kb__policy_metrics_bound: the best three
 * when the llm generator is on, whose prompts show the best three's profiles; else the best
 * one). Nothing below the last tier. Errors: KB_ECONN, KB_EREDIS. */
static int mark_metrics(struct sched *s, const struct kb_task_pop *t, const struct kb_member *m,
                        int tier, struct kb_error *err) {
  if (tier != s->q.n_tiers - 1)
    return KB_OK;
  double bound = kb__policy_metrics_bound(t, m, tier, s->gen.llm != NULL ? 3 : 1);
  char key[200];
  kb_queue_key(&s->q, key, sizeof key, KB_KEY_METRICS);
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(s->redis, &rep, err, "HSET %s %s %.17g", key, m->id, bound);
  if (rep != NULL)
    freeReplyObject(rep);
  if (rc == KB_OK)
    kb_debug("%s/%s (%.12s): its %s evaluation gets the metrics pass when its median is under "
             "%.6g us (0: any)", t->task, m->name, m->id, s->q.tiers[tier].name, bound);
  return rc;
}

static int handle_batch(struct sched *s, struct entry *e, int n, int write, struct kb_error *err) {
  /* 0. Only results that settled a lease count; the others are acknowledged and counted now
   * (write) or, when rebuilding the state from the stream, just left out. */
  int rc = check_leases(s, e, n, err);
  if (rc == KB_OK && write)
    rc = drop_strays(s, e, n, err);
  /* 1. Store every valid result and update the population. */
  for (int i = 0; rc == KB_OK && i < n; i++) {
    if (!e[i].valid)
      continue;
    const struct kb_result *r = &e[i].result;
    struct kb_candidate cand;
    struct kb_error lookup = {0};
    rc = kb_catalog_get_candidate(&s->q, r->candidate, &cand, &lookup);
    if (rc == KB_ENOTFOUND || rc == KB_EPARSE) {
      /* A result naming no known candidate cannot be stored; keeping it unacknowledged would
       * stop the campaign forever. Log it; it stays in the stream for inspection. */
      kb_errlog("%s: %s; result skipped", e[i].id, lookup.msg);
      e[i].valid = 0;
      rc = KB_OK;
      continue;
    }
    if (rc) {
      kb_error_set(err, rc, "%s", lookup.msg);
      break;
    }
    struct kb_task_pop *t = task_pop(s, r->task, err);
    if (t == NULL)
      rc = err->code;
    if (rc == KB_OK && write)
      rc = store_result(s, r, &cand, err);
    if (rc == KB_OK && kb__population_add(&s->pop, r, cand.name, cand.generator) == NULL)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    if (rc == KB_OK)
      observe(s, t, r, write);
    if (rc == KB_OK)
      rc = kb__gen_observe(&s->gen, r, &cand, err);
    if (rc == KB_OK && write)
      kb_info("%s/%s (%.12s) tier %s: %s%s%s", r->task, cand.name, r->candidate, r->tier_name,
              kb_status_name(r->status), r->reason[0] ? ": " : "", r->reason);
    kb_candidate_release(&cand);
  }
  if (rc || !write)
    return rc;
  /* 2. Best candidate per task, then flush every touched file. */
  for (int i = 0; rc == KB_OK && i < s->pop.n; i++)
    rc = update_best(s, &s->pop.tasks[i], err);
  for (int i = 0; rc == KB_OK && i < s->n_stores; i++)
    if (s->stores[i].dirty) {
      rc = kb__llm_audit_sync(&s->q, s->stores[i].store, s->stores[i].task, NULL, err);
      if (rc == KB_OK)
        rc = kb__store_flush(s->stores[i].store, err);
      s->stores[i].dirty = 0;
    }
  /* 3. Promotions (idempotent enqueues), only after the files are durable. */
  for (int i = 0; rc == KB_OK && i < n; i++) {
    if (!e[i].valid)
      continue;
    const struct kb_result *r = &e[i].result;
    struct kb_task_pop *t = kb__population_task(&s->pop, r->task);
    struct kb_member *m = t ? kb__population_member(t, r->candidate, NULL, NULL) : NULL;
    if (m == NULL || !kb__policy_promote(&s->policy, t, m, r->tier))
      continue;
    int next = r->tier + 1, added = 0;
    rc = mark_metrics(s, t, m, next, err);
    if (rc == KB_OK)
      rc = kb_queue_enqueue(&s->q, r->candidate, r->task, next,
                          kb_tier_reserve_ms(s->q.tiers, s->q.n_tiers, next, t->torch),
                          kb__policy_priority(t, m, r->tier), &added, err);
    if (rc == KB_ESTATE) { /* campaign ended meanwhile: nothing more to run */
      kb_error_clear(err);
      rc = KB_OK;
    }
  }
  return rc;
}

/* Parses the entries of an XREAD/XRANGE reply array into `e`. */
static int decode_entries(const redisReply *arr, struct entry *e, int *n) {
  *n = 0;
  for (size_t i = 0; i < arr->elements && *n < BATCH; i++) {
    const redisReply *ent = arr->element[i];
    if (ent->type != REDIS_REPLY_ARRAY || ent->elements != 2)
      continue;
    struct entry *x = &e[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->id, sizeof x->id, "%s", ent->element[0]->str);
    const redisReply *fields = ent->element[1];
    const char *json = NULL;
    for (size_t f = 0; fields->type == REDIS_REPLY_ARRAY && f + 1 < fields->elements; f += 2) {
      const char *name = fields->element[f]->str, *v = fields->element[f + 1]->str;
      if (fields->element[f]->type != REDIS_REPLY_STRING ||
          fields->element[f + 1]->type != REDIS_REPLY_STRING)
        continue;
      if (strcmp(name, "result") == 0)
        json = v;
      else if (strcmp(name, "item") == 0)
        snprintf(x->item, sizeof x->item, "%s", v);
      else if (strcmp(name, "charge") == 0)
        snprintf(x->charge, sizeof x->charge, "%s", v);
      else if (strcmp(name, "runner") == 0) {
        x->has_runner = 1;
        snprintf(x->runner, sizeof x->runner, "%s", v);
      } else if (strcmp(name, "attempt") == 0) {
        x->has_attempt = 1;
        x->attempt = strtoll(v, NULL, 10);
      }
    }
    struct kb_error perr = {0};
    char where[96];
    snprintf(where, sizeof where, "results stream entry %s", x->id);
    if (json && kb_result_from_json(json, where, &x->result, &perr) == KB_OK) {
      x->valid = x->parsed = 1;
    } else {
      kb_errlog("%s", json ? perr.msg : "result entry without a \"result\" field");
      drop_entry(x, "%s", json ? perr.msg : "no \"result\" field");
    }
  }
  return KB_OK;
}

static void release_entries(struct entry *e, int n) {
  for (int i = 0; i < n; i++)
    if (e[i].parsed)
      kb_result_release(&e[i].result);
}

/* A task file that cannot be opened at all, not even by the store's recovery, is rebuilt from
 * what redis retains: the results stream, which nothing trims, and the candidates
 * (kb:{cid}:cand:<id>), which live as long as the campaign. Every result of the task in the
 * stream is written again, acknowledged or not (writes are idempotent), into "<path>.rebuild",
 * which is flushed, closed and only then renamed over the bad file; the bad bytes are kept as
 * "<path>.corrupt-<unix seconds>" (a hard link made first). A kill at any point leaves either
 * the bad file, rebuilt again at the next start, or the complete new one. The reopened store is
 * returned in `*out` (new). Errors: KB_EIO (renaming), those of kb__store_open, KB_ENOMEM. */
static int rebuild_file(struct sched *s, const char *path, const struct kb_store_task_info *info,
                        struct kb_store **out, struct kb_error *err) {
  char aside[1300], tmp[1300], tmp_lock[1310];
  snprintf(aside, sizeof aside, "%s.corrupt-%ld", path, (long)time(NULL));
  snprintf(tmp, sizeof tmp, "%s.rebuild", path);
  snprintf(tmp_lock, sizeof tmp_lock, "%s.lock", tmp);
  int missing = access(path, F_OK) != 0 && errno == ENOENT;
  kb_warn("%s; rebuilding it from the results retained in redis%s%s", err->msg,
          missing ? "" : ", the bad file kept as ", missing ? "" : aside);
  kb_error_clear(err);
  if (unlink(tmp) != 0 && errno != ENOENT) /* a rebuild killed half-way */
    return kb_error_set(err, KB_EIO, "cannot remove \"%s\": %s", tmp, strerror(errno));
  struct kb_store *store = NULL;
  int rc = kb__store_open(tmp, info, &store, err);
  struct entry *e = rc == KB_OK ? kb_calloc(BATCH, sizeof *e) : NULL;
  if (rc == KB_OK && e == NULL)
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  char start[64] = "-";
  long written = 0;
  while (rc == KB_OK) {
    redisReply *rep = NULL;
    rc = kb_redis_commandf(s->redis, &rep, err, "XRANGE %s %s + COUNT %d", s->key_results,
                           start, BATCH);
    if (rc)
      break;
    int n = 0;
    decode_entries(rep, e, &n);
    if (n > 0)
      snprintf(start, sizeof start, "(%s", e[n - 1].id);
    size_t got = rep->elements;
    freeReplyObject(rep);
    rc = check_leases(s, e, n, err); /* a stray entry was never stored */
    for (int i = 0; rc == KB_OK && i < n; i++) {
      const struct kb_result *r = &e[i].result;
      if (!e[i].valid || strcmp(r->task, info->task) != 0)
        continue;
      struct kb_candidate cand;
      struct kb_error lookup = {0};
      int found = kb_catalog_get_candidate(&s->q, r->candidate, &cand, &lookup);
      if (found == KB_ENOTFOUND || found == KB_EPARSE)
        continue; /* an unknown candidate was never stored (see handle_batch) */
      if (found) {
        rc = kb_error_set(err, found, "%s", lookup.msg);
        break;
      }
      if (!kb__store_has_candidate(store, r->candidate))
        rc = kb__store_add_candidate(store, &cand, NULL, err);
      if (rc == KB_OK)
        rc = kb__store_add_evaluation(store, r, NULL, err);
      written++;
      kb_candidate_release(&cand);
    }
    release_entries(e, n);
    if (got < BATCH)
      break;
  }
  kb_free(e);
  if (rc == KB_OK)
    rc = kb__llm_audit_sync(&s->q, store, info->task, NULL, err);
  if (rc == KB_OK)
    rc = kb__store_flush(store, err);
  kb__store_close(store);
  unlink(tmp_lock);
  if (rc)
    return rc;
  if (link(path, aside) != 0 && errno != EEXIST && errno != ENOENT) /* ENOENT: none to keep */
    return kb_error_set(err, KB_EIO, "cannot keep \"%s\" as \"%s\": %s", path, aside,
                        strerror(errno));
  if (rename(tmp, path) != 0)
    return kb_error_set(err, KB_EIO, "cannot move \"%s\" to \"%s\": %s", tmp, path,
                        strerror(errno));
  rc = kb__store_sync_folder(path, err); /* the rename on disk before anything is acknowledged */
  if (rc == KB_OK)
    rc = kb__store_open(path, info, out, err);
  if (rc == KB_OK)
    kb_info("%s: rebuilt from %ld results", path, written);
  return rc;
}

/* Rebuilds the population from the whole stream, writing nothing. */
static int rebuild(struct sched *s, struct entry *e, struct kb_error *err) {
  char start[64] = "-";
  long total = 0;
  for (;;) {
    redisReply *rep = NULL;
    int rc = kb_redis_commandf(s->redis, &rep, err, "XRANGE %s %s + COUNT %d", s->key_results,
                               start, BATCH);
    if (rc)
      return rc;
    int n = 0;
    decode_entries(rep, e, &n);
    if (n > 0)
      snprintf(start, sizeof start, "(%s", e[n - 1].id);
    size_t got = rep->elements;
    freeReplyObject(rep);
    rc = handle_batch(s, e, n, 0, err);
    release_entries(e, n);
    if (rc)
      return rc;
    total += n;
    if (got < BATCH)
      break;
  }
  if (total)
    kb_info("rebuilt state from %ld results", total);
  return KB_OK;
}

static int ack(struct sched *s, struct entry *e, int n, struct kb_error *err) {
  if (n == 0)
    return KB_OK;
  const char *argv[3 + BATCH];
  argv[0] = "XACK";
  argv[1] = s->key_results;
  argv[2] = GROUP;
  for (int i = 0; i < n; i++)
    argv[3 + i] = e[i].id;
  redisReply *rep = NULL;
  int rc = kb_redis_command(s->redis, 3 + n, argv, NULL, 0, &rep, err);
  if (rep)
    freeReplyObject(rep);
  return rc;
}

/* KB_EGONE when the campaign's meta hash is not in Redis any more (a Redis restarted without its
 * data, or flushed: the results stream and its group went with it), else `rc` with `why`. */
static int gone_or(struct sched *s, int rc, const struct kb_error *why, struct kb_error *err) {
  char key[200];
  kb_queue_key(&s->q, key, sizeof key, KB_KEY_META);
  redisReply *rep = NULL;
  struct kb_error e = {0};
  int exists = kb_redis_commandf(s->redis, &rep, &e, "EXISTS %s", key) == KB_OK &&
               rep->type == REDIS_REPLY_INTEGER && rep->integer == 0 ? 0 : 1;
  if (rep)
    freeReplyObject(rep);
  if (!exists)
    return kb_error_set(err, KB_EGONE, "%s does not exist: the campaign is gone from redis at %s "
                        "(restarted without its data, or flushed); nothing written", key,
                        kb_redis_addr(s->redis));
  return kb_error_set(err, rc, "%s", why->msg);
}

/* `*n` = the entries of the results stream read by the group but not acknowledged. */
static int pending_count(struct sched *s, long *n, struct kb_error *err) {
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(s->redis, &rep, err, "XPENDING %s %s", s->key_results, GROUP);
  if (rc)
    return rc;
  *n = rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
               rep->element[0]->type == REDIS_REPLY_INTEGER
           ? (long)rep->element[0]->integer
           : 0;
  freeReplyObject(rep);
  return KB_OK;
}

/* Reads one batch from the group: pending entries first ("0"), then new ones (">"). Errors:
 * the command's, KB_EGONE when the group is gone with the campaign (gone_or). */
static int read_batch(struct sched *s, int *pending_mode, struct entry *e, int *n,
                      struct kb_error *err) {
  redisReply *rep = NULL;
  struct kb_error rerr = {0};
  int rc = kb_redis_commandf(s->redis, &rep, &rerr,
                             "XREADGROUP GROUP %s %s COUNT %d BLOCK %d STREAMS %s %s", GROUP,
                             CONSUMER, BATCH, *pending_mode ? 0 : kb__gen_busy(&s->gen) ? 50 : 500,
                             s->key_results,
                             *pending_mode ? "0" : ">");
  if (rc)
    return strstr(rerr.msg, "NOGROUP") ? gone_or(s, rc, &rerr, err)
                                       : kb_error_set(err, rc, "%s", rerr.msg);
  *n = 0;
  if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
      rep->element[0]->type == REDIS_REPLY_ARRAY && rep->element[0]->elements == 2)
    decode_entries(rep->element[0]->element[1], e, n);
  freeReplyObject(rep);
  if (*pending_mode && *n == 0)
    *pending_mode = 0;
  return KB_OK;
}

/* Writes every task's LLM exchanges not yet in its file (those of tasks that got no result
 * since) and flushes. */
static int sync_llm_all(struct sched *s, struct kb_error *err) {
  int rc = KB_OK;
  for (int i = 0; rc == KB_OK && i < s->pop.n; i++) {
    char key[200], suffix[100];
    snprintf(suffix, sizeof suffix, KB_KEY_LLM_AUDIT_FMT, s->pop.tasks[i].task);
    kb_queue_key(&s->q, key, sizeof key, suffix);
    redisReply *rep = NULL;
    rc = kb_redis_commandf(s->redis, &rep, err, "XLEN %s", key);
    long long n = rc == KB_OK && rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
    if (rep)
      freeReplyObject(rep);
    if (rc || n == 0)
      continue;
    struct open_store *os = get_store(s, s->pop.tasks[i].task, err); /* syncs when opening */
    if (os == NULL)
      return err->code;
    rc = kb__llm_audit_sync(&s->q, os->store, os->task, NULL, err);
    if (rc == KB_OK)
      rc = kb__store_flush(os->store, err);
  }
  return rc;
}

/* Opens every task file of the campaign that exists and is not open yet: opening recovers a file
 * a killed scheduler left (its SWMR status flags cleared, rows past its commit dropped), and
 * the close at exit leaves it readable without SWMR. A task that got no result after the last
 * restart is otherwise never opened again, and its file stayed "already open for write" to
 * h5py and h5dump (e2e_profiles under load: the scheduler killed twice). */
static int recover_files(struct sched *s, struct kb_error *err) {
  for (int i = 0; i < s->pop.n; i++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.h5", s->results_dir, s->pop.tasks[i].task);
    if (access(path, F_OK) == 0 && get_store(s, s->pop.tasks[i].task, err) == NULL)
      return err->code;
  }
  return KB_OK;
}

static int finish(struct sched *s, const char *reason, struct kb_error *err) {
  int rc = recover_files(s, err);
  if (rc == KB_OK)
    rc = sync_llm_all(s, err);
  if (rc)
    return rc;
  /* A campaign ended earlier (a rerun rewriting summary.json): the reason it ended for. */
  char ended[256] = "";
  if (strcmp(reason, "done") == 0 &&
      meta_field(s, "state_reason", ended, sizeof ended, err) == KB_OK && ended[0])
    reason = ended;
  kb_error_clear(err);
  rc = kb_queue_set_state(&s->q, "running,draining", "done", reason, s->who, err);
  if (rc == KB_ESTATE) { /* cancelled meanwhile: keep that state */
    kb_error_clear(err);
    rc = KB_OK;
  }
  struct kb_queue_status st;
  if (rc == KB_OK)
    rc = kb_queue_status(&s->q, &st, err);
  if (rc == KB_OK)
    rc = kb__summary_write(s->results_dir, &s->q, &st, &s->pop, reason, err);
  if (rc == KB_OK) /* verified best kernels to the archive (gen_archive.h), when there is one */
    kb__gen_finish(&s->gen, &s->pop);
  if (rc == KB_OK)
    kb_info("campaign %s %s: %s; summary in %s/summary.json", s->q.cid, st.state, reason,
            s->results_dir);
  return rc;
}

/* 1 when every task met a stop condition (policy.h). */
static int all_stopped(const struct sched *s) {
  for (int i = 0; i < s->pop.n; i++)
    if (!s->pop.tasks[i].stopped)
      return 0;
  return s->pop.n > 0;
}

#define EVALUATED "every candidate evaluated"

/* Decides whether the campaign is over. Returns a reason, or NULL to go on. */
static const char *over(struct sched *s, const struct kb_queue_status *st) {
  /* Cancelled or draining: nothing new starts; evaluations under way are still recorded. */
  if (strcmp(st->state, "cancelled") == 0)
    return st->leased == 0 ? "cancelled" : NULL;
  if (strcmp(st->state, "done") == 0)
    return "done";
  if (strcmp(st->state, "draining") == 0) /* by kb-submit drain, or at the deadline (loop) */
    return st->leased > 0                                    ? NULL
           : s->deadline > 0 && kb_now_wall() > s->deadline ? "deadline passed"
                                                             : "drained: no new evaluations "
                                                               "started, the last ones finished";
  if (strcmp(st->state, "running") != 0)
    return NULL;
  if (st->open == 0 && !kb__gen_active(&s->gen, &s->pop, st))
    return EVALUATED;
  if (st->leased == 0 && st->cheapest_ready > st->gpu_available)
    return "budget exhausted";
  if (st->leased == 0 && all_stopped(s))
    return "every task stopped (target speedup or stagnation)";
  return NULL;
}

/* Before a campaign ends with budget left (every item evaluated): enqueues at the next tier
 * each candidate that could still win (kb__policy_could_win) and whose reservation there fits
 * what is available. `*added` counts the new items; 0 lets the campaign end. */
static int promote_before_done(struct sched *s, const struct kb_queue_status *st, int *added,
                               struct kb_error *err) {
  *added = 0;
  int rc = KB_OK;
  for (int i = 0; rc == KB_OK && i < s->pop.n; i++) {
    struct kb_task_pop *t = &s->pop.tasks[i];
    for (int j = 0; rc == KB_OK && j < t->n; j++) {
      const struct kb_member *m = &t->members[j];
      int tier = -1, one = 0;
      if (!kb__policy_could_win(&s->policy, t, m, &tier))
        continue;
      int64_t reserve = kb_tier_reserve_ms(s->q.tiers, s->q.n_tiers, tier + 1, t->torch);
      if (reserve > st->gpu_available)
        continue;
      rc = mark_metrics(s, t, m, tier + 1, err);
      if (rc == KB_OK)
        rc = kb_queue_enqueue(&s->q, m->id, t->task, tier + 1, reserve,
                              kb__policy_priority(t, m, tier), &one, err);
      if (rc == KB_OK && one) {
        *added += 1;
        kb_info("%s/%s (%.12s): promoted to %s before the campaign ends: it could still win",
                t->task, m->name, m->id, s->q.tiers[tier + 1].name);
      }
    }
  }
  if (rc == KB_ESTATE) { /* the campaign ended meanwhile */
    kb_error_clear(err);
    rc = KB_OK;
  }
  return rc;
}

static int create_group(struct sched *s, struct kb_error *err) {
  const char *argv[] = {"XGROUP", "CREATE", s->key_results, GROUP, "0", "MKSTREAM"};
  redisReply *rep = NULL;
  int rc = kb_redis_command(s->redis, 6, argv, NULL, 1, &rep, err);
  if (rc)
    return rc;
  if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "BUSYGROUP", 9) != 0)
    rc = kb_error_set(err, KB_EREDIS, "XGROUP CREATE %s: %s", s->key_results, rep->str);
  freeReplyObject(rep);
  return rc;
}

/* Reads the campaign's search section and target speedup from its spec in redis, and makes a
 * population entry for every task, so the budget split sees tasks with no result yet. */
static int load_search(struct sched *s, struct kb_error *err) {
  char key[200];
  kb_queue_key(&s->q, key, sizeof key, KB_KEY_META);
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(s->redis, &rep, err, "HGET %s spec", key);
  if (rc)
    return rc;
  struct kb_campaign c;
  memset(&c, 0, sizeof c);
  kb_search_defaults(&c.search);
  if (rep->type == REDIS_REPLY_STRING) {
    char name[160];
    snprintf(name, sizeof name, "campaign \"%s\" in redis", s->q.cid);
    rc = kb_campaign_parse(name, rep->str, "/", 0, &c, err);
  }
  freeReplyObject(rep);
  if (rc)
    return rc;
  s->search = c.search;
  kb__policy_init(&s->policy, &s->search, s->q.n_tiers, c.target_speedup);
  if (s->opts->eta > 0)
    s->policy.eta = s->opts->eta;
  kb_campaign_release(&c);
  /* The task hashes kb:{cid}:task:<id> name the tasks. One SCAN at start. */
  char pattern[200], cursor[32] = "0";
  kb_queue_key(&s->q, pattern, sizeof pattern, KB_KEY_TASK_ANY);
  size_t prefix = strlen(pattern) - 1;
  do {
    rc = kb_redis_commandf(s->redis, &rep, err, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
    if (rc)
      return rc;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING) {
      freeReplyObject(rep);
      return kb_error_set(err, KB_EREDIS, "unexpected reply to SCAN");
    }
    snprintf(cursor, sizeof cursor, "%s", rep->element[0]->str);
    const redisReply *keys = rep->element[1];
    for (size_t i = 0; rc == KB_OK && keys->type == REDIS_REPLY_ARRAY && i < keys->elements; i++)
      if (keys->element[i]->type == REDIS_REPLY_STRING && strlen(keys->element[i]->str) > prefix &&
          kb__population_task(&s->pop, keys->element[i]->str + prefix) == NULL)
        rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    freeReplyObject(rep);
  } while (rc == KB_OK && strcmp(cursor, "0") != 0);
  return rc;
}

/* Splits what is left of the GPU budget across the tasks (budget.h) and sets their caps. */
static int split_budget(struct sched *s, const struct kb_queue_status *st, struct kb_error *err) {
  int n = s->pop.n;
  if (n == 0)
    return KB_OK;
  struct kb_budget_task *bt = kb_calloc((size_t)n, sizeof *bt);
  int64_t *caps = kb_calloc((size_t)n, sizeof *caps);
  int rc = bt && caps ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
  for (int i = 0; rc == KB_OK && i < n; i++) {
    const struct kb_task_pop *t = &s->pop.tasks[i];
    int64_t cap = 0, held = 0, spent = 0;
    rc = kb_queue_task_budget(&s->q, t->task, &cap, &held, &spent, err);
    bt[i] = (struct kb_budget_task){.used_ms = held + spent, .rate = kb__policy_rate(t),
                                    .results = t->evaluations, .stopped = t->stopped};
  }
  /* the minimum grant: the dearest reservation a claim must fit (kb/ladder.h), not the tier's
   * estimate, else a task's cap can be below what one evaluation holds and nothing of it runs */
  int torch = 0;
  for (int i = 0; i < n; i++)
    torch |= s->pop.tasks[i].torch;
  int64_t dearest = 0;
  for (int k = 0; k < s->q.n_tiers; k++) {
    int64_t r = kb_tier_reserve_ms(s->q.tiers, s->q.n_tiers, k, torch);
    if (r > dearest)
      dearest = r;
  }
  if (rc == KB_OK)
    kb__budget_split(&s->search, st->gpu_total, st->gpu_available, dearest, bt, n, caps);
  for (int i = 0; rc == KB_OK && i < n; i++)
    rc = kb_queue_set_task_cap(&s->q, s->pop.tasks[i].task, caps[i], err);
  kb_free(bt);
  kb_free(caps);
  return rc;
}

static int attach(struct sched *s, struct kb_error *err) {
  int rc = kb_queue_open_wait(&s->q, s->redis, s->opts->campaign, s->opts->wait_s, s->opts->stop,
                              err);
  if (rc)
    return rc;
  char dir[1024] = "", deadline[32] = "";
  rc = meta_field(s, "results_dir", dir, sizeof dir, err);
  if (rc == KB_OK)
    rc = meta_field(s, "deadline", deadline, sizeof deadline, err);
  if (rc)
    return rc;
  s->deadline = deadline[0] ? strtod(deadline, NULL) : 0;
  const char *base = s->opts->results_dir ? s->opts->results_dir : dir;
  if (base[0] == '\0')
    base = "results";
  if (snprintf(s->results_dir, sizeof s->results_dir, "%s/%s", base, s->q.cid) >=
      (int)sizeof s->results_dir)
    return kb_error_set(err, KB_EINVAL, "results folder path too long");
  kb_queue_key(&s->q, s->key_results, sizeof s->key_results, KB_KEY_RESULTS);
  rc = kb_mkdirs(s->results_dir, err);
  if (rc == KB_OK)
    rc = create_group(s, err);
  return rc;
}

/* Says, when their number changes, that the campaign waits for leases of runners that stopped
 * (kb_queue_stale_leases): a rerun after a runner was killed would otherwise sit silent until
 * the last of them expires and the reaper requeues it. */
static int report_stale(struct sched *s, struct kb_error *err) {
  struct kb_stale_lease first;
  int n = 0;
  int64_t now = 0, last = 0;
  int rc = kb_queue_stale_leases(&s->q, &first, 1, &n, &now, &last, err);
  if (rc || n == s->stale_said)
    return rc;
  s->stale_said = n;
  if (n > 0 && last > now)
    kb_info("waiting for %d lease%s of runners that stopped; the last expires in %lld s, then "
            "the reaper requeues %s",
            n, n == 1 ? "" : "s", (long long)((last - now + 999) / 1000),
            n == 1 ? "it" : "them");
  return KB_OK;
}

static int loop(struct sched *s, struct entry *e, int *finished, struct kb_error *err) {
  int pending_mode = 1;
  double next_reap = 0;
  while (!*s->opts->stop) {
    struct kb_queue_status st;
    int rc = kb_queue_status(&s->q, &st, err); /* before reading: see over() below */
    int read_new = !pending_mode;
    int n = 0;
    if (rc == KB_OK)
      rc = read_batch(s, &pending_mode, e, &n, err);
    if (rc == KB_OK) /* another scheduler took over: write and acknowledge nothing more */
      rc = kb__sched_lock_check(&s->lock, err);
    if (rc == KB_OK && n > 0)
      rc = handle_batch(s, e, n, 1, err);
    if (rc == KB_OK)
      rc = ack(s, e, n, err);
    release_entries(e, n);
    if (rc)
      return rc;
    if (kb_now_wall() >= next_reap) {
      int requeued = 0, dead = 0;
      rc = kb_queue_reap(&s->q, 100, s->who, &requeued, &dead, err);
      if (rc)
        return rc;
      if (requeued || dead)
        kb_warn("reaped expired leases: %d requeued, %d dead-lettered", requeued, dead);
      next_reap = kb_now_wall() + 1.0;
      if (requeued || dead)
        continue;
      rc = report_stale(s, err);
      if (rc)
        return rc;
    }
    if (rc == KB_OK && strcmp(st.state, "running") == 0 && kb_now_wall() >= s->next_split) {
      rc = split_budget(s, &st, err);
      if (rc)
        return rc;
      s->next_split = kb_now_wall() + s->search.rebalance_s;
    }
    if (kb__gen_enabled(&s->gen)) { /* new candidates when the queue runs low (gen_core.h) */
      rc = kb__gen_tick(&s->gen, &s->pop, &st, kb__gen_busy(&s->gen) ? 100 : 0, &s->generated,
                       err);
      if (rc)
        return rc;
      if (s->generated > 0) /* the status read above no longer counts every open item */
        continue;
    }
    /* The deadline passed: nothing new starts, and the evaluations under way finish and are
     * recorded before the campaign ends (over(), draining). Ending it at once left their
     * results, charged, in the stream and in no file. */
    if (strcmp(st.state, "running") == 0 && s->deadline > 0 && kb_now_wall() > s->deadline) {
      rc = kb_queue_set_state(&s->q, "running", "draining", "deadline passed", s->who, err);
      if (rc == KB_ESTATE) { /* drained or cancelled meanwhile: that state stands */
        kb_error_clear(err);
        rc = KB_OK;
      }
      if (rc)
        return rc;
      kb_info("deadline passed: no new evaluations start; the campaign ends once the %lld under "
              "way are recorded", (long long)st.leased);
      continue;
    }
    /* The status was read before the stream: if nothing was open then and a read of new
     * entries (not of our pending ones) found nothing, every result is in the files. */
    const char *why = n == 0 && read_new ? over(s, &st) : NULL;
    if (why && strcmp(why, EVALUATED) == 0) { /* budget left: candidates that could win climb */
      int added = 0;
      rc = promote_before_done(s, &st, &added, err);
      if (rc)
        return rc;
      if (added > 0)
        continue;
    }
    if (why) {
      /* entries read but not acknowledged by another reader of the group (a second scheduler
       * refused once it had read them, or one that lost the lock) are ours to record first */
      long pending = 0;
      rc = pending_count(s, &pending, err);
      if (rc)
        return rc;
      if (pending > 0) {
        kb_warn("%ld result%s read but not recorded by another scheduler; recording %s now",
                pending, pending == 1 ? "" : "s", pending == 1 ? "it" : "them");
        pending_mode = 1;
        continue;
      }
      *finished = 1;
      return finish(s, why, err);
    }
  }
  return KB_OK;
}

int kb__sched_run(const struct kb_sched_opts *opts, int *finished, struct kb_error *err) {
  *finished = 0;
  struct sched s;
  memset(&s, 0, sizeof s);
  s.opts = opts;
  char host[40] = "host";
  gethostname(host, sizeof host - 1);
  snprintf(s.who, sizeof s.who, "scheduler:%s:%ld", host, (long)getpid());
  struct entry *e = kb_calloc(BATCH, sizeof *e);
  s.stores = kb_calloc(MAX_FILES, sizeof *s.stores);
  if (e == NULL || s.stores == NULL) {
    kb_free(e);
    kb_free(s.stores);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  /* asked to stop, it waits for a lost redis only briefly (KB_REDIS_STOP_WAIT_MS) */
  struct kb_redis_opts ro = {.addr = opts->redis, .retry_ms = opts->wait_s * 1000,
                             .stop = opts->stop};
  int rc = kb_redis_connect(&ro, &s.redis, err);
  if (rc == KB_OK)
    rc = attach(&s, err);
  s.lock.stop = opts->stop;
  if (rc == KB_OK) /* before anything of the campaign is read: the open charges, the stream */
    rc = kb__sched_lock_take(&s.lock, s.redis, &s.q, kb_redis_addr(s.redis), err);
  if (rc == KB_OK) {
    kb__population_init(&s.pop, s.q.n_tiers);
    rc = load_search(&s, err);
  }
  if (rc == KB_OK)
    rc = kb__gen_init(&s.gen, &s.q, opts->work_dir, err);
  if (rc == KB_OK) {
    kb_info("scheduler for campaign %s at %s, results in %s", s.q.cid, kb_redis_addr(s.redis),
            s.results_dir);
    rc = rebuild(&s, e, err);
  }
  if (rc == KB_OK)
    rc = loop(&s, e, finished, err);
  for (int i = 0; i < s.n_stores; i++)
    kb__store_close(s.stores[i].store);
  kb__gen_release(&s.gen);
  kb__population_release(&s.pop);
  kb__sched_lock_release(&s.lock, rc == KB_ELOCKED ? NULL : s.redis);
  kb_redis_free(s.redis);
  kb_free(s.stores);
  kb_free(e);
  return rc;
}
