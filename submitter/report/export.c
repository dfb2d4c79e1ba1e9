/* `kb-submit export`: the campaign as JSON Lines with the AI CUDA Engineer archive's columns
 * (see report.h and docs/report.md). One line per evaluated candidate, from its evaluation at
 * its best tier (highest tier, latest attempt); with --tier (r->tier_only), one line per candidate
 * evaluated at that tier, from that evaluation. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kb/error.h"
#include "report.h"

/* The evaluation at `tier` with the highest attempt, or NULL. */
static const struct kb_rep_eval *eval_at(const struct kb_rep_cand *c, int tier) {
  const struct kb_rep_eval *best = NULL;
  for (int i = 0; i < c->n_evals; i++)
    if (c->evals[i].tier == tier && (best == NULL || c->evals[i].attempt > best->attempt))
      best = &c->evals[i];
  return best;
}

/* `v` when it is a positive number, else null (new reference). */
static json_t *positive(double v) { return v > 0 ? json_real(v) : json_null(); }

/* NCU_Profile: the Range Profiler metrics of the candidate's highest-tier evaluation that has
 * any, keyed by the Nsight Compute metric names CUPTI read them as (values in % and, for
 * gpu__time_duration.sum, nanoseconds); null when none was recorded. */
static json_t *ncu_profile(const struct kb_rep_cand *c) {
  const struct kb_rep_eval *m = NULL;
  for (int i = 0; i < c->n_evals; i++) {
    const struct kb_rep_eval *e = &c->evals[i];
    int has = isfinite(e->dram_pct) || isfinite(e->sm_pct) || isfinite(e->occupancy_pct) ||
              isfinite(e->l2_hit_pct) || isfinite(e->kernel_us);
    if (has && (m == NULL || e->tier > m->tier || (e->tier == m->tier && e->attempt > m->attempt)))
      m = e;
  }
  if (m == NULL)
    return json_null();
  const struct {
    const char *name;
    double v;
  } f[] = {{"dram__throughput.avg.pct_of_peak_sustained_elapsed", m->dram_pct},
           {"sm__throughput.avg.pct_of_peak_sustained_elapsed", m->sm_pct},
           {"sm__warps_active.avg.pct_of_peak_sustained_active", m->occupancy_pct},
           {"lts__t_sector_hit_rate.pct", m->l2_hit_pct},
           {"gpu__time_duration.sum", m->kernel_us * 1000.0}};
  json_t *o = json_object();
  for (size_t i = 0; o != NULL && i < sizeof f / sizeof f[0]; i++)
    if (isfinite(f[i].v))
      json_object_set_new(o, f[i].name, json_real(f[i].v));
  return o != NULL ? o : json_null();
}

/* With --tier (r->tier_only): the runtime and the speedup at that tier only, against the
 * baseline's evaluation at the same tier; NaN when either is untimed there. */
static double speedup_at(const struct kb_rep_task *t, const struct kb_rep_eval *timed, int tier) {
  const struct kb_rep_eval *b =
      t->baseline_cand >= 0 ? eval_at(&t->cands[t->baseline_cand], tier) : NULL;
  if (b == NULL || strcmp(b->status, "ok") != 0 || !(b->median_us > 0) || !(timed->median_us > 0))
    return NAN;
  return b->median_us / timed->median_us;
}

