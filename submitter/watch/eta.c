/* The ETA of a campaign (see eta.h). */
#include "eta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"

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

/* ---- the per-call model: a candidate's cost at a tier it has not reached ----------------- */

/* An evaluation's settled cost is a fixed part (the set-up, the inputs, the checks: the task's,
 * nearly the same for each of its candidates) and the timed calls: warmup + samples calls of
 * the candidate, and at the ladder's last tier as many of the task's baseline, re-timed in the
 * same run interleaved with it (runner/worker.c, KB_EVAL_FULL). How many samples a kernel
 * takes follows from its time per call and the tier's rules (kb__eta_samples_cap), cut short
 * where the noise target stops sampling earlier (the share observed). The tiers' costs
 * relative to each other are not fixed: they follow each candidate's time per call and its
 * baseline's (a fast candidate of a slow baseline pays mostly for the baseline's calls at the
 * last tier). */

/* 1 when task y has timed results at tier k. */
static int has_timed(const struct kb_eta_task *y, int k) {
  return y->evaluated[k] > 0 && y->timed_ms[k] > 0;
}

/* Task y's fixed part per result at tier k (has_timed), ms; never below 0. */
static double fixed_of(const struct kb_eta_task *y, int k) {
  double f = y->settled_ms[k] - y->timed_ms[k];
  return f > 0 ? f / (double)y->evaluated[k] : 0;
}

/* Task x's fixed part of a result at tier k, ms: its own (settled - timed) per result where it
 * has timed results at k; else its own at the highest tier j below with timed results, times
 * the tasks' ratio of fixed parts between j and k (geometric mean over the tasks with timed
 * results at both; 1 when none has: the set-up and the checks carry over); else the geometric
 * mean of the other tasks' fixed parts at k; -1 when nothing is known. */
static double fixed_at(const struct kb_eta_in *in, const struct kb_eta_task *x, int k) {
  if (has_timed(x, k))
    return fixed_of(x, k);
  for (int j = k - 1; j >= 1; j--) {
    if (!has_timed(x, j))
      continue;
    double logs = 0;
    int n = 0;
    for (int t = 0; t < in->n_tasks; t++) {
      const struct kb_eta_task *y = &in->tasks[t];
      if (has_timed(y, j) && has_timed(y, k) && fixed_of(y, j) > 0 && fixed_of(y, k) > 0) {
        logs += log(fixed_of(y, k) / fixed_of(y, j));
        n++;
      }
    }
    return fixed_of(x, j) * (n > 0 ? exp(logs / n) : 1.0);
  }
  double logs = 0;
  int n = 0;
  for (int t = 0; t < in->n_tasks; t++)
    if (has_timed(&in->tasks[t], k) && fixed_of(&in->tasks[t], k) > 0) {
      logs += log(fixed_of(&in->tasks[t], k));
      n++;
    }
  return n > 0 ? exp(logs / n) : -1;
}

/* The share of its cap that sampling ran to at tier k: task x's own (samples / cap_samples)
 * where it has timed results there, else the campaign's there, else 1 (the cap). */
static double sample_share(const struct kb_eta_in *in, const struct kb_eta_task *x, int k) {
  if (x->cap_samples[k] > 0)
    return (double)x->samples[k] / x->cap_samples[k];
  double n = 0, cap = 0;
  for (int t = 0; t < in->n_tasks; t++) {
    n += (double)in->tasks[t].samples[k];
    cap += in->tasks[t].cap_samples[k];
  }
  return cap > 0 ? n / cap : 1.0;
}

/* The drift is kept within [1/DRIFT_MAX, DRIFT_MAX]: one result can be far outside what the
 * machine's load does to a kernel (eta_campaign21: the first full-tier result of a candidate
 * timed at screen took 6x its screen time per call, the drift was 6.04 from it alone, and
 * every open full-tier job was priced 3-4x: the ETA went from 23 s to 62 s with 20 s left). */
#define DRIFT_MAX 2.0

/* How a kernel's time per call moves from the tier below to tier k: over the campaign's timed
 * results at k whose candidate was timed at a lower tier before, their time per call over the
 * one before (sums: the slow kernels, which the cost is made of, weigh most), within
 * DRIFT_MAX; 1 before any. Same input sets, yet on a loaded machine the same kernel's time per
 * call moved 0.6-1.5x. */
