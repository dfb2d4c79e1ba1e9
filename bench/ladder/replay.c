/* Replays (see replay.h). */
#include "replay.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/result.h"
#include "population.h"

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Uniform in (0, 1) from a hash. */
static double unit(uint64_t h) {
  return ((double)(h >> 11) + 0.5) / 9007199254740992.0;
}

/* Standard normal draw fixed by (seed, candidate, tier): both methods see the same one. */
static double normal(uint64_t seed, int cand, int tier) {
  uint64_t h = mix64(seed ^ mix64((uint64_t)cand * 64 + (uint64_t)tier + 1));
  double u1 = unit(h), u2 = unit(mix64(h));
  return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

/* Candidate order: the baseline first (it is a seed), the rest shuffled by the seed. */
static void order(const struct kb_bench_pool *p, const int *idx, int n, uint64_t seed, int *out) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (p->c[idx[i]].baseline)
      out[k++] = i;
  int first = k;
  for (int i = 0; i < n; i++)
    if (!p->c[idx[i]].baseline)
      out[k++] = i;
  uint64_t s = mix64(seed + 0x1234);
  for (int i = n - 1; i > first; i--) {
    s = mix64(s);
    int j = first + (int)(s % (uint64_t)(i - first + 1));
    int t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
}

/* Books the cost of result `r` in `out`. */
static void account(struct kb_bench_run *out, const struct kb_result *r, double *gpu_ms) {
  *gpu_ms += (double)r->cost_ms;
  out->evaluations++;
  out->tier_gpu_s[r->tier] += (double)r->cost_ms / 1000.0;
  out->tier_evals[r->tier]++;
}

/* The result of evaluating pool candidate `pc` (global index `gi`) at `tier`. */
static void evaluate(const struct kb_bench_pool_cand *pc, int gi, int tier,
                     const struct kb_bench_replay_opts *o, struct kb_result *r) {
  kb_result_init(r);
  snprintf(r->campaign, sizeof r->campaign, "bench");
  snprintf(r->task, sizeof r->task, "%s", pc->task);
  snprintf(r->candidate, sizeof r->candidate, "%s", pc->name);
  snprintf(r->tier_name, sizeof r->tier_name, "%s", o->tiers[tier].name);
  r->tier = tier;
  r->attempt = 1;
  int64_t cost = o->tiers[tier].cost_ms;
  if (pc->status != KB_STATUS_OK && tier >= pc->fail_tier) {
    r->status = pc->status;
    /* A failed check ends the evaluation before the timing: it costs what a smoke test costs,
     * except a timeout, which holds the GPU for the whole reservation. */
    int64_t check = o->n_tiers > 1 ? o->tiers[1].cost_ms : 0;
    r->cost_ms = pc->status == KB_STATUS_TIMEOUT || cost < check ? cost : check;
    return;
  }
  r->status = KB_STATUS_OK;
  r->cost_ms = cost;
  if (tier == 0)
    return;
  int n = o->tiers[tier].min_samples > 0 ? o->tiers[tier].min_samples : 1;
  double se = pc->noise[tier];
  double median = pc->true_us * exp(se * normal(o->seed, gi, tier));
  double sigma = se * sqrt((double)n) / 1.2533; /* per-sample relative spread */
  r->timing.samples = n;
  r->timing.warmup = o->tiers[tier].warmup;
  r->timing.median_us = median;
  r->timing.mean_us = median;
  r->timing.noise = sigma;
  r->timing.p10_us = median * fmax(0.01, 1.0 - 1.2816 * sigma);
  r->timing.p90_us = median * (1.0 + 1.2816 * sigma);
  r->timing.min_us = r->timing.p10_us;
}

static int add_point(struct kb_bench_run *out, double gpu_s, double true_us, double measured,
                     long evaluated) {
  if (out->n_curve == out->cap_curve) {
    int cap = out->cap_curve ? out->cap_curve * 2 : 64;
    struct kb_bench_curve_point *c = kb_reallocarray(out->curve, (size_t)cap, sizeof *c);
    if (c == NULL)
      return KB_ENOMEM;
    out->curve = c;
    out->cap_curve = cap;
  }
  struct kb_bench_curve_point *pt = &out->curve[out->n_curve++];
  memset(pt, 0, sizeof *pt);
  pt->gpu_s = gpu_s;
  pt->best_true_us = true_us;
  pt->best_measured_us = measured;
  memcpy(pt->tier_gpu_s, out->tier_gpu_s, sizeof pt->tier_gpu_s);
  pt->evaluated = evaluated;
  return KB_OK;
}

/* Records an ok top-tier measurement of local candidate `i`; updates the reported best. */
static int record_top(const struct kb_bench_pool *p, const int *idx, struct kb_bench_run *out,
                      int i, double median, double gpu_ms, long evaluated) {
  out->at_top[i] = 1;
  out->top_median[i] = median;
  if (out->best >= 0 && out->top_median[out->best] <= median)
    return KB_OK;
  out->best = i;
  return add_point(out, gpu_ms / 1000.0, p->c[idx[i]].true_us, median, evaluated);
}

struct item {
  int cand;      /* local index */
  int tier;
  double prio;   /* lower first */
  long seq;      /* enqueue order, for ties */
};

/* The claim script's order: the highest tier first, then the lowest priority, then FIFO. */
static int pick(const struct item *q, int n) {
  int best = -1;
  for (int i = 0; i < n; i++) {
    if (best < 0 || q[i].tier > q[best].tier ||
        (q[i].tier == q[best].tier &&
         (q[i].prio < q[best].prio || (q[i].prio == q[best].prio && q[i].seq < q[best].seq))))
      best = i;
  }
  return best;
}

static int replay_policy(const struct kb_bench_pool *p, const int *idx, int n, const int *ord,
                         const struct kb_bench_replay_opts *o, struct kb_bench_run *out,
                         struct kb_error *err) {
  int top = o->n_tiers - 1;
  struct kb_population pop;
  kb__population_init(&pop, o->n_tiers);
  struct item *q = kb_calloc((size_t)n * (size_t)o->n_tiers + 1, sizeof *q);
  struct kb_task_pop *t = kb__population_task(&pop, p->c[idx[0]].task);
  int rc = q && t ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
  int nq = 0;
  long seq = 0;
  for (int i = 0; rc == KB_OK && i < n; i++) {
    const struct kb_bench_pool_cand *pc = &p->c[idx[ord[i]]];
    if (pc->baseline)
      snprintf(t->baseline, sizeof t->baseline, "%s", pc->name);
    q[nq++] = (struct item){ord[i], 0, 1.0, seq++};
  }
  if (t)
    t->loaded = 1;
  double gpu_ms = 0;
  long compiled = 0;
  while (rc == KB_OK && nq > 0) {
    int k = pick(q, nq);
    struct item it = q[k];
    q[k] = q[--nq];
    const struct kb_bench_pool_cand *pc = &p->c[idx[it.cand]];
    struct kb_result r;
    evaluate(pc, idx[it.cand], it.tier, o, &r);
    account(out, &r, &gpu_ms);
    compiled += it.tier == 0;
    struct kb_member *m = kb__population_add(&pop, &r, pc->name, pc->baseline ? "seed" : "llm");
    if (m == NULL) {
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
      break;
    }
    kb__policy_observe(&o->policy, t, &r);
    kb__policy_check_stop(&o->policy, t);
    if (r.status == KB_STATUS_OK && it.tier == top)
      rc = record_top(p, idx, out, it.cand, r.timing.median_us, gpu_ms, compiled);
    enum kb_promote_reason why = kb__policy_promote_reason(&o->policy, t, m, it.tier);
    out->promoted[it.tier][why]++;
    if (rc == KB_OK && why != KB_PROMOTE_NO)
      q[nq++] = (struct item){it.cand, it.tier + 1, kb__policy_priority(t, m, it.tier), seq++};
  }
  out->gpu_s = gpu_ms / 1000.0;
  if (rc == KB_ENOMEM && err->code == 0)
    kb_error_set(err, KB_ENOMEM, "out of memory");
  kb__population_release(&pop);
  kb_free(q);
  return rc;
}

static int replay_flat(const struct kb_bench_pool *p, const int *idx, int n, const int *ord,
                       const struct kb_bench_replay_opts *o, struct kb_bench_run *out,
                       struct kb_error *err) {
  int top = o->n_tiers - 1;
  double gpu_ms = 0;
  for (int i = 0; i < n; i++) {
    const struct kb_bench_pool_cand *pc = &p->c[idx[ord[i]]];
    struct kb_result r;
    evaluate(pc, idx[ord[i]], 0, o, &r);
    account(out, &r, &gpu_ms);
    if (r.status != KB_STATUS_OK || top == 0)
      continue;
    evaluate(pc, idx[ord[i]], top, o, &r);
    account(out, &r, &gpu_ms);
    if (r.status == KB_STATUS_OK &&
        record_top(p, idx, out, ord[i], r.timing.median_us, gpu_ms, i + 1) != KB_OK)
      return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  out->gpu_s = gpu_ms / 1000.0;
  return KB_OK;
}

int kb__bench_replay(const struct kb_bench_pool *p, const int *idx, int n,
                    const struct kb_bench_replay_opts *o, int flat, struct kb_bench_run *out,
                    struct kb_error *err) {
  memset(out, 0, sizeof *out);
  out->best = -1;
  out->at_top = kb_calloc((size_t)n, sizeof *out->at_top);
  out->top_median = kb_calloc((size_t)n, sizeof *out->top_median);
  int *ord = kb_calloc((size_t)n, sizeof *ord);
  int rc = out->at_top && out->top_median && ord ? KB_OK
                                                 : kb_error_set(err, KB_ENOMEM, "out of memory");
  if (rc == KB_OK) {
    order(p, idx, n, o->seed, ord);
    rc = flat ? replay_flat(p, idx, n, ord, o, out, err)
              : replay_policy(p, idx, n, ord, o, out, err);
  }
  kb_free(ord);
  return rc;
}

void kb__bench_run_release(struct kb_bench_run *r) {
  if (r == NULL)
    return;
  kb_free(r->curve);
  kb_free(r->at_top);
  kb_free(r->top_median);
  memset(r, 0, sizeof *r);
}

const struct kb_bench_curve_point *kb__bench_point_at(const struct kb_bench_run *r,
                                                     double target_us) {
  for (int i = 0; i < r->n_curve; i++)
    if (r->curve[i].best_true_us <= target_us)
      return &r->curve[i];
  return NULL;
}

double kb__bench_time_to(const struct kb_bench_run *r, double target_us) {
  const struct kb_bench_curve_point *pt = kb__bench_point_at(r, target_us);
  return pt ? pt->gpu_s : -1;
}
