/* Search policy (see policy.h). */
#include "policy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void kb__policy_init(struct kb_policy *p, const struct kb_search *s, int n_tiers,
                    double target_speedup) {
  memset(p, 0, sizeof *p);
  p->eta = s->eta;
  p->n_tiers = n_tiers;
  p->z = s->confidence_z;
  p->min_improvement = s->min_improvement;
  p->window = s->window;
  p->stagnation = s->stagnation;
  p->target_speedup = target_speedup;
  p->baseline_gate = s->baseline_gate;
  p->eta_max = s->eta_max;
  p->keep_top = s->keep_top;
}

/* "Passed with a timing", the one test of kb/rank.h. */
static int timed_ok(const struct kb_member_tier *mt) {
  return mt->evaluated && kb_rank_timed(mt->status == KB_STATUS_OK, mt->samples, mt->median_us);
}

double kb__policy_median_se(const struct kb_member_tier *mt) {
  if (mt->samples <= 0)
    return 0;
  double sigma = 0;
  if (mt->p10_us > 0 && mt->p90_us > mt->p10_us)
    sigma = (mt->p90_us - mt->p10_us) / 2.5631;
  else if (mt->noise > 0)
    sigma = mt->noise * mt->median_us;
  return 1.2533 * sigma / sqrt((double)mt->samples);
}

/* 1 when the baseline gate is on, `tier` counts as progress (>= kb__policy_gain_tier) and `mt`
 * is confidently slower than the task's baseline there: its lower bound, median - z * SE, is
 * above the baseline's upper bound. Such a candidate cannot be a speedup, so ranking in the top
 * of a cohort of losers does not earn it the dearer tier. */
static int behind_baseline(const struct kb_policy *p, const struct kb_task_pop *t,
                           const struct kb_member_tier *mt, int tier) {
  if (!p->baseline_gate || tier < kb__policy_gain_tier(p))
    return 0;
  const struct kb_member *base = kb__population_baseline(t);
  if (base == NULL || !timed_ok(&base->tiers[tier]))
    return 0;
  const struct kb_member_tier *b = &base->tiers[tier];
  return mt->median_us - p->z * kb__policy_median_se(mt) >
         b->median_us + p->z * kb__policy_median_se(b);
}

double kb__policy_reliability(int cohort, double sum, double sum2, double noise2) {
  if (cohort < KB_POLICY_MIN_COHORT)
    return 0;
  double mean = sum / cohort;
  double var = sum2 / cohort - mean * mean;
  if (!(var > 0))
    return 0;
  double r = 1.0 - (noise2 / cohort) / var;
  return r > 0 ? r : 0;
}

double kb__policy_eta(const struct kb_policy *p, int cohort, double sum, double sum2,
                     double noise2) {
  double eta = p->eta >= 1 ? p->eta : 3;
  if (p->eta_max <= eta || eta <= 1) /* eta 1: every candidate climbs (recording a pool) */
    return eta;
  return eta + (p->eta_max - eta) * kb__policy_reliability(cohort, sum, sum2, noise2);
}

enum kb_promote_reason kb__policy_promote_reason(const struct kb_policy *p,
                                                const struct kb_task_pop *t,
                                                const struct kb_member *m, int tier) {
  if (tier + 1 >= p->n_tiers || t->stopped)
    return KB_PROMOTE_NO;
  const struct kb_member_tier *mt = &m->tiers[tier];
  if (!mt->evaluated || mt->status != KB_STATUS_OK)
    return KB_PROMOTE_NO;
  if (tier == 0)
    return KB_PROMOTE_COMPILE;
  if (m == kb__population_baseline(t))
    return KB_PROMOTE_BASELINE;
  if (!timed_ok(mt))
    return KB_PROMOTE_NO;
  if (p->eta == 1)
    return KB_PROMOTE_RANK; /* every candidate climbs every tier: a pool is being recorded */
  int cohort = 0, faster = 0;
  const struct kb_member_tier *best = NULL; /* the fastest other member at this tier */
  double sum = 0, sum2 = 0, noise2 = 0;      /* of log medians, and their squared rel. SEs */
  for (int i = 0; i < t->n; i++) {
    const struct kb_member_tier *o = &t->members[i].tiers[tier];
    if (!timed_ok(o))
      continue;
    cohort++;
    if (o->median_us < mt->median_us)
      faster++;
    if (&t->members[i] != m && (best == NULL || o->median_us < best->median_us))
      best = o;
    double l = log(o->median_us), se = kb__policy_median_se(o) / o->median_us;
    sum += l;
    sum2 += l * l;
    noise2 += se * se;
  }
  double eta = kb__policy_eta(p, cohort, sum, sum2, noise2);
  int keep = (int)ceil((double)cohort / eta); /* at least 1 */
  /* A reliable ranking cuts deeper, but never below the top `keep_top` that eta itself keeps. */
  int plain = (int)ceil((double)cohort / (p->eta >= 1 ? p->eta : 3));
  int floor_keep = plain < p->keep_top ? plain : p->keep_top;
  if (keep < floor_keep)
    keep = floor_keep;
  if (faster < keep && !behind_baseline(p, t, mt, tier))
    return KB_PROMOTE_RANK;
  /* The best median of a noisy tier is the luckiest of many draws, so the bound is compared
   * with the best's upper bound, not its median: the two cannot be told apart. */
  if (p->z > 0 && best != NULL &&
      mt->median_us - p->z * kb__policy_median_se(mt) <
          best->median_us + p->z * kb__policy_median_se(best))
    return KB_PROMOTE_BOUND;
  return KB_PROMOTE_NO;
}

