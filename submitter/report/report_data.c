/* Loading a campaign's result files (see report_data.h). */
#include "report_data.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/rank.h"

void kb__report_release(struct kb_report *r) {
  if (r == NULL)
    return;
  for (int i = 0; r->tasks && i < r->n_tasks; i++) {
    struct kb_rep_task *t = &r->tasks[i];
    for (int c = 0; t->cands && c < t->n_cands; c++) {
      for (int e = 0; e < t->cands[c].n_evals; e++) {
        kb_free(t->cands[c].evals[e].compile_log);
        kb_free(t->cands[c].evals[e].kernels);
      }
      kb_free(t->cands[c].evals);
      kb_free(t->cands[c].source);
    }
    kb_free(t->cands);
    kb_free(t->order);
    kb_free(t->by_id);
    kb_free(t->child_off);
    kb_free(t->child_idx);
    kb_free(t->file);
    kb_free(t->spec_json);
    kb_free(t->reference);
    for (int k = 0; k < t->n_llm; k++) {
      kb_free(t->llm[k].prompt);
      kb_free(t->llm[k].response);
    }
    kb_free(t->llm);
  }
  kb_free(r->tasks);
  kb_free(r->dir);
  memset(r, 0, sizeof *r);
}

static int cmp_rep_id(const void *a, const void *b) {
  return strcmp(((const struct kb_rep_id *)a)->id, ((const struct kb_rep_id *)b)->id);
}

int kb__rep_index(struct kb_rep_task *t) {
  t->by_id = kb_calloc((size_t)t->n_cands + 1, sizeof *t->by_id);
  if (t->by_id == NULL)
    return KB_ENOMEM;
  for (int c = 0; c < t->n_cands; c++)
    t->by_id[c] = (struct kb_rep_id){t->cands[c].id, c};
  qsort(t->by_id, (size_t)t->n_cands, sizeof *t->by_id, cmp_rep_id);
  return KB_OK;
}

int kb__rep_find(const struct kb_rep_task *t, const char *id) {
  if (t->by_id == NULL || id[0] == '\0')
    return -1;
  struct kb_rep_id key = {id, -1};
  const struct kb_rep_id *hit =
      bsearch(&key, t->by_id, (size_t)t->n_cands, sizeof *t->by_id, cmp_rep_id);
  return hit ? hit->index : -1;
}

/* Children lists from the parent columns (parents in other tasks are not followed). */
static int children(struct kb_rep_task *t) {
  t->child_off = kb_calloc((size_t)t->n_cands + 2, sizeof *t->child_off);
  t->child_idx = kb_calloc((size_t)t->n_cands * 2 + 1, sizeof *t->child_idx);
  if (t->child_off == NULL || t->child_idx == NULL)
    return KB_ENOMEM;
  /* Count into child_off[p + 2], prefix-sum into starts at child_off[p + 1], fill by bumping
   * those, which leaves child_off[p] .. child_off[p + 1] as p's range. */
  for (int c = 0; c < t->n_cands; c++) {
    int p0 = kb__rep_find(t, t->cands[c].parent0), p1 = kb__rep_find(t, t->cands[c].parent1);
    if (p0 >= 0)
      t->child_off[p0 + 2]++;
    if (p1 >= 0 && p1 != p0)
      t->child_off[p1 + 2]++;
  }
  for (int i = 2; i <= t->n_cands + 1; i++)
    t->child_off[i] += t->child_off[i - 1];
  for (int c = 0; c < t->n_cands; c++) {
    int p0 = kb__rep_find(t, t->cands[c].parent0), p1 = kb__rep_find(t, t->cands[c].parent1);
    if (p0 >= 0)
      t->child_idx[t->child_off[p0 + 1]++] = c;
    if (p1 >= 0 && p1 != p0)
      t->child_idx[t->child_off[p1 + 1]++] = c;
  }
  return KB_OK;
}

void kb__rep_walk(const struct kb_report *r, const struct kb_rep_walker *w) {
  for (int i = 0; i < r->n_tasks; i++) {
    const struct kb_rep_task *t = &r->tasks[i];
    if (w->task_begin)
      w->task_begin(w->arg, t, i);
    for (int k = 0; k < t->n_cands; k++) {
      const struct kb_rep_cand *c = &t->cands[t->order[k]];
      if (w->shown_only && !kb__rep_shown(r, c))
        continue;
      if (w->cand)
        w->cand(w->arg, t, i, c);
      for (int e = 0; w->eval && e < c->n_evals; e++)
        w->eval(w->arg, c, &c->evals[e]);
    }
    if (w->task_end)
      w->task_end(w->arg, t, i);
  }
}

