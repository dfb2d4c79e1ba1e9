/* The report as JSON, CSV and Markdown, for scripts (see report.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "report.h"

json_t *kb__json_num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *int_or_null(long v) { return v >= 0 ? json_integer(v) : json_null(); }

struct funnel {
  long *evaluated, *passed; /* KB_MAX_TIERS each (borrowed) */
};

/* A candidate counts once per tier it was evaluated at, and once per tier it passed. */
static void funnel_cand(void *arg, const struct kb_rep_task *t, int ti,
                        const struct kb_rep_cand *cand) {
  struct funnel *f = arg;
  (void)t;
  (void)ti;
  int seen[KB_MAX_TIERS] = {0}, ok[KB_MAX_TIERS] = {0};
  for (int e = 0; e < cand->n_evals; e++) {
    int k = cand->evals[e].tier;
    if (k < 0 || k >= KB_MAX_TIERS)
      continue;
    seen[k] = 1;
    ok[k] |= strcmp(cand->evals[e].status, "ok") == 0;
  }
  for (int k = 0; k < KB_MAX_TIERS; k++) {
    f->evaluated[k] += seen[k];
    f->passed[k] += ok[k];
  }
}

void kb__report_funnel(const struct kb_report *r, long evaluated[], long passed[]) {
  for (int k = 0; k < KB_MAX_TIERS; k++)
    evaluated[k] = passed[k] = 0;
  struct funnel f = {evaluated, passed};
  kb__rep_walk(r, &(struct kb_rep_walker){.cand = funnel_cand, .arg = &f});
}

int kb__report_fastp(const struct kb_report *r, int compile, struct kb_fastp_row *rows,
                     int max) {
  double *speedup = kb_calloc((size_t)r->n_tasks + 1, sizeof *speedup);
  int *levels = kb_calloc((size_t)r->n_tasks + 1, sizeof *levels);
  int n = -1;
  if (speedup != NULL && levels != NULL) {
    for (int i = 0; i < r->n_tasks; i++) {
      speedup[i] = kb__rep_torch_speedup(&r->tasks[i], compile);
      levels[i] = r->tasks[i].level;
    }
    n = kb__fastp_table(speedup, levels, r->n_tasks, rows, max);
  }
  kb_free(speedup);
  kb_free(levels);
  return n;
}

/* The fast_p table against torch eager (`compile` 0) or torch.compile as a JSON array of rows
 * {level (null: every task), tasks, correct, fast_0, fast_1, fast_1.5, fast_2, geomean}. */
