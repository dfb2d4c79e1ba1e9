/* `kb-submit export`: the campaign as JSON Lines with the AI CUDA Engineer archive's columns
 * (see report.h and docs/report.md). One line per evaluated candidate, from its evaluation at
 * its best tier (highest tier, latest attempt). */
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

/* KernelBench's level and problem number, for tasks made by tools/kb-import-kernelbench: its
 * category is "kernelbench-level<N>" and its id "l<N>_<problem>_<name>". -1 when unknown. */
static void kernelbench_ids(const struct kb_rep_task *t, long *level, long *problem) {
  static const char prefix[] = "kernelbench-level";
  *level = *problem = -1;
  char *end = NULL;
  if (strncmp(t->category, prefix, sizeof prefix - 1) == 0) {
    long n = strtol(t->category + sizeof prefix - 1, &end, 10);
    if (end != t->category + sizeof prefix - 1 && *end == '\0' && n > 0)
      *level = n;
  }
  if (*level > 0 && t->id[0] == 'l') {
    long n = strtol(t->id + 1, &end, 10);
    if (n == *level && *end == '_') {
      const char *num = end + 1;
      long k = strtol(num, &end, 10);
      if (end != num && *end == '_' && k >= 0)
        *problem = k;
    }
  }
}

static json_t *line(const struct kb_report *r, const struct kb_rep_task *t,
                    const struct kb_rep_cand *c) {
  const struct kb_rep_eval *e = kb_rep_best_eval(c);
  int correct = strcmp(e->status, "ok") == 0;
  /* A correct candidate's runtime is from its highest timed tier (the compile tier, say, does
   * not time); an incorrect one has none. */
  const struct kb_rep_eval *timed =
      correct && c->timed_tier >= 0 ? eval_at(c, c->timed_tier) : NULL;
  json_t *parents = json_array();
  if (c->parent0[0])
    json_array_append_new(parents, json_string(c->parent0));
  if (c->parent1[0])
    json_array_append_new(parents, json_string(c->parent1));
  json_t *o = json_object();
  json_object_set_new(o, "Op_Name", json_string(t->id));
  long level, problem;
  kernelbench_ids(t, &level, &problem);
  json_object_set_new(o, "Level_ID", level > 0 ? json_integer(level) : json_null());
  json_object_set_new(o, "Task_ID", problem >= 0 ? json_integer(problem) : json_null());
  json_object_set_new(o, "Kernel_Name", json_string(c->name));
  json_object_set_new(o, "CUDA_Runtime",
                      timed ? kb__json_num(timed->median_us / 1000.0) : json_null());
  json_object_set_new(o, "PyTorch_Native_Runtime", json_null());
  json_object_set_new(o, "PyTorch_Compile_Runtime", json_null());
  json_object_set_new(o, "CUDA_Speedup_Native", json_null());
  json_object_set_new(o, "CUDA_Speedup_Compile", json_null());
  json_object_set_new(o, "CUDA_Code", json_string(c->source ? c->source : ""));
  json_object_set_new(o, "PyTorch_Code_Module",
                      t->reference && t->reference[0] ? json_string(t->reference) : json_null());
  json_object_set_new(o, "Correct", json_boolean(correct));
  json_object_set_new(o, "Max_Diff", kb__json_num(e->max_abs_err));
  json_object_set_new(o, "Error",
                      correct ? json_null() : json_string(e->reason[0] ? e->reason : e->status));
  json_object_set_new(o, "NCU_Profile", json_null());
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
  json_object_set_new(o, "KB_Speedup_Baseline", timed ? kb__json_num(c->speedup) : json_null());
  json_object_set_new(o, "KB_Device", json_string(e->device));
  return o;
}

int kb_export_write_jsonl(const struct kb_report *r, FILE *out, struct kb_error *err) {
  for (int i = 0; i < r->n_tasks; i++) {
    const struct kb_rep_task *t = &r->tasks[i];
    for (int k = 0; k < t->n_cands; k++) {
      const struct kb_rep_cand *c = &t->cands[t->order[k]];
      if (c->n_evals == 0)
        continue;
      json_t *o = line(r, t, c);
      char *text = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
      json_decref(o);
      if (text == NULL)
        return kb_error_set(err, KB_ENOMEM, "out of memory encoding candidate %s", c->id);
      fprintf(out, "%s\n", text);
      free(text);
    }
  }
  if (ferror(out))
    return kb_error_set(err, KB_EIO, "cannot write the export");
  return KB_OK;
}
