/* The scheduler of one campaign: consumes the results stream, writes the HDF5 files (the only
 * writer), promotes candidates up the ladder, reaps expired leases, and ends the campaign when
 * every item is done, the budget cannot pay for what is left, or the deadline passed.
 *
 * Crash safety: a result is acknowledged (XACK) only after its HDF5 file was flushed and its
 * promotions were enqueued; both are idempotent, so a restart that sees the result again
 * changes nothing. State is rebuilt from the results stream at start.
 */
#ifndef KB_SCHED_SCHED_H
#define KB_SCHED_SCHED_H

#include <signal.h>

struct kb_error;

struct kb_sched_opts {
  const char *redis;        /* address or NULL for $KB_REDIS (borrowed) */
  const char *campaign;     /* campaign id (borrowed) */
  const char *results_dir;  /* override of the campaign's results folder, or NULL */
  const char *work_dir;     /* where task specs are materialized (borrowed) */
  int wait_s;               /* how long to wait for redis and the campaign */
  int eta;                  /* promotion keeps the top 1/eta; 0 = the campaign's search.eta */
  volatile sig_atomic_t *stop; /* set by a signal handler: leave, the campaign goes on */
};

/* Runs until the campaign ends (then writes <results>/<campaign>/summary.json and returns
 * KB_OK with `*finished` = 1) or `*opts->stop` is set (`*finished` = 0; a restart resumes).
 * Errors: KB_ECONN, KB_ENOTFOUND, KB_EHDF5 (a file that cannot be written), KB_ENOMEM. */
int kb__sched_run(const struct kb_sched_opts *opts, int *finished, struct kb_error *err);

#endif