const char *kb__rep_tier_name(const struct kb_report *r, int tier) {
  return tier >= 0 && tier < KB_MAX_TIERS ? r->tier_names[tier] : "";
}

int kb__rep_shown(const struct kb_report *r, const struct kb_rep_cand *c) {
  return r->top <= 0 || c->rank <= r->top;
}

const struct kb_rep_eval *kb__rep_best_eval(const struct kb_rep_cand *c) {
  const struct kb_rep_eval *best = NULL;
  for (int i = 0; i < c->n_evals; i++) {
    const struct kb_rep_eval *e = &c->evals[i];
    if (best == NULL || e->tier > best->tier ||
        (e->tier == best->tier && e->attempt > best->attempt))
      best = e;
  }
  return best;
}

/* The latest evaluation of `c` at `tier` when it passed with a timing (kb_rank_timed), or NULL. */
static const struct kb_rep_eval *timed_at(const struct kb_rep_cand *c, int tier) {
  const struct kb_rep_eval *last = NULL;
  for (int i = 0; i < c->n_evals; i++) {
    const struct kb_rep_eval *e = &c->evals[i];
    if (e->tier == tier && (last == NULL || e->attempt > last->attempt))
      last = e;
  }
  return last && kb_rank_timed(strcmp(last->status, "ok") == 0, last->samples, last->median_us)
             ? last
             : NULL;
}

double kb__rep_timed_median(const struct kb_rep_cand *c, int tier) {
  const struct kb_rep_eval *e = timed_at(c, tier);
  return e ? e->median_us : NAN;
}

/* `c` as the ranking rule sees it (kb/rank.h). */
static void cand_rank(const struct kb_rep_cand *c, struct kb_rank *out) {
  for (int k = 0; k < KB_MAX_TIERS; k++) {
    const struct kb_rep_eval *e = timed_at(c, k);
    out->median_us[k] = e ? e->median_us : 0;
  }
}

static void spec_fields(struct kb_rep_task *t) {
  json_t *spec = t->spec_json ? json_loads(t->spec_json, 0, NULL) : NULL;
  const char *s;
  if ((s = json_string_value(json_object_get(spec, "name"))))
    snprintf(t->name, sizeof t->name, "%s", s);
  if ((s = json_string_value(json_object_get(spec, "category"))))
    snprintf(t->category, sizeof t->category, "%s", s);
  if ((s = json_string_value(json_object_get(spec, "baseline"))))
    snprintf(t->baseline, sizeof t->baseline, "%s", s);
  json_decref(spec);
}

void kb__rep_kernelbench_ids(struct kb_rep_task *t) {
  static const char prefix[] = "kernelbench-level";
  t->level = 0;
  t->problem = -1;
  char *end = NULL;
  if (strncmp(t->category, prefix, sizeof prefix - 1) == 0) {
    long n = strtol(t->category + sizeof prefix - 1, &end, 10);
    if (end != t->category + sizeof prefix - 1 && *end == '\0' && n > 0 && n < 1000)
      t->level = (int)n;
  }
  if (t->level > 0 && t->id[0] == 'l') {
    long n = strtol(t->id + 1, &end, 10);
    if (n == t->level && *end == '_') {
      const char *num = end + 1;
      long k = strtol(num, &end, 10);
      if (end != num && *end == '_' && k >= 0 && k < 1000000)
        t->problem = (int)k;
    }
  }
}

int kb__rep_torch_best(const struct kb_rep_task *t) {
  int best = -1;
  struct kb_rank best_rank, r;
  for (int i = 0; t->torch_tier >= 0 && i < t->n_cands; i++) {
    cand_rank(&t->cands[i], &r);
    if (kb_rank_tier(&r) >= 0 && (best < 0 || kb_rank_better(&r, &best_rank))) {
      best = i;
      best_rank = r;
    }
  }
  return best >= 0 && kb_rank_tier(&best_rank) == t->torch_tier ? best : -1;
}

