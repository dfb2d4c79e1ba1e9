/* Runner main loop (see worker.h). */
#include "worker.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "baseline.h"
#include "compile_pool.h"
#include "cpus.h"
#include "evaluator.h"
#include "kb/alloc.h"
#include "confine.h"
#include "kb/campaign.h"
#include "kb/buf.h"
#include "kb/catalog.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/log.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "kb/result.h"

#define MAX_CACHED_TASKS 256
#define MAX_AHEAD 64
#define ORACLE_TAG (UINT64_C(1) << 32) /* pool tags of oracle pre-builds: ORACLE_TAG | task */
#define REFERENCE_TAG (UINT64_C(1) << 33) /* ... of torch.compile compiled ahead: | task */
#define IDLE_MIN_MS 5     /* first poll when nothing can be claimed */
#define IDLE_MAX_MS 50    /* polls at most this far apart: promotions land within milliseconds */

/* Where the runner's wall time went, for the summary line at exit (seconds). */
struct split {
  double start;             /* kb_now_mono() at the loop's start */
  double eval;              /* inside the evaluator (the sandbox's work, preparation included) */
  double prepare_at_start;  /* kb__evaluator_prepare_s() when the loop started */
  double witness_at_start;  /* kb__evaluator_witness_s() when the loop started */
  long rounds_at_start;     /* kb__evaluator_witness_rounds() when the loop started */
  double wait_build;        /* items held, none built yet: the device waited for compilers */
  double idle;              /* nothing held and nothing to claim: waiting for the scheduler */
  double queue;             /* claim, complete and release calls to Redis */
  long items;               /* items evaluated (every tier, compile-only included) */
};

/* A held lease: building, or built and waiting for the device. */
struct held {
  int used;                 /* slot in use */
  struct kb_claim claim;
  double claimed;           /* unix seconds, the result's "started" */
  double claimed_mono;      /* kb_now_mono() at the claim */
};

struct worker {
  const struct kb_worker_opts *opts;
  char name[KB_ID_MAX];
  struct kb_redis *redis;
  struct kb_queue q;
  struct kb_evaluator *ev;
  struct kb__compile_pool *pool;
  int ahead;                /* slots used at most */
  struct kb_task *tasks;    /* loaded tasks (MAX_CACHED_TASKS) */
  int n_tasks;
  long claimed_items;       /* items claimed so far that reached a build (for --max-items:
                               the loop stops claiming at N and leaves at N evaluated) */
  struct split split;       /* the time split (runner thread only) */
  int oracle_built[MAX_CACHED_TASKS]; /* 1: the task's oracle build was queued on the pool */
  int reference_built[MAX_CACHED_TASKS]; /* 1: its torch.compile was queued on the pool */

  /* Shared with the heartbeat thread. */
  pthread_mutex_t lock;
  struct held held[MAX_AHEAD];
  int hb_quit;
  char state[16];           /* campaign state as the last heartbeat saw it */
};

/* Extends every held lease about once a second, on its own connection. A connection that
 * cannot be made (redis unreachable, or at its maxclients) is tried again every beat: before,
 * the thread ended at its first failed connect and the runner went on without heartbeats, its
 * leases expiring under long evaluations (requeued, evaluated twice). */
static void *heartbeat_main(void *arg) {
  struct worker *w = arg;
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  /* asked to leave, its waits for a lost or hung redis end soon (the runner joins it) */
  struct kb_redis_opts ro = {.addr = w->opts->redis, .retry_ms = 5000, .stop = w->opts->stop};
  struct kb_queue q = w->q;
  int connect_failures = 0;
  const long period_ms = 1000; /* leases last tens of seconds; one beat a second is ample */
  static struct kb_claim claims[MAX_AHEAD];
  for (;;) {
    pthread_mutex_lock(&w->lock);
    int quit = w->hb_quit, n = 0;
    for (int i = 0; i < MAX_AHEAD; i++)
      if (w->held[i].used)
        claims[n++] = w->held[i].claim;
    pthread_mutex_unlock(&w->lock);
    if (quit)
      break;
    char state[16] = "";
    int extended = 0;
    kb_error_clear(&err);
    if (r == NULL && kb_redis_connect(&ro, &r, &err) != KB_OK) {
      if (connect_failures++ % 30 == 0) /* the first failure, then every 30th */
        kb_warn("heartbeat: %s; trying again each second (%d held leases not extended)",
                err.msg, n);
    } else {
      q.redis = r;
      if (kb_queue_heartbeat(&q, w->name, claims, n, &extended, state, &err))
        kb_warn("heartbeat: %s", err.msg);
      else {
        pthread_mutex_lock(&w->lock);
        memcpy(w->state, state, sizeof w->state);
        pthread_mutex_unlock(&w->lock);
        if (extended < n)
          kb_warn("%d of %d leases were lost", n - extended, n);
      }
    }
    for (long slept = 0; slept < period_ms; slept += 100) {
      pthread_mutex_lock(&w->lock);
      quit = w->hb_quit;
      pthread_mutex_unlock(&w->lock);
      if (quit)
        break;
      kb_sleep_ms(100);
    }
  }
  kb_redis_free(r);
  return NULL;
}