static json_t *fastp_json(const struct kb_report *r, int compile) {
  struct kb_fastp_row rows[KB_FASTP_ROWS];
  int n = kb__report_fastp(r, compile, rows, KB_FASTP_ROWS);
  json_t *a = json_array();
  for (int i = 0; a != NULL && i < n; i++) {
    json_t *o = json_pack("{s:o, s:i, s:i, s:o}", "level",
                          rows[i].level >= 0 ? json_integer(rows[i].level) : json_null(),
                          "tasks", rows[i].tasks, "correct", rows[i].correct, "geomean",
                          kb__json_num(rows[i].geomean));
    for (int k = 0; o != NULL && k < KB_FASTP_N; k++) {
      char key[32];
      snprintf(key, sizeof key, "fast_%g", kb__fastp_thresholds[k]);
      json_object_set_new(o, key, kb__json_num(rows[i].fast[k]));
    }
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *eval_json(const struct kb_rep_eval *e, int sources) {
  json_t *o = json_pack(
      "{s:i, s:s, s:i, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:b, s:o, s:o, s:o,"
      " s:i, s:o, s:o, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:I}",
      "tier", e->tier, "tier_name", e->tier_name, "attempt", e->attempt, "status", e->status,
      "reason", e->reason, "runner", e->runner, "device", e->device, "started",
      kb__json_num(e->started), "finished", kb__json_num(e->finished), "compile_s",
      kb__json_num(e->compile_s), "compile_cached", e->compile_cached, "registers",
      int_or_null(e->registers), "spills", int_or_null(e->spills), "shared_bytes",
      int_or_null(e->shared_bytes), "sets_checked", e->sets_checked, "max_abs_err",
      kb__json_num(e->max_abs_err), "max_rel_err", kb__json_num(e->max_rel_err), "samples",
      e->samples, "median_us", kb__json_num(e->median_us), "p10_us", kb__json_num(e->p10_us),
      "p90_us", kb__json_num(e->p90_us), "mean_us", kb__json_num(e->mean_us), "min_us",
      kb__json_num(e->min_us), "noise", kb__json_num(e->noise), "cost_ms", (json_int_t)e->cost_ms);
  if (o) {
    json_object_set_new(o, "torch_eager_us", kb__json_num(e->torch_eager_us));
    json_object_set_new(o, "torch_compile_us", kb__json_num(e->torch_compile_us));
    /* the task's baseline re-timed in the same process, interleaved (full tier) */
    json_object_set_new(o, "baseline_median_us", kb__json_num(e->baseline_median_us));
    json_object_set_new(o, "same_run_speedup", kb__json_num(e->same_run_speedup));
  }
  if (o && sources)
    json_object_set_new(o, "compile_log",
                        e->compile_log ? json_string(e->compile_log) : json_null());
  return o;
}

static json_t *cand_json(const struct kb_report *r, const struct kb_rep_cand *c, int sources) {
  json_t *parents = json_array();
  if (c->parent0[0])
    json_array_append_new(parents, json_string(c->parent0));
  if (c->parent1[0])
    json_array_append_new(parents, json_string(c->parent1));
  json_t *evals = json_array();
  for (int e = 0; e < c->n_evals; e++)
    json_array_append_new(evals, eval_json(&c->evals[e], sources));
  json_t *o = json_pack(
      "{s:i, s:s, s:s, s:s, s:o, s:s, s:s, s:o, s:i, s:s, s:s, s:o, s:o, s:o}", "rank", c->rank,
      "candidate", c->id, "name", c->name, "generator", c->generator, "parents", parents, "knobs",
      c->knobs, "flags", c->flags, "created", kb__json_num(c->created), "best_tier", c->best_tier,
      "status", c->status[0] ? c->status : "pending", "tier_name",
      kb__rep_tier_name(r, c->timed_tier >= 0 ? c->timed_tier : c->best_tier), "median_us",
      kb__json_num(c->median_us), "speedup", kb__json_num(c->speedup), "evaluations", evals);
  if (o) {
    json_object_set_new(o, "speedup_eager", kb__json_num(c->speedup_eager));
    json_object_set_new(o, "speedup_compile", kb__json_num(c->speedup_compile));
  }
  if (o && sources)
    json_object_set_new(o, "source", json_string(c->source ? c->source : ""));
  return o;
}

struct json_walk {
  const struct kb_report *r;
  int sources;
  json_t *tasks; /* the array being filled (owned by the caller) */
  json_t *cands; /* the current task's candidates (owned until its task_end) */
};

static void json_task_begin(void *arg, const struct kb_rep_task *t, int ti) {
  struct json_walk *w = arg;
  (void)t;
  (void)ti;
  w->cands = json_array();
}

static void json_cand(void *arg, const struct kb_rep_task *t, int ti, const struct kb_rep_cand *c) {
  struct json_walk *w = arg;
  (void)t;
  (void)ti;
  json_array_append_new(w->cands, cand_json(w->r, c, w->sources));
}

static void json_task_end(void *arg, const struct kb_rep_task *t, int ti) {
  struct json_walk *w = arg;
  (void)ti;
  json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:o}", "task", t->id, "name", t->name,
                        "category", t->category, "file", t->file, "evaluations",
                        (json_int_t)t->n_evals, "candidates", w->cands);
  w->cands = NULL; /* json_pack took it, or freed it on failure */
  if (o) {
    json_object_set_new(o, "baseline", t->baseline[0] ? json_string(t->baseline) : json_null());
    json_object_set_new(o, "level", t->level > 0 ? json_integer(t->level) : json_null());
    json_object_set_new(o, "torch_eager_us", kb__json_num(t->torch_eager_us));
    json_object_set_new(o, "torch_compile_us", kb__json_num(t->torch_compile_us));
    json_object_set_new(o, "torch_tier", t->torch_tier >= 0 ? json_string(kb__rep_tier_name(
                                                                  w->r, t->torch_tier))
                                                            : json_null());
    json_object_set_new(o, "torch_best", t->torch_best >= 0
                                             ? json_string(t->cands[t->torch_best].id)
                                             : json_null());
    if (w->sources)
      json_object_set_new(o, "reference", json_string(t->reference ? t->reference : ""));
  }
  json_array_append_new(w->tasks, o);
}