int kb__policy_promote(const struct kb_policy *p, const struct kb_task_pop *t,
                      const struct kb_member *m, int tier) {
  return kb__policy_promote_reason(p, t, m, tier) != KB_PROMOTE_NO;
}

int kb__policy_could_win(const struct kb_policy *p, const struct kb_task_pop *t,
                        const struct kb_member *m, int *tier) {
  struct kb_rank rm;
  kb__member_rank(m, &rm);
  int k = kb_rank_tier(&rm), top = -1;
  *tier = k;
  if (t->stopped || k < 0 || k + 1 >= p->n_tiers || m->promoted_to > k)
    return 0;
  const struct kb_member *best = kb__population_best(t, &top);
  if (best == m)
    return 1; /* the best itself has not climbed to the last tier */
  if (best == NULL || top <= k)
    return 0; /* at its own tier, the best ranks above it */
  if (timed_ok(&best->tiers[k]))
    return rm.median_us[k] < best->tiers[k].median_us;
  const struct kb_member *base = kb__population_baseline(t);
  if (base == NULL || !timed_ok(&base->tiers[k]) || !timed_ok(&base->tiers[top]))
    return 0;
  return base->tiers[k].median_us / rm.median_us[k] >
         base->tiers[top].median_us / best->tiers[top].median_us;
}

double kb__policy_metrics_bound(const struct kb_task_pop *t, const struct kb_member *m, int last,
                                int top) {
  enum { TOP_MAX = 8 };
  double low[TOP_MAX]; /* the lowest medians at `last` of the others, ascending */
  int n = 0;
  top = top < 1 ? 1 : top > TOP_MAX ? TOP_MAX : top;
  for (int i = 0; i < t->n; i++) {
    const struct kb_member *o = &t->members[i];
    if (o == m || strcmp(o->id, m->id) == 0 || !timed_ok(&o->tiers[last]))
      continue;
    double v = o->tiers[last].median_us;
    int pos = n < top ? n : top;
    while (pos > 0 && v < low[pos - 1])
      pos--;
    if (pos >= top)
      continue;
    for (int j = (n < top ? n : top - 1); j > pos; j--)
      low[j] = low[j - 1];
    low[pos] = v;
    if (n < top)
      n++;
  }
  return n < top ? 0 : low[top - 1]; /* fewer than `top` timed there: any time ranks */
}

double kb__policy_priority(const struct kb_task_pop *t, const struct kb_member *m, int tier) {
  const struct kb_member *base = kb__population_baseline(t);
  if (base == NULL || tier < 0)
    return 1.0;
  double mine = m->tiers[tier].median_us, theirs = base->tiers[tier].median_us;
  if (mine <= 0 || theirs <= 0)
    return 1.0;
  return mine / theirs;
}

int kb__policy_gain_tier(const struct kb_policy *p) {
  return p->n_tiers - 2 > 1 ? p->n_tiers - 2 : 1;
}

double kb__policy_rate(const struct kb_task_pop *t) {
  return t->ema_cost > 0 ? t->ema_gain / t->ema_cost : 0;
}

int kb__policy_observe(const struct kb_policy *p, struct kb_task_pop *t,
                      const struct kb_result *r) {
  if (t->evaluations <= t->observed)
    return 0; /* seen before */
  t->observed = t->evaluations;
  double cost = r->cost_ms > 0 ? (double)r->cost_ms : 0;
  t->spent_ms += cost;
  double gain = 0;
  int tier = r->tier;
  if (kb_rank_timed(r->status == KB_STATUS_OK, r->timing.samples, r->timing.median_us) &&
      tier >= kb__policy_gain_tier(p) && tier < KB_MAX_TIERS) {
    double best = 0;
    for (int i = 0; i < t->n; i++) {
      const struct kb_member *o = &t->members[i];
      if (strcmp(o->id, r->candidate) == 0 || !timed_ok(&o->tiers[tier]))
        continue;
      if (best == 0 || o->tiers[tier].median_us < best)
        best = o->tiers[tier].median_us;
    }
    if (best > 0 && r->timing.median_us < best * (1.0 - p->min_improvement))
      gain = log(best / r->timing.median_us);
  }
  double keep = p->window > 1 ? 1.0 - 1.0 / p->window : 0;
  t->ema_gain = keep * t->ema_gain + gain;
  t->ema_cost = keep * t->ema_cost + cost;
  if (gain > 0) {
    t->since_gain = 0;
    t->gains++;
    return 1;
  }
  t->since_gain++;
  return 0;
}

int kb__policy_check_stop(const struct kb_policy *p, struct kb_task_pop *t) {
  if (t->stopped)
    return 0;
  if (p->target_speedup > 0) {
    int tier = -1;
    const struct kb_member *best = kb__population_best(t, &tier);
    const struct kb_member *base = kb__population_baseline(t);
    if (best && base && tier == p->n_tiers - 1 && timed_ok(&base->tiers[tier])) {
      double speedup = base->tiers[tier].median_us / best->tiers[tier].median_us;
      if (speedup >= p->target_speedup) {
        t->stopped = 1;
        snprintf(t->stop_reason, sizeof t->stop_reason, "target speedup %.3gx reached (%.3gx)",
                 p->target_speedup, speedup);
        return 1;
      }
    }
  }
  if (p->stagnation > 0 && t->since_gain >= p->stagnation) {
    t->stopped = 1;
    snprintf(t->stop_reason, sizeof t->stop_reason, "stagnated: %ld results without a gain",
             t->since_gain);
    return 1;
  }
  return 0;
}
