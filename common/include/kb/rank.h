/* The one ranking rule of a task's candidates, shared by the scheduler (population, policy,
 * generators, summary.json) and the submitter (status, watch, report, export). docs/search.md
 * ("Ranking") states it:
 *
 *   - a candidate is compared with the baseline or with another candidate only at the same tier
 *     (same input sets, same timing method);
 *   - "best" is the candidate with the highest tier at which it passed with a timing, then the
 *     lower median at that tier (ties keep the earlier candidate);
 *   - its speedup is the baseline's median over its own, at that same tier; when the baseline
 *     has no timing there, the highest tier where both are timed, and the tier is said;
 *   - its speedup over torch eager is against the eager timed with its result where it has one
 *     (kb_rank_eager_speedup), else against the task's eager time.
 *
 * Each caller describes a candidate by a struct kb_rank: per tier, the median of its latest
 * result when that result passed with a timing (kb_rank_timed), else 0. Pure functions: no
 * allocation, no I/O.
 */
#ifndef KB_RANK_H
#define KB_RANK_H

#include "kb/campaign.h"

struct kb_rank {
  /* per tier: the median of a result that passed with a timing; 0 = none */
  double median_us[KB_MAX_TIERS];
};

/* The one test of "passed with a timing": the result's status is ok (`ok` nonzero), it has
 * timing samples and a positive median. */
int kb_rank_timed(int ok, int samples, double median_us);
/* The highest tier at which `c` (borrowed; NULL = none) passed with a timing, or -1. */
int kb_rank_tier(const struct kb_rank *c);
/* 1 when `a` ranks strictly above `b` (either may be NULL, which ranks last; two candidates
 * never timed are equal), else 0. */
int kb_rank_better(const struct kb_rank *a, const struct kb_rank *b);
/* -1, 0 or 1 as `a` ranks above, equal to or below `b`: a comparator for stable sorts. */
int kb_rank_cmp(const struct kb_rank *a, const struct kb_rank *b);
/* Speedup of `c` over `base` (both borrowed; either may be NULL): base median / c's median at
 * c's highest timed tier, else at the highest tier where both are timed. `*tier` (may be NULL)
 * gets that tier. Returns 0 (and tier -1) when no tier has both timed. */
double kb_rank_speedup(const struct kb_rank *c, const struct kb_rank *base, int *tier);
/* Speedup over torch eager of a result with median `median_us` (us): `own_eager_us`, the eager
 * median timed with that result (its torch_eager_us: for a pytorch-oracle task in the same
 * process, interleaved with the candidate's samples; for a torch_reference task by the trusted
 * worker right after it), over its median when known (> 0); else `task_eager_us`, the task's
 * eager time, over it. 0 when `median_us` or both eager times are unknown (0, negative or NaN).
 * `*own` (may be NULL) gets 1 when the result's own eager was used, else 0. Timings of one
 * module taken minutes apart, or in another process, differ by tens of percent on launch-bound
 * models (docs/tasks.md), so a result is compared with its own eager wherever it has one. */
double kb_rank_eager_speedup(double median_us, double own_eager_us, double task_eager_us,
                             int *own);

#endif