json_t *kb__report_json(const struct kb_report *r, int sources) {
  long ev[KB_MAX_TIERS], ok[KB_MAX_TIERS];
  kb__report_funnel(r, ev, ok);
  json_t *funnel = json_array(), *tasks = json_array();
  for (int k = 0; k < r->n_tiers; k++)
    json_array_append_new(funnel, json_pack("{s:i, s:s, s:I, s:I}", "tier", k, "name",
                                            kb__rep_tier_name(r, k), "evaluated",
                                            (json_int_t)ev[k], "ok", (json_int_t)ok[k]));
  struct json_walk w = {r, sources, tasks, NULL};
  kb__rep_walk(r, &(struct kb_rep_walker){.task_begin = json_task_begin, .cand = json_cand,
                                         .task_end = json_task_end, .arg = &w});
  return json_pack("{s:s, s:s, s:s, s:s, s:o, s:{s:o, s:I, s:I}, s:o, s:o, s:{s:o, s:o}}",
                   "schema",
                   "kernelbrain.report/1", "campaign", r->campaign, "state", r->state, "reason",
                   r->reason, "finished", r->finished > 0 ? json_real(r->finished) : json_null(),
                   "gpu_ms", "total",
                   r->gpu_total_ms >= 0 ? json_integer(r->gpu_total_ms) : json_null(), "spent",
                   (json_int_t)r->gpu_spent_ms, "evaluations", (json_int_t)r->gpu_rows_ms,
                   "funnel", funnel, "tasks", tasks, "fast_p", "eager", fastp_json(r, 0),
                   "compile", fastp_json(r, 1));
}

static int io_result(FILE *out, struct kb_error *err) {
  if (ferror(out))
    return kb_error_set(err, KB_EIO, "cannot write the report");
  return KB_OK;
}

int kb__report_write_json(const struct kb_report *r, FILE *out, struct kb_error *err) {
  json_t *j = kb__report_json(r, 1);
  if (j == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory building the report");
  int rc = json_dumpf(j, out, JSON_INDENT(1) | JSON_ENSURE_ASCII);
  json_decref(j);
  fputc('\n', out);
  if (rc)
    return kb_error_set(err, KB_EIO, "cannot write the report");
  return io_result(out, err);
}

/* ---- CSV --------------------------------------------------------------------------------- */

/* A CSV field: quoted when it holds a comma, quote, CR or LF; quotes doubled. A leading = + - @
 * gets a quote prefix so a spreadsheet does not run it as a formula. */
static void csv_field(FILE *out, const char *s, int last) {
  int quote = strpbrk(s, ",\"\r\n") != NULL;
  int formula = s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@';
  if (quote)
    fputc('"', out);
  if (formula)
    fputc('\'', out);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', out);
    fputc(*s, out);
  }
  if (quote)
    fputc('"', out);
  fputs(last ? "\r\n" : ",", out);
}

static void csv_num(FILE *out, double v) {
  if (isfinite(v))
    fprintf(out, "%.6g,", v);
  else
    fputc(',', out);
}

struct text_walk {
  const struct kb_report *r;
  FILE *out;
};