double kb__rep_torch_speedup(const struct kb_rep_task *t, int compile) {
  double base = compile ? t->torch_compile_us : t->torch_eager_us;
  if (!(base > 0))
    return NAN;
  if (t->torch_best < 0)
    return 0;
  const struct kb_rep_cand *c = &t->cands[t->torch_best];
  return compile ? c->speedup_compile : c->speedup_eager;
}

/* Each candidate's speedups over torch, at the tier torch was timed at: over the eager timed
 * with its evaluation where it has one, else the task's (kb_rank_eager_speedup),
 * and over the task's torch.compile time; and the task's torch_best. */
static void torch_speedups(struct kb_rep_task *t) {
  for (int i = 0; t->torch_tier >= 0 && i < t->n_cands; i++) {
    struct kb_rep_cand *c = &t->cands[i];
    const struct kb_rep_eval *e = timed_at(c, t->torch_tier);
    if (e == NULL || !(e->median_us > 0))
      continue;
    double eager = kb_rank_eager_speedup(e->median_us, e->torch_eager_us, t->torch_eager_us, NULL);
    if (eager > 0)
      c->speedup_eager = eager;
    if (t->torch_compile_us > 0)
      c->speedup_compile = t->torch_compile_us / e->median_us;
  }
  t->torch_best = kb__rep_torch_best(t);
}

/* Rank order: the one rule of kb/rank.h, as the scheduler's summary ranks (highest tier passed
 * with a timing, then lower median there; never-timed candidates last, in file order). Each
 * candidate's speedup is against the baseline at its own timed tier only; NaN when the baseline
 * has no timing there. */