static double call_drift(const struct kb_eta_in *in, int k) {
  double to = 0, from = 0;
  for (int t = 0; t < in->n_tasks; t++) {
    to += in->tasks[t].pair_us[k];
    from += in->tasks[t].pair_from_us[k];
  }
  double d = to > 0 && from > 0 ? to / from : 1.0;
  return d > DRIFT_MAX ? DRIFT_MAX : d < 1.0 / DRIFT_MAX ? 1.0 / DRIFT_MAX : d;
}

/* Task x's baseline's time per call at tier k: at k where known, else at the highest tier
 * below times call_drift(k); 0 when unknown. */
static double baseline_us(const struct kb_eta_in *in, const struct kb_eta_task *x, int k) {
  if (x->base_us[k] > 0)
    return x->base_us[k];
  for (int j = k - 1; j >= 1; j--)
    if (x->base_us[j] > 0)
      return x->base_us[j] * call_drift(in, k);
  return 0;
}

/* The time per call of a candidate of task t not timed yet, for tier k: the task's mean over
 * its timed calls at the highest tier below k that has some, other than the last (whose
 * timed calls include the baseline's); 0 when none. */
static double task_call_us(const struct kb_eta_in *in, int t, int k) {
  if (in->tasks == NULL || t < 0 || t >= in->n_tasks)
    return 0;
  const struct kb_eta_task *x = &in->tasks[t];
  for (int j = k - 1; j >= 1; j--) {
    double calls = (double)x->samples[j] + (double)in->warmup[j] * (double)x->evaluated[j];
    if (j < in->n_tiers - 1 && x->timed_ms[j] > 0 && calls > 0)
      return x->timed_ms[j] * 1000.0 / calls;
  }
  return 0;
}

/* The expected cost at tier k of a candidate of task t that took `us` per timed call at a
 * lower tier: fixed_at + (warmup + share x cap) calls of `us` x call_drift(k), plus as many of
 * the baseline's (baseline_us) at the last tier. 0 when the model cannot price it (no sample
 * rules, not timed, no fixed part or baseline time known). */
static double call_cost(const struct kb_eta_in *in, int t, int k, double us) {
  if (!(us > 0) || in->tasks == NULL || t < 0 || t >= in->n_tasks || k < 1 ||
      in->max_samples[k] <= 0)
    return 0;
  const struct kb_eta_task *x = &in->tasks[t];
  double fixed = fixed_at(in, x, k);
  us *= call_drift(in, k);
  double per = us;
  if (k == in->n_tiers - 1) { /* the baseline re-timed with it */
    double b = baseline_us(in, x, k);
    if (!(b > 0))
      return 0;
    per += b;
  }
  if (fixed < 0)
    return 0;
  double n = sample_share(in, x, k) *
             kb__eta_samples_cap(in->min_samples[k], in->max_samples[k], in->max_s[k], us);
  return fixed + ((double)in->warmup[k] + n) * per / 1000.0;
}

/* ---- several runners: the open items of each task played on the runners --------------- */

/* Per task and tier, the expected settled cost of a result and the promotion rate out of it
 * (n_tasks x KB_MAX_TIERS each, row-major); per tier the set-up ratio (setup_ratio) and the
 * cost of a task not seen there (typical_cost). */
struct model {
  int n_tasks, n_tiers;
  double *cost, *rate;
  double setup[KB_MAX_TIERS], typical[KB_MAX_TIERS];
};

/* Tasks' own ratios weigh like this many tasks against the prior in tier_ratio. */
#define PRIOR_TASKS 1.0

/* The ratio of a result's cost at tier k to one at tier j < k, for a task not yet seen at k:
 * the prior max_s[k] / max_s[j] where both tiers cap their timed time, else
 * cost_at(k) / cost_at(j), moved towards the tasks' own ratios where tasks have results at
 * both, in log space, each task weighing as much as the prior / PRIOR_TASKS (one fast task's
 * first result must not reprice every other task). 0 when the prior is unknown. */
