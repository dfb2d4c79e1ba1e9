/* Live progress of a campaign from Redis (see progress.h). */
#include "progress.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/item.h"
#include "kb/keys.h"
#include "kb/rank.h"
#include "kb/redis.h"
#include "kb/result.h"

#define STREAM_BATCH 1000 /* results stream entries read per XRANGE */
#define RATE_WINDOW_MS 60000

static int64_t parse_i64(const char *s, int64_t fallback) {
  if (s == NULL || *s == '\0')
    return fallback;
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  return (end && *end == '\0') ? (int64_t)v : fallback;
}

/* HGET `suffix` `field` of the campaign into `out` (new, NULL when absent). */
static int hget(struct kb_progress *p, const char *suffix, const char *field, char **out,
                struct kb_error *err) {
  char key[512];
  redisReply *rep = NULL;
  *out = NULL;
  if (kb_queue_key(&p->q, key, sizeof key, suffix))
    return kb_error_set(err, KB_EINVAL, "key \"%s\" too long", suffix);
  int rc = kb_redis_commandf(p->q.redis, &rep, err, "HGET %s %s", key, field);
  if (rc == KB_OK && rep->type == REDIS_REPLY_STRING) {
    *out = kb_strndup(rep->str, rep->len);
    if (*out == NULL)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  freeReplyObject(rep);
  return rc;
}

/* The task's baseline seed name from its spec in Redis. */
static int read_baseline(struct kb_progress *p, struct kb_progress_task *t, struct kb_error *err) {
  char suffix[KB_ID_MAX + 8], *spec = NULL;
  snprintf(suffix, sizeof suffix, KB_KEY_TASK_FMT, t->id);
  int rc = hget(p, suffix, "spec", &spec, err);
  if (rc || spec == NULL)
    return rc;
  json_t *root = json_loads(spec, 0, NULL);
  const char *b = json_string_value(json_object_get(root, "baseline"));
  if (b)
    snprintf(t->baseline, sizeof t->baseline, "%s", b);
  json_decref(root);
  kb_free(spec);
  return KB_OK;
}

static int read_tasks(struct kb_progress *p, struct kb_error *err) {
  char *text = NULL;
  int rc = hget(p, KB_KEY_META, "tasks", &text, err);
  if (rc)
    return rc;
  json_t *ids = text ? json_loads(text, 0, NULL) : NULL;
  kb_free(text);
  size_t n = json_array_size(ids);
  p->tasks = kb_calloc(n + 1, sizeof *p->tasks);
  if (p->tasks == NULL) {
    json_decref(ids);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  p->counts = kb_calloc(n + 1, sizeof *p->counts);
  p->runners = kb_calloc(KB_PROGRESS_RUNNERS, sizeof *p->runners);
  if (p->counts == NULL || p->runners == NULL) {
    json_decref(ids);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n && rc == KB_OK; i++) {
    const char *id = json_string_value(json_array_get(ids, i));
    if (id == NULL)
      continue;
    struct kb_progress_task *t = &p->tasks[p->n_tasks++];
    snprintf(t->id, sizeof t->id, "%s", id);
    t->baseline_cand = -1;
    t->torch_tier = -1;
    t->best_tier = -1;
    rc = read_baseline(p, t, err);
  }
  json_decref(ids);
  return rc;
}

int kb__progress_open(struct kb_progress *p, struct kb_redis *redis, const char *cid,
                     struct kb_error *err) {
  memset(p, 0, sizeof *p);
  snprintf(p->cid, sizeof p->cid, "%s", cid);
  snprintf(p->stream_pos, sizeof p->stream_pos, "-");
  int rc = kb_queue_open(&p->q, redis, cid, err);
  if (rc)
    return rc;
  char *v = NULL;
  rc = hget(p, KB_KEY_META, "lease_ms", &v, err);
  p->lease_ms = parse_i64(v, 120000);
  kb_free(v);
  v = NULL;
  if (rc == KB_OK)
    rc = hget(p, KB_KEY_META, "deadline", &v, err);
  p->deadline = parse_i64(v, 0);
  kb_free(v);
  v = NULL;
  if (rc == KB_OK)
    rc = hget(p, KB_KEY_META, "created_ms", &v, err);
  p->created_ms = parse_i64(v, 0);
  kb_free(v);
  v = NULL;
  if (rc == KB_OK)
    rc = hget(p, KB_KEY_META, "spec", &v, err);
  json_t *spec = v ? json_loads(v, 0, NULL) : NULL;
  json_t *gens = json_object_get(spec, "generators");
  p->generating = json_is_object(gens) && json_object_size(gens) > 0;
  json_decref(spec);
  kb_free(v);
  if (rc == KB_OK)
    rc = read_tasks(p, err);
  return rc;
}

void kb__progress_release(struct kb_progress *p) {
  if (p == NULL)
    return;
  kb_free(p->tasks);
  kb_free(p->counts);
  kb_free(p->items);
  kb_free(p->runners);
  p->items = NULL;
  kb_free(p->cands);
  kb_free(p->slots);
  p->counts = NULL;
  p->runners = NULL;
  p->tasks = NULL;
  p->cands = NULL;
  p->slots = NULL;
}

int kb__progress_ended(const struct kb_progress *p) {
  return strcmp(p->st.state, "done") == 0 || strcmp(p->st.state, "cancelled") == 0;
}

/* ---- the candidate table: ids are hex SHA-256, so their first digits hash well ------------- */

static unsigned id_hash(const char *id) {
  unsigned h = 0;
  for (int i = 0; i < 8 && id[i]; i++)
    h = h * 16 + (unsigned)(id[i] <= '9' ? id[i] - '0' : (id[i] | 32) - 'a' + 10);
  return h;
}

static int find_cand(const struct kb_progress *p, const char *id) {
  if (p->n_slots == 0)
    return -1;
  for (unsigned s = id_hash(id) & (unsigned)(p->n_slots - 1);;
       s = (s + 1) & (unsigned)(p->n_slots - 1)) {
    int i = p->slots[s];
    if (i < 0)
      return -1;
    if (strcmp(p->cands[i].id, id) == 0)
      return i;
  }
}

static void index_cand(struct kb_progress *p, int i) {
  unsigned s = id_hash(p->cands[i].id) & (unsigned)(p->n_slots - 1);
  while (p->slots[s] >= 0)
    s = (s + 1) & (unsigned)(p->n_slots - 1);
  p->slots[s] = i;
}

/* Room for one more candidate: grows the table and rebuilds the index at half load. */
static int reserve_cand(struct kb_progress *p, struct kb_error *err) {
  if (p->n_cands < p->cap_cands && p->n_cands * 2 < p->n_slots)
    return KB_OK;
  int cap = p->cap_cands ? p->cap_cands * 2 : 64;
  struct kb_progress_cand *c = kb_reallocarray(p->cands, (size_t)cap, sizeof *c);
  if (c == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  p->cands = c;
  p->cap_cands = cap;
  int *slots = kb_reallocarray(NULL, (size_t)cap * 2, sizeof *slots);
  if (slots == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  kb_free(p->slots);
  p->slots = slots;
  p->n_slots = cap * 2;
  for (int s = 0; s < p->n_slots; s++)
    p->slots[s] = -1;
  for (int i = 0; i < p->n_cands; i++)
    index_cand(p, i);
  return KB_OK;
}

static int task_index(const struct kb_progress *p, const char *task) {
  for (int i = 0; i < p->n_tasks; i++)
    if (strcmp(p->tasks[i].id, task) == 0)
      return i;
  return -1;
}

/* The candidate `id` of `task`, added (with its name from Redis) when new; -1 on failure. */
static int cand_of(struct kb_progress *p, const char *id, int task, struct kb_error *err) {
  int i = find_cand(p, id);
  if (i >= 0)
    return i;
  if (reserve_cand(p, err))
    return -1;
  char suffix[KB_CAND_ID_LEN + 8], *name = NULL;
  snprintf(suffix, sizeof suffix, KB_KEY_CAND_FMT, id);
  if (hget(p, suffix, "name", &name, err))
    return -1;
  i = p->n_cands++;
  struct kb_progress_cand *c = &p->cands[i];
  memset(c, 0, sizeof *c);
  snprintf(c->id, sizeof c->id, "%s", id);
  snprintf(c->name, sizeof c->name, "%.12s", id);
  if (name)
    snprintf(c->name, sizeof c->name, "%s", name);
  kb_free(name);
  c->task = task;
  c->cost_tier = -1;
  index_cand(p, i);
  struct kb_progress_task *t = &p->tasks[task];
  if (t->baseline_cand < 0 && t->baseline[0] && strcmp(t->baseline, c->name) == 0)
    t->baseline_cand = i;
  return i;
}

/* Milliseconds part of a stream id "<ms>-<seq>". */
static int64_t stream_ms(const char *id) {
  char *end = NULL;
  long long v = strtoll(id, &end, 10);
  return end != id ? (int64_t)v : 0;
}

/* The runner named `name` in p->runners, added when new; NULL when the table is full. */
static struct kb_progress_runner *runner_of(struct kb_progress *p, const char *name) {
  for (int i = 0; i < p->n_runners; i++)
    if (strcmp(p->runners[i].name, name) == 0)
      return &p->runners[i];
  if (p->n_runners == KB_PROGRESS_RUNNERS)
    return NULL;
  struct kb_progress_runner *r = &p->runners[p->n_runners++];
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  return r;
}

/* Keeps the torch times an ok result carries (pytorch-oracle or torch_reference tasks, full
 * tier) as its task's latest. */
static void note_torch(struct kb_progress_task *t, const struct kb_result *r) {
  kb_result_keep_torch(r, &t->torch_eager_us, &t->torch_compile_us, &t->torch_tier);
}

/* The timed part of result `r` (candidate `c` of `task`, `per_call` its mean us per timed call,
 * 0 = not timed) into the task's counts (eta.h: timed_ms, samples, cap_samples, base_us). */
static void count_timed(struct kb_progress *p, int task, int c, const struct kb_result *r,
                        double per_call) {
  struct kb_eta_task *n = &p->counts[task];
  const struct kb_tier *tier = &p->q.tiers[r->tier];
  if (per_call <= 0)
    return;
  double calls = (double)(r->timing.warmup + r->timing.samples);
  n->timed_ms[r->tier] += calls * per_call / 1000.0;
  n->samples[r->tier] += r->timing.samples;
  n->cap_samples[r->tier] +=
      kb__eta_samples_cap(tier->min_samples, tier->max_samples, tier->max_seconds, per_call);
  if (isfinite(r->baseline_median_us) && r->baseline_median_us > 0) { /* re-timed with it */
    n->timed_ms[r->tier] += calls * r->baseline_median_us / 1000.0;
    n->base_us[r->tier] = r->baseline_median_us;
  } else if (c == p->tasks[task].baseline_cand) {
    n->base_us[r->tier] = per_call;
  }
}

/* Counts the result `r` of stream entry `entry_id`, settled by runner `runner` (NULL = not
 * named). */
static void record(struct kb_progress *p, const char *entry_id, const char *runner,
                   const struct kb_result *r, struct kb_error *err) {
  int task = task_index(p, r->task);
  if (task < 0 || r->tier < 0 || r->tier >= KB_MAX_TIERS) {
    p->bad_entries++;
    return;
  }
  double cost = r->cost_ms > 0 ? (double)r->cost_ms : 0;
  p->results++;
  p->evaluated[r->tier]++;
  p->cost_ms[r->tier] += cost;
  if (p->counts[task].evaluated[r->tier]++ == 0)
    p->counts[task].first_ms[r->tier] = cost;
  p->counts[task].settled_ms[r->tier] += cost;
  p->tasks[task].results++;
  struct kb_progress_runner *who = runner ? runner_of(p, runner) : NULL;
  int64_t at = stream_ms(entry_id);
  int64_t from = who ? (who->last_ms > who->seen_ms ? who->last_ms : who->seen_ms) : 0;
  if (from > 0 && at >= from) { /* the runner's time on this item, beyond its cost */
    p->over_ms[r->tier] += (double)(at - from) - cost;
    p->over_n[r->tier]++;
  }
  if (who && at > who->last_ms)
    who->last_ms = at;
  p->ring[p->ring_head] = stream_ms(entry_id);
  p->ring_head = (p->ring_head + 1) % KB_PROGRESS_RING;
  if (p->ring_n < KB_PROGRESS_RING)
    p->ring_n++;
  if (r->status == KB_STATUS_OK) {
    p->passed[r->tier]++;
    note_torch(&p->tasks[task], r);
  }
  /* Per tier the latest result counts (kb/rank.h): a later attempt that failed clears it. */
  int timed = kb_rank_timed(r->status == KB_STATUS_OK, r->timing.samples, r->timing.median_us);
  int c = cand_of(p, r->candidate, task, err);
  if (c < 0)
    return;
  p->cands[c].rank.median_us[r->tier] = timed ? r->timing.median_us : 0;
  p->cands[c].eager_us[r->tier] = timed && r->torch_eager_us > 0 ? r->torch_eager_us : 0;
  double per_call = r->timing.samples > 0 && r->timing.mean_us > 0 ? r->timing.mean_us : 0;
  if (per_call > 0 && p->cands[c].cost_us > 0 && p->cands[c].cost_tier < r->tier) {
    p->counts[task].pair_us[r->tier] += per_call; /* the same kernel one tier on */
    p->counts[task].pair_from_us[r->tier] += p->cands[c].cost_us;
  }
  if (r->tier >= p->cands[c].cost_tier) { /* what its next tier is priced from */
    p->cands[c].cost_tier = r->tier;
    p->cands[c].cost_ms = cost;
    p->cands[c].cost_us = per_call;
  }
  count_timed(p, task, c, r, per_call);
}

/* Marks in `dropped` (n entries) those of the batch `rep` the scheduler dropped as forged or
 * stray (kb:{cid}:stray, kb/queue.h), one HMGET. */
static int stray_of(struct kb_progress *p, const redisReply *rep, char *dropped,
                    struct kb_error *err) {
  size_t n = rep->elements;
  char key[512];
  const char **argv = kb_calloc(n + 2, sizeof *argv);
  if (argv == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  kb_queue_key(&p->q, key, sizeof key, KB_KEY_STRAY);
  argv[0] = "HMGET";
  argv[1] = key;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const redisReply *e = rep->element[i];
    argv[2 + m++] = e->type == REDIS_REPLY_ARRAY && e->elements == 2 &&
                            e->element[0]->type == REDIS_REPLY_STRING
                        ? e->element[0]->str
                        : "-";
  }
  redisReply *h = NULL;
  int rc = kb_redis_command(p->q.redis, (int)(2 + m), argv, NULL, 0, &h, err);
  kb_free(argv);
  if (rc)
    return rc;
  for (size_t i = 0; i < n && h->type == REDIS_REPLY_ARRAY && i < h->elements; i++)
    dropped[i] = h->element[i]->type == REDIS_REPLY_STRING;
  freeReplyObject(h);
  return KB_OK;
}

/* Reads the results stream entries after `p->stream_pos`, in batches. Entries that name no lease
 * (no "charge" field) or that the scheduler dropped as forged or stray are not counted. */
static int read_results(struct kb_progress *p, struct kb_error *err) {
  char key[512], start[64];
  char dropped[STREAM_BATCH];
  if (kb_queue_key(&p->q, key, sizeof key, KB_KEY_RESULTS))
    return kb_error_set(err, KB_EINVAL, "key too long");
  for (;;) {
    if (strcmp(p->stream_pos, "-") == 0)
      snprintf(start, sizeof start, "-");
    else
      snprintf(start, sizeof start, "(%s", p->stream_pos);
    redisReply *rep = NULL;
    int rc = kb_redis_commandf(p->q.redis, &rep, err, "XRANGE %s %s + COUNT %d", key, start,
                               STREAM_BATCH);
    if (rc)
      return rc;
    size_t n = rep->type == REDIS_REPLY_ARRAY ? rep->elements : 0;
    memset(dropped, 0, sizeof dropped);
    if (n > 0 && n <= STREAM_BATCH && (rc = stray_of(p, rep, dropped, err)) != KB_OK) {
      freeReplyObject(rep);
      return rc;
    }
    for (size_t i = 0; i < n; i++) {
      redisReply *e = rep->element[i];
      if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
          e->element[0]->type != REDIS_REPLY_STRING)
        continue;
      snprintf(p->stream_pos, sizeof p->stream_pos, "%s", e->element[0]->str);
      redisReply *f = e->element[1];
      const char *text = NULL, *runner = NULL;
      int leased = 0;
      for (size_t k = 0; f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements; k += 2)
        if (f->element[k]->type == REDIS_REPLY_STRING &&
            f->element[k + 1]->type == REDIS_REPLY_STRING) {
          if (strcmp(f->element[k]->str, "result") == 0)
            text = f->element[k + 1]->str;
          else if (strcmp(f->element[k]->str, "charge") == 0)
            leased = 1;
          else if (strcmp(f->element[k]->str, "runner") == 0)
            runner = f->element[k + 1]->str;
        }
      struct kb_result r;
      struct kb_error perr = {0};
      if (text == NULL || !leased || dropped[i] ||
          kb_result_from_json(text, "results stream", &r, &perr)) {
        p->bad_entries++;
        continue;
      }
      /* complete_claim's entries name no runner (the done item holds it): the result's, which
       * the scheduler drops the entry for when it is not the lease's */
      record(p, e->element[0]->str, runner ? runner : r.runner, &r, err);
      kb_result_release(&r);
      if (err && err->code)
        break;
    }
    freeReplyObject(rep);
    if (err && err->code)
      return err->code;
    if (n < STREAM_BATCH)
      return KB_OK;
  }
}

/* The items `ids` (n of them, borrowed) from the items hash, one HMGET: `*out` gets the reply
 * (new; free with freeReplyObject), an array of n item lines (kb/item.h) or nils. */
static int get_items(struct kb_progress *p, const char *const *ids, size_t n, redisReply **out,
                     struct kb_error *err) {
  char key[512];
  *out = NULL;
  if (kb_queue_key(&p->q, key, sizeof key, KB_KEY_ITEMS))
    return kb_error_set(err, KB_EINVAL, "key too long");
  const char **argv = kb_calloc(n + 2, sizeof *argv);
  if (argv == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  argv[0] = "HMGET";
  argv[1] = key;
  for (size_t i = 0; i < n; i++)
    argv[2 + i] = ids[i];
  int rc = kb_redis_command(p->q.redis, (int)(n + 2), argv, NULL, 0, out, err);
  kb_free(argv);
  if (rc == KB_OK && ((*out)->type != REDIS_REPLY_ARRAY || (*out)->elements != n)) {
    freeReplyObject(*out);
    *out = NULL;
    rc = kb_error_set(err, KB_EREDIS, "HMGET %s: unexpected reply", key);
  }
  return rc;
}

/* The tier of item id "<candidate>:<tier>"; -1 when it is not one. */
static int item_tier(const char *id) {
  const char *colon = id ? strrchr(id, ':') : NULL;
  int64_t tier = colon ? parse_i64(colon + 1, -1) : -1;
  return tier >= 0 && tier < KB_MAX_TIERS ? (int)tier : -1;
}

/* Adds the open item `id` ("<candidate>:<tier>") of task `task` to p->items, with its
 * candidate's latest cost; on ENOMEM the list stops growing and task_ready is cleared. */
static void add_item(struct kb_progress *p, const char *id, int task, int tier, int leased) {
  if (p->n_items == p->cap_items) {
    int cap = p->cap_items ? p->cap_items * 2 : 64;
    struct kb_eta_item *it = kb_reallocarray(p->items, (size_t)cap, sizeof *it);
    if (it == NULL) {
      p->task_ready = 0;
      return;
    }
    p->items = it;
    p->cap_items = cap;
  }
  struct kb_eta_item *it = &p->items[p->n_items++];
  *it = (struct kb_eta_item){
      .task = task, .tier = tier, .leased = leased, .basis_tier = -1, .runner = -1};
  char cand[KB_CAND_ID_LEN + 1];
  const char *colon = strrchr(id, ':');
  if (colon == NULL || colon - id > KB_CAND_ID_LEN)
    return;
  snprintf(cand, sizeof cand, "%.*s", (int)(colon - id), id);
  int c = find_cand(p, cand);
  if (c >= 0 && p->cands[c].cost_tier >= 0) {
    it->basis_ms = p->cands[c].cost_ms;
    it->basis_tier = p->cands[c].cost_tier;
    it->basis_us = p->cands[c].cost_us;
  }
}

/* Counts one leased item from its line `text` (borrowed, kb/item.h; NULL = gone meanwhile):
 * per tier, per task and per runner, the runner first seen at `now_ms`. */
static void count_lease(struct kb_progress *p, const char *id, int tier, const char *text) {
  p->leased[tier]++;
  struct kb_item item;
  int ok = text && kb_item_parse(id, text, &item, NULL) == KB_OK;
  int task = ok ? task_index(p, item.task) : -1;
  struct kb_progress_runner *r = ok && item.runner[0] ? runner_of(p, item.runner) : NULL;
  if (task >= 0) {
    p->counts[task].leased[tier]++;
    int n = p->n_items;
    add_item(p, id, task, tier, 1);
    if (p->n_items > n)
      p->items[n].runner = r ? (int)(r - p->runners) : -1;
  }
  if (r && r->leases++ == 0 && r->seen_ms == 0)
    r->seen_ms = p->now_ms;
}

/* Leases per tier, per task and per runner: the lease set's item ids ("<candidate>:<tier>")
 * and those items' task and runner (one HMGET); the runners holding one are the busy ones. */
static int read_leases(struct kb_progress *p, struct kb_error *err) {
  char key[512];
  redisReply *rep = NULL, *items = NULL;
  memset(p->leased, 0, sizeof p->leased);
  for (int i = 0; i < p->n_tasks; i++)
    memset(p->counts[i].leased, 0, sizeof p->counts[i].leased);
  for (int i = 0; i < p->n_runners; i++)
    p->runners[i].leases = 0;
  p->n_items = 0;
  p->task_ready = 1; /* until add_item runs out of memory or read_task_ready finds too many */
  if (kb_queue_key(&p->q, key, sizeof key, KB_KEY_LEASE))
    return kb_error_set(err, KB_EINVAL, "key too long");
  int rc = kb_redis_commandf(p->q.redis, &rep, err, "ZRANGE %s 0 -1", key);
  size_t n = rc == KB_OK && rep->type == REDIS_REPLY_ARRAY ? rep->elements : 0;
  const char **ids = n ? kb_calloc(n, sizeof *ids) : NULL;
  if (n && ids == NULL)
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  for (size_t i = 0; rc == KB_OK && i < n; i++)
    ids[i] = rep->element[i]->str ? rep->element[i]->str : "";
  if (rc == KB_OK && n)
    rc = get_items(p, ids, n, &items, err);
  for (size_t i = 0; rc == KB_OK && i < n; i++) {
    int tier = item_tier(ids[i]);
    if (tier >= 0)
      count_lease(p, ids[i], tier, items->element[i]->str);
  }
  p->runners_busy = 0;
  for (int i = 0; i < p->n_runners; i++) {
    p->runners_busy += p->runners[i].leases > 0;
    if (p->runners[i].leases == 0) /* idle: its next item's time starts at its next lease */
      p->runners[i].seen_ms = p->runners[i].last_ms = 0;
  }
  kb_free(ids);
  freeReplyObject(items);
  freeReplyObject(rep);
  return rc;
}

/* The task of each id of ready queue reply `rep` whose candidate is not in the table yet, from
 * its item (one HMGET), its candidate then added (cand_of). */
static int learn_candidates(struct kb_progress *p, const redisReply *rep, struct kb_error *err) {
  const char **ids = kb_calloc(rep->elements + 1, sizeof *ids);
  if (ids == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  size_t m = 0;
  char cand[KB_CAND_ID_LEN + 1];
  for (size_t i = 0; i < rep->elements; i++) {
    const char *id = rep->element[i]->str;
    const char *colon = id ? strrchr(id, ':') : NULL;
    if (colon == NULL || colon - id > KB_CAND_ID_LEN)
      continue;
    snprintf(cand, sizeof cand, "%.*s", (int)(colon - id), id);
    if (find_cand(p, cand) < 0)
      ids[m++] = id;
  }
  redisReply *items = NULL;
  int rc = m ? get_items(p, ids, m, &items, err) : KB_OK;
  for (size_t i = 0; rc == KB_OK && i < m; i++) {
    struct kb_item item;
    const char *text = items->element[i]->str;
    int task = text && kb_item_parse(ids[i], text, &item, NULL) == KB_OK ? task_index(p, item.task)
                                                                         : -1;
    if (task >= 0 && cand_of(p, item.cand, task, err) < 0)
      rc = err && err->code ? err->code : KB_ENOMEM;
  }
  freeReplyObject(items);
  kb_free(ids);
  return rc;
}

/* Ready items per task and tier, from the ready queues, while no more than
 * KB_PROGRESS_TASK_READY items are ready (p->task_ready says whether they were read). */
static int read_task_ready(struct kb_progress *p, struct kb_error *err) {
  int64_t total = 0;
  for (int k = 0; k < p->st.n_tiers; k++)
    total += p->st.ready[k];
  for (int i = 0; i < p->n_tasks; i++)
    memset(p->counts[i].ready, 0, sizeof p->counts[i].ready);
  if (total > KB_PROGRESS_TASK_READY)
    p->task_ready = 0;
  int rc = KB_OK;
  for (int k = 0; p->task_ready && rc == KB_OK && k < p->st.n_tiers && k < KB_MAX_TIERS; k++) {
    if (p->st.ready[k] == 0)
      continue;
    char suffix[32], key[512];
    redisReply *rep = NULL;
    snprintf(suffix, sizeof suffix, KB_KEY_READY_FMT, k);
    if (kb_queue_key(&p->q, key, sizeof key, suffix))
      return kb_error_set(err, KB_EINVAL, "key too long");
    rc = kb_redis_commandf(p->q.redis, &rep, err, "ZRANGE %s 0 -1", key);
    if (rc == KB_OK && rep->type == REDIS_REPLY_ARRAY)
      rc = learn_candidates(p, rep, err);
    char cand[KB_CAND_ID_LEN + 1];
    for (size_t i = 0; rc == KB_OK && rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
      const char *id = rep->element[i]->str;
      const char *colon = id ? strrchr(id, ':') : NULL;
      if (colon == NULL || colon - id > KB_CAND_ID_LEN)
        continue;
      snprintf(cand, sizeof cand, "%.*s", (int)(colon - id), id);
      int c = find_cand(p, cand);
      if (c >= 0) {
        p->counts[p->cands[c].task].ready[k]++;
        add_item(p, id, p->cands[c].task, k, 0);
      }
    }
    freeReplyObject(rep);
  }
  return rc;
}

static int read_clock_and_runners(struct kb_progress *p, struct kb_error *err) {
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(p->q.redis, &rep, err, "TIME");
  if (rc == KB_OK && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
    p->now_ms =
        parse_i64(rep->element[0]->str, 0) * 1000 + parse_i64(rep->element[1]->str, 0) / 1000;
  freeReplyObject(rep);
  rep = NULL;
  char key[512];
  if (rc == KB_OK && kb_queue_key(&p->q, key, sizeof key, KB_KEY_RUNNERS))
    rc = kb_error_set(err, KB_EINVAL, "key too long");
  if (rc == KB_OK)
    rc = kb_redis_commandf(p->q.redis, &rep, err, "HGETALL %s", key);
  p->runners_alive = p->runners_known = 0;
  for (size_t i = 1; rc == KB_OK && rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i += 2) {
    int64_t beat = parse_i64(rep->element[i]->str, 0);
    p->runners_known++;
    if (p->now_ms - beat <= p->lease_ms)
      p->runners_alive++;
  }
  freeReplyObject(rep);
  return rc;
}

/* Throughput over the last minute of results (or since the first, when younger). */
static void throughput(struct kb_progress *p) {
  int64_t oldest = 0;
  int recent = 0;
  for (int i = 0; i < p->ring_n; i++) {
    int64_t t = p->ring[i];
    if (t >= p->now_ms - RATE_WINDOW_MS) {
      recent++;
      if (oldest == 0 || t < oldest)
        oldest = t;
    }
  }
  p->rate = 0;
  if (recent >= 2 && p->now_ms > oldest) {
    double span = (double)(p->now_ms - oldest) / 1000.0;
    p->rate = recent / (span < 1 ? 1 : span);
  }
}

/* Spend rates per currency: over the snapshots of the last minute when they span 10 s or more,
 * else since the campaign was submitted. */
static void spend_rates(struct kb_progress *p) {
  if (p->spend_n == KB_PROGRESS_SPEND) {
    memmove(p->spend_t, p->spend_t + 1, sizeof p->spend_t - sizeof p->spend_t[0]);
    memmove(p->spend_gpu, p->spend_gpu + 1, sizeof p->spend_gpu - sizeof p->spend_gpu[0]);
    memmove(p->spend_llm, p->spend_llm + 1, sizeof p->spend_llm - sizeof p->spend_llm[0]);
    memmove(p->spend_busy, p->spend_busy + 1, sizeof p->spend_busy - sizeof p->spend_busy[0]);
    p->spend_n--;
  }
  p->spend_busy[p->spend_n] = p->runners_busy;
  p->spend_t[p->spend_n] = p->now_ms;
  p->spend_gpu[p->spend_n] = p->st.gpu_spent;
  p->spend_llm[p->spend_n] = p->st.llm_spent;
  p->spend_n++;
  p->gpu_rate = kb__eta_rate(p->spend_t, p->spend_gpu, p->spend_n, p->created_ms);
  p->llm_rate = kb__eta_rate(p->spend_t, p->spend_llm, p->spend_n, p->created_ms);
  p->runner_rate = kb__eta_runner_rate(p->spend_t, p->spend_gpu, p->spend_busy, p->spend_n);
}

void kb__progress_eta_input(const struct kb_progress *p, struct kb_eta_in *in) {
  memset(in, 0, sizeof *in);
  in->n_tiers = p->q.n_tiers < KB_MAX_TIERS ? p->q.n_tiers : KB_MAX_TIERS;
  for (int k = 0; k < in->n_tiers; k++) {
    in->ready[k] = k < p->st.n_tiers ? p->st.ready[k] : 0;
    in->leased[k] = p->leased[k];
    in->evaluated[k] = p->evaluated[k];
    in->cost_ms[k] = p->evaluated[k] > 0 ? p->cost_ms[k] / (double)p->evaluated[k] : 0;
    in->plan_ms[k] = (double)p->q.tiers[k].cost_ms;
  }
  in->gpu_rate = kb__eta_work_rate(p->spend_t, p->spend_gpu, p->spend_n, p->created_ms,
                                   &in->since_settled_s);
  in->spend_rate = p->gpu_rate;
  in->gpu_left_ms = (double)p->st.gpu_available;
  in->deadline_s = -1;
  if (p->deadline > 0) { /* a deadline passed: 0 left */
    double left = (double)p->deadline - (double)p->now_ms / 1000.0;
    in->deadline_s = left > 0 ? left : 0;
  }
  in->generating = p->generating;
  for (int k = 0; k < in->n_tiers; k++) {
    in->max_s[k] = p->q.tiers[k].max_seconds;
    in->warmup[k] = p->q.tiers[k].warmup;
    in->min_samples[k] = p->q.tiers[k].min_samples;
    in->max_samples[k] = p->q.tiers[k].max_samples;
  }
  in->tasks = p->task_ready ? p->counts : NULL;
  in->n_tasks = p->n_tasks;
  in->items = p->task_ready ? p->items : NULL;
  in->n_items = p->task_ready ? p->n_items : 0;
  in->runners = p->runners_alive > p->runners_busy ? p->runners_alive : p->runners_busy;
  in->runner_rate = p->runner_rate;
  for (int k = 0; k < in->n_tiers; k++)
    in->over_ms[k] = p->over_n[k] > 0 ? p->over_ms[k] / (double)p->over_n[k] : 0;
  memcpy(in->over_n, p->over_n, sizeof in->over_n);
  for (int i = 0; i < p->n_runners && in->n_busy < KB_ETA_MAX_BUSY; i++) {
    const struct kb_progress_runner *r = &p->runners[i];
    if (r->leases == 0)
      continue;
    int64_t since = r->last_ms > r->seen_ms ? r->last_ms : r->seen_ms;
    in->busy_runner[in->n_busy] = i;
    in->busy_s[in->n_busy++] = p->now_ms > since ? (double)(p->now_ms - since) / 1000.0 : 0;
  }
}

/* The time the open items and their expected promotions need (eta.h). */
static void estimate(struct kb_progress *p) {
  throughput(p);
  spend_rates(p);
  struct kb_eta_in in;
  kb__progress_eta_input(p, &in);
  kb__eta_estimate(&in, &p->eta);
  double now = (double)p->now_ms / 1000.0;
  if (p->eta.eta_s < 0) {
    p->end_s = -1;
  } else {
    double prev = p->end_at_ms > 0 ? p->end_s : -1;
    double dt = (double)(p->now_ms - p->end_at_ms) / 1000.0;
    p->end_s = kb__eta_smooth(prev, now + p->eta.eta_s, now, dt);
    p->end_at_ms = p->now_ms;
  }
  p->eta_s = kb__progress_ended(p) ? 0 : p->end_s < 0 ? -1 : p->end_s > now ? p->end_s - now : 0;
}

/* `task`'s torch speedups of its best `c` (kb/rank.h): torch eager over c's median at its
 * highest timed tier (the eager timed with that result where it has one, else the task's:
 * kb_rank_eager_speedup) and the task's torch.compile time over it, when that tier is the tier
 * torch was timed at (full-tier timings are compared only with full-tier baselines); 0
 * otherwise. */
static void torch_speedups(struct kb_progress_task *task, const struct kb_progress_cand *c) {
  task->best_vs_eager = task->best_vs_compile = 0;
  int k = c ? kb_rank_tier(&c->rank) : -1;
  if (k < 0 || k != task->torch_tier || !(c->rank.median_us[k] > 0))
    return;
  task->best_vs_eager =
      kb_rank_eager_speedup(c->rank.median_us[k], c->eager_us[k], task->torch_eager_us, NULL);
  task->best_vs_compile = task->torch_compile_us / c->rank.median_us[k];
}

/* Best per task by the ranking rule (kb/rank.h): the candidate with the highest tier passed
 * with a timing, then the lower median; its speedup at the highest tier where it and the
 * baseline are both timed, and that tier; its torch speedups (torch_speedups). A candidate is
 * never compared with another, or with the baseline, across tiers: a large ratio at smoke does
 * not beat a smaller one at full. */
static void best_speedups(struct kb_progress *p) {
  int *best = kb_calloc((size_t)p->n_tasks + 1, sizeof *best);
  if (best == NULL)
    return; /* the previous bests stay shown */
  for (int t = 0; t < p->n_tasks; t++)
    best[t] = -1;
  for (int i = 0; i < p->n_cands; i++) {
    const struct kb_progress_cand *c = &p->cands[i];
    if (kb_rank_tier(&c->rank) >= 0 &&
        (best[c->task] < 0 || kb_rank_better(&c->rank, &p->cands[best[c->task]].rank)))
      best[c->task] = i;
  }
  for (int t = 0; t < p->n_tasks; t++) {
    struct kb_progress_task *task = &p->tasks[t];
    task->best_speedup = 0;
    task->best_tier = task->rank_tier = -1;
    task->best_name[0] = '\0';
    torch_speedups(task, best[t] >= 0 ? &p->cands[best[t]] : NULL);
    if (best[t] < 0)
      continue;
    const struct kb_progress_cand *c = &p->cands[best[t]];
    snprintf(task->best_name, sizeof task->best_name, "%s", c->name);
    task->rank_tier = kb_rank_tier(&c->rank);
    if (task->baseline_cand >= 0)
      task->best_speedup =
          kb_rank_speedup(&c->rank, &p->cands[task->baseline_cand].rank, &task->best_tier);
  }
  kb_free(best);
}

int kb__progress_update(struct kb_progress *p, struct kb_error *err) {
  int rc = kb_queue_status(&p->q, &p->st, err);
  if (rc == KB_OK)
    rc = read_clock_and_runners(p, err);
  if (rc == KB_OK)
    rc = read_results(p, err);
  if (rc == KB_OK)
    rc = read_leases(p, err);
  if (rc == KB_OK)
    rc = read_task_ready(p, err);
  if (rc == KB_OK) {
    estimate(p);
    best_speedups(p);
  }
  return rc;
}
