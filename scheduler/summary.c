/* Campaign summary (see summary.h). */
#include "summary.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kb/alloc.h"
#include "kb/catalog.h"
#include "kb/error.h"

/* Highest tier at which `m` passed with a timing (kb/rank.h), or -1. */
static int top_tier(const struct kb_member *m) {
  struct kb_rank r;
  kb__member_rank(m, &r);
  return kb_rank_tier(&r);
}

/* Latest status of `m`: at its highest evaluated tier. */
static int last_status(const struct kb_member *m, int *tier) {
  for (int k = KB_MAX_TIERS - 1; k >= 0; k--)
    if (m->tiers[k].evaluated) {
      *tier = k;
      return m->tiers[k].status;
    }
  *tier = -1;
  return -1;
}

/* The members of `t` in rank order (kb_rank_cmp; ties keep their order). New array. */
static const struct kb_member **sorted_members(const struct kb_task_pop *t) {
  const struct kb_member **v = kb_calloc((size_t)t->n + 1, sizeof *v);
  struct kb_rank *r = kb_calloc((size_t)t->n + 1, sizeof *r);
  int *order = kb_calloc((size_t)t->n + 1, sizeof *order);
  if (v == NULL || r == NULL || order == NULL) {
    kb_free(v);
    kb_free(r);
    kb_free(order);
    return NULL;
  }
  for (int i = 0; i < t->n; i++)
    kb__member_rank(&t->members[i], &r[i]);
  /* Insertion sort: populations are small, and the order must be stable. */
  for (int i = 0; i < t->n; i++) {
    int j = i - 1;
    for (; j >= 0 && kb_rank_cmp(&r[i], &r[order[j]]) < 0; j--)
      order[j + 1] = order[j];
    order[j + 1] = i;
  }
  for (int i = 0; i < t->n; i++)
    v[i] = &t->members[order[i]];
  kb_free(order);
  kb_free(r);
  return v;
}

/* The task's best (rank 1) as "best": its tier and, at the highest tier where it and the
 * baseline are both timed, its speedup and that tier (docs/search.md, "Ranking"). */
static json_t *best_json(const struct kb_queue *q, const struct kb_member *best,
                         const struct kb_member *base) {
  struct kb_rank rb, rbase;
  kb__member_rank(best, &rb);
  int tier = kb_rank_tier(&rb), at = -1;
  if (tier < 0)
    return json_null();
  double speedup = 0;
  if (base) {
    kb__member_rank(base, &rbase);
    speedup = kb_rank_speedup(&rb, &rbase, &at);
  }
  json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:f}", "candidate", best->id, "name", best->name,
                        "tier", tier, "tier_name", q->tiers[tier].name, "median_us",
                        best->tiers[tier].median_us);
  json_object_set_new(o, "speedup", at >= 0 ? json_real(speedup) : json_null());
  json_object_set_new(o, "speedup_tier", at >= 0 ? json_integer(at) : json_null());
  json_object_set_new(o, "speedup_tier_name",
                      at >= 0 ? json_string(q->tiers[at].name) : json_null());
  return o;
}

/* `us` microseconds as JSON, null when unknown (0). New reference. */
static json_t *time_or_null(double us) { return us > 0 ? json_real(us) : json_null(); }

/* Sets "speedup_eager" and "speedup_compile" on `o` for `mt`, a member's result at `tier`:
 * torch eager over its median (the eager timed with that result where it has one, else the
 * task's: kb_rank_eager_speedup) and the task's torch.compile time over it; null unless both
 * are known and `tier` is the tier torch was timed at (the full tier: full-tier timings are
 * compared only with full-tier baselines). */
static void torch_speedups(json_t *o, const char *eager_key, const char *compile_key,
                           const struct kb_task_pop *t, int tier,
                           const struct kb_member_tier *mt) {
  int same = mt && tier >= 0 && tier == t->torch_tier && mt->median_us > 0;
  double eager = same ? kb_rank_eager_speedup(mt->median_us, mt->eager_us, t->torch_eager_us,
                                              NULL)
                      : 0;
  json_object_set_new(o, eager_key, eager > 0 ? json_real(eager) : json_null());
  json_object_set_new(o, compile_key,
                      same && t->torch_compile_us > 0
                          ? json_real(t->torch_compile_us / mt->median_us)
                          : json_null());
}

/* The task's torch numbers: "torch_eager_us", "torch_compile_us" (the latest a result carried)
 * and "best_speedup_eager", "best_speedup_compile" of `best`, the task's rank 1 (the one "best"
 * names; NULL: none), null unless its top tier is the tier torch was timed at. */
static void torch_fields(json_t *o, const struct kb_task_pop *t, const struct kb_member *best) {
  json_object_set_new(o, "torch_eager_us", time_or_null(t->torch_eager_us));
  json_object_set_new(o, "torch_compile_us", time_or_null(t->torch_compile_us));
  int tier = best ? top_tier(best) : -1;
  torch_speedups(o, "best_speedup_eager", "best_speedup_compile", t, tier,
                 tier >= 0 ? &best->tiers[tier] : NULL);
}

