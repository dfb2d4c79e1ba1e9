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

/* Highest tier at which `m` passed with a timing, or -1. */
static int top_tier(const struct kb_member *m) {
  for (int k = KB_MAX_TIERS - 1; k >= 0; k--)
    if (m->tiers[k].evaluated && m->tiers[k].status == KB_STATUS_OK && m->tiers[k].samples > 0)
      return k;
  return -1;
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

static const struct kb_member **sorted_members(const struct kb_task_pop *t) {
  const struct kb_member **v = kb_calloc((size_t)t->n + 1, sizeof *v);
  if (v == NULL)
    return NULL;
  for (int i = 0; i < t->n; i++)
    v[i] = &t->members[i];
  /* Insertion sort: populations are small, and the order must be stable. */
  for (int i = 1; i < t->n; i++) {
    const struct kb_member *x = v[i];
    int tx = top_tier(x);
    int j = i - 1;
    for (; j >= 0; j--) {
      int tj = top_tier(v[j]);
      int after = tj > tx || (tj == tx && tx >= 0 &&
                              v[j]->tiers[tj].median_us <= x->tiers[tx].median_us) ||
                  (tj == tx && tx < 0);
      if (after)
        break;
      v[j + 1] = v[j];
    }
    v[j + 1] = x;
  }
  return v;
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
    if (tier >= 0) {
      json_object_set_new(row, "median_us", json_real(m->tiers[tier].median_us));
      if (base && base->tiers[tier].samples > 0)
        json_object_set_new(row, "speedup",
                            json_real(base->tiers[tier].median_us / m->tiers[tier].median_us));
    }
    json_array_append_new(board, row);
  }
  kb_free(v);
  char file[1300];
  snprintf(file, sizeof file, "%s/%s.h5", dir, t->task);
  json_t *o = json_pack("{s:s, s:s, s:I, s:i, s:o}", "task", t->task, "file", file,
                        "evaluations", (json_int_t)t->evaluations, "candidates", t->n,
                        "leaderboard", board);
  json_object_set_new(o, "baseline", t->baseline[0] ? json_string(t->baseline) : json_null());
  /* The search state behind the budget split and the stop conditions (docs/search.md). */
  json_object_set_new(o, "search",
                      json_pack("{s:f, s:I, s:I, s:o}", "spent_gpu_ms", t->spent_ms,
                                "improvements", (json_int_t)t->gains, "results_since_gain",
                                (json_int_t)t->since_gain, "stopped",
                                t->stopped ? json_string(t->stop_reason) : json_null()));
  return o;
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
  int rc = kb_write_file_atomic(path, text, len, &werr);
  free(text);
  if (rc == KB_EIO) /* the campaign is over in redis: a later kb-scheduler or kb-launch rewrites it */
    rc = kb_error_set(err, KB_EWRITE, "%s; run kb-scheduler or kb-launch again to write it",
                      werr.msg);
  else if (rc)
    kb_error_set(err, rc, "%s", werr.msg);
  return rc;
}