static void csv_cand(void *arg, const struct kb_rep_task *t, int ti, const struct kb_rep_cand *c) {
  const struct text_walk *w = arg;
  FILE *out = w->out;
  (void)ti;
  int64_t cost = 0;
  for (int e = 0; e < c->n_evals; e++)
    cost += c->evals[e].cost_ms;
  csv_field(out, w->r->campaign, 0);
  csv_field(out, t->id, 0);
  fprintf(out, "%d,", c->rank);
  csv_field(out, c->id, 0);
  csv_field(out, c->name, 0);
  csv_field(out, c->generator, 0);
  csv_field(out, c->parent0, 0);
  csv_field(out, c->parent1, 0);
  csv_field(out, c->status[0] ? c->status : "pending", 0);
  fprintf(out, "%d,", c->best_tier);
  csv_field(out, kb__rep_tier_name(w->r, c->timed_tier >= 0 ? c->timed_tier : c->best_tier), 0);
  csv_num(out, c->median_us);
  csv_num(out, c->speedup);
  fprintf(out, "%d,%lld,", c->n_evals, (long long)cost);
  csv_num(out, c->speedup_eager);
  if (isfinite(c->speedup_compile))
    fprintf(out, "%.6g", c->speedup_compile);
  fputs("\r\n", out);
}

int kb__report_write_csv(const struct kb_report *r, FILE *out, struct kb_error *err) {
  fputs("campaign,task,rank,candidate,name,generator,parent0,parent1,status,best_tier,"
        "tier_name,median_us,speedup,evaluations,cost_ms,speedup_eager,speedup_compile\r\n",
        out);
  struct text_walk w = {r, out};
  kb__rep_walk(r, &(struct kb_rep_walker){.cand = csv_cand, .arg = &w});
  return io_result(out, err);
}

const char *kb__html_entity(char c, int quotes) {
  switch (c) {
  case '&': return "&amp;";
  case '<': return "&lt;";
  case '>': return "&gt;";
  case '"': return quotes ? "&quot;" : NULL;
  case '\'': return quotes ? "&#39;" : NULL;
  default: return NULL;
  }
}

/* ---- Markdown ---------------------------------------------------------------------------- */

/* Table cell text: pipes, backslashes, HTML and Markdown punctuation escaped; line breaks as
 * spaces. */
static void md_text(FILE *out, const char *s) {
  for (; *s; s++) {
    const char *entity = kb__html_entity(*s, 0);
    if (entity != NULL) {
      fputs(entity, out);
      continue;
    }
    switch (*s) {
    case '\n':
    case '\r':
      fputc(' ', out);
      break;
    case '|':
    case '\\':
    case '`':
    case '*':
    case '_':
    case '[':
    case ']':
      fputc('\\', out);
      fputc(*s, out);
      break;
    default:
      fputc(*s, out);
    }
  }
}

static void md_time(FILE *out, double us) {
  if (!isfinite(us))
    fputs("-", out);
  else if (us >= 1e6)
    fprintf(out, "%.3f s", us / 1e6);
  else if (us >= 1e3)
    fprintf(out, "%.3f ms", us / 1e3);
  else
    fprintf(out, "%.3f us", us);
}

/* " | 1.23x", or " | -" when unknown. */
static void md_speedup(FILE *out, double x) {
  if (isfinite(x))
    fprintf(out, " | %.2fx", x);
  else
    fputs(" | -", out);
}

/* The fast_p tables (against eager, then compile), when some task has a torch baseline. */
static void md_fastp(const struct kb_report *r, FILE *out) {
  for (int compile = 0; compile < 2; compile++) {
    struct kb_fastp_row rows[KB_FASTP_ROWS];
    int n = kb__report_fastp(r, compile, rows, KB_FASTP_ROWS);
    if (n <= 0 || rows[n - 1].tasks == 0)
      continue;
    fprintf(out, "\n\n## fast_p against %s\n\n| level | tasks | correct |",
            compile ? "torch.compile" : "torch eager");
    for (int k = 0; k < KB_FASTP_N; k++)
      fprintf(out, " fast_%g |", kb__fastp_thresholds[k]);
    fputs(" geomean |\n|---|---:|---:|---:|---:|---:|---:|---:|\n", out);
    for (int i = 0; i < n; i++) {
      if (rows[i].level > 0)
        fprintf(out, "| %d", rows[i].level);
      else
        fputs(rows[i].level == 0 ? "| none" : "| all", out);
      fprintf(out, " | %d | %d |", rows[i].tasks, rows[i].correct);
      for (int k = 0; k < KB_FASTP_N; k++)
        fprintf(out, " %.2f |", rows[i].fast[k]);
      if (isfinite(rows[i].geomean))
        fprintf(out, " %.2fx |\n", rows[i].geomean);
      else
        fputs(" - |\n", out);
    }
  }
}