static const struct kb_task *find_task(struct worker *w, const char *id, struct kb_error *err) {
  for (int i = 0; i < w->n_tasks; i++)
    if (strcmp(w->tasks[i].id, id) == 0)
      return &w->tasks[i];
  if (w->n_tasks >= MAX_CACHED_TASKS) {
    kb_error_set(err, KB_EINTERNAL, "more than %d tasks in one campaign", MAX_CACHED_TASKS);
    return NULL;
  }
  if (kb_catalog_get_task(&w->q, id, w->opts->cache_dir, &w->tasks[w->n_tasks], err))
    return NULL;
  return &w->tasks[w->n_tasks++];
}

static void fill_identity(struct worker *w, const struct kb_claim *c, struct kb_result *r) {
  snprintf(r->campaign, sizeof r->campaign, "%s", w->q.cid);
  snprintf(r->task, sizeof r->task, "%s", c->task);
  snprintf(r->candidate, sizeof r->candidate, "%s", c->candidate);
  r->tier = c->tier;
  snprintf(r->tier_name, sizeof r->tier_name, "%s", w->q.tiers[c->tier].name);
  r->attempt = c->attempt;
  snprintf(r->charge_id, sizeof r->charge_id, "%s", c->charge_id);
  snprintf(r->runner, sizeof r->runner, "%s", w->name);
  r->backend = w->q.backend;
}

static void drop_slot(struct worker *w, int slot) {
  pthread_mutex_lock(&w->lock);
  w->held[slot].used = 0;
  pthread_mutex_unlock(&w->lock);
}

/* Gives the item in `slot` back and frees the slot. */
static int release_slot(struct worker *w, int slot, const char *why, struct kb_error *err) {
  int released = 0;
  double t_q = kb_now_mono();
  int rc = kb_queue_release(&w->q, &w->held[slot].claim, w->name, &released, err);
  w->split.queue += kb_now_mono() - t_q;
  if (rc == KB_OK)
    kb_info("%sreleased %s (%s)%s", *w->opts->stop ? "stopping: " : "", w->held[slot].claim.item, why,
            released ? "" : "; the lease was gone already");
  drop_slot(w, slot);
  return rc;
}

static int start_slot(struct worker *w, int slot, const struct kb_claim *c, struct kb_error *err);
static int held_count(struct worker *w);
static int campaign_open(struct worker *w);
static void note_state(struct worker *w, const char *state);
static int claimable(struct worker *w);
static int start_claims(struct worker *w, const struct kb_claim *c, int n, struct kb_error *err);

/* Task affinity: the next claims prefer the tasks the evaluator holds prepared (kb/queue.h,
 * kb_queue_set_affinity; the queue's bound keeps every other task served). */
static void prefer_prepared(struct worker *w) {
  const char *tasks[KB_AFFINITY_MAX];
  int n = kb__evaluator_prepared_tasks(w->ev, tasks, KB_AFFINITY_MAX);
  if (kb_queue_set_affinity(&w->q, tasks, n) != KB_OK)
    kb_queue_set_affinity(&w->q, NULL, 0);
}

/* 1 when the runner should take another item as soon as a slot frees up. */
static int wants_more(struct worker *w) {
  return !*w->opts->stop && campaign_open(w) &&
         (w->opts->max_items <= 0 || w->claimed_items < w->opts->max_items);
}

/* An infra_error in `slot` (`r`: the runner failed, not the candidate): the item goes back to
 * its queue while it has attempts left (kb_queue_retry; the device time used is charged), and
 * the slot is freed. `*final` gets 1 when the item has used its attempts: nothing changed, and
 * the caller completes it with `r`, its final verdict. Returns KB_OK or the queue's error. */
static int retry_slot(struct worker *w, int slot, const struct kb_result *r, int *final,
                      struct kb_error *err) {
  const struct kb_claim *c = &w->held[slot].claim;
  enum kb_retry out = KB_RETRY_FINAL;
  double t_q = kb_now_mono();
  int rc = kb_queue_retry(&w->q, c, r->cost_ms, w->name, r->reason, &out, err);
  w->split.queue += kb_now_mono() - t_q;
  *final = rc == KB_OK && out == KB_RETRY_FINAL;
  if (rc) {
    drop_slot(w, slot);
    return rc;
  }
  if (*final) {
    kb_warn("%s: infra_error at attempt %d, its last: %s", c->item, c->attempt, r->reason);
    return KB_OK;
  }
  if (out == KB_RETRY_REQUEUED)
    kb_warn("%s: infra_error at attempt %d (%s); queued again for another attempt", c->item,
            c->attempt, r->reason);
  else
    kb_warn("%s: infra_error (%s); the lease was gone already, the item runs again", c->item,
            r->reason);
  drop_slot(w, slot);
  return KB_OK;
}

/* Publishes `r` for the item in `slot` and frees the slot. With `may_claim` set and the runner
 * wanting more work, the same script call also claims items for the freed slot and any other
 * free one (kb_queue_cycle_batch; with one free slot the fused complete+claim form: one round
 * trip and one script per item instead of two) and their builds are queued. A result is
 * published the moment its evaluation ends (the scheduler promotes on it), so the runner
 * completes one item per call; a call claims as many as there are free slots. (infra_slot
 * passes 0: start_slot calls it, and must not recurse item after item.) */
