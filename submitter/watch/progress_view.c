/* Showing a progress snapshot (see progress_view.h). */
#include "progress_view.h"

#include <string.h>
#include <time.h>

#include "kb/cli.h"
#include "kb/error.h"

#define BOLD "\033[1m"
#define DIM "\033[2m"
#define GREEN "\033[32m"
#define YELLOW "\033[33m"
#define CYAN "\033[36m"
#define RESET "\033[0m"

void kb__format_duration(double s, char *out, size_t size) {
  if (s < 0) {
    snprintf(out, size, "-");
    return;
  }
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(out, size, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else if (t >= 60)
    snprintf(out, size, "%ldm%02lds", t / 60, t % 60);
  else
    snprintf(out, size, "%lds", t);
}

static void utc_now(char *out, size_t size) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *c(const struct kb_view_opts *o, const char *seq) { return o->color ? seq : ""; }

/* A bar of `width` cells, `frac` (0..1) of them full. */
static int bar(struct kb_buf *b, const struct kb_view_opts *o, double frac, int width) {
  if (frac < 0)
    frac = 0;
  if (frac > 1)
    frac = 1;
  int full = (int)(frac * width + 0.5);
  int rc = kb_buf_addf(b, "[%s", c(o, GREEN));
  for (int i = 0; rc == KB_OK && i < width; i++) {
    if (i == full)
      rc = kb_buf_adds(b, c(o, DIM));
    if (rc == KB_OK)
      rc = kb_buf_adds(b, i < full ? "#" : ".");
  }
  if (rc == KB_OK)
    rc = kb_buf_addf(b, "%s]", c(o, RESET));
  return rc;
}

static int64_t items_total(const struct kb_queue_status *st) {
  return st->open + st->done + st->dead;
}

/* One currency's bar. `scale` divides the ledger's integers into the shown unit (1000: the
 * ledger's milliseconds as the campaign file's gpu_seconds), printed with `decimals`. */
static int budget_line(struct kb_buf *b, const struct kb_view_opts *o, int bw, const char *label,
                       double scale, int decimals, int64_t total, int64_t held, int64_t spent,
                       int64_t available, double rate, const char *unit) {
  if (total <= 0)
    return kb_buf_addf(b, "%-8s %sno budget%s\n", label, c(o, DIM), c(o, RESET));
  int rc = kb_buf_addf(b, "%-8s ", label);
  if (rc == KB_OK)
    rc = bar(b, o, (double)(spent + held) / (double)total, bw);
  if (rc == KB_OK)
    rc = kb_buf_addf(b, " %3d%%  spent %.*f, held %.*f, left %.*f / %.*f",
                     (int)(100.0 * (double)spent / (double)total), decimals,
                     (double)spent / scale, decimals, (double)held / scale, decimals,
                     (double)available / scale, decimals, (double)total / scale);
  /* the spend rate (ledger units per second, shown in `unit` per second) and when the budget
   * runs out at it */
  char lasts[32];
  kb__format_duration(rate > 0 ? (double)available / rate : -1, lasts, sizeof lasts);
  if (rc == KB_OK && rate > 0)
    rc = kb_buf_addf(b, "  %.3g %s/s, out in %s", rate / scale, unit, lasts);
  if (rc == KB_OK)
    rc = kb_buf_adds(b, "\n");
  return rc;
}

static const char *eta_bound_name(int bound) {
  return bound == 2 ? "deadline" : bound == 1 ? "budget" : "work";
}

/* Cuts every line of `src` at `width` visible columns (escape sequences take none). */
static int fit(const char *src, int width, int color, struct kb_buf *out) {
  int col = 0, rc = KB_OK;
  for (const char *s = src; *s && rc == KB_OK; s++) {
    if (*s == '\n') {
      if (color)
        rc = kb_buf_adds(out, RESET);
      if (rc == KB_OK)
        rc = kb_buf_add(out, "\n", 1);
      col = 0;
    } else if (*s == '\033') {
      const char *e = s;
      while (*e && *e != 'm')
        e++;
      if (*e == '\0')
        break;
      rc = kb_buf_add(out, s, (size_t)(e - s + 1));
      s = e;
    } else {
      if ((*s & 0xC0) != 0x80)
        col++;
      if (col <= width)
        rc = kb_buf_add(out, s, 1);
    }
  }
  return rc;
}

/* "  vs eager 1.23x, compile 0.80x" after a task's best speedup, where torch was timed
 * (`compact`: "  eager 1.23x compile 0.80x", for a narrow screen). */
static int torch_cell(struct kb_buf *b, const struct kb_progress_task *t, int compact) {
  int rc = KB_OK;
  if (t->best_vs_eager > 0)
    rc = kb_buf_addf(b, "  %seager %.2fx", compact ? "" : "vs ", t->best_vs_eager);
  if (rc == KB_OK && t->best_vs_compile > 0)
    rc = kb_buf_addf(b, "%s compile %.2fx",
                     t->best_vs_eager > 0 ? (compact ? "" : ",") : (compact ? " " : "  vs"),
                     t->best_vs_compile);
  return rc;
}

/* Columns a task row leaves the best's name on a screen `width` wide with `cell` after it:
 * the row's other parts as screen_tables prints them. */
static int name_room(const struct kb_progress *p, const struct kb_progress_task *t, int width,
                     size_t cell) {
  char num[32];
  snprintf(num, sizeof num, "%.2fx ", t->best_speedup);
  int used = 31 + (int)cell; /* "%-20s %8lld  " */
  if (t->best_tier >= 0) {
    used += (int)strlen(num) + 3 + (int)strlen(p->q.tiers[t->best_tier].name);
    if (t->best_tier != t->rank_tier)
      used += 13 + (int)strlen(p->q.tiers[t->rank_tier].name); /* "; ranked at %s" */
  } else {
    used += 2 + 24 + (t->rank_tier >= 0 ? (int)strlen(p->q.tiers[t->rank_tier].name) : 0);
  }
  return width - used;
}

/* The screen's two tables: per tier the items ready, leased, done and ok; per task its results
 * and best speedup, as many tasks as fit `o->height` under the lines above them. */
static int screen_tables(const struct kb_progress *p, const struct kb_view_opts *o,
                         struct kb_buf *b) {
  const struct kb_queue_status *st = &p->st;
  int rc = kb_buf_addf(b, "%s%-10s %8s %8s %8s %8s%s\n", c(o, CYAN), "tier", "ready",
                       "leased", "done", "ok", c(o, RESET));
  char name[24]; /* tier names and task ids cut in the middle, never to the same text */
  for (int t = 0; rc == KB_OK && t < p->q.n_tiers && t < KB_MAX_TIERS; t++) {
    kb_cli_fit_name(p->q.tiers[t].name, 10, name, sizeof name);
    rc = kb_buf_addf(b, "%-10s %8lld %8lld %8lld %8lld\n", name,
                     (long long)(t < st->n_tiers ? st->ready[t] : 0), (long long)p->leased[t],
                     (long long)p->evaluated[t], (long long)p->passed[t]);
  }
  if (rc == KB_OK)
    rc = kb_buf_addf(b, "%s%-20s %8s  %s%s\n", c(o, CYAN), "task", "results", "best speedup",
                     c(o, RESET));
  /* Lines so far: title, items, 2 budgets, runners, tier header, tiers, task header. */
  int used = 6 + p->q.n_tiers + 1;
  int rows = p->n_tasks;
  if (o->height > 0 && used + rows > o->height) {
    rows = o->height - used - 1;
    if (rows < 0)
      rows = 0;
  }
  struct kb_buf cell;
  kb_buf_init(&cell);
  for (int i = 0; rc == KB_OK && i < rows; i++) {
    const struct kb_progress_task *t = &p->tasks[i];
    kb_cli_fit_name(t->id, 20, name, sizeof name);
    rc = kb_buf_addf(b, "%-20s %8lld  ", name, (long long)t->results);
    /* the best's name gets what the row leaves it, so that the torch speedups after it stay
     * on the screen (the row is cut at the width): at least 8 characters */
    kb_buf_reset(&cell);
    if (rc == KB_OK)
      rc = torch_cell(&cell, t, 0);
    int room = name_room(p, t, o->width, cell.len);
    if (rc == KB_OK && room < 8) {
      kb_buf_reset(&cell);
      rc = torch_cell(&cell, t, 1);
      room = name_room(p, t, o->width, cell.len);
    }
    char best[KB_ID_MAX];
    const char *tier = t->best_tier >= 0 ? p->q.tiers[t->best_tier].name
                       : t->rank_tier >= 0 ? p->q.tiers[t->rank_tier].name : "";
    if (room < 8)
      room = 8;
    if (room > (int)sizeof best - 1)
      room = (int)sizeof best - 1;
    kb_cli_fit_name(t->best_name, room, best, sizeof best);
    if (rc == KB_OK && t->best_tier >= 0 && t->best_tier == t->rank_tier)
      rc = kb_buf_addf(b, "%s%.2fx%s %s (%s)", c(o, BOLD), t->best_speedup, c(o, RESET), best,
                       tier);
    else if (rc == KB_OK && t->best_tier >= 0) /* the baseline is not timed at the best's tier */
      rc = kb_buf_addf(b, "%s%.2fx%s %s (%s; ranked at %s)", c(o, BOLD), t->best_speedup,
                       c(o, RESET), best, tier, p->q.tiers[t->rank_tier].name);
    else if (rc == KB_OK && t->rank_tier >= 0)
      rc = kb_buf_addf(b, "- %s (%s; baseline not timed)", best, tier);
    else if (rc == KB_OK)
      rc = kb_buf_addf(b, "-%s", t->baseline[0] ? "" : " (no baseline)");
    if (rc == KB_OK && cell.len > 0)
      rc = kb_buf_add(b, cell.data, cell.len);
    if (rc == KB_OK)
      rc = kb_buf_addf(b, "\n");
  }
  kb_buf_release(&cell);
  if (rc == KB_OK && rows < p->n_tasks)
    rc = kb_buf_addf(b, "%s... %d more tasks (kb-submit status --json lists all)%s\n", c(o, DIM),
                     p->n_tasks - rows, c(o, RESET));
  return rc;
}

int kb__progress_screen(const struct kb_progress *p, const struct kb_view_opts *o,
                       struct kb_buf *out) {
  const struct kb_queue_status *st = &p->st;
  int width = o->width < 40 ? 40 : o->width;
  int bw = width - 72;
  if (bw < 10)
    bw = 10;
  if (bw > 40)
    bw = 40;
  char now[32], eta[32], left[32];
  utc_now(now, sizeof now);
  kb__format_duration(p->eta_s, eta, sizeof eta);
  struct kb_buf b;
  kb_buf_init(&b);
  int64_t total = items_total(st);
  char elapsed[32];
  kb__format_duration(p->created_ms > 0 ? (double)(p->now_ms - p->created_ms) / 1000.0 : -1,
                      elapsed, sizeof elapsed);
  int rc = kb_buf_addf(
      &b, "%scampaign %s%s: %s%s%s   %s   elapsed %s   eta %s", c(o, BOLD), p->cid, c(o, RESET),
      c(o, strcmp(st->state, "running") == 0 || strcmp(st->state, "done") == 0 ? GREEN : YELLOW),
      st->state, c(o, RESET), now, elapsed, eta);
  if (rc == KB_OK && p->eta_s > 0)
    rc = kb_buf_addf(&b, " (%s)", eta_bound_name(p->eta.bound));
  if (rc == KB_OK && p->deadline > 0) {
    kb__format_duration((double)p->deadline - (double)p->now_ms / 1000.0, left, sizeof left);
    rc = kb_buf_addf(&b, "   deadline in %s", left);
  }
  if (rc == KB_OK)
    rc = kb_buf_adds(&b, "\nitems    ");
  if (rc == KB_OK)
    rc = bar(&b, o, total > 0 ? (double)(st->done + st->dead) / (double)total : 0, bw);
  if (rc == KB_OK)
    rc = kb_buf_addf(&b, " %3d%%  %lld/%lld done, %lld open, %lld dead, %.2f/s\n",
                     total > 0 ? (int)(100.0 * (double)(st->done + st->dead) / (double)total) : 0,
                     (long long)st->done, (long long)total, (long long)st->open,
                     (long long)st->dead, p->rate);
  if (rc == KB_OK)
    rc = budget_line(&b, o, bw, "gpu s", 1000.0, 1, st->gpu_total, st->gpu_held, st->gpu_spent,
                     st->gpu_available, p->gpu_rate, "s");
  if (rc == KB_OK)
    rc = budget_line(&b, o, bw, "llm tok", 1.0, 0, st->llm_total, st->llm_held, st->llm_spent,
                     st->llm_available, p->llm_rate, "tok");
  if (rc == KB_OK)
    rc = kb_buf_addf(&b, "runners  %d alive, %d known", p->runners_alive, p->runners_known);
  /* what the ledger and the scheduler guard against: shown once it happened */
  if (rc == KB_OK && st->stray > 0)
    rc = kb_buf_addf(&b, "   %s%lld forged or stray results dropped%s", c(o, YELLOW),
                     (long long)st->stray, c(o, RESET));
  if (rc == KB_OK && st->gpu_overruns > 0)
    rc = kb_buf_addf(&b, "   %s%lld overruns (%.3f gpu s beyond their reservations)%s",
                     c(o, YELLOW), (long long)st->gpu_overruns, (double)st->gpu_overrun_ms / 1e3,
                     c(o, RESET));
  if (rc == KB_OK && st->infra_retries > 0)
    rc = kb_buf_addf(&b, "   %s%lld evaluations failed by the runner, run again%s", c(o, YELLOW),
                     (long long)st->infra_retries, c(o, RESET));
  if (rc == KB_OK)
    rc = kb_buf_adds(&b, "\n");
  if (rc == KB_OK)
    rc = screen_tables(p, o, &b);
  if (rc == KB_OK)
    rc = fit(b.data, width, o->color, out);
  kb_buf_release(&b);
  return rc;
}

void kb__progress_line(const struct kb_progress *p, FILE *f) {
  const struct kb_queue_status *st = &p->st;
  char now[32], eta[32];
  utc_now(now, sizeof now);
  kb__format_duration(p->eta_s, eta, sizeof eta);
  int64_t total = items_total(st);
  fprintf(f, "%s %s %s items %lld/%lld", now, p->cid, st->state, (long long)(st->done + st->dead),
          (long long)total);
  fprintf(f, " ready");
  for (int t = 0; t < st->n_tiers; t++)
    fprintf(f, "%s%lld", t ? "/" : " ", (long long)st->ready[t]);
  fprintf(f, " leased");
  for (int t = 0; t < p->q.n_tiers && t < KB_MAX_TIERS; t++)
    fprintf(f, "%s%lld", t ? "/" : " ", (long long)p->leased[t]);
  fprintf(f, " done");
  for (int t = 0; t < p->q.n_tiers && t < KB_MAX_TIERS; t++)
    fprintf(f, "%s%lld", t ? "/" : " ", (long long)p->evaluated[t]);
  fprintf(f, " gpu_ms %lld/%lld held %lld", (long long)st->gpu_spent, (long long)st->gpu_total,
          (long long)st->gpu_held);
  if (st->llm_total > 0)
    fprintf(f, " llm_tokens %lld/%lld held %lld", (long long)st->llm_spent,
            (long long)st->llm_total, (long long)st->llm_held);
  fprintf(f, " runners %d", p->runners_alive);
  if (st->stray > 0)
    fprintf(f, " stray %lld", (long long)st->stray);
  if (st->gpu_overruns > 0)
    fprintf(f, " overruns %lld", (long long)st->gpu_overruns);
  if (st->infra_retries > 0)
    fprintf(f, " infra_retries %lld", (long long)st->infra_retries);
  int shown = 0, more = 0;
  for (int i = 0; i < p->n_tasks; i++) {
    if (p->tasks[i].best_tier < 0)
      continue;
    if (shown < KB_LINE_TASKS) {
      fprintf(f, " %s=%.2fx@%s", p->tasks[i].id, p->tasks[i].best_speedup,
              p->q.tiers[p->tasks[i].best_tier].name);
      if (p->tasks[i].best_vs_eager > 0)
        fprintf(f, "/eager=%.2fx", p->tasks[i].best_vs_eager);
      if (p->tasks[i].best_vs_compile > 0)
        fprintf(f, "/compile=%.2fx", p->tasks[i].best_vs_compile);
    } else {
      more++;
    }
    shown++;
  }
  if (more > 0)
    fprintf(f, " +%d", more);
  if (p->created_ms > 0) {
    char elapsed[32];
    kb__format_duration((double)(p->now_ms - p->created_ms) / 1000.0, elapsed, sizeof elapsed);
    fprintf(f, " elapsed %s", elapsed);
  }
  if (p->gpu_rate > 0)
    fprintf(f, " gpu_ms/s %.3g", p->gpu_rate);
  if (p->llm_rate > 0)
    fprintf(f, " llm_tokens/s %.3g", p->llm_rate);
  if (p->eta_s > 0)
    fprintf(f, " eta_bound %s", eta_bound_name(p->eta.bound));
  fprintf(f, " eta %s\n", eta);
}

static json_t *currency(int64_t total, int64_t available, int64_t held, int64_t spent,
                        int64_t overruns, int64_t overrun) {
  return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "total", (json_int_t)total, "available",
                   (json_int_t)available, "held", (json_int_t)held, "spent", (json_int_t)spent,
                   "overruns", (json_int_t)overruns, "overrun", (json_int_t)overrun);
}

