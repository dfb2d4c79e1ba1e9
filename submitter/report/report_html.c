/* The HTML report: one self-contained file that works offline (see report.h, docs/report.md).
 *
 * Every text that comes from the campaign (names, sources, reasons, compile logs: candidate
 * sources are untrusted) is HTML-escaped; the chart data travels as JSON in a
 * <script type="application/json"> block with '<', '>' and '&' written as \u escapes, so no text
 * can close the block; the page's Content-Security-Policy allows only the two inline scripts it
 * ships, by hash, and no network access. Charts are drawn by Chart.js (third_party/chart.js,
 * embedded at build time by submitter/report/embed_file.cmake). */
#include <math.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "report.h"

extern const char kb_chartjs[];
extern const unsigned long kb_chartjs_len;
extern const char kb_chartjs_version[];

#define MAX_BURN_POINTS 2000 /* points of the burn-down line */
#define MAX_TASK_BARS 30     /* candidates in a task's speedup chart */

/* The page's own script: builds every chart from the JSON data block. */
static const char page_js[] =
    "(function () {\n"
    "  'use strict';\n"
    "  var data = JSON.parse(document.getElementById('kb-data').textContent);\n"
    "  Chart.defaults.animation = false;\n"
    "  Chart.defaults.responsive = true;\n"
    "  Chart.defaults.maintainAspectRatio = false;\n"
    "  function make(id, cfg) {\n"
    "    var el = document.getElementById(id);\n"
    "    if (!el) return;\n"
    "    new Chart(el, cfg);\n"
    "    el.setAttribute('data-rendered', 'true');\n"
    "  }\n"
    "  function axis(text, extra) {\n"
    "    var a = {beginAtZero: true, title: {display: true, text: text}};\n"
    "    for (var k in extra) a[k] = extra[k];\n"
    "    return a;\n"
    "  }\n"
    "  make('chart-funnel', {type: 'bar', data: {labels: data.funnel.labels, datasets: [\n"
    "      {label: 'evaluated', data: data.funnel.evaluated},\n"
    "      {label: 'passed', data: data.funnel.passed}]},\n"
    "    options: {scales: {y: axis('candidates', {ticks: {precision: 0}})}}});\n"
    "  make('chart-burn', {type: 'line', data: {datasets: [{label: data.burn.label,\n"
    "      data: data.burn.points, stepped: true, pointRadius: 0, borderWidth: 2}]},\n"
    "    options: {scales: {x: axis('seconds since the first evaluation', {type: 'linear'}),\n"
    "      y: axis('gpu_seconds')}}});\n"
    "  make('chart-dist', {type: 'bar', data: {labels: data.dist.labels, datasets: [\n"
    "      {label: 'candidates', data: data.dist.counts}]},\n"
    "    options: {scales: {x: {title: {display: true, text: 'speedup over the baseline'}},\n"
    "      y: axis('candidates', {ticks: {precision: 0}})}}});\n"
    "  data.tasks.forEach(function (t, i) {\n"
    "    make('chart-task-' + i, {type: 'bar', data: {labels: t.labels, datasets: [\n"
    "        {label: 'speedup over ' + t.baseline + ' at ' + t.tier, data: t.speedups}]},\n"
    "      options: {indexAxis: 'y', scales: {x: axis('speedup (x)')}}});\n"
    "  });\n"
    "})();\n";

static const char css[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}"
    "header{background:#1d2330;color:#fff;padding:12px 24px}header h1{margin:0;font-size:20px}"
    "header a{color:#9cc3ff;margin-right:12px}main{padding:0 24px 40px}"
    "section{background:#fff;border:1px solid #dde1e6;border-radius:6px;margin:16px 0;"
    "padding:12px 16px}h2{font-size:17px;margin:4px 0 8px}"
    ".grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:16px}"
    "figure{margin:0}figcaption{font-weight:600;margin-bottom:4px}"
    ".chart{position:relative;height:260px}"
    "table{border-collapse:collapse;margin:8px 0;font-size:13px}"
    "th,td{border-bottom:1px solid #e5e8ec;padding:3px 8px;text-align:left;vertical-align:top}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "pre{background:#f0f2f5;padding:8px;overflow:auto;max-height:480px;font-size:12px}"
    ".cand{display:none}.cand:target{display:block}.muted{color:#6b7380}"
    ".ok{color:#18794e}.bad{color:#b42318}";

/* ---- escaping ------------------------------------------------------------------------------ */

/* Text or an attribute value: & < > " ' as entities. */
static void esc(FILE *out, const char *s) {
  for (; s && *s; s++) {
    const char *entity = kb__html_entity(*s, 1);
    if (entity != NULL)
      fputs(entity, out);
    else
      fputc(*s, out);
  }
}

/* JSON text made safe inside a <script> element: '<', '>', '&' as \u escapes (they can only
 * appear inside JSON strings, where the escape means the same). */
static void script_json(FILE *out, const char *s) {
  for (; *s; s++) {
    if (*s == '<')
      fputs("\\u003c", out);
    else if (*s == '>')
      fputs("\\u003e", out);
    else if (*s == '&')
      fputs("\\u0026", out);
    else
      fputc(*s, out);
  }
}

/* 'sha256-<base64>' of `text` for the Content-Security-Policy, into `out` (at least 64 bytes). */
static int csp_hash(const char *text, size_t len, char *out, size_t size) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  unsigned char b64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
  if (EVP_Digest(text, len, md, &n, EVP_sha256(), NULL) != 1)
    return KB_EINTERNAL;
  EVP_EncodeBlock(b64, md, (int)n);
  int w = snprintf(out, size, "'sha256-%s'", (const char *)b64);
  return w > 0 && (size_t)w < size ? KB_OK : KB_EINTERNAL;
}

