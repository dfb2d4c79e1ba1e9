/* The ETA of a campaign (see eta.h). */
#include "eta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#ifdef ETA_DEBUG
#include <stdio.h>
#endif

/* Observed promotion rate out of tier k: items that reached k + 1 (evaluated, waiting or under
 * way) per result at k; the prior when nothing was evaluated at k yet. Never above 1 (one
 * result promotes at most one item). */
static double rate_out(const struct kb_eta_in *in, int k) {
  if (k + 1 >= in->n_tiers)
    return 0;
  if (in->evaluated[k] <= 0)
    return k == 0 ? 1.0 : KB_ETA_PRIOR_RATE;
  double next = (double)(in->evaluated[k + 1] + in->ready[k + 1] + in->leased[k + 1]);
  double r = next / (double)in->evaluated[k];
  return r > 1 ? 1 : r;
}

/* The expected settled cost of a result at tier k: its observed mean; before a result there,
 * from the mean of the highest tier j below it with one: when both tiers cap their timed time
 * (max_s), j's mean times max_s[k] / max_s[j] (the timed calls, which run to that cap for any
 * kernel slower than max_seconds / max_samples, are most of an evaluation); else j's mean plus
 * the planning difference between the two (the fixed part, the compile, start-up and input
 * generation, carries over; the timed part grows as planned); never below the planning
 * estimate; with none below either, the planning estimate. */
static double cost_at(const struct kb_eta_in *in, int k) {
  if (in->cost_ms[k] > 0)
    return in->cost_ms[k];
  for (int j = k - 1; j >= 0; j--)
    if (in->cost_ms[j] > 0 && in->plan_ms[j] > 0) {
      double c = in->max_s[j] > 0 && in->max_s[k] > 0
                     ? in->cost_ms[j] * in->max_s[k] / in->max_s[j]
                     : in->cost_ms[j] + in->plan_ms[k] - in->plan_ms[j];
      return c > in->plan_ms[k] ? c : in->plan_ms[k];
    }
  return in->plan_ms[k];
}

/* ---- several runners: the open items of each task played on the runners --------------- */

/* Per task and tier, the expected settled cost of a result and the promotion rate out of it
 * (n_tasks x KB_MAX_TIERS each, row-major). */
struct model {
  int n_tasks, n_tiers;
  double *cost, *rate;
};

/* Tasks' own ratios weigh like this many tasks against the prior in tier_ratio. */
#define PRIOR_TASKS 2.0

/* The ratio of a result's cost at tier k to one at tier j < k, for a task not yet seen at k:
 * the prior cost_at(k) / cost_at(j) (with max_seconds on both tiers, their ratio), moved
 * towards the tasks' own ratios where tasks have results at both, in log space, each task
 * weighing as much as the prior / PRIOR_TASKS (one fast task's first result must not reprice
 * every other task). 0 when the prior is unknown. */
static double tier_ratio(const struct kb_eta_in *in, int j, int k) {
  double cj = in->cost_ms[j], ck = in->cost_ms[k];
  double prior = in->max_s[j] > 0 && in->max_s[k] > 0 ? in->max_s[k] / in->max_s[j]
                 : cost_at(in, j) > 0                 ? cost_at(in, k) / cost_at(in, j)
                                                      : 0;
  if (!(prior > 0) || cj <= 0 || ck <= 0)
    return prior;
  double logs = PRIOR_TASKS * log(prior), n = PRIOR_TASKS;
  for (int t = 0; t < in->n_tasks; t++) {
    const struct kb_eta_task *x = &in->tasks[t];
    if (x->evaluated[j] > 0 && x->evaluated[k] > 0 && x->settled_ms[j] > 0 &&
        x->settled_ms[k] > 0) {
      logs += log(x->settled_ms[k] / (double)x->evaluated[k] /
                  (x->settled_ms[j] / (double)x->evaluated[j]));
      n += 1;
    }
  }
  return exp(logs / n);
}

/* A task's cost at tier k: its own mean where it has results there; else its mean at the
 * highest tier j below with results times tier_ratio(j, k) (a task slow at one tier is slow
 * at the next); else the campaign's cost_at(k). */
static double task_cost(const struct kb_eta_in *in, const struct kb_eta_task *t, int k) {
  if (t->evaluated[k] > 0)
    return t->settled_ms[k] / (double)t->evaluated[k];
  for (int j = k - 1; j >= 0; j--)
    if (t->evaluated[j] > 0 && t->settled_ms[j] > 0) {
      double r = tier_ratio(in, j, k);
      if (r > 0)
        return t->settled_ms[j] / (double)t->evaluated[j] * r;
    }
  return cost_at(in, k);
}

/* A task's promotion rate out of tier k: items that reached k + 1 per result at k, with one
 * pseudo-result at the campaign's rate (rate_out) so that a task's first results do not swing
 * it from 0 to 1; never above 1. */
