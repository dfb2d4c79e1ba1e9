/* The campaign summary, <results>/<campaign>/summary.json, written when a campaign ends:
 * state, reason, ledger ("gpu_ms" as before, and "ledger": every currency, GPU milliseconds and
 * LLM tokens, spent, reserved, available, limit), and per task with results its file,
 * leaderboard in rank order (kb/rank.h; speedups over the baseline seed at the same tier only),
 * "best" (rank 1, its speedup at the highest tier where it and the baseline are timed, and that
 * tier) and search state ("search": spent_gpu_ms, improvements,
 * results_since_gain, stopped: the stop reason or null; docs/search.md). kb-launch --local
 * prints it with kb__leaderboard_print() (slurm/local.c). */
#ifndef KB_SCHED_SUMMARY_H
#define KB_SCHED_SUMMARY_H

#include "kb/queue.h"
#include "population.h"

struct kb_error;

/* Writes `dir`/summary.json atomically. Errors: KB_EWRITE naming the path (a later run of the
 * scheduler for the campaign, which is over, writes it again), KB_EINVAL, KB_ENOMEM. */
int kb__summary_write(const char *dir, const struct kb_queue *q, const struct kb_queue_status *st,
                     const struct kb_population *pop, const char *reason, struct kb_error *err);

#endif