static void fmt_time(char *out, size_t size, double us) {
  if (!isfinite(us))
    snprintf(out, size, "-");
  else if (us >= 1e6)
    snprintf(out, size, "%.3f s", us / 1e6);
  else if (us >= 1e3)
    snprintf(out, size, "%.3f ms", us / 1e3);
  else
    snprintf(out, size, "%.3f us", us);
}

static void fmt_date(char *out, size_t size, double unix_s) {
  if (!isfinite(unix_s) || unix_s <= 0) {
    snprintf(out, size, "-");
    return;
  }
  time_t t = (time_t)unix_s;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, size, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* ---- chart data ---------------------------------------------------------------------------- */

struct burn_event {
  double t;     /* unix seconds, when the evaluation finished */
  int64_t cost; /* milliseconds */
};

static int cmp_burn(const void *a, const void *b) {
  double x = ((const struct burn_event *)a)->t, y = ((const struct burn_event *)b)->t;
  return (x > y) - (x < y);
}

struct burn {
  struct burn_event *ev; /* owned by burn_json; NULL while counting */
  size_t n;              /* evaluations counted, or events filled */
  double t0;             /* earliest start or finish, unix seconds */
};

static void burn_eval(void *arg, const struct kb_rep_cand *c, const struct kb_rep_eval *x) {
  struct burn *b = arg;
  (void)c;
  if (b->ev == NULL) {
    b->n++;
    return;
  }
  if (!isfinite(x->finished))
    return;
  b->ev[b->n].t = x->finished;
  b->ev[b->n++].cost = x->cost_ms;
  if (isfinite(x->started) && x->started < b->t0)
    b->t0 = x->started;
  if (x->finished < b->t0)
    b->t0 = x->finished;
}

/* Budget left (or spent, when the total is unknown) after each evaluation, by finish time. */
static json_t *burn_json(const struct kb_report *r) {
  struct burn b = {NULL, 0, INFINITY};
  struct kb_rep_walker w = {.eval = burn_eval, .arg = &b};
  kb__rep_walk(r, &w); /* count */
  struct burn_event *ev = kb_calloc(b.n + 1, sizeof *ev);
  if (ev == NULL)
    return NULL;
  b.ev = ev;
  b.n = 0;
  kb__rep_walk(r, &w); /* fill */
  size_t k = b.n;
  double t0 = b.t0;
  qsort(ev, k, sizeof *ev, cmp_burn);
  int left = r->gpu_total_ms >= 0;
  json_t *points = json_array();
  int64_t cum = 0;
  size_t step = k / MAX_BURN_POINTS + 1;
  json_array_append_new(
      points, json_pack("{s:f, s:f}", "x", 0.0, "y", left ? (double)r->gpu_total_ms / 1e3 : 0.0));
  for (size_t i = 0; i < k; i++) {
    cum += ev[i].cost;
    if (i % step != 0 && i + 1 != k)
      continue;
    json_array_append_new(points, json_pack("{s:f, s:f}", "x", ev[i].t - t0, "y",
                                            (double)(left ? r->gpu_total_ms - cum : cum) / 1e3));
  }
  kb_free(ev);
  return json_pack("{s:s, s:o}", "label", left ? "gpu_seconds left" : "gpu_seconds spent", "points", points);
}

static const double dist_edges[] = {0, 0.5, 0.8, 0.95, 1.05, 1.25, 1.5, 2, 3, 5, INFINITY};
static const char *const dist_labels[] = {"<0.5x",      "0.5-0.8x",  "0.8-0.95x", "0.95-1.05x",
                                          "1.05-1.25x", "1.25-1.5x", "1.5-2x",    "2-3x",
                                          "3-5x",       ">=5x"};
#define N_BINS (sizeof dist_labels / sizeof dist_labels[0])

static void dist_cand(void *arg, const struct kb_rep_task *t, int ti, const struct kb_rep_cand *c) {
  long *counts = arg;
  (void)t;
  (void)ti;
  for (size_t b = 0; isfinite(c->speedup) && b < N_BINS; b++)
    if (c->speedup >= dist_edges[b] && c->speedup < dist_edges[b + 1])
      counts[b]++;
}

static json_t *dist_json(const struct kb_report *r) {
  long counts[N_BINS] = {0};
  kb__rep_walk(r, &(struct kb_rep_walker){.cand = dist_cand, .arg = counts});
  json_t *labels = json_array(), *values = json_array();
  for (size_t b = 0; b < N_BINS; b++) {
    json_array_append_new(labels, json_string(dist_labels[b]));
    json_array_append_new(values, json_integer(counts[b]));
  }
  return json_pack("{s:o, s:o}", "labels", labels, "counts", values);
}

/* The tier a task's bar chart compares at: its best's (rank 1) timed tier, -1 when none. The
 * chart shows only candidates timed at that tier (docs/search.md, "Ranking": never a ratio of
 * one tier beside another's). */
static int bars_tier(const struct kb_rep_task *t) {
  return t->n_cands > 0 ? t->cands[t->order[0]].timed_tier : -1;
}

static int bar_shown(const struct kb_rep_task *t, const struct kb_rep_cand *c) {
  return isfinite(c->speedup) && c->timed_tier >= 0 && c->timed_tier == bars_tier(t);
}

/* Per task, the speedups of its first MAX_TASK_BARS candidates by rank timed at its best's tier. */
struct bars {
  const struct kb_report *r;
  json_t *tasks;            /* being filled (owned by chart_data) */
  json_t *names, *speedups; /* the current task's (owned until its task_end) */
};

static void bars_task_begin(void *arg, const struct kb_rep_task *t, int ti) {
  struct bars *b = arg;
  (void)t;
  (void)ti;
  b->names = json_array();
  b->speedups = json_array();
}

static void bars_cand(void *arg, const struct kb_rep_task *t, int ti, const struct kb_rep_cand *c) {
  struct bars *b = arg;
  (void)ti;
  if (!bar_shown(t, c) || json_array_size(b->names) >= MAX_TASK_BARS)
    return;
  json_array_append_new(b->names, json_string(c->name));
  json_array_append_new(b->speedups, json_real(c->speedup));
}

static void bars_task_end(void *arg, const struct kb_rep_task *t, int ti) {
  struct bars *b = arg;
  (void)ti;
  json_array_append_new(b->tasks, json_pack("{s:s, s:s, s:o, s:o, s:s}", "task", t->id, "baseline",
                                            t->baseline[0] ? t->baseline : "(none)", "labels",
                                            b->names, "speedups", b->speedups, "tier",
                                            kb__rep_tier_name(b->r, bars_tier(t))));
  b->names = b->speedups = NULL;
}

static json_t *chart_data(const struct kb_report *r) {
  long ev[KB_MAX_TIERS], ok[KB_MAX_TIERS];
  kb__report_funnel(r, ev, ok);
  json_t *labels = json_array(), *e = json_array(), *p = json_array(), *tasks = json_array();
  for (int k = 0; k < r->n_tiers; k++) {
    json_array_append_new(labels, json_string(r->tier_names[k]));
    json_array_append_new(e, json_integer(ev[k]));
    json_array_append_new(p, json_integer(ok[k]));
  }
  struct bars b = {r, tasks, NULL, NULL};
  kb__rep_walk(r, &(struct kb_rep_walker){.task_begin = bars_task_begin, .cand = bars_cand,
                                         .task_end = bars_task_end, .arg = &b});
  return json_pack("{s:{s:o, s:o, s:o}, s:o, s:o, s:o}", "funnel", "labels", labels, "evaluated", e,
                   "passed", p, "burn", burn_json(r), "dist", dist_json(r), "tasks", tasks);
}

/* ---- sections ------------------------------------------------------------------------------ */

static void status_cell(FILE *out, const char *status) {
  fprintf(out, "<td class=\"%s\">", strcmp(status, "ok") == 0 ? "ok" : "bad");
  esc(out, status[0] ? status : "pending");
  fputs("</td>", out);
}

/* Median of seed `s` at `tier` when it passed there with a timing (kb/rank.h), or NaN. */
static double median_at(const struct kb_rep_cand *s, int tier) {
  return kb__rep_timed_median(s, tier);
}

/* A speedup cell: "1.23x", or "-" when unknown. */
static void speedup_cell(FILE *out, double x) {
  if (isfinite(x))
    fprintf(out, "<td class=\"n\">%.2fx</td>", x);
  else
    fputs("<td class=\"n\">-</td>", out);
}

/* The fast_p tables against torch eager and torch.compile (docs/report.md), when some task
 * has that torch baseline. */
static void fastp_tables(FILE *out, const struct kb_report *r) {
  for (int compile = 0; compile < 2; compile++) {
    struct kb_fastp_row rows[KB_FASTP_ROWS];
    int n = kb__report_fastp(r, compile, rows, KB_FASTP_ROWS);
    if (n <= 0 || rows[n - 1].tasks == 0)
      continue;
    fprintf(out, "<h3 id=\"fastp-%s\">fast_p against %s</h3><table><tr><th>level</th>"
                 "<th>tasks</th><th>correct</th>",
            compile ? "compile" : "eager", compile ? "torch.compile" : "torch eager");
    for (int k = 0; k < KB_FASTP_N; k++)
      fprintf(out, "<th>fast_%g</th>", kb__fastp_thresholds[k]);
    fputs("<th>geometric mean</th></tr>\n", out);
    for (int i = 0; i < n; i++) {
      if (rows[i].level > 0)
        fprintf(out, "<tr><td>%d</td>", rows[i].level);
      else
        fputs(rows[i].level == 0 ? "<tr><td>none</td>" : "<tr><td>all</td>", out);
      fprintf(out, "<td class=\"n\">%d</td><td class=\"n\">%d</td>", rows[i].tasks,
              rows[i].correct);
      for (int k = 0; k < KB_FASTP_N; k++)
        fprintf(out, "<td class=\"n\">%.2f</td>", rows[i].fast[k]);
      speedup_cell(out, rows[i].geomean);
      fputs("</tr>\n", out);
    }
    fputs("</table>", out);
  }
}

static void overview(FILE *out, const struct kb_report *r) {
  long ev[KB_MAX_TIERS], ok[KB_MAX_TIERS];
  kb__report_funnel(r, ev, ok);
  char when[64];
  fmt_date(when, sizeof when, r->finished);
  fputs("<section id=\"overview\"><h2>Overview</h2><p>State <b>", out);
  esc(out, r->state);
  fputs("</b>", out);
  if (r->reason[0]) {
    fputs(" (", out);
    esc(out, r->reason);
    fputs(")", out);
  }
  /* in the campaign file's unit, budget.gpu_seconds (CPU seconds on the host backend) */
  fprintf(out, ", finished %s. Budget: %.3f", when, (double)r->gpu_spent_ms / 1000.0);
  if (r->gpu_total_ms >= 0)
    fprintf(out, " of %.3f", (double)r->gpu_total_ms / 1000.0);
  fputs(" gpu_seconds spent", out);
  /* the ledger's figure and the rows' (the burn-down's) agree at the end of a campaign */
  if (r->gpu_rows_ms != r->gpu_spent_ms)
    fprintf(out, " (the evaluations in the files cost %.3f gpu_seconds: the campaign is under "
                 "way, or the files are not the ledger's)", (double)r->gpu_rows_ms / 1000.0);
  fputs(".</p>\n<div class=\"grid\">"
        "<figure><figcaption>Tier funnel</figcaption><div class=\"chart\">"
        "<canvas id=\"chart-funnel\" role=\"img\" aria-label=\"tier funnel\"></canvas></div>"
        "</figure>"
        "<figure><figcaption>Budget burn-down</figcaption><div class=\"chart\">"
        "<canvas id=\"chart-burn\" role=\"img\" aria-label=\"budget burn-down\"></canvas></div>"
        "</figure>"
        "<figure><figcaption>Speedup distribution (every timed candidate, at its best tier)"
        "</figcaption><div class=\"chart\"><canvas id=\"chart-dist\" role=\"img\" "
        "aria-label=\"speedup distribution\"></canvas></div></figure></div>\n",
        out);
  fputs("<table><tr><th>tier</th><th>candidates evaluated</th><th>passed</th></tr>", out);
  for (int k = 0; k < r->n_tiers; k++) {
    fprintf(out, "<tr><td>%d ", k);
    esc(out, r->tier_names[k]);
    fprintf(out, "</td><td class=\"n\">%ld</td><td class=\"n\">%ld</td></tr>", ev[k], ok[k]);
  }
  fputs("</table>", out);
  fastp_tables(out, r);
  fputs("</section>\n", out);
}

/* What the html walks write to. */
struct html_walk {
  const struct kb_report *r;
  FILE *out;
};

/* A task's section: its chart, then the head of its leaderboard table. */
static void board_begin(void *arg, const struct kb_rep_task *t, int i) {
  FILE *out = ((const struct html_walk *)arg)->out;
  int bars = 0;
  for (int c = 0; c < t->n_cands; c++)
    bars += bar_shown(t, &t->cands[c]);
  if (bars > MAX_TASK_BARS)
    bars = MAX_TASK_BARS;
  fprintf(out, "<section id=\"task-%d\"><h2>Task ", i);
  esc(out, t->id);
  fputs("</h2><p>", out);
  esc(out, t->name);
  if (t->category[0]) {
    fputs(" &middot; ", out);
    esc(out, t->category);
  }
  fputs(" &middot; baseline <b>", out);
  esc(out, t->baseline[0] ? t->baseline : "none");
  fprintf(out, "</b> &middot; %lld evaluations", (long long)t->n_evals);
  if (isfinite(t->torch_eager_us) || isfinite(t->torch_compile_us)) {
    char eager[32], compiled[32];
    fmt_time(eager, sizeof eager, t->torch_eager_us);
    fmt_time(compiled, sizeof compiled, t->torch_compile_us);
    fprintf(out, " &middot; torch eager %s, torch.compile %s", eager, compiled);
  }
  fputs(" &middot; <span class=\"muted\">", out);
  esc(out, t->file);
  fprintf(out,
          "</span></p>\n<div class=\"chart\" style=\"height:%dpx\"><canvas id=\"chart-task-%d\" "
          "role=\"img\" aria-label=\"speedups\"></canvas></div>\n",
          80 + 24 * bars, i);
  fputs("<table><tr><th>rank</th><th>candidate</th><th>generator</th><th>status</th>"
        "<th>tier</th><th>median</th>",
        out);
  for (int s = 0; s < t->n_cands; s++)
    if (strcmp(t->cands[s].generator, "seed") == 0) {
      fputs("<th>speedup vs ", out);
      esc(out, t->cands[s].name);
      fputs(s == t->baseline_cand ? " (baseline)</th>" : "</th>", out);
    }
  fputs("<th>vs torch eager</th><th>vs torch.compile</th></tr>\n", out);
}

/* One leaderboard row, with the candidate's speedup over each seed at its timed tier. */
static void board_row(void *arg, const struct kb_rep_task *t, int i, const struct kb_rep_cand *c) {
  const struct html_walk *w = arg;
  FILE *out = w->out;
  (void)i;
  char med[32];
  fmt_time(med, sizeof med, c->median_us);
  fprintf(out, "<tr><td class=\"n\">%d</td><td><a href=\"#c-", c->rank);
  esc(out, c->id);
  fputs("\">", out);
  esc(out, c->name);
  fputs("</a></td><td>", out);
  esc(out, c->generator);
  fputs("</td>", out);
  status_cell(out, c->status);
  fputs("<td>", out);
  esc(out, kb__rep_tier_name(w->r, c->timed_tier >= 0 ? c->timed_tier : c->best_tier));
  fprintf(out, "</td><td class=\"n\">%s</td>", med);
  for (int s = 0; s < t->n_cands; s++) {
    if (strcmp(t->cands[s].generator, "seed") != 0)
      continue;
    double m = c->timed_tier >= 0 ? median_at(&t->cands[s], c->timed_tier) : NAN;
    if (isfinite(m) && c->median_us > 0)
      fprintf(out, "<td class=\"n\">%.2fx</td>", m / c->median_us);
    else
      fputs("<td class=\"n\">-</td>", out);
  }
  speedup_cell(out, c->speedup_eager);
  speedup_cell(out, c->speedup_compile);
  fputs("</tr>\n", out);
}

static void board_end(void *arg, const struct kb_rep_task *t, int i) {
  const struct html_walk *w = arg;
  (void)i;
  fputs("</table>", w->out);
  if (w->r->top > 0 && t->n_cands > w->r->top)
    fprintf(w->out, "<p class=\"muted\">%d more candidates not shown (--top %d).</p>",
            t->n_cands - w->r->top, w->r->top);
  fputs("</section>\n", w->out);
}

/* A link to candidate `id`'s page, or its name (or id) when it has none. */
static void cand_link(FILE *out, const struct kb_report *r, const struct kb_rep_task *t,
                      const char *id) {
  int c = kb__rep_find(t, id);
  if (c >= 0 && kb__rep_shown(r, &t->cands[c])) {
    fputs("<a href=\"#c-", out);
    esc(out, t->cands[c].id);
    fputs("\">", out);
    esc(out, t->cands[c].name);
    fputs("</a> ", out);
    return;
  }
  fputs("<span class=\"muted\">", out);
  esc(out, c >= 0 ? t->cands[c].name : id);
  fputs("</span> ", out);
}

static void evaluations(FILE *out, const struct kb_rep_cand *c) {
  fputs("<h4>Evaluations</h4><table><tr><th>tier</th><th>attempt</th><th>status</th>"
        "<th>median</th><th>p10</th><th>p90</th><th>noise</th><th>samples</th>"
        "<th>max abs err</th><th>cost ms</th><th>device</th><th>runner</th><th>finished</th>"
        "<th>reason</th></tr>\n",
        out);
  for (int e = 0; e < c->n_evals; e++) {
    const struct kb_rep_eval *x = &c->evals[e];
    char med[32], p10[32], p90[32], when[64];
    fmt_time(med, sizeof med, x->median_us);
    fmt_time(p10, sizeof p10, x->samples > 0 ? x->p10_us : NAN);
    fmt_time(p90, sizeof p90, x->samples > 0 ? x->p90_us : NAN);
    fmt_date(when, sizeof when, x->finished);
    fputs("<tr><td>", out);
    esc(out, x->tier_name);
    fprintf(out, "</td><td class=\"n\">%d</td>", x->attempt);
    status_cell(out, x->status);
    fprintf(out, "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>", med, p10,
            p90);
    if (isfinite(x->noise) && x->samples > 0)
      fprintf(out, "<td class=\"n\">%.2f%%</td>", 100 * x->noise);
    else
      fputs("<td class=\"n\">-</td>", out);
    fprintf(out, "<td class=\"n\">%d</td>", x->samples);
    if (isfinite(x->max_abs_err))
      fprintf(out, "<td class=\"n\">%.3g</td>", x->max_abs_err);
    else
      fputs("<td class=\"n\">-</td>", out);
    fprintf(out, "<td class=\"n\">%lld</td><td>", (long long)x->cost_ms);
    esc(out, x->device);
    fputs("</td><td>", out);
    esc(out, x->runner);
    fprintf(out, "</td><td>%s</td><td>", when);
    esc(out, x->reason);
    fputs("</td></tr>\n", out);
  }
  fputs("</table>\n", out);
}

/* The metrics, trace summary and kernel records of one evaluation. Returns 1 when it had any. */
static int cupti(FILE *out, const struct kb_rep_eval *x) {
  int metrics = isfinite(x->dram_pct) || isfinite(x->sm_pct) || isfinite(x->occupancy_pct) ||
                isfinite(x->l2_hit_pct);
  if (!metrics && x->trace_kernels < 0 && x->n_kernels == 0 && !isfinite(x->same_run_speedup))
    return 0;
  fputs("<div class=\"cupti\"><h5>CUPTI, ", out);
  esc(out, x->tier_name);
  fprintf(out, " attempt %d</h5>", x->attempt);
  if (metrics) {
    fputs("<table class=\"metrics\"><tr><th>DRAM throughput</th><th>SM throughput</th>"
          "<th>achieved occupancy</th><th>L2 hit rate</th><th>kernel time</th></tr><tr>",
          out);
    const double v[] = {x->dram_pct, x->sm_pct, x->occupancy_pct, x->l2_hit_pct};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
      if (isfinite(v[i]))
        fprintf(out, "<td class=\"n\">%.1f%%</td>", v[i]);
      else
        fputs("<td class=\"n\">-</td>", out);
    char kt[32];
    fmt_time(kt, sizeof kt, x->kernel_us);
    fprintf(out, "<td class=\"n\">%s</td></tr></table>", kt);
  }
  if (isfinite(x->same_run_speedup)) {
    char base[32];
    fmt_time(base, sizeof base, x->baseline_median_us);
    fprintf(out, "<p>Same-run speedup %.2fx (baseline re-timed in the same process: %s).</p>",
            x->same_run_speedup, base);
  }
  if (x->trace_kernels >= 0)
    fprintf(out,
            "<p>Kernel trace: %lld kernels; the candidate's %lld on its stream in %.3f ms, "
            "%.3f ms on other streams, %.3f ms outside the timed windows.</p>",
            (long long)x->trace_kernels, (long long)x->trace_own_kernels,
            (double)x->trace_own_ns / 1e6, (double)x->trace_other_ns / 1e6,
            (double)x->trace_late_ns / 1e6);
  if (x->n_kernels > 0) {
    fputs("<table class=\"kernels\"><tr><th>kernel</th><th>grid</th><th>block</th>"
          "<th>registers</th><th>static smem</th><th>dynamic smem</th><th>duration</th>"
          "<th>stream</th></tr>\n",
          out);
    for (int k = 0; k < x->n_kernels; k++) {
      const struct kb_rep_kernel *kr = &x->kernels[k];
      char dur[32];
      fmt_time(dur, sizeof dur, (double)(kr->end_ns - kr->start_ns) / 1000.0);
      fputs("<tr><td><code>", out);
      esc(out, kr->name);
      fprintf(out,
              "</code></td><td class=\"n\">%d,%d,%d</td><td class=\"n\">%d,%d,%d</td>"
              "<td class=\"n\">%d</td><td class=\"n\">%d</td><td class=\"n\">%d</td>"
              "<td class=\"n\">%s</td><td class=\"n\">%lld</td></tr>\n",
              kr->grid[0], kr->grid[1], kr->grid[2], kr->block[0], kr->block[1], kr->block[2],
              kr->registers, kr->static_smem, kr->dynamic_smem, dur, (long long)kr->stream);
    }
    fputs("</table>", out);
    if (x->kernels_dropped > 0)
      fprintf(out, "<p class=\"muted\">%lld more kernel records were not kept.</p>",
              (long long)x->kernels_dropped);
  }
  fputs("</div>\n", out);
  return 1;
}

/* The LLM exchanges that produced `c` (its id in /llm/requests.candidate). */
static void llm_exchanges(FILE *out, const struct kb_rep_task *t, const struct kb_rep_cand *c) {
  int n = 0;
  for (int i = 0; i < t->n_llm; i++) {
    const struct kb_rep_llm *x = &t->llm[i];
    if (strcmp(x->candidate, c->id) != 0)
      continue;
    if (n++ == 0)
      fputs("<h4>LLM exchange</h4>\n", out);
    char when[64];
    fmt_date(when, sizeof when, x->time);
    fputs("<div class=\"llm\"><p>", out);
    esc(out, x->kind);
    fputs(" request <code>", out);
    esc(out, x->request);
    fputs("</code> to <code>", out);
    esc(out, x->model[0] ? x->model : "?");
    fprintf(out, "</code> at %s: %lld tokens in, %lld out, %d attempt%s.</p>", when,
            (long long)x->tokens_in, (long long)x->tokens_out, x->attempts,
            x->attempts == 1 ? "" : "s");
    fputs("<details><summary>prompt</summary><pre>", out);
    esc(out, x->prompt);
    fputs("</pre></details><details><summary>response</summary><pre>", out);
    esc(out, x->response);
    fputs("</pre></details></div>\n", out);
  }
}

static void profile(FILE *out, const struct kb_rep_cand *c) {
  fputs("<h4>Profile</h4>", out);
  const struct kb_rep_eval *best = NULL;
  for (int e = 0; e < c->n_evals; e++)
    if (c->evals[e].registers >= 0 || c->evals[e].spills >= 0 || c->evals[e].shared_bytes >= 0)
      best = &c->evals[e];
  if (best)
    fprintf(out,
            "<p>Compiler: %d registers per thread, %d bytes spilled, %d bytes of static "
            "shared memory.</p>",
            best->registers, best->spills, best->shared_bytes);
  int shown = 0;
  for (int e = 0; e < c->n_evals; e++)
    shown += cupti(out, &c->evals[e]);
  if (!shown)
    fputs("<p class=\"muted\">No CUPTI profile: it is recorded at the full tier of the CUDA "
          "backend (files of format kernelbrain.h5/1 hold none).</p>\n",
          out);
  for (int e = 0; e < c->n_evals; e++) {
    if (c->evals[e].compile_log == NULL || c->evals[e].compile_log[0] == '\0')
      continue;
    fputs("<details><summary>compile log (", out);
    esc(out, c->evals[e].tier_name);
    fprintf(out, ", attempt %d)</summary><pre>", c->evals[e].attempt);
    esc(out, c->evals[e].compile_log);
    fputs("</pre></details>\n", out);
  }
}

/* A candidate's page (a section the leaderboard links to). */
static void candidate(void *arg, const struct kb_rep_task *t, int ti, const struct kb_rep_cand *c) {
  const struct kb_report *r = ((const struct html_walk *)arg)->r;
  FILE *out = ((const struct html_walk *)arg)->out;
  char created[64];
  fmt_date(created, sizeof created, c->created);
  fputs("<article class=\"cand\" id=\"c-", out);
  esc(out, c->id);
  fputs("\"><h3>", out);
  esc(out, c->name);
  fprintf(out, " <span class=\"muted\">(task <a href=\"#task-%d\">", ti);
  esc(out, t->id);
  fprintf(out, "</a>, rank %d)</span></h3>\n<table>", c->rank);
  fputs("<tr><th>id</th><td><code>", out);
  esc(out, c->id);
  fputs("</code></td></tr><tr><th>generator</th><td>", out);
  esc(out, c->generator);
  fputs("</td></tr><tr><th>parents</th><td>", out);
  if (c->parent0[0])
    cand_link(out, r, t, c->parent0);
  if (c->parent1[0])
    cand_link(out, r, t, c->parent1);
  if (!c->parent0[0] && !c->parent1[0])
    fputs("none (a seed)", out);
  fputs("</td></tr><tr><th>children</th><td>", out);
  int self = kb__rep_find(t, c->id);
  int first = self >= 0 ? t->child_off[self] : 0, last = self >= 0 ? t->child_off[self + 1] : 0;
  for (int k = first; k < last; k++)
    cand_link(out, r, t, t->cands[t->child_idx[k]].id);
  if (first == last)
    fputs("none", out);
  fputs("</td></tr><tr><th>knobs</th><td><code>", out);
  esc(out, c->knobs);
  fputs("</code></td></tr><tr><th>flags</th><td><code>", out);
  esc(out, c->flags);
  fprintf(out, "</code></td></tr><tr><th>created</th><td>%s</td></tr><tr><th>status</th><td>",
          created);
  esc(out, c->status[0] ? c->status : "pending");
  fputs(" at ", out);
  esc(out, kb__rep_tier_name(r, c->best_tier));
  char med[32];
  fmt_time(med, sizeof med, c->median_us);
  fprintf(out, "</td></tr><tr><th>median</th><td>%s", med);
  if (isfinite(c->speedup))
    fprintf(out, " (%.2fx over the baseline)", c->speedup);
  fputs("</td></tr></table>\n", out);
  evaluations(out, c);
  profile(out, c);
  llm_exchanges(out, t, c);
  fputs("<h4>Source</h4><pre><code>", out);
  esc(out, c->source);
  fputs("</code></pre></article>\n", out);
}

/* The Chart.js text without its trailing sourceMappingURL comment (the map is not shipped). */
static size_t chartjs_len(void) {
  static const char marker[] = "//# sourceMappingURL=";
  size_t n = kb_chartjs_len;
  for (size_t i = n; i-- > 0;)
    if (kb_chartjs[i] == '\n' && i + 1 < n &&
        strncmp(kb_chartjs + i + 1, marker, sizeof marker - 1) == 0)
      return i + 1;
  return n;
}

int kb__report_write_html(const struct kb_report *r, FILE *out, struct kb_error *err) {
  json_t *data = chart_data(r);
  char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
  json_decref(data);
  if (text == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory building the chart data");
  char h_lib[128], h_page[128];
  size_t lib_len = chartjs_len();
  if (csp_hash(kb_chartjs, lib_len, h_lib, sizeof h_lib) ||
      csp_hash(page_js, sizeof page_js - 1, h_page, sizeof h_page)) {
    free(text);
    return kb_error_set(err, KB_EINTERNAL, "cannot hash the report's scripts");
  }
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        out);
  fprintf(out,
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "script-src %s %s; style-src 'unsafe-inline'; img-src data:\">\n",
          h_lib, h_page);
  fputs("<meta name=\"generator\" content=\"kb-submit report\">\n<title>kernelbrain report: ", out);
  esc(out, r->campaign);
  fprintf(out, "</title>\n<style>%s</style></head>\n<body>\n<header><h1>Campaign ", css);
  esc(out, r->campaign);
  fputs("</h1><nav><a href=\"#overview\">overview</a>", out);
  for (int i = 0; i < r->n_tasks; i++) {
    fprintf(out, "<a href=\"#task-%d\">", i);
    esc(out, r->tasks[i].id);
    fputs("</a>", out);
  }
  fputs("</nav></header>\n<main>\n", out);
  overview(out, r);
  struct html_walk hw = {r, out};
  kb__rep_walk(r, &(struct kb_rep_walker){.task_begin = board_begin, .cand = board_row,
                                         .task_end = board_end, .shown_only = 1, .arg = &hw});
  fputs("<section id=\"candidates\"><h2>Candidates</h2><p class=\"muted\">Pick a candidate in a "
        "leaderboard to see its source, lineage, evaluations and profile here.</p>\n",
        out);
  kb__rep_walk(r, &(struct kb_rep_walker){.cand = candidate, .shown_only = 1, .arg = &hw});
  fputs("</section>\n</main>\n<script type=\"application/json\" id=\"kb-data\">", out);
  script_json(out, text);
  free(text);
  fprintf(out, "</script>\n<!-- Chart.js %s, MIT licence, https://www.chartjs.org -->\n<script>",
          kb_chartjs_version);
  fwrite(kb_chartjs, 1, lib_len, out);
  fprintf(out, "</script>\n<script>%s</script>\n</body></html>\n", page_js);
  if (ferror(out))
    return kb_error_set(err, KB_EIO, "cannot write the report");
  return KB_OK;
}