static json_t *line(const struct kb_report *r, const struct kb_rep_task *t,
                    const struct kb_rep_cand *c) {
  const struct kb_rep_eval *e = r->tier_only ? eval_at(c, r->tier) : kb__rep_best_eval(c);
  int correct = strcmp(e->status, "ok") == 0;
  /* A correct candidate's runtime is from its highest timed tier (the compile tier, say, does
   * not time); an incorrect one has none. With --tier, from that tier when it timed. */
  const struct kb_rep_eval *timed =
      correct && c->timed_tier >= 0 ? eval_at(c, c->timed_tier) : NULL;
  double speedup = c->speedup;
  if (r->tier_only) {
    timed = correct && e->samples > 0 && isfinite(e->median_us) ? e : NULL;
    speedup = timed ? speedup_at(t, timed, r->tier) : NAN;
  }
  json_t *parents = json_array();
  if (c->parent0[0])
    json_array_append_new(parents, json_string(c->parent0));
  if (c->parent1[0])
    json_array_append_new(parents, json_string(c->parent1));
  json_t *o = json_object();
  json_object_set_new(o, "Op_Name", json_string(t->id));
  json_object_set_new(o, "Level_ID", t->level > 0 ? json_integer(t->level) : json_null());
  json_object_set_new(o, "Task_ID", t->problem >= 0 ? json_integer(t->problem) : json_null());
  json_object_set_new(o, "Kernel_Name", json_string(c->name));
  json_object_set_new(o, "CUDA_Runtime",
                      timed ? kb__json_num(timed->median_us / 1000.0) : json_null());
  /* torch medians (ms): eager timed with this row's timing where it was (so that
   * CUDA_Speedup_Native is PyTorch_Native_Runtime / CUDA_Runtime), else the task's; the
   * speedups only from a correct full-tier timing */
  double eager_us = timed && timed->torch_eager_us > 0 ? timed->torch_eager_us : t->torch_eager_us;
  json_object_set_new(o, "PyTorch_Native_Runtime", positive(eager_us / 1000.0));
  json_object_set_new(o, "PyTorch_Compile_Runtime", positive(t->torch_compile_us / 1000.0));
  json_object_set_new(o, "CUDA_Speedup_Native", correct ? positive(c->speedup_eager) : json_null());
  json_object_set_new(o, "CUDA_Speedup_Compile",
                      correct ? positive(c->speedup_compile) : json_null());
  json_object_set_new(o, "CUDA_Code", json_string(c->source ? c->source : ""));
  json_object_set_new(o, "PyTorch_Code_Module",
                      t->reference && t->reference[0] ? json_string(t->reference) : json_null());
  json_object_set_new(o, "Correct", json_boolean(correct));
  json_object_set_new(o, "Max_Diff", kb__json_num(e->max_abs_err));
  json_object_set_new(o, "Error",
                      correct ? json_null() : json_string(e->reason[0] ? e->reason : e->status));
  json_object_set_new(o, "NCU_Profile", ncu_profile(c));
  /* kernelbrain's own columns. */
  json_object_set_new(o, "KB_Campaign", json_string(r->campaign));
  json_object_set_new(o, "KB_Candidate", json_string(c->id));
  json_object_set_new(o, "KB_Generator", json_string(c->generator));
  json_object_set_new(o, "KB_Parents", parents);
  json_object_set_new(o, "KB_Knobs", json_string(c->knobs));
  json_object_set_new(o, "KB_Status", json_string(e->status));
  json_object_set_new(o, "KB_Tier", json_string(e->tier_name));
  json_object_set_new(o, "KB_Timed_Tier", timed ? json_string(timed->tier_name) : json_null());
  json_object_set_new(o, "KB_Baseline", t->baseline[0] ? json_string(t->baseline) : json_null());
  json_object_set_new(o, "KB_Speedup_Baseline", timed ? kb__json_num(speedup) : json_null());
  json_object_set_new(o, "KB_Device", json_string(e->device));
  return o;
}

struct export_walk {
  const struct kb_report *r;
  FILE *out;
  int rc; /* KB_OK, or the first KB_ENOMEM */
};

static void export_cand(void *arg, const struct kb_rep_task *t, int ti,
                        const struct kb_rep_cand *c) {
  struct export_walk *w = arg;
  (void)ti;
  if (c->n_evals == 0 || w->rc != KB_OK || (w->r->tier_only && eval_at(c, w->r->tier) == NULL))
    return;
  json_t *o = line(w->r, t, c);
  char *text = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
  json_decref(o);
  if (text == NULL) {
    w->rc = KB_ENOMEM;
    return;
  }
  fprintf(w->out, "%s\n", text);
  free(text);
}

int kb__export_write_jsonl(const struct kb_report *r, FILE *out, struct kb_error *err) {
  struct export_walk w = {r, out, KB_OK};
  kb__rep_walk(r, &(struct kb_rep_walker){.cand = export_cand, .arg = &w});
  if (w.rc != KB_OK)
    return kb_error_set(err, w.rc, "out of memory encoding the export");
  if (ferror(out))
    return kb_error_set(err, KB_EIO, "cannot write the export");
  return KB_OK;
}