static double tier_ratio(const struct kb_eta_in *in, int j, int k) {
  double cj = in->cost_ms[j], ck = in->cost_ms[k];
  double prior = in->max_s[j] > 0 && in->max_s[k] > 0
                     ? in->max_s[k] / in->max_s[j]
                 : cost_at(in, j) > 0 ? cost_at(in, k) / cost_at(in, j)
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

/* 1 when task t's first result at tier k and a later one are known (first_ms). */
static int has_later(const struct kb_eta_task *t, int k) {
  return t->first_ms[k] > 0 && t->evaluated[k] >= 2 && t->settled_ms[k] > t->first_ms[k];
}

/* What a task's first result at tier k costs over one of its later results there (the set-up
 * it pays once): the geometric mean over the tasks with both known (has_later) of the first
 * over the later ones' mean; 1 before any. On the recordings 4-29 the first result cost 2.4
 * times the second at the first evaluated tier (smoke), 1.25 times at screen, 1 at full. */
static double setup_ratio(const struct kb_eta_in *in, int k) {
  double logs = 0;
  int n = 0;
  for (int i = 0; i < in->n_tasks; i++) {
    const struct kb_eta_task *t = &in->tasks[i];
    if (has_later(t, k)) {
      logs += log(t->first_ms[k] * (double)(t->evaluated[k] - 1) /
                  (t->settled_ms[k] - t->first_ms[k]));
      n++;
    }
  }
  return n > 0 ? exp(logs / n) : 1.0;
}

/* Task t's cost of a result at tier k after its first (t has results there): the mean of its
 * later results; with only the first known, the first over `setup` (setup_ratio(k)); where
 * first_ms is unknown, the mean of all. */
static double later_cost(const struct kb_eta_task *t, int k, double setup) {
  if (has_later(t, k))
    return (t->settled_ms[k] - t->first_ms[k]) / (double)(t->evaluated[k] - 1);
  if (t->first_ms[k] > 0 && t->evaluated[k] == 1)
    return t->first_ms[k] / setup;
  return t->settled_ms[k] / (double)t->evaluated[k];
}

/* The cost at tier k of a result after the first of a task with no result there yet: the
 * geometric mean over the tasks with results there of their later_cost (the mean over results
 * leans towards the slowest task), else cost_at(k). Its first result costs `setup` times this
 * (job_cost). */
static double typical_cost(const struct kb_eta_in *in, int k, double setup) {
  double logs = 0;
  int n = 0;
  for (int t = 0; t < in->n_tasks; t++)
    if (in->tasks[t].evaluated[k] > 0 && in->tasks[t].settled_ms[k] > 0) {
      logs += log(later_cost(&in->tasks[t], k, setup));
      n++;
    }
  return n > 0 ? exp(logs / n) : cost_at(in, k);
}

/* A task's cost at tier k (of a result after its first there): its own later_cost where it has
 * results there; else its mean at the highest tier j below with results times
 * tier_ratio(j, k) (a task slow at one tier is slow at the next); else m->typical[k]. */
static double task_cost(const struct kb_eta_in *in, const struct model *m,
                        const struct kb_eta_task *t, int k) {
  if (t->evaluated[k] > 0)
    return later_cost(t, k, m->setup[k]);
  for (int j = k - 1; j >= 0; j--)
    if (t->evaluated[j] > 0 && t->settled_ms[j] > 0) {
      double r = tier_ratio(in, j, k);
      if (r > 0)
        return t->settled_ms[j] / (double)t->evaluated[j] * r;
    }
  return m->typical[k];
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
  for (int k = 0; k < n; k++) {
    m->setup[k] = setup_ratio(in, k);
    m->typical[k] = typical_cost(in, k, m->setup[k]);
  }
  for (int t = 0; t < in->n_tasks; t++)
    for (int k = 0; k < n; k++) {
      m->cost[t * KB_MAX_TIERS + k] = task_cost(in, m, &in->tasks[t], k);
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

/* The simulation: jobs (one per open item, and one per promotion it is expected to bring),
 * each a candidate at a tier with its cost; per tier a FIFO of the waiting ones; per task and
 * tier the promotions owed (credit: each result at k adds the task's rate out of k; the
 * candidate climbs to k + 1 each time the credit reaches one half, and one is taken off); per
 * runner the job it runs and when that ends. */
struct job {
  int task, tier;
  double cost_ms; /* its expected settled cost */
  double us;      /* its candidate's time per timed call where known (its basis); 0 = not */
  int runner;     /* a leased item's runner id (kb_eta_item.runner), -1 unknown */
  int next;       /* the next waiting job of its tier; -1 = none */
};

struct sim {
  const struct kb_eta_in *in;
  const struct model *m;
  struct job *jobs;        /* KB_ETA_SIM_ITEMS */
  int n_jobs;
  int head[KB_MAX_TIERS], tail[KB_MAX_TIERS];
  double *credit;          /* n_tasks x KB_MAX_TIERS */
  int n_runners;
  double *end_s;           /* per runner: when its job ends, seconds from now */
  int *run;                /* per runner: the job it runs, -1 = idle */
  char *set_up;            /* n_tasks x KB_MAX_TIERS: 1 once the task has (or is played to
                            * have) a result there, its set-up paid */
};

/* A job's runner seconds: its cost (a result's settled cost is the time the runner's device
 * spent on it) plus the tier's measured overhead per result (the claim, the wait for its
 * build, start-up; 0 until measured). */
static double sim_duration(const struct sim *s, const struct job *j) {
  double d = (j->cost_ms + (s->in->over_n[j->tier] > 0 ? s->in->over_ms[j->tier] : 0)) / 1000.0;
  return d > 0 ? d : 0;
}

/* The expected cost of task t's candidate at tier k, whose result at `basis_tier` cost
 * `basis_ms` (basis_tier < 0 or basis_ms <= 0: none) and took `basis_us` per timed call (0 =
 * not timed): its own cost where it has a result at k; else where the per-call model prices
 * it (call_cost, with its own time per call, or before it has one the task's, task_call_us),
 * that; else the candidate's own cost carried up by tier_ratio (one candidate of a task can be
 * many times slower than another: the baseline and a tuned seed), else the task's cost at k
 * (task_cost), times the tier's set-up ratio for the first such job of a task with no result
 * at k (which is then marked in s->set_up). */
static double job_cost(struct sim *s, int t, int k, double basis_ms, int basis_tier,
                       double basis_us) {
  if (basis_tier >= k && basis_ms > 0)
    return basis_ms;
  double c = call_cost(s->in, t, k, basis_us > 0 ? basis_us : task_call_us(s->in, t, k));
  if (c > 0)
    return c;
  if (basis_tier < 0 || basis_ms <= 0) {
    double setup = s->set_up[t * KB_MAX_TIERS + k] ? 1.0 : s->m->setup[k];
    s->set_up[t * KB_MAX_TIERS + k] = 1;
    return s->m->cost[t * KB_MAX_TIERS + k] * setup;
  }
  double r = tier_ratio(s->in, basis_tier, k);
  return r > 0 ? basis_ms * r : s->m->cost[t * KB_MAX_TIERS + k];
}

/* Appends a waiting job; -1 past KB_ETA_SIM_ITEMS. */
static int sim_push(struct sim *s, int t, int k, double cost_ms, double us) {
  if (s->n_jobs == KB_ETA_SIM_ITEMS)
    return -1;
  int i = s->n_jobs++;
  s->jobs[i] =
      (struct job){.task = t, .tier = k, .cost_ms = cost_ms, .us = us, .runner = -1, .next = -1};
  if (s->tail[k] >= 0)
    s->jobs[s->tail[k]].next = i;
  else
    s->head[k] = i;
  s->tail[k] = i;
  return i;
}

/* The next waiting job, the highest tier first (claims take the highest tier's queue first);
 * -1 when none waits. */
static int sim_pop(struct sim *s) {
  for (int k = s->m->n_tiers - 1; k >= 0; k--)
    if (s->head[k] >= 0) {
      int i = s->head[k];
      s->head[k] = s->jobs[i].next;
      if (s->head[k] < 0)
        s->tail[k] = -1;
      return i;
    }
  return -1;
}

/* A busy runner: the seconds since its latest result and its id (kb_eta_in.busy_runner). */
struct busy_runner {
  double s;
  int id;
};

/* Busy longest first. */
static int cmp_busy(const void *a, const void *b) {
  double x = ((const struct busy_runner *)a)->s, y = ((const struct busy_runner *)b)->s;
  return x > y ? -1 : x < y;
}

/* Removes waiting job `i` (a leased one a busy runner takes) from its tier's FIFO. */
static void sim_unlink(struct sim *s, int i) {
  int k = s->jobs[i].tier, prev = -1;
  for (int j = s->head[k]; j >= 0 && j != i; j = s->jobs[j].next)
    prev = j;
  if (prev < 0)
    s->head[k] = s->jobs[i].next;
  else
    s->jobs[prev].next = s->jobs[i].next;
  if (s->tail[k] == i)
    s->tail[k] = prev;
}

/* The open items as jobs (the leased ones first in their tier, as they were claimed first);
 * the busy runners' jobs under way: to the runners busy longest first, each the dearest of
 * the leased items it holds itself (a runner claims ahead: of two leases one waits; the
 * dearest of any where the runner is not known), each with what is left of it after busy_s
 * (an overdue job runs on for KB_ETA_OVERDUE of what it ran). -1 past KB_ETA_SIM_ITEMS. */
static int sim_start(struct sim *s) {
  const struct kb_eta_in *in = s->in;
  int first_ready = 0;
  for (int pass = 1; pass >= 0; pass--) {
    if (pass == 0)
      first_ready = s->n_jobs;
    for (int i = 0; i < in->n_items; i++) {
      const struct kb_eta_item *it = &in->items[i];
      if (it->leased != pass || it->task < 0 || it->task >= in->n_tasks || it->tier < 0 ||
          it->tier >= s->m->n_tiers)
        continue;
      int j = sim_push(s, it->task, it->tier,
                       job_cost(s, it->task, it->tier, it->basis_ms, it->basis_tier, it->basis_us),
                       it->basis_us);
      if (j < 0)
        return -1;
      s->jobs[j].runner = it->leased ? it->runner : -1;
    }
  }
  struct busy_runner busy[KB_ETA_MAX_BUSY];
  int nb = in->n_busy < s->n_runners ? in->n_busy : s->n_runners;
  for (int r = 0; r < nb; r++)
    busy[r] = (struct busy_runner){.s = in->busy_s[r], .id = in->busy_runner[r]};
  qsort(busy, (size_t)nb, sizeof busy[0], cmp_busy);
  char *taken = kb_calloc((size_t)first_ready + 1, 1);
  if (taken == NULL)
    return -1;
  for (int r = 0; r < nb; r++) { /* the dearest leased job left, of its own where known */
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++)
      for (int i = 0; i < first_ready; i++)
        if (!taken[i] && (pass == 1 || (busy[r].id >= 0 && s->jobs[i].runner == busy[r].id)) &&
            (best < 0 || s->jobs[i].cost_ms > s->jobs[best].cost_ms))
          best = i;
    if (best < 0)
      break;
    taken[best] = 1;
    sim_unlink(s, best);
    s->run[r] = best;
    double left = sim_duration(s, &s->jobs[best]) - busy[r].s;
    if (left < KB_ETA_OVERDUE * busy[r].s) /* longer than expected: it will run on a while */
      left = KB_ETA_OVERDUE * busy[r].s;
    s->end_s[r] = left > 0 ? left : 0;
  }
  kb_free(taken);
  return 0;
}

/* Plays until no job runs or waits; returns when the last ends (seconds from now), or -1
 * past KB_ETA_SIM_ITEMS jobs. */
static double sim_run(struct sim *s) {
  const struct model *m = s->m;
  double now = 0;
  for (;;) {
    for (int r = 0; r < s->n_runners; r++) /* free runners take what waits */
      if (s->run[r] < 0) {
        int i = sim_pop(s);
        if (i < 0)
          break;
        s->run[r] = i;
        s->end_s[r] = now + sim_duration(s, &s->jobs[i]);
      }
    int next = -1;
    for (int r = 0; r < s->n_runners; r++)
      if (s->run[r] >= 0 && (next < 0 || s->end_s[r] < s->end_s[next]))
        next = r;
    if (next < 0)
      return now;
    now = s->end_s[next];
    struct job done = s->jobs[s->run[next]];
    s->run[next] = -1;
    int c = done.task * KB_MAX_TIERS + done.tier;
    if (done.tier + 1 < m->n_tiers) {
      s->credit[c + 1] += m->rate[c];
      if (s->credit[c + 1] >= 0.5) { /* this candidate climbs */
        s->credit[c + 1] -= 1;
        if (sim_push(s, done.task, done.tier + 1,
                     job_cost(s, done.task, done.tier + 1, done.cost_ms, done.tier, done.us),
                     done.us) < 0)
          return -1;
      }
    }
  }
}

/* The open items when only the per-task counts are known: one per item, without a basis.
 * Returns a new array (NULL on ENOMEM) and its length in `*n`. */
static struct kb_eta_item *items_of_counts(const struct kb_eta_in *in, int n_tiers, int *n) {
  long total = 0;
  for (int t = 0; t < in->n_tasks; t++)
    for (int k = 0; k < n_tiers; k++)
      total += (long)(in->tasks[t].ready[k] + in->tasks[t].leased[k]);
  *n = 0;
  if (total > KB_ETA_SIM_ITEMS)
    return NULL;
  struct kb_eta_item *items = kb_calloc((size_t)total + 1, sizeof *items);
  for (int t = 0; items && t < in->n_tasks; t++)
    for (int k = 0; k < n_tiers; k++)
      for (int64_t i = 0; i < in->tasks[t].ready[k] + in->tasks[t].leased[k]; i++)
        items[(*n)++] = (struct kb_eta_item){.task = t, .tier = k,
                                             .leased = i < in->tasks[t].leased[k],
                                             .basis_tier = -1, .runner = -1};
  return items;
}

/* The estimate with several runners (kb__eta_estimate): `out->eta_s` and work_ms from the
 * simulation; 0 when it cannot run (no memory, too many items: then the caller's estimate
 * stands). */
static int estimate_runners(const struct kb_eta_in *in, int n, struct kb_eta *out) {
  struct model m = {0};
  struct kb_eta_in with = *in;
  struct kb_eta_item *own = NULL;
  if (with.items == NULL) {
    own = items_of_counts(in, n, &with.n_items);
    with.items = own;
  }
  struct sim s = {.in = &with, .m = &m};
  s.n_runners = in->runners > in->n_busy ? in->runners : in->n_busy;
  for (int k = 0; k < KB_MAX_TIERS; k++)
    s.head[k] = s.tail[k] = -1;
  int ok = 0;
  if (with.items && model_init(&m, in, n) == 0) {
    s.jobs = kb_calloc(KB_ETA_SIM_ITEMS, sizeof *s.jobs);
    s.credit = kb_calloc((size_t)in->n_tasks * KB_MAX_TIERS + 1, sizeof *s.credit);
    s.end_s = kb_calloc((size_t)s.n_runners, sizeof *s.end_s);
    s.run = kb_calloc((size_t)s.n_runners, sizeof *s.run);
    s.set_up = kb_calloc((size_t)in->n_tasks * KB_MAX_TIERS + 1, 1);
  }
  if (s.jobs && s.credit && s.end_s && s.run && s.set_up) {
    for (int r = 0; r < s.n_runners; r++)
      s.run[r] = -1;
    for (int t = 0; t < in->n_tasks; t++)
      for (int k = 0; k < n; k++)
        s.set_up[t * KB_MAX_TIERS + k] = in->tasks[t].evaluated[k] > 0;
    double end = sim_start(&s) == 0 ? sim_run(&s) : -1;
    if (end >= 0) {
      out->eta_s = end;
      out->work_ms = model_work(&m, in);
      out->simulated = ok = 1;
    }
  }
  kb_free(s.jobs);
  kb_free(s.credit);
  kb_free(s.end_s);
  kb_free(s.run);
  kb_free(s.set_up);
  kb_free(own);
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
  /* With per-task counts and runners, once something settled: the items played on the
   * runners. */
  out->simulated = 0;
  if (in->tasks && in->n_tasks > 0 && in->runners + in->n_busy > 0 &&
      (in->gpu_rate > 0 || in->runner_rate > 0))
    estimate_runners(in, n, out);
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

double kb__eta_smooth(double prev_end_s, double pred_end_s, double now_s, double dt_s) {
  if (prev_end_s < 0 || dt_s <= 0)
    return pred_end_s;
  double tau = KB_ETA_SMOOTH_S, left = pred_end_s - now_s;
  if (KB_ETA_SMOOTH_REL * left < tau) /* a short time left: a shorter lag */
    tau = KB_ETA_SMOOTH_REL * left;
  if (!(tau > 0))
    return pred_end_s;
  double a = 1.0 - exp(-dt_s / tau);
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

double kb__eta_samples_cap(int min_samples, int max_samples, double max_seconds, double us) {
  if (max_samples <= 0 || !(us > 0))
    return 0;
  double n = max_seconds > 0 ? ceil(max_seconds * 1e6 / us) : (double)max_samples;
  if (n < min_samples)
    n = min_samples;
  return n < max_samples ? n : (double)max_samples;
}
