/* One replay of a task's candidates, by the real policy (scheduler/policy.c) or by flat
 * evaluation (every candidate from compile straight to the top tier), with measurements drawn
 * from the pool's true times and noise. The same seed gives both methods the same candidate
 * order and the same measurement of a (candidate, tier). */
#ifndef KB_BENCH_LADDER_REPLAY_H
#define KB_BENCH_LADDER_REPLAY_H

#include <stdint.h>

#include "policy.h"
#include "pool.h"

struct kb_error;

struct kb_bench_replay_opts {
  struct kb_policy policy;       /* as the scheduler sets it up from a campaign */
  const struct kb_tier *tiers;   /* the ladder (borrowed): costs and sample counts */
  int n_tiers;
  uint64_t seed;
};

struct kb_bench_curve_point {
  double gpu_s;                  /* GPU seconds spent when the best changed */
  double best_true_us;           /* true time of the reported best */
  double best_measured_us;       /* its measured top-tier median */
  double tier_gpu_s[KB_MAX_TIERS]; /* GPU seconds spent at each tier so far */
  long evaluated;                /* candidates that had finished compiling so far */
};

struct kb_bench_run {
  double gpu_s;                  /* GPU seconds of the whole replay */
  long evaluations;
  struct kb_bench_curve_point *curve;     /* owned; one point per change of the reported best */
  int n_curve, cap_curve;
  int *at_top;                   /* per candidate of the task (order of `idx`): timed at the top */
  double *top_median;            /* per candidate: measured top-tier median, 0 when none */
  int best;                      /* candidate (index into `idx`) reported best, -1 when none */
  double tier_gpu_s[KB_MAX_TIERS]; /* GPU seconds of the whole replay, per tier */
  long tier_evals[KB_MAX_TIERS]; /* evaluations per tier */
  long promoted[KB_MAX_TIERS][KB_PROMOTE_N]; /* promotions from each tier, by rule */
};

/* Replays the `n` candidates of `p` named by `idx` (borrowed; indices into p->c, one task,
 * baseline among them) by the policy (`flat` = 0) or flat evaluation (`flat` = 1) into `out`
 * (caller-owned; release with kb__bench_run_release). Errors: KB_ENOMEM. */
int kb__bench_replay(const struct kb_bench_pool *p, const int *idx, int n,
                    const struct kb_bench_replay_opts *o, int flat, struct kb_bench_run *out,
                    struct kb_error *err);
void kb__bench_run_release(struct kb_bench_run *r);
/* GPU seconds until the reported best's true time was at most `target_us`; -1 when never. */
double kb__bench_time_to(const struct kb_bench_run *r, double target_us);
/* The curve point (borrowed from `r`) where the reported best's true time first was at most
 * `target_us`; NULL when never. */
const struct kb_bench_curve_point *kb__bench_point_at(const struct kb_bench_run *r,
                                                     double target_us);

#endif