static int complete_slot(struct worker *w, int slot, struct kb_result *r, int may_claim,
                         struct kb_error *err) {
  struct kb_claim done = w->held[slot].claim, next[KB_QUEUE_BATCH_MAX];
  int final = 1;
  if (r->status == KB_STATUS_INFRA_ERROR) {
    int rc = retry_slot(w, slot, r, &final, err);
    if (rc || !final)
      return rc;
  }
  char *json = NULL;
  int rc = kb_result_to_json(r, &json, err);
  int claimed = 0;
  if (rc == KB_OK) {
    int dup = 0;
    char state[16] = "";
    double t_q = kb_now_mono();
    /* the slot this frees, and any other free one, are filled by the same call */
    int k = may_claim && wants_more(w) ? claimable(w) + 1 : 0;
    if (k > KB_QUEUE_BATCH_MAX)
      k = KB_QUEUE_BATCH_MAX;
    if (w->opts->max_items > 0 && k > w->opts->max_items - w->claimed_items)
      k = (int)(w->opts->max_items - w->claimed_items);
    if (k > 0) {
      struct kb_error e = {0};
      struct kb_queue_done d = {.claim = &done, .cost_ms = r->cost_ms, .result_json = json};
      prefer_prepared(w);
      rc = kb_queue_cycle_batch(&w->q, &d, 1, w->name, w->opts->min_tier, w->opts->max_tier, k,
                                next, &claimed, &dup, state, &e);
      if (rc == KB_EEMPTY || rc == KB_EBUDGET || rc == KB_ESTATE) {
        /* the completion was posted; there was just nothing to take */
        if (rc == KB_ESTATE)
          note_state(w, state);
        rc = KB_OK;
      } else if (rc != KB_OK) {
        kb_error_set(err, rc, "%s", e.msg);
      }
    } else {
      rc = kb_queue_complete(&w->q, &done, r->cost_ms, json, w->name, &dup, err);
    }
    w->split.queue += kb_now_mono() - t_q;
    if (rc == KB_ELEASE) {
      kb_warn("%s: %s; result dropped, the item runs again", done.item, err->msg);
      kb_error_clear(err);
      rc = KB_OK;
    } else if (rc == KB_ENOTFOUND) {
      /* redis lost the claim itself: restarted from an AOF that ends before it (a power loss
       * under appendfsync everysec, a replica promoted). The item is queued again there. */
      kb_warn("%s: %s: redis lost this claim (restarted without its last writes?); result "
              "dropped, the item runs again", done.item, err->msg);
      kb_error_clear(err);
      rc = KB_OK;
    } else if (rc == KB_OK) {
      if (!dup && r->cost_ms > done.cost_ms)
        kb_warn("%s: cost %lld ms overran its reservation of %lld ms: the overrun of %lld ms "
                "was charged (ledger:log \"settle\")", done.item, (long long)r->cost_ms,
                (long long)done.cost_ms, (long long)(r->cost_ms - done.cost_ms));
      kb_info("%s %.12s tier %d (%s): %s%s%s %.3f ms", done.task, done.candidate, done.tier,
              r->tier_name, kb_status_name(r->status), r->reason[0] ? ": " : "", r->reason,
              r->timing.samples ? r->timing.median_us / 1000.0 : 0.0);
    }
  }
  kb_free(json);
  drop_slot(w, slot);
  if (rc == KB_OK && claimed > 0)
    rc = start_claims(w, next, claimed, err);
  return rc;
}

/* Completes the item in `slot` with infra_error and `why` (the runner, not the candidate,
 * failed). */
static int infra_slot(struct worker *w, int slot, const char *why, struct kb_error *err) {
  struct kb_result r;
  kb_result_init(&r);
  fill_identity(w, &w->held[slot].claim, &r);
  r.status = KB_STATUS_INFRA_ERROR;
  snprintf(r.reason, sizeof r.reason, "%.255s", why);
  snprintf(r.device, sizeof r.device, "%s", kb__evaluator_device(w->ev));
  r.cost_ms = 0;
  r.started = w->held[slot].claimed;
  r.finished = kb_now_wall();
  int rc = complete_slot(w, slot, &r, 0, err);
  kb_result_release(&r);
  return rc;
}

/* Queues a build of `task`'s (C or CUDA) oracle on the pool the first time the task is met, so
 * that the evaluator's own build of it (at the task's first evaluation, while the device waits)
 * finds it in the compile cache. Only when the pool has room beyond what the free slots may need;
 * the result is collected and dropped by the loop. A failure is left for the evaluator to meet. */
static void prebuild_oracle(struct worker *w, const struct kb_task *task) {
  int idx = (int)(task - w->tasks);
  if (idx < 0 || idx >= MAX_CACHED_TASKS || w->oracle_built[idx] || task->oracle_path == NULL)
    return;
  if (task->oracle_kind != KB_ORACLE_C && task->oracle_kind != KB_ORACLE_CUDA)
    return; /* a PyTorch or data oracle is not built */
  int free_slots = w->ahead - held_count(w);
  if (kb__compile_pool_space(w->pool) < free_slots + 2)
    return; /* the item being started and the free slots come first; try at the next claim */
  w->oracle_built[idx] = 1;
  struct kb_buf src;
  struct kb_error e = {0};
  kb_buf_init(&src);
  if (kb_buf_read_file(&src, task->oracle_path, &e) == KB_OK) {
    /* as the evaluator builds it: trusted, no knobs, no flags (the same cache key) */
    struct kb__compile_req req = {.source = src.data, .trusted = 1};
    if (kb__compile_pool_submit(w->pool, ORACLE_TAG | (uint64_t)idx, &req, &e) == KB_OK)
      kb_debug("task %s: oracle build queued ahead", task->id);
  }
  kb_buf_release(&src);
}