static void md_task_begin(void *arg, const struct kb_rep_task *t, int ti) {
  FILE *out = ((const struct text_walk *)arg)->out;
  (void)ti;
  fputs("\n## ", out);
  md_text(out, t->id);
  fputs("\n\nBaseline: ", out);
  md_text(out, t->baseline[0] ? t->baseline : "none");
  fprintf(out, ", %lld evaluations", (long long)t->n_evals);
  if (isfinite(t->torch_eager_us) || isfinite(t->torch_compile_us)) {
    fputs("; torch eager ", out);
    md_time(out, t->torch_eager_us);
    fputs(", torch.compile ", out);
    md_time(out, t->torch_compile_us);
  }
  fputs("\n\n| rank | candidate | id | generator | status | tier | median | speedup | vs eager | "
        "vs compile |\n"
        "|---:|---|---|---|---|---|---:|---:|---:|---:|\n",
        out);
}

static void md_cand(void *arg, const struct kb_rep_task *t, int ti, const struct kb_rep_cand *c) {
  const struct text_walk *w = arg;
  FILE *out = w->out;
  (void)t;
  (void)ti;
  fprintf(out, "| %d | ", c->rank);
  md_text(out, c->name);
  fprintf(out, " | %.12s | ", c->id);
  md_text(out, c->generator);
  fputs(" | ", out);
  md_text(out, c->status[0] ? c->status : "pending");
  fputs(" | ", out);
  md_text(out, kb__rep_tier_name(w->r, c->timed_tier >= 0 ? c->timed_tier : c->best_tier));
  fputs(" | ", out);
  md_time(out, c->median_us);
  md_speedup(out, c->speedup);
  md_speedup(out, c->speedup_eager);
  md_speedup(out, c->speedup_compile);
  fputs(" |\n", out);
}

static void md_task_end(void *arg, const struct kb_rep_task *t, int ti) {
  const struct text_walk *w = arg;
  (void)ti;
  if (w->r->top > 0 && t->n_cands > w->r->top)
    fprintf(w->out, "\n%d more candidates not shown (--top %d).\n", t->n_cands - w->r->top,
            w->r->top);
}

int kb__report_write_md(const struct kb_report *r, FILE *out, struct kb_error *err) {
  long ev[KB_MAX_TIERS], ok[KB_MAX_TIERS];
  kb__report_funnel(r, ev, ok);
  fputs("# Campaign ", out);
  md_text(out, r->campaign);
  fputs("\n\nState: ", out);
  md_text(out, r->state);
  if (r->reason[0]) {
    fputs(" (", out);
    md_text(out, r->reason);
    fputs(")", out);
  }
  /* in the campaign file's unit, budget.gpu_seconds (CPU seconds on the host backend) */
  fprintf(out, "  \nBudget: %.3f", (double)r->gpu_spent_ms / 1000.0);
  if (r->gpu_total_ms >= 0)
    fprintf(out, " of %.3f", (double)r->gpu_total_ms / 1000.0);
  fputs(" gpu_seconds spent", out);
  fputs("\n\n## Tier funnel\n\n| tier | candidates evaluated | passed |\n|---|---:|---:|\n", out);
  for (int k = 0; k < r->n_tiers; k++) {
    fprintf(out, "| %d ", k);
    md_text(out, kb__rep_tier_name(r, k));
    fprintf(out, " | %ld | %ld |\n", ev[k], ok[k]);
  }
  md_fastp(r, out);
  struct text_walk w = {r, out};
  kb__rep_walk(r, &(struct kb_rep_walker){.task_begin = md_task_begin, .cand = md_cand,
                                         .task_end = md_task_end, .shown_only = 1, .arg = &w});
  return io_result(out, err);
}