static json_t *ints_json(const int64_t *v, int n) {
  json_t *a = json_array();
  for (int k = 0; k < n; k++)
    json_array_append_new(a, json_integer((json_int_t)v[k]));
  return a;
}

/* Task `i`'s items and results per tier (what the ETA with several runners reads): ready (null
 * when the ready queues were too long to read), leased, done and settled_ms. */
static void task_counts_json(const struct kb_progress *p, int i, json_t *o) {
  const struct kb_eta_task *c = &p->counts[i];
  int n = p->q.n_tiers < KB_MAX_TIERS ? p->q.n_tiers : KB_MAX_TIERS;
  json_object_set_new(o, "ready", p->task_ready ? ints_json(c->ready, n) : json_null());
  json_object_set_new(o, "leased", ints_json(c->leased, n));
  json_object_set_new(o, "done", ints_json(c->evaluated, n));
  json_t *ms = json_array();
  for (int k = 0; k < n; k++)
    json_array_append_new(ms, json_real(c->settled_ms[k]));
  json_object_set_new(o, "settled_ms", ms);
  json_t *timed = json_array(), *cap = json_array(), *base = json_array();
  json_t *pair = json_array(), *pair_from = json_array(), *first = json_array();
  for (int k = 0; k < n; k++) {
    json_array_append_new(first, json_real(c->first_ms[k]));
    json_array_append_new(pair, json_real(c->pair_us[k]));
    json_array_append_new(pair_from, json_real(c->pair_from_us[k]));
    json_array_append_new(timed, json_real(c->timed_ms[k]));
    json_array_append_new(cap, json_real(c->cap_samples[k]));
    json_array_append_new(base, c->base_us[k] > 0 ? json_real(c->base_us[k]) : json_null());
  }
  json_object_set_new(o, "timed_ms", timed);
  json_object_set_new(o, "samples", ints_json(c->samples, n));
  json_object_set_new(o, "cap_samples", cap);
  json_object_set_new(o, "baseline_us", base);
  json_object_set_new(o, "pair_us", pair);
  json_object_set_new(o, "pair_from_us", pair_from);
  json_object_set_new(o, "first_ms", first);
}