/* Queues torch.compile of `task`'s PyTorch module (its pytorch oracle, or the torch_reference
 * of a CUDA task) on the pool the first time the task is met, on CUDA (compile.h,
 * kb__compile_reference): the trusted worker's torch.compile timing at the task's full tier then
 * finds the compilation in the reference caches instead of compiling while the device waits.
 * Room as for prebuild_oracle; collected by the loop, which logs it. */
static void prebuild_reference(struct worker *w, const struct kb_task *task) {
  int idx = (int)(task - w->tasks);
  const char *module = task->oracle_kind == KB_ORACLE_PYTORCH ? task->oracle_path
                                                               : task->torch_ref_path;
  if (idx < 0 || idx >= MAX_CACHED_TASKS || w->reference_built[idx] || module == NULL ||
      strcmp(w->opts->backend, "cuda") != 0)
    return;
  int free_slots = w->ahead - held_count(w);
  if (kb__compile_pool_space(w->pool) < free_slots + 2)
    return;
  w->reference_built[idx] = 1;
  struct kb__compile_req req = {.oracle = module, .reference = 1, .trusted = 1};
  struct kb_error e = {0};
  if (kb__compile_pool_submit(w->pool, REFERENCE_TAG | (uint64_t)idx, &req, &e) == KB_OK)
    kb_debug("task %s: torch.compile of its module queued ahead", task->id);
}

/* The pool's job of prebuild_reference for task `idx`, finished: logged and dropped. */
static void reference_built(struct worker *w, const struct kb__compiled *c) {
  int idx = (int)(c->tag & ~REFERENCE_TAG);
  const char *id = idx >= 0 && idx < w->n_tasks ? w->tasks[idx].id : "?";
  if (c->rc != KB_OK)
    kb_warn("task %s: torch.compile of its module not compiled ahead: %s", id, c->err.msg);
  else if (!c->build.ok || c->build.reason[0] != '\0')
    kb_info("task %s: torch.compile of its module not compiled ahead: %s", id,
            c->build.reason[0] ? c->build.reason : "the builder failed");
  else
    kb_debug("task %s: torch.compile of its module compiled ahead%s in %.1f s", id,
             c->build.cached ? " (already, by an earlier run)" : "", c->build_s);
}

/* Holds claim `c` in the free slot `slot` and queues its build (or releases it at once when
 * the runner is leaving). */
static int start_slot(struct worker *w, int slot, const struct kb_claim *c, struct kb_error *err) {
  pthread_mutex_lock(&w->lock);
  w->held[slot].used = 1;
  w->held[slot].claim = *c;
  w->held[slot].claimed = kb_now_wall();
  w->held[slot].claimed_mono = kb_now_mono();
  pthread_mutex_unlock(&w->lock);
  if (*w->opts->stop)
    return release_slot(w, slot, "claimed as the runner was asked to leave", err);

  struct kb_candidate cand;
  memset(&cand, 0, sizeof cand);
  struct kb_error e = {0};
  const struct kb_task *task = find_task(w, c->task, &e);
  if (task != NULL) {
    prebuild_oracle(w, task);
    prebuild_reference(w, task);
  }
  int rc = task ? kb_catalog_get_candidate(&w->q, c->candidate, &cand, &e) : e.code;
  if (rc == KB_OK) {
    struct kb__compile_req req = {.source = cand.source, .knobs = cand.knobs,
                                  .flags = cand.flags, .format = cand.format,
                                  .oracle = task->oracle_kind == KB_ORACLE_PYTORCH
                                                ? task->oracle_path
                                                : NULL};
    rc = kb__compile_pool_submit(w->pool, (uint64_t)slot, &req, &e);
  }
  kb_candidate_release(&cand);
  if (rc) {
    /* never evaluated, so not one of --max-items' N: counted, the loop would stop claiming
     * with fewer than N evaluated and wait for an evaluation that never comes */
    w->claimed_items--;
    return infra_slot(w, slot, e.msg, err);
  }
  return KB_OK;
}

/* Free slots the runner may fill now: ahead less those held, no more than --max-items leaves
 * and one call claims (KB_QUEUE_BATCH_MAX). */
static int claimable(struct worker *w) {
  int k = w->ahead - held_count(w);
  if (w->opts->max_items > 0 && w->opts->max_items - w->claimed_items < k)
    k = (int)(w->opts->max_items - w->claimed_items);
  if (k > KB_QUEUE_BATCH_MAX)
    k = KB_QUEUE_BATCH_MAX;
  return k > 0 ? k : 0;
}

