/* The report as JSON, CSV and Markdown, for scripts (see report.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
  return json_pack("{s:s, s:s, s:s, s:s, s:o, s:{s:o, s:I, s:I}, s:o, s:o}", "schema",
                   "kernelbrain.report/1", "campaign", r->campaign, "state", r->state, "reason",
                   r->reason, "finished", r->finished > 0 ? json_real(r->finished) : json_null(),
                   "gpu_ms", "total",
                   r->gpu_total_ms >= 0 ? json_integer(r->gpu_total_ms) : json_null(), "spent",
                   (json_int_t)r->gpu_spent_ms, "evaluations", (json_int_t)r->gpu_rows_ms,
                   "funnel", funnel, "tasks", tasks);
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
  fprintf(out, "%d,%lld\r\n", c->n_evals, (long long)cost);
}

int kb__report_write_csv(const struct kb_report *r, FILE *out, struct kb_error *err) {
  fputs("campaign,task,rank,candidate,name,generator,parent0,parent1,status,best_tier,"
        "tier_name,median_us,speedup,evaluations,cost_ms\r\n",
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

static void md_task_begin(void *arg, const struct kb_rep_task *t, int ti) {
  FILE *out = ((const struct text_walk *)arg)->out;
  (void)ti;
  fputs("\n## ", out);
  md_text(out, t->id);
  fputs("\n\nBaseline: ", out);
  md_text(out, t->baseline[0] ? t->baseline : "none");
  fprintf(out, ", %lld evaluations\n\n", (long long)t->n_evals);
  fputs("| rank | candidate | id | generator | status | tier | median | speedup |\n"
        "|---:|---|---|---|---|---|---:|---:|\n",
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
  if (isfinite(c->speedup))
    fprintf(out, " | %.2fx |\n", c->speedup);
  else
    fputs(" | - |\n", out);
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
  struct text_walk w = {r, out};
  kb__rep_walk(r, &(struct kb_rep_walker){.task_begin = md_task_begin, .cand = md_cand,
                                         .task_end = md_task_end, .shown_only = 1, .arg = &w});
  return io_result(out, err);
}