static json_t *task_json(const char *dir, const struct kb_queue *q, const struct kb_task_pop *t) {
  const struct kb_member *base = kb__population_baseline(t);
  json_t *board = json_array();
  const struct kb_member **v = sorted_members(t);
  for (int i = 0; v && i < t->n; i++) {
    const struct kb_member *m = v[i];
    int tier = top_tier(m), st_tier = -1;
    int status = last_status(m, &st_tier);
    json_t *row = json_pack("{s:i, s:s, s:s, s:s, s:s}", "rank", i + 1, "candidate", m->id,
                            "name", m->name, "generator", m->generator, "status",
                            status >= 0 ? kb_status_name(status) : "pending");
    json_object_set_new(row, "tier", json_integer(tier >= 0 ? tier : st_tier));
    int shown = tier >= 0 ? tier : st_tier;
    json_object_set_new(row, "tier_name", json_string(shown >= 0 ? q->tiers[shown].name : ""));
    if (tier >= 0) { /* a speedup only against the baseline at the same tier */
      json_object_set_new(row, "median_us", json_real(m->tiers[tier].median_us));
      struct kb_rank rm, rbase;
      int at = -1;
      kb__member_rank(m, &rm);
      double speedup = 0;
      if (base) {
        kb__member_rank(base, &rbase);
        speedup = kb_rank_speedup(&rm, &rbase, &at);
      }
      if (at == tier)
        json_object_set_new(row, "speedup", json_real(speedup));
      torch_speedups(row, "speedup_eager", "speedup_compile", t, tier, &m->tiers[tier]);
    }
    json_array_append_new(board, row);
  }
  const struct kb_member *best_m = v && t->n > 0 && top_tier(v[0]) >= 0 ? v[0] : NULL;
  json_t *best = best_m ? best_json(q, best_m, base) : json_null();
  kb_free(v);
  char file[1300];
  snprintf(file, sizeof file, "%s/%s.h5", dir, t->task);
  json_t *o = json_pack("{s:s, s:s, s:I, s:i, s:o}", "task", t->task, "file", file,
                        "evaluations", (json_int_t)t->evaluations, "candidates", t->n,
                        "leaderboard", board);
  json_object_set_new(o, "baseline", t->baseline[0] ? json_string(t->baseline) : json_null());
  json_object_set_new(o, "best", best);
  torch_fields(o, t, best_m);
  /* The search state behind the budget split and the stop conditions (docs/search.md). */
  json_object_set_new(o, "search",
                      json_pack("{s:f, s:I, s:I, s:o}", "spent_gpu_ms", t->spent_ms,
                                "improvements", (json_int_t)t->gains, "results_since_gain",
                                (json_int_t)t->since_gain, "stopped",
                                t->stopped ? json_string(t->stop_reason) : json_null()));
  return o;
}

/* Every currency of the ledger: spent, reserved (held by open charges), available, limit. */
static json_t *ledger_json(const struct kb_queue_status *st) {
  return json_pack("{s:{s:s, s:I, s:I, s:I, s:I, s:I}, s:{s:s, s:I, s:I, s:I, s:I, s:I}}",
                   "gpu", "unit", "ms", "spent", (json_int_t)st->gpu_spent, "reserved",
                   (json_int_t)st->gpu_held, "available", (json_int_t)st->gpu_available, "limit",
                   (json_int_t)st->gpu_total, "overruns", (json_int_t)st->gpu_overruns,
                   "llm_tokens", "unit", "tokens", "spent", (json_int_t)st->llm_spent, "reserved",
                   (json_int_t)st->llm_held, "available", (json_int_t)st->llm_available, "limit",
                   (json_int_t)st->llm_total, "overruns", (json_int_t)st->llm_overruns);
}

int kb__summary_write(const char *dir, const struct kb_queue *q, const struct kb_queue_status *st,
                     const struct kb_population *pop, const char *reason, struct kb_error *err) {
  json_t *tasks = json_array();
  for (int i = 0; tasks && i < pop->n; i++)
    if (pop->tasks[i].n > 0) /* a task with no result yet has no file either */
      json_array_append_new(tasks, task_json(dir, q, &pop->tasks[i]));
  json_t *root = json_pack(
      "{s:s, s:s, s:s, s:s, s:f, s:{s:I, s:I, s:I, s:I}, s:{s:I, s:I}, s:o}", "schema",
      "kernelbrain.summary/1", "campaign", q->cid, "state", st->state, "reason", reason,
      "finished", (double)time(NULL), "gpu_ms", "total", (json_int_t)st->gpu_total, "available",
      (json_int_t)st->gpu_available, "held", (json_int_t)st->gpu_held, "spent",
      (json_int_t)st->gpu_spent, "items", "done", (json_int_t)st->done, "dead",
      (json_int_t)st->dead, "tasks", tasks);
  if (root != NULL) { /* the ledger's guards: overruns charged, forged or stray results dropped */
    json_t *gpu = json_object_get(root, "gpu_ms");
    json_object_set_new(gpu, "overruns", json_integer(st->gpu_overruns));
    json_object_set_new(gpu, "overrun", json_integer(st->gpu_overrun_ms));
    json_object_set_new(root, "stray_results", json_integer(st->stray));
    json_object_set_new(root, "ledger", ledger_json(st));
  }
  char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
  json_decref(root);
  if (text == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory writing the summary");
  char path[1300];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  size_t len = strlen(text);
  text[len] = '\0';
  struct kb_error werr = {0};
  int rc = kb_write_file_durable(path, text, len, &werr);
  free(text);
  if (rc == KB_EIO) /* the campaign is over in redis: a later kb-scheduler or kb-launch does it */
    rc = kb_error_set(err, KB_EWRITE, "%s; run kb-scheduler or kb-launch again to write it",
                      werr.msg);
  else if (rc)
    kb_error_set(err, rc, "%s", werr.msg);
  return rc;
}