/* Holds the `n` claims of `c` in free slots and queues their builds. */
static int start_claims(struct worker *w, const struct kb_claim *c, int n, struct kb_error *err) {
  int rc = KB_OK;
  for (int i = 0, slot = 0; i < n; i++) {
    while (slot < w->ahead && w->held[slot].used)
      slot++;
    assert(slot < w->ahead); /* claimable() counted them free */
    w->claimed_items++;
    int r2 = start_slot(w, slot, &c[i], err);
    rc = rc ? rc : r2; /* every claim gets its slot (or is released), even after an error */
  }
  return rc;
}

/* Claims as many items as there are free slots with one script call (kb_queue_cycle_batch)
 * and queues their builds. Returns KB_OK (at least one claimed), or the claim's
 * KB_EEMPTY/KB_EBUDGET/KB_ESTATE (state in `state`), or an error. */
static int claim_free(struct worker *w, char state[16], struct kb_error *err) {
  int k = claimable(w), n = 0;
  if (k == 0)
    return KB_EEMPTY;
  struct kb_claim c[KB_QUEUE_BATCH_MAX];
  struct kb_error e = {0};
  double t_q = kb_now_mono();
  prefer_prepared(w);
  int rc = kb_queue_cycle_batch(&w->q, NULL, 0, w->name, w->opts->min_tier, w->opts->max_tier, k,
                                c, &n, NULL, state, &e);
  w->split.queue += kb_now_mono() - t_q;
  if (rc != KB_OK)
    return rc == KB_EEMPTY || rc == KB_EBUDGET || rc == KB_ESTATE ? rc
                                                                  : kb_error_set(err, rc, "%s", e.msg);
  return start_claims(w, c, n, err);
}

/* The campaign's "sandbox": {"require": ...} (its spec in the meta hash) against the level
 * this node's sandboxes reach (logged). Errors: KB_ECONFINE (kb-runner exits with
 * KB_EXIT_CONFINE), KB_EPARSE, redis errors. */
static int check_confinement(struct worker *w, struct kb_error *err) {
  struct kb__confine_level l;
  kb__confine_probe(&l);
  kb_info("sandbox confinement on this node: %s (seccomp %s, Landlock ABI %d)%s%s", l.level,
          l.seccomp ? "yes" : "no", l.landlock_abi, l.note[0] ? ": " : "", l.note);
  char key[KB_ID_MAX + 16];
  kb_queue_key(&w->q, key, sizeof key, KB_KEY_META);
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(w->redis, &rep, err, "HGET %s spec", key);
  if (rc)
    return rc;
  if (rep->type == REDIS_REPLY_STRING) {
    struct kb_campaign c;
    memset(&c, 0, sizeof c);
    rc = kb_campaign_parse("campaign.json", rep->str, "/", 0, &c, err);
    if (rc == KB_OK)
      rc = kb_confinement_check(w->q.cid, c.sandbox_require, l.level, err);
    kb_campaign_release(&c);
  }
  freeReplyObject(rep);
  return rc;
}

/* 1 unless the campaign was seen draining, cancelled or done (by a claim or the heartbeat). */
static int campaign_open(struct worker *w) {
  pthread_mutex_lock(&w->lock);
  int open = w->state[0] == '\0' || strcmp(w->state, "running") == 0 ||
             strcmp(w->state, "submitting") == 0;
  pthread_mutex_unlock(&w->lock);
  return open;
}

static void note_state(struct worker *w, const char *state) {
  if (state[0] == '\0')
    return;
  pthread_mutex_lock(&w->lock);
  snprintf(w->state, sizeof w->state, "%s", state);
  pthread_mutex_unlock(&w->lock);
}

/* Gives the evaluator the task's baseline candidate, found in Redis, for same-run speedups;
 * once per task (a failure is logged, and the evaluation goes on without). */
static void find_baseline(struct worker *w, const struct kb_task *task) {
  struct kb_candidate base;
  struct kb_error e = {0};
  int found = 0;
  const char *name = task->baseline >= 0 ? task->seeds[task->baseline].name : NULL;
  if (name != NULL && kb__baseline_find(&w->q, task->id, name, &base, &found, &e) != KB_OK)
    kb_warn("task %s: cannot look up its baseline \"%s\": %s", task->id, name, e.msg);
  kb_error_clear(&e);
  if (kb__evaluator_set_baseline(w->ev, task, found ? &base : NULL, &e) != KB_OK)
    kb_warn("task %s: %s", task->id, e.msg);
  else if (found)
    kb_info("task %s: baseline \"%s\" (%.12s) re-timed at the full tier", task->id, name,
            base.id);
  if (found)
    kb_candidate_release(&base);
}

/* The scheduler's metrics mark of the candidate of last-tier item `c` (kb/keys.h
 * KB_KEY_METRICS): the bound its median must beat to rank among its task's best, for the
 * metrics pass and the witness's rounds (0: any time ranks), or -1 when it is not marked or
 * the mark cannot be read (logged; the evaluation goes on without the pass, and its witness
 * runs every round). */
