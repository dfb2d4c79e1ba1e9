/* The runner's main loop: claim an item, evaluate it with the backend, complete it; heartbeat
 * the lease meanwhile; leave cleanly when asked (SIGUSR1/SIGTERM from Slurm, Ctrl-C).
 */
#ifndef KB_RUNNER_WORKER_H
#define KB_RUNNER_WORKER_H

#include <signal.h>

struct kb_error;

struct kb_worker_opts {
  const char *redis;       /* address or NULL for $KB_REDIS (borrowed) */
  const char *campaign;    /* campaign id (borrowed) */
  const char *backend;     /* "host" (the CUDA backend comes with issue 4) */
  const char *cache_dir;   /* compiled libraries and materialized tasks (borrowed) */
  const char *name;        /* runner name; NULL = "<host>:<pid>" */
  int min_tier, max_tier;  /* tiers served; max_tier -1 = all */
  int wait_s;              /* how long to wait for Redis and the campaign to appear */
  long max_items;          /* stop after this many evaluations; 0 = no limit */
  volatile sig_atomic_t *stop; /* set by a signal handler: stop claiming and leave */
};

/* Why the worker returned. */
enum kb_worker_exit {
  KB_WORKER_FINISHED,   /* campaign done or cancelled */
  KB_WORKER_STOPPED,    /* asked to stop (signal) or max_items reached */
};

/* Runs until the campaign ends or `*opts->stop` is set. On return every lease this runner held
 * was completed or released. `*why` gets an enum kb_worker_exit. Errors: KB_ECONN (redis gone
 * past the retry budget), KB_ENOTFOUND (campaign never appeared), KB_EINVAL (bad options). */
int kb_worker_run(const struct kb_worker_opts *opts, int *why, struct kb_error *err);

#endif
