/* The archive generator: verified best kernels across campaigns (kb/archive.h), reused.
 *
 * - Proposes: for a task, the archived kernels that fit it (same task id and the same
 *   kb_task_fingerprint: backend, dtypes and shapes of every input and output), best speedup
 *   first, each candidate id once, at most `propose` per task. They are ordinary candidates
 *   (generator "archive", name "archive-<name>") that climb the ladder like any other: that is
 *   their re-verification on this campaign's GPU. One already in the catalog (a seed, an
 *   earlier proposal before a restart) is skipped without counting as an attempt. A
 *   kernelbench entry (a ModelNew file) fits only a task with a pytorch oracle, and is proposed
 *   as a kernelbench candidate.
 * - Examples: for an llm prompt, up to `examples` native entries of the task's category and
 *   backend (the best of each task, best speedup first), as text (kb__gen_archive_examples).
 * - Crossover parent: the best fitting entry whose candidate is not in the task's population.
 * - Saves: when the campaign ends, each task's verified best kernels (status ok at the ladder's
 *   last tier, faster there than the task's baseline seed, best first, at most `save`) become
 *   entries with the GPU that timed them, the timing, the campaign, and tags (category,
 *   generator, techniques seen in the source, the campaign's tags).
 * The folder is read once at start; a file that is not a valid entry is logged (file and field)
 * and skipped.
 */
#ifndef KB_SCHED_GEN_ARCHIVE_H
#define KB_SCHED_GEN_ARCHIVE_H

#include <stddef.h>

#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/result.h"
#include "population.h"

struct kb_error;
struct kb_queue;
struct kb_gen_archive; /* opaque */

/* Opens archive folder `dir` (borrowed; copied) for campaign `q` (borrowed; must outlive it)
 * with settings `cfg` (borrowed; must outlive it) and reads its entries; corrupt ones are
 * logged and skipped. Returns it in `*out` (new; kb__gen_archive_free). Errors: KB_ENOTFOUND /
 * KB_EINVAL / KB_EIO (the folder: the message names it), KB_ENOMEM. */
int kb__gen_archive_new(struct kb_queue *q, const struct kb_gen_archive_cfg *cfg, const char *dir,
                       struct kb_gen_archive **out, struct kb_error *err);
/* Frees; NULL is fine. */
void kb__gen_archive_free(struct kb_gen_archive *a);
/* The folder (borrowed from `a`; valid until kb__gen_archive_free). */
const char *kb__gen_archive_dir(const struct kb_gen_archive *a);
/* Entries read at start. */
int kb__gen_archive_size(const struct kb_gen_archive *a);

/* 1 while a fitting entry for `task` (borrowed) may still be proposed; 0 otherwise (also for
 * NULL `a`). The first call for a task finds its fitting entries (kb__gen_archive_parent needs
 * that). */
int kb__gen_archive_can_propose(struct kb_gen_archive *a, const struct kb_task *task);
/* The next fitting entry for `task` (borrowed) not yet in the catalog, as a candidate in `c`
 * (caller-owned, zeroed first; release it). KB_EEMPTY when none is left. Errors: KB_ECONN,
 * KB_EREDIS, KB_ENOMEM. */
int kb__gen_archive_propose(struct kb_gen_archive *a, const struct kb_task *task,
                           struct kb_candidate *c, struct kb_error *err);

/* Notes the device of an ok result (borrowed) at the ladder's last tier, for saving. */
int kb__gen_archive_observe(struct kb_gen_archive *a, const struct kb_result *r);

/* Prompt examples for `task` (borrowed) into `*out` (new, kb_free; NULL when there are none).
 * Errors: KB_ENOMEM. */
int kb__gen_archive_examples(struct kb_gen_archive *a, const struct kb_task *task, char **out,
                            struct kb_error *err);
/* A crossover parent for the task of `pop` (borrowed) from outside it: `*found` = 1 with `c`
 * (caller-owned, zeroed first; release it) and a one-line `summary` (caller-owned, `size`
 * bytes), 0 when none. Only tasks seen by kb__gen_archive_can_propose are known.
 * Errors: as kb_candidate_init. */
int kb__gen_archive_parent(struct kb_gen_archive *a, const struct kb_task_pop *pop,
                          struct kb_candidate *c, char *summary, size_t size, int *found,
                          struct kb_error *err);

/* Adds the verified best kernels of `task` (borrowed) in `pop` (borrowed) to the folder;
 * `*added` (may be NULL) gets their number. Errors: KB_EIO (writing; the message names the
 * file), KB_ECONN, KB_EREDIS, KB_ENOMEM. */
int kb__gen_archive_save(struct kb_gen_archive *a, const struct kb_task *task,
                        const struct kb_task_pop *pop, int *added, struct kb_error *err);

#endif