static int derive(struct kb_rep_task *t) {
  spec_fields(t);
  kb__rep_kernelbench_ids(t);
  torch_speedups(t);
  for (int i = 0; i < t->n_cands; i++)
    if (t->baseline[0] && strcmp(t->cands[i].generator, "seed") == 0 &&
        strcmp(t->cands[i].name, t->baseline) == 0)
      t->baseline_cand = i;
  struct kb_rank *rank = kb_calloc((size_t)t->n_cands + 1, sizeof *rank), base;
  t->order = kb_calloc((size_t)t->n_cands + 1, sizeof *t->order);
  if (rank == NULL || t->order == NULL) {
    kb_free(rank);
    return KB_ENOMEM;
  }
  if (t->baseline_cand >= 0)
    cand_rank(&t->cands[t->baseline_cand], &base);
  for (int i = 0; i < t->n_cands; i++) {
    struct kb_rep_cand *c = &t->cands[i];
    cand_rank(c, &rank[i]);
    c->timed_tier = kb_rank_tier(&rank[i]);
    if (c->timed_tier < 0)
      continue;
    c->median_us = rank[i].median_us[c->timed_tier];
    int at = -1;
    double s = kb_rank_speedup(&rank[i], t->baseline_cand >= 0 ? &base : NULL, &at);
    if (at == c->timed_tier)
      c->speedup = s;
  }
  for (int i = 0; i < t->n_cands; i++) { /* insertion sort: stable, populations are small */
    int j = i - 1;
    for (; j >= 0 && kb_rank_cmp(&rank[i], &rank[t->order[j]]) < 0; j--)
      t->order[j + 1] = t->order[j];
    t->order[j + 1] = i;
  }
  kb_free(rank);
  for (int i = 0; i < t->n_cands; i++)
    t->cands[t->order[i]].rank = i + 1;
  return children(t);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A growing list of paths, each string new. */
struct path_list {
  char **v;
  size_t n, cap;
};

/* Appends a copy of "<dir>/<name><ext>" to `l`, keeping room for one more entry. KB_ENOMEM. */
static int add_path(struct path_list *l, const char *dir, const char *name, const char *ext) {
  if (l->n + 1 >= l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    char **w = kb_reallocarray(l->v, cap, sizeof *w);
    if (w == NULL)
      return KB_ENOMEM;
    l->v = w;
    l->cap = cap;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
  if ((l->v[l->n] = kb_strdup(path)) == NULL)
    return KB_ENOMEM;
  l->n++;
  return KB_OK;
}

/* Every *.h5 in `dir`, sorted by path. Errors: KB_ENOTFOUND (no such folder), KB_ENOMEM. */
static int add_h5_files(struct path_list *l, const char *dir, struct kb_error *err) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return kb_error_set(err, KB_ENOTFOUND, "%s: cannot open the results folder", dir);
  int rc = KB_OK;
  struct dirent *e;
  while (rc == KB_OK && (e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len >= 4 && strcmp(e->d_name + len - 3, ".h5") == 0)
      rc = add_path(l, dir, e->d_name, "");
  }
  closedir(d);
  qsort(l->v, l->n, sizeof *l->v, cmp_str);
  return rc ? kb_error_set(err, rc, "out of memory") : KB_OK;
}

/* The task files: those summary.json names (in its order), else every *.h5 in `dir`, sorted.
 * `*paths` (new, each string new) holds `*n`. */
static int list_files(const char *dir, json_t *summary, char ***paths, int *n,
                      struct kb_error *err) {
  struct path_list l = {0};
  json_t *tasks = json_object_get(summary, "tasks"), *t;
  size_t i;
  int rc = KB_OK;
  json_array_foreach(tasks, i, t) {
    const char *id = json_string_value(json_object_get(t, "task"));
    if (id == NULL)
      continue;
    rc = add_path(&l, dir, id, ".h5"); /* the folder may have moved: look next to summary.json */
    if (rc)
      break;
  }
  if (rc)
    rc = kb_error_set(err, rc, "out of memory");
  else if (l.n == 0)
    rc = add_h5_files(&l, dir, err);
  *paths = l.v;
  *n = (int)l.n;
  if (rc == KB_OK && l.n == 0)
    rc = kb_error_set(err, KB_ENOTFOUND, "%s: no result files (*.h5) in the folder", dir);
  return rc;
}

static void summary_fields(struct kb_report *r, json_t *s) {
  const char *v;
  snprintf(r->state, sizeof r->state, "unknown");
  if (s == NULL)
    snprintf(r->reason, sizeof r->reason,
             "no summary.json: the campaign has not ended, or its scheduler did not end it");
  if ((v = json_string_value(json_object_get(s, "campaign"))))
    snprintf(r->campaign, sizeof r->campaign, "%s", v);
  if ((v = json_string_value(json_object_get(s, "state"))))
    snprintf(r->state, sizeof r->state, "%s", v);
  if ((v = json_string_value(json_object_get(s, "reason"))))
    snprintf(r->reason, sizeof r->reason, "%s", v);
  json_t *gpu = json_object_get(s, "gpu_ms");
  r->gpu_total_ms = json_is_integer(json_object_get(gpu, "total"))
                        ? json_integer_value(json_object_get(gpu, "total"))
                        : -1;
  r->gpu_spent_ms = json_is_integer(json_object_get(gpu, "spent"))
                        ? json_integer_value(json_object_get(gpu, "spent"))
                        : -1;
  r->finished = json_number_value(json_object_get(s, "finished"));
}

int kb__report_load(const char *dir, struct kb_report *r, struct kb_error *err) {
  memset(r, 0, sizeof *r);
  char path[4096];
  json_t *summary = NULL;
  char **files = NULL;
  int n = 0, rc = KB_OK;
  r->dir = kb_strdup(dir);
  if (r->dir == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  snprintf(path, sizeof path, "%s/summary.json", dir);
  FILE *f = fopen(path, "r");
  if (f) {
    json_error_t jerr;
    summary = json_loadf(f, 0, &jerr);
    fclose(f);
    if (summary == NULL) {
      kb__report_release(r);
      return kb_error_set(err, KB_EPARSE, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    }
  }
  summary_fields(r, summary);
  rc = list_files(dir, summary, &files, &n, err);
  if (rc == KB_OK) {
    r->tasks = kb_calloc((size_t)n, sizeof *r->tasks);
    if (r->tasks == NULL)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  int64_t spent = 0;
  for (int i = 0; rc == KB_OK && i < n; i++) {
    struct kb_rep_task *t = &r->tasks[r->n_tasks++];
    rc = kb__report_read_h5(files[i], t, r, err);
    if (rc == KB_OK && derive(t))
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    for (int c = 0; rc == KB_OK && c < t->n_cands; c++)
      for (int e = 0; e < t->cands[c].n_evals; e++)
        spent += t->cands[c].evals[e].cost_ms;
  }
  r->gpu_rows_ms = spent;
  if (r->gpu_spent_ms < 0)
    r->gpu_spent_ms = spent;
  for (int i = 0; files && i < n; i++)
    kb_free(files[i]);
  kb_free(files);
  json_decref(summary);
  if (rc)
    kb__report_release(r);
  return rc;
}
