/* Search policy: which candidates climb to the next, dearer tier, and when a task is done.
 *
 * Pure functions over the recorded population (population.h): no Redis, no HDF5, no clock, so
 * kb-bench-ladder (bench/ladder/) replays recorded evaluations through exactly this code.
 * docs/search.md has the rules, their defaults and how the benchmark measures them.
 *
 * A candidate that passed tier k climbs to k+1 when:
 *   - k is the compile tier (compiling is free, checking is what tells), or
 *   - it is the task's baseline seed (every tier needs its reference for same-tier speedups), or
 *   - it is in the top 1/eta of the ok candidates timed at tier k so far (eta grows towards
 *     search.eta_max as the cohort's ranking becomes reliable: kb__policy_eta; asynchronous
 *     successive halving, as ASHA: decided on arrival, with no barrier) and, with the
 *     baseline gate on (search.baseline_gate) at a tier whose timings count as progress
 *     (kb__policy_gain_tier), not confidently slower than the baseline there (its median - z * SE
 *     above the baseline's median + z * SE), or
 *   - the lower confidence bound of its time, median - z * (standard error of the median), is
 *     below the upper bound of the best time at tier k (the best's median + z * its standard
 *     error): the measurements cannot tell it from the best. docs/search.md says why the
 *     best's bound and not its median (the luckiest of many noisy draws).
 * Nothing climbs in a task that was stopped (target speedup reached, or stagnation).
 */
#ifndef KB_SCHED_POLICY_H
#define KB_SCHED_POLICY_H

#include "kb/campaign.h"
#include "kb/result.h"
#include "population.h"

struct kb_policy {
  int eta;                /* keep the top 1/eta of each cohort; default 3 */
  int n_tiers;            /* ladder length */
  double z;               /* confidence rule's z; 0 = rule off */
  double min_improvement; /* relative gain that counts as an improvement */
  int window;             /* results the improvement rate is averaged over (EMA span) */
  int stagnation;         /* stop a task after this many results without gain; 0 = never */
  double target_speedup;  /* stop a task once its top-tier speedup reaches this; 0 = none */
  int baseline_gate;      /* 1: no rank promotion when confidently slower than the baseline */
  int eta_max;            /* eta when the cohort's ranking is fully reliable; <= eta: off */
  int keep_top;           /* eta_max never cuts below the top min(this, cohort/eta) */
};

/* Cohorts smaller than this keep eta (their spread says little). */
#define KB_POLICY_MIN_COHORT 8

/* Sets `p` (caller-owned) from the campaign's search section `s` (borrowed), its ladder length
 * and target speedup (0 = none). */
void kb__policy_init(struct kb_policy *p, const struct kb_search *s, int n_tiers,
                    double target_speedup);

/* Why a candidate climbs (kb__policy_promote_reason); 0 = it does not. */
enum kb_promote_reason {
  KB_PROMOTE_NO = 0,
  KB_PROMOTE_COMPILE,  /* it passed the compile tier */
  KB_PROMOTE_BASELINE, /* it is the task's baseline */
  KB_PROMOTE_RANK,     /* top 1/eta of its cohort */
  KB_PROMOTE_BOUND,    /* its confidence bound cannot be told from the best's */
  KB_PROMOTE_N
};

/* 1 when member `m` of task `t`, just evaluated at `tier`, should be enqueued at tier + 1. */
int kb__policy_promote(const struct kb_policy *p, const struct kb_task_pop *t,
                      const struct kb_member *m, int tier);
/* As kb__policy_promote, but says which rule fired first (KB_PROMOTE_NO when none). */
enum kb_promote_reason kb__policy_promote_reason(const struct kb_policy *p,
                                                const struct kb_task_pop *t,
                                                const struct kb_member *m, int tier);
/* Reliability of a tier's ranking, 0..1: the share of the variance of the cohort's log medians
 * that is not measurement noise, 1 - mean(SE_rel^2) / var(log median), from the `cohort` ok
 * timed members' sums: `sum` and `sum2` of their log medians, `noise2` of their squared
 * relative standard errors. 0 for cohorts under KB_POLICY_MIN_COHORT. */
double kb__policy_reliability(int cohort, double sum, double sum2, double noise2);
/* The eta a cohort is cut with: eta + (eta_max - eta) * reliability, or eta when eta_max <= eta.
 * Arguments as kb__policy_reliability. */
double kb__policy_eta(const struct kb_policy *p, int cohort, double sum, double sum2,
                     double noise2);

/* Whether member `m` of `t`, not yet enqueued above the highest tier it passed with a timing
 * (k, kb/rank.h), could still become the task's best, so that a campaign about to end with
 * budget left promotes it first (docs/search.md, "Before done"): the task is not stopped, k is
 * not the last tier, and `m` is the task's best, or is faster at k than the best is at k (or,
 * when the best has no timing at k, its speedup over the baseline at k beats the best's at the
 * best's tier). Returns 1 and sets `*tier` (k) when so, else 0. */
int kb__policy_could_win(const struct kb_policy *p, const struct kb_task_pop *t,
                        const struct kb_member *m, int *tier);

/* The metrics mark of member `m` of `t`, whose evaluation at the last tier (`last`) is about to
 * be enqueued (docs/search.md, "Hardware metrics: which evaluations are profiled"): the median
 * that evaluation must beat to rank among the task's `top` best at that tier by the one ranking
 * rule, i.e. the top-th lowest median of the other members timed at `last`, in microseconds;
 * 0 when fewer than `top` others are timed there (any time ranks). `top` is 1..8. */
double kb__policy_metrics_bound(const struct kb_task_pop *t, const struct kb_member *m, int last,
                                int top);

/* Queue priority for `m` at `tier` (lower runs first): its time relative to the baseline's at
 * the tier below when both are known, else 1. */
double kb__policy_priority(const struct kb_task_pop *t, const struct kb_member *m, int tier);

/* Standard error of the median of `mt`, in microseconds: 1.2533 * sigma / sqrt(samples), sigma
 * from the p10..p90 spread (a normal's is 2.563 sigma) or else from the relative noise; 0 when
 * neither is known. */
double kb__policy_median_se(const struct kb_member_tier *mt);

/* Updates the task's search state (improvement rate, stagnation count) with result `r`
 * (borrowed), which kb__population_add() has just recorded for `t`. A result seen before (a
 * restarted scheduler reads some twice) changes nothing: it did not raise t->evaluations.
 * An improvement is an ok, timed result at a tier >= kb__policy_gain_tier() whose median beats
 * the best other median at that tier by more than min_improvement; its gain is the log of the
 * ratio. Returns 1 when `r` was an improvement. */
int kb__policy_observe(const struct kb_policy *p, struct kb_task_pop *t,
                      const struct kb_result *r);
/* Lowest tier whose timings count as improvements: max(1, n_tiers - 2) (screen and full in the
 * default ladder: smoke's few launches are too noisy to call progress). */
int kb__policy_gain_tier(const struct kb_policy *p);
/* Recent improvement rate of `t`: log-gain per GPU millisecond over the window (0 when nothing
 * was spent). */
double kb__policy_rate(const struct kb_task_pop *t);

/* Checks the stop conditions of task `t`: the best candidate's speedup over the baseline at the
 * top tier reached target_speedup, or `stagnation` results arrived without an improvement.
 * Returns 1 and sets t->stopped and t->stop_reason the first time one holds, else 0. */
int kb__policy_check_stop(const struct kb_policy *p, struct kb_task_pop *t);

#endif
