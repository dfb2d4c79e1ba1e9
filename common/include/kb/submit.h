/* Submission: validate a campaign with every task bundle and seed, then register it in Redis.
 *
 * Everything is read and checked before the first write, so a bad file changes nothing in
 * Redis. Registration is crash-safe: the campaign is created in state "submitting", its tasks,
 * candidates and items are written idempotently, and only then does it become "running";
 * re-running an interrupted identical submission resumes it.
 */
#ifndef KB_SUBMIT_H
#define KB_SUBMIT_H

#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/redis.h"
#include "kb/task.h"

struct kb_error;

struct kb_submission {
  struct kb_campaign campaign;
  struct kb_task *tasks;            /* n_tasks, in campaign order (owned) */
  int n_tasks;
  struct kb_candidate *candidates;  /* seed candidates of all tasks (owned) */
  int n_candidates;
};

/* Loads campaign `path` (borrowed), its task bundles and their seed sources into `s`
 * (caller-owned, zeroed first; released on failure). Checks task ids are unique, every task's backend matches the campaign's,
 * and, with generators.llm.format "kernelbench", every task has a pytorch oracle.
 * Errors: KB_EPARSE "file:line:col: ...", KB_EIO, KB_ENOMEM. */
int kb_submission_load(const char *path, struct kb_submission *s, struct kb_error *err);
/* Frees the contents of `s` and zeroes it; NULL is fine. */
void kb_submission_release(struct kb_submission *s);

/* Registers `s` (borrowed) in Redis through `redis` (borrowed) and opens it (state "running").
 * `who` (borrowed) names the submitter in the audit log. `*resumed` (may be NULL) is 1 when an interrupted identical submission was completed.
 * Errors: KB_EEXISTS (campaign exists), KB_ECONN, KB_EREDIS, KB_ENOMEM. */
int kb_submission_register(const struct kb_submission *s, struct kb_redis *redis, const char *who,
                           int *resumed, struct kb_error *err);

#endif