static double task_rate(const struct kb_eta_in *in, const struct kb_eta_task *t, int k) {
  if (k + 1 >= in->n_tiers)
    return 0;
  double next = (double)(t->evaluated[k + 1] + t->ready[k + 1] + t->leased[k + 1]);
  double r = (next + rate_out(in, k)) / ((double)t->evaluated[k] + 1);
  return r > 1 ? 1 : r;
}

static int model_init(struct model *m, const struct kb_eta_in *in, int n) {
  m->n_tasks = in->n_tasks;
  m->n_tiers = n;
  size_t cells = (size_t)in->n_tasks * KB_MAX_TIERS + 1;
  m->cost = kb_calloc(cells, sizeof *m->cost);
  m->rate = kb_calloc(cells, sizeof *m->rate);
  if (m->cost == NULL || m->rate == NULL)
    return -1;
  for (int t = 0; t < in->n_tasks; t++)
    for (int k = 0; k < n; k++) {
      m->cost[t * KB_MAX_TIERS + k] = task_cost(in, &in->tasks[t], k);
      m->rate[t * KB_MAX_TIERS + k] = task_rate(in, &in->tasks[t], k);
    }
  return 0;
}

static void model_release(struct model *m) {
  kb_free(m->cost);
  kb_free(m->rate);
}

/* The expected GPU ms of every task's open items and their promotions (as the per-tier
 * estimate, with each task's own costs and rates). */
static double model_work(const struct model *m, const struct kb_eta_in *in) {
  double work = 0;
  for (int t = 0; t < m->n_tasks; t++)
    for (int k = 0; k < m->n_tiers; k++) {
      double items = (double)(in->tasks[t].ready[k] + in->tasks[t].leased[k]);
      for (int j = k; j < m->n_tiers && items > 0; j++) {
        work += items * m->cost[t * KB_MAX_TIERS + j];
        items *= m->rate[t * KB_MAX_TIERS + j];
      }
    }
  return work;
}

/* The simulation's state: per task and tier the items waiting (queued) and the promotions owed
 * (credit: each result at k adds the task's rate; an item at k + 1 is queued each time it
 * reaches one half, and one is taken off); per runner what it runs and when that ends. */
struct sim {
  const struct model *m;
  double *queued, *credit; /* n_tasks x KB_MAX_TIERS */
  int n_runners;
  double *end_s;           /* per runner: when its item ends, seconds from now */
  int *job;                /* per runner: task * KB_MAX_TIERS + tier, -1 = idle */
  double rho;              /* GPU ms per second of one runner */
  const struct kb_eta_in *in;
  long played;             /* items played so far */
};

/* Seconds a runner spends on cell c (task * KB_MAX_TIERS + tier): its cost plus the tier's
 * measured overhead per result, or, where none was measured, its cost over the per-runner
 * rate. */
static double sim_duration(const struct sim *s, int c) {
  int k = c % KB_MAX_TIERS;
  double d = s->in->over_n[k] > 0 ? (s->m->cost[c] + s->in->over_ms[k]) / 1000.0
                                  : s->m->cost[c] / s->rho;
  return d > 0 ? d : 0;
}

static int cmp_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x > y ? -1 : x < y;
}

/* The busy runners' items under way: the most expensive leased items (their cost at the tier)
 * to the runners busy longest, each with what is left of it after busy_s (never below 0: an
 * overdue item ends any moment); the other leased items wait. */
static void sim_start(struct sim *s, const struct kb_eta_in *in) {
  const struct model *m = s->m;
  for (int t = 0; t < m->n_tasks; t++)
    for (int k = 0; k < m->n_tiers; k++)
      s->queued[t * KB_MAX_TIERS + k] = (double)(in->tasks[t].ready[k] + in->tasks[t].leased[k]);
  double busy[KB_ETA_MAX_BUSY];
  int nb = in->n_busy < s->n_runners ? in->n_busy : s->n_runners;
  memcpy(busy, in->busy_s, (size_t)nb * sizeof busy[0]);
  qsort(busy, (size_t)nb, sizeof busy[0], cmp_desc);
  for (int r = 0; r < s->n_runners; r++)
    s->job[r] = -1, s->end_s[r] = 0;
  for (int r = 0; r < nb; r++) { /* the dearest leased item left */
    int best = -1;
    for (int c = 0; c < m->n_tasks * KB_MAX_TIERS; c++) {
      int t = c / KB_MAX_TIERS, k = c % KB_MAX_TIERS;
      if (k >= m->n_tiers || s->queued[c] < 1 ||
          (double)in->tasks[t].leased[k] < s->queued[c] - (double)in->tasks[t].ready[k])
        continue;
      if (best < 0 || m->cost[c] > m->cost[best])
        best = c;
    }
    if (best < 0)
      break;
    s->queued[best] -= 1;
    s->job[r] = best;
    double left = sim_duration(s, best) - busy[r];
    s->end_s[r] = left > 0 ? left : 0;
  }
}

