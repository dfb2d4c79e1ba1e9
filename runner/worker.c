/* Runner main loop (see worker.h). */
#include "worker.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host_backend.h"
#include "kb/alloc.h"
#include "kb/catalog.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/log.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "kb/result.h"

#define MAX_CACHED_TASKS 256

struct worker {
  const struct kb_worker_opts *opts;
  char name[KB_ID_MAX];
  struct kb_redis *redis;
  struct kb_queue q;
  struct kb_host_backend *backend;
  struct kb_task *tasks; /* loaded tasks (MAX_CACHED_TASKS) */
  int n_tasks;

  /* Shared with the heartbeat thread. */
  pthread_mutex_t lock;
  int holding;               /* 1 while `current` is leased by us */
  struct kb_claim current;
  int hb_quit;
  char state[16];            /* campaign state as the last heartbeat saw it */
};



/* Extends the current lease every third of its length, on its own connection. */
static void *heartbeat_main(void *arg) {
  struct worker *w = arg;
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  struct kb_redis_opts ro = {.addr = w->opts->redis, .retry_ms = 5000};
  if (kb_redis_connect(&ro, &r, &err)) {
    kb_warn("heartbeat: %s", err.msg);
    return NULL;
  }
  struct kb_queue q = w->q;
  q.redis = r;
  const long period_ms = 1000; /* leases last tens of seconds; one beat a second is ample */
  for (;;) {
    pthread_mutex_lock(&w->lock);
    int quit = w->hb_quit;
    int holding = w->holding;
    struct kb_claim c = w->current;
    pthread_mutex_unlock(&w->lock);
    if (quit)
      break;
    char state[16] = "";
    int extended = 0;
    kb_error_clear(&err);
    if (kb_queue_heartbeat(&q, w->name, &c, holding, &extended, state, &err))
      kb_warn("heartbeat: %s", err.msg);
    else {
      pthread_mutex_lock(&w->lock);
      memcpy(w->state, state, sizeof w->state);
      pthread_mutex_unlock(&w->lock);
      if (holding && extended == 0)
        kb_warn("lease of %s was lost", c.item);
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

/* Evaluates the claimed item and fills `r`. Failures of the runner itself (not of the
 * candidate) become status infra_error with the reason. Returns KB_EINTERRUPTED, with no
 * verdict in `r`, when the stop flag ended the evaluation; else KB_OK. */
static int evaluate(struct worker *w, const struct kb_claim *c, struct kb_result *r) {
  struct kb_error err = {0};
  struct kb_candidate cand;
  memset(&cand, 0, sizeof cand);
  r->started = kb_now_wall();
  const struct kb_task *task = find_task(w, c->task, &err);
  int rc = task ? KB_OK : err.code;
  if (rc == KB_OK)
    rc = kb_catalog_get_candidate(&w->q, c->candidate, &cand, &err);
  if (rc == KB_OK)
    rc = kb_host_backend_evaluate(w->backend, task, &cand, &w->q.tiers[c->tier], c->tier, r,
                                  &err);
  int interrupted = rc == KB_EINTERRUPTED;
  if (rc && !interrupted) {
    r->status = KB_STATUS_INFRA_ERROR;
    snprintf(r->reason, sizeof r->reason, "%.255s", err.msg);
    r->cost_ms = 0;
  }
  r->finished = kb_now_wall();
  kb_candidate_release(&cand);
  return interrupted ? KB_EINTERRUPTED : KB_OK;
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

static int process(struct worker *w, const struct kb_claim *c, struct kb_error *err) {
  struct kb_result r;
  kb_result_init(&r);
  fill_identity(w, c, &r);
  /* Asked to leave (Slurm's time-limit warning, preemption, requeue) during the evaluation:
   * give the item back, even when a verdict came in meanwhile (the signal may have reached a
   * compiler or the candidate too). The reservation is refunded; a release is no attempt. */
  if (evaluate(w, c, &r) == KB_EINTERRUPTED || *w->opts->stop) {
    int released = 0;
    int rc = kb_queue_release(&w->q, c, w->name, &released, err);
    if (rc == KB_OK)
      kb_info("stopping: released %s (evaluation interrupted)%s", c->item,
              released ? "" : "; the lease was gone already");
    kb_result_release(&r);
    return rc;
  }
  char *json = NULL;
  int rc = kb_result_to_json(&r, &json, err);
  if (rc == KB_OK) {
    int dup = 0;
    rc = kb_queue_complete(&w->q, c, r.cost_ms, json, w->name, &dup, err);
    if (rc == KB_ELEASE) {
      kb_warn("%s: %s; result dropped, the item runs again", c->item, err->msg);
      kb_error_clear(err);
      rc = KB_OK;
    } else if (rc == KB_OK) {
      kb_info("%s %.12s tier %d (%s): %s%s%s %.3f ms", c->task, c->candidate, c->tier,
              r.tier_name, kb_status_name(r.status), r.reason[0] ? ": " : "", r.reason,
              r.timing.samples ? r.timing.median_us / 1000.0 : 0.0);
    }
  }
  kb_free(json);
  kb_result_release(&r);
  return rc;
}

static void set_holding(struct worker *w, const struct kb_claim *c) {
  pthread_mutex_lock(&w->lock);
  w->holding = c != NULL;
  if (c)
    w->current = *c;
  pthread_mutex_unlock(&w->lock);
}

static int campaign_over(const char *state) {
  return strcmp(state, "done") == 0 || strcmp(state, "cancelled") == 0;
}

static int loop(struct worker *w, int *why, struct kb_error *err) {
  long idle_ms = 50, done_items = 0;
  while (!*w->opts->stop) {
    if (w->opts->max_items > 0 && done_items >= w->opts->max_items) {
      *why = KB_WORKER_STOPPED;
      return KB_OK;
    }
    struct kb_claim c;
    char state[16] = "";
    struct kb_error e = {0};
    int rc = kb_queue_claim(&w->q, w->name, w->opts->min_tier, w->opts->max_tier, &c, state, &e);
    if (rc == KB_OK && *w->opts->stop) {
      int released = 0;
      rc = kb_queue_release(&w->q, &c, w->name, &released, err);
      kb_info("stopping: released %s", c.item);
      break;
    }
    if (rc == KB_OK) {
      set_holding(w, &c);
      rc = process(w, &c, err);
      set_holding(w, NULL);
      if (rc)
        return rc;
      done_items++;
      idle_ms = 50;
      continue;
    }
    if (rc == KB_ESTATE && campaign_over(state)) {
      kb_info("campaign %s is %s; leaving", w->q.cid, state);
      *why = KB_WORKER_FINISHED;
      return KB_OK;
    }
    if (rc != KB_EEMPTY && rc != KB_EBUDGET && rc != KB_ESTATE)
      return kb_error_set(err, rc, "%s", e.msg);
    /* Nothing we can take now: the scheduler may promote or end the campaign soon. */
    kb_sleep_ms(idle_ms);
    idle_ms = idle_ms * 2 > 1000 ? 1000 : idle_ms * 2;
  }
  *why = KB_WORKER_STOPPED;
  return err->code;
}

int kb_worker_run(const struct kb_worker_opts *opts, int *why, struct kb_error *err) {
  *why = KB_WORKER_STOPPED;
  if (strcmp(opts->backend, "host") != 0)
    return kb_error_set(err, KB_EINVAL, "backend \"%s\" is not available in this build: only "
                        "\"host\" is (the CUDA backend is issue 4)", opts->backend);
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
  struct kb_redis_opts ro = {.addr = opts->redis, .retry_ms = opts->wait_s * 1000};
  int rc = kb_redis_connect(&ro, &w.redis, err);
  if (rc == KB_OK)
    rc = kb_queue_open_wait(&w.q, w.redis, opts->campaign, opts->wait_s, opts->stop, err);
  if (rc == KB_OK && w.q.backend != KB_BACKEND_HOST)
    rc = kb_error_set(err, KB_EINVAL, "campaign \"%s\" needs the %s backend", opts->campaign,
                      kb_backend_name(w.q.backend));
  if (rc == KB_OK)
    rc = kb_host_backend_new(opts->cache_dir, NULL, &w.backend, err);
  if (rc == KB_OK)
    kb_host_backend_set_stop(w.backend, opts->stop);
  if (rc == KB_OK && (w.tasks = kb_calloc(MAX_CACHED_TASKS, sizeof *w.tasks)) == NULL)
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  if (rc == KB_OK) {
    if (pthread_create(&hb, NULL, heartbeat_main, &w) != 0)
      rc = kb_error_set(err, KB_EINTERNAL, "cannot start the heartbeat thread");
    else
      hb_started = 1;
  }
  if (rc == KB_OK) {
    kb_info("runner %s serving campaign %s at %s", w.name, w.q.cid, kb_redis_addr(w.redis));
    rc = loop(&w, why, err);
  }
  if (hb_started) {
    pthread_mutex_lock(&w.lock);
    w.hb_quit = 1;
    pthread_mutex_unlock(&w.lock);
    pthread_join(hb, NULL);
  }
  for (int i = 0; w.tasks && i < w.n_tasks; i++)
    kb_task_release(&w.tasks[i]);
  kb_free(w.tasks);
  kb_host_backend_free(w.backend);
  kb_redis_free(w.redis);
  pthread_mutex_destroy(&w.lock);
  return rc;
}