/* The runners: alive, known, busy (holding a lease), and per busy runner the seconds since its
 * latest result (or since it was first seen busy), as the ETA reads them. */
static json_t *runners_json(const struct kb_progress *p) {
  struct kb_eta_in in;
  kb__progress_eta_input(p, &in);
  json_t *busy_s = json_array(), *names = json_array();
  for (int i = 0; i < in.n_busy; i++) {
    json_array_append_new(busy_s, json_real(in.busy_s[i]));
    json_array_append_new(names, json_string(p->runners[in.busy_runner[i]].name));
  }
  return json_pack("{s:i, s:i, s:i, s:o, s:o}", "alive", p->runners_alive, "known",
                   p->runners_known, "busy", p->runners_busy, "busy_s", busy_s, "busy_names",
                   names);
}

/* The open items the ETA plays on the runners (when the ready queues were read; else null):
 * task, tier, leased, and the settled GPU ms of its candidate's result at the highest tier it
 * has one (basis_ms, basis_tier; null when none yet). */
static json_t *items_json(const struct kb_progress *p) {
  if (!p->task_ready)
    return json_null();
  json_t *a = json_array();
  for (int i = 0; i < p->n_items; i++) {
    const struct kb_eta_item *it = &p->items[i];
    json_t *o = json_pack("{s:s, s:i, s:b}", "task", p->tasks[it->task].id, "tier", it->tier,
                          "leased", it->leased);
    json_object_set_new(o, "basis_ms", it->basis_tier >= 0 ? json_real(it->basis_ms) : json_null());
    json_object_set_new(o, "basis_tier",
                        it->basis_tier >= 0 ? json_integer(it->basis_tier) : json_null());
    json_object_set_new(o, "basis_us", it->basis_us > 0 ? json_real(it->basis_us) : json_null());
    json_object_set_new(o, "runner", it->runner >= 0 && it->runner < p->n_runners
                                         ? json_string(p->runners[it->runner].name)
                                         : json_null());
    json_array_append_new(a, o);
  }
  return a;
}

