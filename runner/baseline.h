/* Finding a task's baseline candidate in Redis, for the same-run speedup at the full tier.
 *
 * Runners receive a task's spec and oracle through Redis (kb/catalog.h), not its seed files;
 * the baseline seed is in Redis as a candidate like any other (generator "seed", named after
 * the seed). This finds it by scanning the campaign's candidate keys for that task and name:
 * once per task and runner, at its first full-tier evaluation.
 */
#ifndef KB_RUNNER_BASELINE_H
#define KB_RUNNER_BASELINE_H

#include "kb/candidate.h"
#include "kb/queue.h"

struct kb_error;

/* Looks for the candidate of task `task_id` named `name` (both borrowed) among the campaign's
 * candidates. Sets `*found` to 1 and fills `c` (zeroed first; kb_candidate_release) when there
 * is one, else `*found` = 0. Errors: KB_ECONN, KB_EREDIS, KB_ENOMEM, and those of
 * kb_catalog_get_candidate(). */
int kb__baseline_find(struct kb_queue *q, const char *task_id, const char *name,
                      struct kb_candidate *c, int *found, struct kb_error *err);

#endif