/* The next item for a free runner: the highest tier first (claims take the highest tier's
 * queue first), then the task with the most waiting there. -1 when none waits. */
static int sim_pick(const struct sim *s) {
  const struct model *m = s->m;
  for (int k = m->n_tiers - 1; k >= 0; k--) {
    int best = -1;
    for (int t = 0; t < m->n_tasks; t++) {
      int c = t * KB_MAX_TIERS + k;
      if (s->queued[c] >= 1 && (best < 0 || s->queued[c] > s->queued[best]))
        best = c;
    }
    if (best >= 0)
      return best;
  }
  return -1;
}

/* Plays until no item runs or waits; returns when the last ends (seconds from now), or -1
 * past KB_ETA_SIM_ITEMS items. */
static double sim_run(struct sim *s) {
  const struct model *m = s->m;
  double now = 0;
  for (;;) {
    for (int r = 0; r < s->n_runners; r++) /* free runners take what waits */
      if (s->job[r] < 0) {
        int c = sim_pick(s);
        if (c < 0)
          break;
        if (++s->played > KB_ETA_SIM_ITEMS)
          return -1;
        s->queued[c] -= 1;
        s->job[r] = c;
        s->end_s[r] = now + sim_duration(s, c);
      }
    int next = -1;
    for (int r = 0; r < s->n_runners; r++)
      if (s->job[r] >= 0 && (next < 0 || s->end_s[r] < s->end_s[next]))
        next = r;
    if (next < 0)
      return now;
    now = s->end_s[next];
    int c = s->job[next], k = c % KB_MAX_TIERS;
    s->job[next] = -1;
    if (k + 1 < m->n_tiers) {
      s->credit[c + 1] += m->rate[c];
      if (s->credit[c + 1] >= 0.5) {
        s->credit[c + 1] -= 1;
        s->queued[c + 1] += 1;
      }
    }
  }
}

/* The estimate with several runners (kb__eta_estimate): `out->eta_s` and work_ms from the
 * simulation; 0 when it cannot run (no memory, too many items: then the caller's estimate
 * stands). */
static int estimate_runners(const struct kb_eta_in *in, int n, double rho, struct kb_eta *out) {
  struct model m = {0};
  struct sim s = {.m = &m, .rho = rho, .in = in};
  s.n_runners = in->runners > in->n_busy ? in->runners : in->n_busy;
  int ok = 0;
  if (model_init(&m, in, n) == 0) {
    size_t cells = (size_t)in->n_tasks * KB_MAX_TIERS + 1;
    s.queued = kb_calloc(cells, sizeof *s.queued);
    s.credit = kb_calloc(cells, sizeof *s.credit);
    s.end_s = kb_calloc((size_t)s.n_runners, sizeof *s.end_s);
    s.job = kb_calloc((size_t)s.n_runners, sizeof *s.job);
  }
  if (s.queued && s.credit && s.end_s && s.job) {
    sim_start(&s, in);
#ifdef ETA_DEBUG
    fprintf(stderr, "rho %.3f runners %d busy %d\n", rho, s.n_runners, in->n_busy);
    for (int t = 0; t < m.n_tasks; t++) {
      fprintf(stderr, " task %d:", t);
      for (int k = 0; k < n; k++)
        fprintf(stderr, " [q%.0f c%.0f r%.2f]", s.queued[t * KB_MAX_TIERS + k],
                m.cost[t * KB_MAX_TIERS + k], m.rate[t * KB_MAX_TIERS + k]);
      fprintf(stderr, "\n");
    }
    for (int r = 0; r < s.n_runners; r++)
      fprintf(stderr, " runner %d job %d ends %.1f\n", r, s.job[r], s.end_s[r]);
#endif
    double end = sim_run(&s);
    if (end >= 0) {
      out->eta_s = end;
      out->work_ms = model_work(&m, in);
      out->simulated = ok = 1;
    }
  }
  kb_free(s.queued);
  kb_free(s.credit);
  kb_free(s.end_s);
  kb_free(s.job);
  model_release(&m);
  return ok;
}

