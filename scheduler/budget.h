/* Budget split across tasks: a floor per task, the rest by a bandit on recent improvement per
 * GPU millisecond. Pure: the scheduler feeds it the ledger's numbers and applies the caps it
 * returns with kb_queue_set_task_cap() (the claim script never lets a task's held + spent pass
 * its cap); tests and the benchmark call it directly. docs/search.md has the rule.
 */
#ifndef KB_SCHED_BUDGET_H
#define KB_SCHED_BUDGET_H

#include <stdint.h>

#include "kb/campaign.h"

/* What the split knows about one task. */
struct kb_budget_task {
  int64_t used_ms;  /* GPU milliseconds held + spent so far */
  double rate;      /* recent log-gain per GPU millisecond (kb__policy_rate) */
  long results;     /* results seen for the task */
  int stopped;      /* 1: the task met a stop condition */
};

/* Computes a cap (GPU milliseconds of held + spent, what kb_queue_set_task_cap takes) for each
 * of the `n` tasks (borrowed) into `caps` (caller-owned, n entries), from the campaign's
 * `total_ms` and what is `available_ms` now:
 *   - a stopped task gets -1 (no cap): nothing of it climbs any more, so only the items it had
 *     queued run, once (the campaign can drain; see docs/search.md);
 *   - every other task's floor is floor_share * total / n; what it has not used of its floor is
 *     set aside for it first (shrunk in proportion when the available budget cannot cover all);
 *   - the rest of the available budget goes to the running tasks in proportion to a UCB score:
 *     rate / (best rate) + explore * sqrt(ln(1 + all results) / (1 + the task's results)),
 *     or evenly when every score is 0;
 *   - every running task gets at least `min_grant_ms` (the dearest tier's reservation) while that
 *     much is available, so no task with work left waits on shares computed for idle ones.
 * A task's cap is its used milliseconds plus what it got. The caps add up to at most used +
 * available, plus the minimum grants. */
void kb__budget_split(const struct kb_search *s, int64_t total_ms, int64_t available_ms,
                     int64_t min_grant_ms, const struct kb_budget_task *tasks, int n,
                     int64_t *caps);

#endif
