/* Promotion policy: which candidates climb to the next, dearer tier.
 *
 * This is the foundation's rule; issue 5 brings confidence bounds and the budget bandit.
 * A candidate that passed tier k climbs to k+1 when:
 *   - k is the compile tier (compiling is free, checking is what tells), or
 *   - it is the task's baseline seed (every tier needs its reference for same-tier speedups), or
 *   - it is in the top 1/eta of the ok candidates timed at tier k so far (asynchronous
 *     successive halving, as ASHA: decided on arrival, with no barrier).
 */
#ifndef KB_SCHED_POLICY_H
#define KB_SCHED_POLICY_H

#include "population.h"

struct kb_policy {
  int eta;      /* keep the top 1/eta of each cohort; default 3 */
  int n_tiers;  /* ladder length */
};

/* 1 when member `m` of task `t`, just evaluated at `tier`, should be enqueued at tier + 1. */
int kb_policy_promote(const struct kb_policy *p, const struct kb_task_pop *t,
                      const struct kb_member *m, int tier);
/* Queue priority for `m` at `tier` (lower runs first): its time relative to the baseline's at
 * the tier below when both are known, else 1. */
double kb_policy_priority(const struct kb_task_pop *t, const struct kb_member *m, int tier);

#endif