void kb__eta_estimate(const struct kb_eta_in *in, struct kb_eta *out) {
  double rate[KB_MAX_TIERS];
  int n = in->n_tiers > KB_MAX_TIERS ? KB_MAX_TIERS : in->n_tiers;
  for (int k = 0; k < n; k++)
    rate[k] = rate_out(in, k);
  /* Each open item at tier k is expected to cost its tier's mean, then to climb with the
   * observed rates: prod rate[k..j-1] items at each tier j above. */
  double work = 0, leased_work = 0;
  for (int k = 0; k < n; k++) {
    leased_work += (double)in->leased[k] * cost_at(in, k);
    double items = (double)(in->ready[k] + in->leased[k]);
    for (int j = k; j < n && items > 0; j++) {
      work += items * cost_at(in, j);
      items *= rate[j];
    }
  }
  out->work_ms = work;
  double spend = in->spend_rate > 0 ? in->spend_rate : in->gpu_rate;
  out->exhaust_s = spend > 0 ? in->gpu_left_ms / spend : -1;
  out->bound = 0;
  /* The leased items have run since the last settlement: that much of the work is done, up to
   * their own expected cost (past it, they are overdue: any moment now). */
  out->eta_s = -1;
  if (in->gpu_rate > 0) {
    double done = in->since_settled_s > 0 ? in->since_settled_s : 0;
    if (done > leased_work / in->gpu_rate)
      done = leased_work / in->gpu_rate;
    out->eta_s = work / in->gpu_rate - done;
    if (out->eta_s < 0)
      out->eta_s = 0;
  }
  if (work <= 0 && !in->generating)
    out->eta_s = 0;
  /* With per-task counts and runners: the items played on the runners at the per-runner rate
   * (or the work rate shared by the busy runners). */
  out->simulated = 0;
  double rho = in->runner_rate > 0            ? in->runner_rate
               : in->gpu_rate > 0 && in->n_busy > 0 ? in->gpu_rate / in->n_busy
                                                     : 0;
  if (in->tasks && in->n_tasks > 0 && in->runners + in->n_busy > 0 && rho > 0)
    estimate_runners(in, n, rho, out);
  /* Generators keep proposing until the budget (or a stop rule, which cannot be foreseen). */
  if (in->generating && out->exhaust_s >= 0 && (out->eta_s < 0 || out->exhaust_s > out->eta_s))
    out->eta_s = out->exhaust_s, out->bound = 1;
  if (out->exhaust_s >= 0 && out->eta_s > out->exhaust_s)
    out->eta_s = out->exhaust_s, out->bound = 1;
  if (in->deadline_s >= 0 && (out->eta_s < 0 || out->eta_s > in->deadline_s))
    out->eta_s = in->deadline_s, out->bound = 2;
}

double kb__eta_rate(const int64_t *t_ms, const int64_t *spent, int n, int64_t created_ms) {
  if (n <= 0)
    return 0;
  int64_t now = t_ms[n - 1];
  int i = 0;
  while (i < n - 1 && t_ms[i] < now - KB_ETA_RATE_WINDOW_MS)
    i++;
  int64_t t0 = t_ms[i], s0 = spent[i];
  if (now - t0 < KB_ETA_RATE_MIN_SPAN_MS) {
    if (created_ms <= 0 || now <= created_ms)
      return 0;
    t0 = created_ms;
    s0 = 0;
  }
  return now > t0 ? (double)(spent[n - 1] - s0) * 1000.0 / (double)(now - t0) : 0;
}

double kb__eta_work_rate(const int64_t *t_ms, const int64_t *spent, int n, int64_t created_ms,
                         double *since_s) {
  *since_s = 0;
  if (n <= 0)
    return 0;
  int j = n - 1;
  while (j > 0 && spent[j - 1] == spent[n - 1])
    j--;
  *since_s = (double)(t_ms[n - 1] - t_ms[j]) / 1000.0;
  return kb__eta_rate(t_ms, spent, j + 1, created_ms);
}

double kb__eta_smooth(double prev_end_s, double pred_end_s, double dt_s) {
  if (prev_end_s < 0 || dt_s <= 0)
    return pred_end_s;
  double a = 1.0 - exp(-dt_s / KB_ETA_SMOOTH_S);
  return prev_end_s + a * (pred_end_s - prev_end_s);
}

double kb__eta_runner_rate(const int64_t *t_ms, const int64_t *spent, const int *busy, int n) {
  if (n <= 1)
    return 0;
  int j = n - 1; /* up to the last settlement */
  while (j > 0 && spent[j - 1] == spent[n - 1])
    j--;
  int i = 0;
  while (i < j && t_ms[i] < t_ms[j] - KB_ETA_RATE_WINDOW_MS)
    i++;
  if (t_ms[j] - t_ms[i] < KB_ETA_RATE_MIN_SPAN_MS)
    i = 0;
  double runner_s = 0;
  for (int a = i + 1; a <= j; a++)
    runner_s += 0.5 * (double)(busy[a - 1] + busy[a]) * (double)(t_ms[a] - t_ms[a - 1]) / 1000.0;
  return runner_s > 0 ? (double)(spent[j] - spent[i]) / runner_s : 0;
}