static double metrics_mark(struct worker *w, const struct kb_claim *c) {
  char key[200];
  struct kb_error e = {0};
  if (kb_queue_key(&w->q, key, sizeof key, KB_KEY_METRICS) != KB_OK)
    return -1;
  redisReply *rep = NULL;
  if (kb_redis_commandf(w->redis, &rep, &e, "HGET %s %s", key, c->candidate) != KB_OK) {
    kb_warn("item %s: its metrics mark not read (no metrics pass; every witness round): %s",
            c->item, e.msg);
    return -1;
  }
  double bound = -1;
  if (rep->type == REDIS_REPLY_STRING) {
    char *end = NULL;
    double v = strtod(rep->str, &end);
    bound = end != rep->str && *end == '\0' && isfinite(v) && v >= 0 ? v : -1;
    if (bound < 0)
      kb_warn("item %s: metrics mark \"%.40s\" of %s is not a number >= 0; no metrics pass, "
              "every witness round", c->item, rep->str, key);
  }
  freeReplyObject(rep);
  if (bound >= 0)
    kb_debug("item %s: marked (rank bound %.6g us, 0: none)", c->item, bound);
  return bound;
}

/* This runner cannot evaluate anything (`code`: KB_ECHILD, the sandbox does not start: a GPU
 * gone, a driver failure; KB_EWRITE, its build cache or its sandboxes' folder cannot take a
 * write: a full disk or quota, a read-only or failing file system): the item in `slot` goes back (a release, not an
 * attempt, so no item is used up by the machine's fault) and `err` gets `why` (borrowed), for
 * the runner to leave with. Returns `code`. */
static int leave_slot(struct worker *w, int slot, int code, const char *why,
                      struct kb_error *err) {
  char msg[sizeof err->msg];
  snprintf(msg, sizeof msg, "%s", why);
  release_slot(w, slot, code == KB_EWRITE ? "this node cannot write its files"
                                          : "the sandbox does not start", err);
  kb_error_clear(err);
  return kb_error_set(err, code, "%s", msg);
}

/* Evaluates the finished build `b` of the item in `slot` and completes or releases it. Items
 * not yet under evaluation when the campaign drains or is cancelled are released: only the
 * evaluation under way is recorded. */
static int evaluate_slot(struct worker *w, int slot, struct kb__compiled *b,
                         struct kb_error *err) {
  const struct kb_claim *c = &w->held[slot].claim;
  if (b->rc == KB_EWRITE)
    return leave_slot(w, slot, b->rc, b->err.msg, err);
  if (b->rc != KB_OK)
    return infra_slot(w, slot, b->err.msg, err);
  if (*w->opts->stop)
    return release_slot(w, slot, "built after the runner was asked to leave", err);
  if (!campaign_open(w))
    return release_slot(w, slot, "the campaign stopped before its evaluation began", err);
  struct kb_error e = {0};
  const struct kb_task *task = find_task(w, c->task, &e);
  if (task == NULL)
    return infra_slot(w, slot, e.msg, err);
  struct kb_result r;
  kb_result_init(&r);
  fill_identity(w, c, &r);
  r.started = w->held[slot].claimed;
  int flags = c->tier == w->q.n_tiers - 1 && w->q.n_tiers > 1 ? KB_EVAL_FULL : 0;
  if ((flags & KB_EVAL_FULL) && !kb__evaluator_has_baseline(w->ev, task->id))
    find_baseline(w, task);
  /* the scheduler's rank bound: the metrics pass (--metrics marked) and the witness's rounds */
  kb__evaluator_set_mark(w->ev, (flags & KB_EVAL_FULL) ? metrics_mark(w, c) : -1);
  double t_eval = kb_now_mono(), prep0 = kb__evaluator_prepare_s(w->ev);
  int rc = kb__evaluator_evaluate_built(w->ev, task, &b->build, &w->q.tiers[c->tier], c->tier,
                                       flags, &r, &e);
  r.finished = kb_now_wall();
  double t_done = kb_now_mono();
  w->split.eval += t_done - t_eval;
  w->split.items++;
  kb_debug("item %s: claimed %.3f s before its evaluation (build %.3f s, %s), evaluated in "
           "%.3f s (task preparation %.3f s)",
           c->item, t_eval - w->held[slot].claimed_mono, b->build_s,
           b->build.cached ? "cached" : "compiled", t_done - t_eval,
           kb__evaluator_prepare_s(w->ev) - prep0);
  r.compile_s = b->build.cached ? 0 : b->build_s;
  if (rc == KB_EINTERRUPTED) {
    kb_result_release(&r);
    return release_slot(w, slot, "evaluation interrupted", err);
  }
  if (rc == KB_ECHILD || rc == KB_EWRITE) {
    kb_result_release(&r);
    return leave_slot(w, slot, rc, e.msg, err);
  }
  if (rc) { /* the device time used until the failure (r.cost_ms) is still charged */
    r.status = KB_STATUS_INFRA_ERROR;
    snprintf(r.reason, sizeof r.reason, "%.255s", e.msg);
  }
  rc = complete_slot(w, slot, &r, 1, err);
  kb_result_release(&r);
  return rc;
}

static int campaign_over(const char *state) {
  return strcmp(state, "done") == 0 || strcmp(state, "cancelled") == 0;
}

static int held_count(struct worker *w) {
  int n = 0;
  for (int i = 0; i < MAX_AHEAD; i++)
    n += w->held[i].used;
  return n;
}

/* Releases every held item (the builds are dropped with the pool). */
static int release_all(struct worker *w, struct kb_error *err) {
  int rc = KB_OK;
  for (int i = 0; i < MAX_AHEAD; i++)
    if (w->held[i].used) {
      int r2 = release_slot(w, i, "not evaluated yet", err);
      rc = rc ? rc : r2;
    }
  return rc;
}