json_t *kb__progress_json(const struct kb_progress *p) {
  const struct kb_queue_status *st = &p->st;
  json_t *ready = json_array(), *tiers = json_array(), *tasks = json_array();
  for (int t = 0; t < st->n_tiers; t++)
    json_array_append_new(ready, json_integer(st->ready[t]));
  for (int t = 0; t < p->q.n_tiers && t < KB_MAX_TIERS; t++)
    json_array_append_new(
        tiers, json_pack("{s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:f}", "tier", t, "name",
                         p->q.tiers[t].name, "ready",
                         (json_int_t)(t < st->n_tiers ? st->ready[t] : 0), "leased",
                         (json_int_t)p->leased[t], "done", (json_int_t)p->evaluated[t], "ok",
                         (json_int_t)p->passed[t], "cost_ms", (json_int_t)p->q.tiers[t].cost_ms,
                         "max_seconds", p->q.tiers[t].max_seconds));
  for (int t = 0; t < p->q.n_tiers && t < KB_MAX_TIERS; t++) { /* a runner's time beyond cost */
    json_t *o = json_array_get(tiers, (size_t)t);
    json_object_set_new(o, "overhead_ms", p->over_n[t] > 0
                                              ? json_real(p->over_ms[t] / (double)p->over_n[t])
                                              : json_null());
    json_object_set_new(o, "overhead_n", json_integer((json_int_t)p->over_n[t]));
    json_object_set_new(o, "warmup", json_integer(p->q.tiers[t].warmup));
    json_object_set_new(o, "min_samples", json_integer(p->q.tiers[t].min_samples));
    json_object_set_new(o, "max_samples", json_integer(p->q.tiers[t].max_samples));
  }
  for (int i = 0; i < p->n_tasks; i++) {
    const struct kb_progress_task *t = &p->tasks[i];
    json_t *o = json_pack("{s:s, s:I}", "task", t->id, "results", (json_int_t)t->results);
    if (o)
      task_counts_json(p, i, o);
    if (o) {
      json_object_set_new(o, "torch_eager_us",
                          t->torch_eager_us > 0 ? json_real(t->torch_eager_us) : json_null());
      json_object_set_new(o, "torch_compile_us",
                          t->torch_compile_us > 0 ? json_real(t->torch_compile_us) : json_null());
      json_object_set_new(o, "best_speedup_eager",
                          t->best_vs_eager > 0 ? json_real(t->best_vs_eager) : json_null());
      json_object_set_new(o, "best_speedup_compile",
                          t->best_vs_compile > 0 ? json_real(t->best_vs_compile) : json_null());
    }
    if (o && t->best_tier >= 0) {
      json_object_set_new(o, "best_speedup", json_real(t->best_speedup));
      json_object_set_new(o, "best_candidate", json_string(t->best_name));
      json_object_set_new(o, "best_tier", json_string(p->q.tiers[t->best_tier].name));
    } else if (o) {
      json_object_set_new(o, "best_speedup", json_null());
    }
    if (o && t->rank_tier >= 0) { /* the best by the ranking rule, and the tier it ranks at */
      json_object_set_new(o, "best_candidate", json_string(t->best_name));
      json_object_set_new(o, "best_rank_tier", json_string(p->q.tiers[t->rank_tier].name));
    }
    json_array_append_new(tasks, o);
  }
  json_t *o = json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:I}",
      "campaign", p->cid, "state", st->state, "time_ms", (json_int_t)p->now_ms, "open",
      (json_int_t)st->open, "done", (json_int_t)st->done, "dead", (json_int_t)st->dead, "leased",
      (json_int_t)st->leased, "ready", ready, "tiers", tiers, "gpu_ms",
      currency(st->gpu_total, st->gpu_available, st->gpu_held, st->gpu_spent, st->gpu_overruns,
               st->gpu_overrun_ms),
      "llm_tokens",
      currency(st->llm_total, st->llm_available, st->llm_held, st->llm_spent, st->llm_overruns,
               st->llm_overrun),
      "runners", runners_json(p), "tasks", tasks, "rate_per_s", p->rate, "results",
      (json_int_t)p->results);
  if (o) {
    json_object_set_new(o, "infra_retries", json_integer((json_int_t)st->infra_retries));
    json_object_set_new(o, "eta_s", p->eta_s >= 0 ? json_real(p->eta_s) : json_null());
    /* what the ETA rests on (docs/report.md, "The ETA") */
    json_object_set_new(o, "eta_bound", json_string(eta_bound_name(p->eta.bound)));
    json_object_set_new(o, "eta_work_gpu_ms", json_real(p->eta.work_ms));
    json_object_set_new(o, "eta_method", json_string(p->eta.simulated ? "runners" : "work_rate"));
    double elapsed = (double)(p->now_ms - p->created_ms) / 1000.0;
    json_object_set_new(o, "elapsed_s", p->created_ms > 0 ? json_real(elapsed) : json_null());
    json_object_set_new(o, "gpu_ms_per_s", json_real(p->gpu_rate));
    json_object_set_new(o, "gpu_ms_per_s_per_runner", json_real(p->runner_rate));
    json_object_set_new(o, "open_items", items_json(p));
    json_object_set_new(o, "llm_tokens_per_s", json_real(p->llm_rate));
    json_object_set_new(o, "gpu_exhausted_in_s",
                        p->eta.exhaust_s >= 0 ? json_real(p->eta.exhaust_s) : json_null());
    json_object_set_new(o, "generating", json_boolean(p->generating));
    json_t *costs = json_array();
    for (int t = 0; t < p->q.n_tiers && t < KB_MAX_TIERS; t++)
      json_array_append_new(
          costs, json_real(p->evaluated[t] > 0 ? p->cost_ms[t] / (double)p->evaluated[t] : 0));
    json_object_set_new(o, "cost_ms_mean", costs);
    json_object_set_new(o, "deadline", p->deadline > 0 ? json_integer(p->deadline) : json_null());
    json_object_set_new(o, "ended", json_boolean(kb__progress_ended(p)));
    /* results-stream entries the scheduler dropped: they settled no lease it knows of */
    json_object_set_new(o, "stray", json_integer(st->stray));
  }
  return o;
}