/* Logs where the wall time went since the loop started. */
static void log_split(struct worker *w) {
  const struct split *sp = &w->split;
  double wall = kb_now_mono() - sp->start;
  double prep = kb__evaluator_prepare_s(w->ev) - sp->prepare_at_start;
  double other = wall - sp->eval - sp->wait_build - sp->idle - sp->queue;
  double pct = wall > 0 ? 100.0 / wall : 0;
  double wit = kb__evaluator_witness_s(w->ev) - sp->witness_at_start;
  kb_info("time split over %.1f s, %ld items: evaluating %.1f s (%.0f%%; preparing tasks %.1f s, "
          "%ld preparations; witnessing %.1f s, %ld rounds), "
          "waiting for builds %.1f s (%.0f%%), nothing to claim %.1f s (%.0f%%), queue calls "
          "%.1f s (%.0f%%), other %.1f s (%.0f%%)",
          wall, sp->items, sp->eval, sp->eval * pct, prep, kb__evaluator_preparations(w->ev),
          wit, kb__evaluator_witness_rounds(w->ev) - sp->rounds_at_start, sp->wait_build, sp->wait_build * pct,
          sp->idle, sp->idle * pct, sp->queue, sp->queue * pct, other, other * pct);
}

static int loop(struct worker *w, int *why, struct kb_error *err) {
  long idle_ms = IDLE_MIN_MS, done_items = 0;
  int rc = KB_OK;
  struct kb__compiled built;
  kb__compiled_init(&built);
  *why = KB_WORKER_STOPPED;
  w->split.start = kb_now_mono();
  w->split.prepare_at_start = kb__evaluator_prepare_s(w->ev);
  w->split.witness_at_start = kb__evaluator_witness_s(w->ev);
  w->split.rounds_at_start = kb__evaluator_witness_rounds(w->ev);
  while (!*w->opts->stop) {
    /* keep the pipeline full: claim while a slot is free */
    int nothing = 0;
    char state[16] = "";
    while (!*w->opts->stop && held_count(w) < w->ahead &&
           (w->opts->max_items <= 0 || w->claimed_items < w->opts->max_items)) {
      rc = claim_free(w, state, err);
      if (rc == KB_OK)
        continue;
      if (rc == KB_EEMPTY || rc == KB_EBUDGET || rc == KB_ESTATE) {
        if (rc == KB_ESTATE)
          note_state(w, state);
        nothing = 1;
        rc = KB_OK;
        break;
      }
      goto out;
    }
    if (held_count(w) == 0) {
      if (w->opts->max_items > 0 && done_items >= w->opts->max_items)
        goto out;
      if (nothing && campaign_over(state)) {
        kb_info("campaign %s is %s; leaving", w->q.cid, state);
        *why = KB_WORKER_FINISHED;
        goto out;
      }
      /* nothing we can take now: the scheduler may promote or end the campaign soon */
      double t_idle = kb_now_mono();
      int got = 0;
      struct kb_error e = {0};
      /* collect finished oracle pre-builds meanwhile, so they do not hold pool room */
      while (kb__compile_pool_poll(w->pool, &built, &got, &e) == KB_OK && got)
        kb__compiled_release(&built);
      kb_sleep_ms(idle_ms);
      idle_ms = idle_ms * 2 > IDLE_MAX_MS ? IDLE_MAX_MS : idle_ms * 2;
      w->split.idle += kb_now_mono() - t_idle;
      continue;
    }
    idle_ms = IDLE_MIN_MS;
    /* evaluate whichever build finished first; with nothing to claim, wait a little longer,
     * but not so long that a promotion waits for the next claim */
    int got = 0;
    struct kb_error e = {0};
    double t_wait = kb_now_mono();
    rc = kb__compile_pool_wait(w->pool, nothing ? 0.05 : 0.02, &built, &got, &e);
    w->split.wait_build += kb_now_mono() - t_wait;
    if (rc == KB_EEMPTY) {
      rc = KB_OK;
      continue;
    }
    if (rc) {
      rc = kb_error_set(err, rc, "%s", e.msg);
      goto out;
    }
    if (!got)
      continue;
    if (built.tag & (ORACLE_TAG | REFERENCE_TAG)) {
      /* a pre-build: in the compile cache, or the reference caches, now */
      if (built.tag & REFERENCE_TAG)
        reference_built(w, &built);
      kb__compiled_release(&built);
      continue;
    }
    rc = evaluate_slot(w, (int)built.tag, &built, err);
    kb__compiled_release(&built);
    if (rc)
      goto out;
    done_items++;
  }
out:
  kb__compiled_release(&built);
  int r2 = release_all(w, err);
  log_split(w);
  return rc ? rc : r2;
}

int kb__worker_run(const struct kb_worker_opts *opts, int *why, struct kb_error *err) {
  *why = KB_WORKER_STOPPED;
  int kind = kb_backend_from_name(opts->backend);
  if (kind < 0)
    return kb_error_set(err, KB_EINVAL, "backend must be \"host\" or \"cuda\", not \"%s\"",
                        opts->backend);
  struct worker w;
  memset(&w, 0, sizeof w);
  w.opts = opts;
  if (opts->name)
    snprintf(w.name, sizeof w.name, "%s", opts->name);
  else {
    char host[48] = "host";
    gethostname(host, sizeof host - 1);
    snprintf(w.name, sizeof w.name, "%s:%ld", host, (long)getpid());
  }
  pthread_mutex_init(&w.lock, NULL);
  pthread_t hb;
  int hb_started = 0;
  /* asked to leave, it waits for a lost redis only briefly (KB_REDIS_STOP_WAIT_MS) */
  struct kb_redis_opts ro = {.addr = opts->redis, .retry_ms = opts->wait_s * 1000,
                             .stop = opts->stop};
  int rc = kb_redis_connect(&ro, &w.redis, err);
  if (rc == KB_OK)
    rc = kb_queue_open_wait(&w.q, w.redis, opts->campaign, opts->wait_s, opts->stop, err);
  if (rc == KB_OK && w.q.backend != kind)
    rc = kb_error_set(err, KB_EINVAL, "campaign \"%s\" needs the %s backend, this runner "
                      "serves %s (--backend)", opts->campaign, kb_backend_name(w.q.backend),
                      opts->backend);
  if (rc == KB_OK)
    rc = check_confinement(&w, err);
  struct kb__cpus cpus = {0};
  if (rc == KB_OK && kind == KB_BACKEND_CUDA)
    rc = kb__cpus_split(&cpus, err);
  if (rc == KB_OK && cpus.split) {
    /* the evaluation (this thread, the sandboxes it starts) on one CPU, the builds on the
       rest (cpus.h); the trusted PyTorch worker compiles on KB_BUILD_CPUS */
    rc = kb__cpus_pin(&cpus.eval, err);
    if (rc == KB_OK && setenv("KB_BUILD_CPUS", cpus.builds_list, 1) != 0)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  if (rc == KB_OK) {
    /* the sandbox starts now (a CUDA runner owns its GPU from here): before any thread */
    struct kb_evaluator_opts eo = {.kind = kind, .cache_dir = opts->cache_dir,
                                   .device = opts->device, .stop = opts->stop};
    rc = kb__evaluator_new(&eo, &w.ev, err);
  }
  if (rc == KB_OK) {
    kb__evaluator_set_grace(w.ev, opts->grace_s);
    kb__evaluator_set_metrics(w.ev, opts->metrics);
    kb__evaluator_set_sample_chunk(w.ev, opts->sample_chunk);
    kb__evaluator_set_fresh(w.ev, opts->fresh);
    kb__evaluator_set_torch_reuse(w.ev, opts->torch_reuse_s);
    /* the pool's threads, and the compilers they start, inherit the builds' CPUs */
    if (cpus.split)
      rc = kb__cpus_pin(&cpus.builds, err);
    /* by default one compiler thread per CPU the builds have (the split already kept the
       evaluation's), else per CPU but one */
    int workers = opts->compile_workers;
    if (workers <= 0 && cpus.split)
      workers = cpus.total - 1;
    if (rc == KB_OK)
      rc = kb__compile_pool_new(kb__evaluator_compiler(w.ev), workers, 0, &w.pool, err);
    if (rc == KB_OK && cpus.split)
      rc = kb__cpus_pin(&cpus.eval, err);
  }
  if (rc == KB_OK) {
    int workers = kb__compile_pool_workers(w.pool);
    w.ahead = opts->ahead > 0 ? opts->ahead : workers + 1;
    if (w.ahead > MAX_AHEAD)
      w.ahead = MAX_AHEAD;
    if (w.ahead > kb__compile_pool_space(w.pool))
      w.ahead = kb__compile_pool_space(w.pool);
  }
  if (rc == KB_OK && (w.tasks = kb_calloc(MAX_CACHED_TASKS, sizeof *w.tasks)) == NULL)
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  if (rc == KB_OK) {
    if (pthread_create(&hb, NULL, heartbeat_main, &w) != 0)
      rc = kb_error_set(err, KB_EINTERNAL, "cannot start the heartbeat thread");
    else
      hb_started = 1;
  }
  if (rc == KB_OK) {
    char eval_list[64];
    kb__cpus_format(&cpus.eval, eval_list, sizeof eval_list);
    kb_info("runner %s serving campaign %s at %s: %s backend on %s, %d compiler threads, %d "
            "items ahead, %s%s%s%s",
            w.name, w.q.cid, kb_redis_addr(w.redis), opts->backend, kb__evaluator_device(w.ev),
            kb__compile_pool_workers(w.pool), w.ahead,
            cpus.split ? "evaluating on CPU " : "CPUs not split", cpus.split ? eval_list : "",
            cpus.split ? ", building on CPUs " : "", cpus.split ? cpus.builds_list : "");
    rc = loop(&w, why, err);
  }
  if (hb_started) {
    pthread_mutex_lock(&w.lock);
    w.hb_quit = 1;
    pthread_mutex_unlock(&w.lock);
    pthread_join(hb, NULL);
  }
  kb__compile_pool_free(w.pool);
  for (int i = 0; w.tasks && i < w.n_tasks; i++)
    kb_task_release(&w.tasks[i]);
  kb_free(w.tasks);
  kb__evaluator_free(w.ev);
  kb_redis_free(w.redis);
  pthread_mutex_destroy(&w.lock);
  return rc;
}
