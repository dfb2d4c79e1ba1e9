/* The runner's main loop: claim items, compile them ahead on a pool of compiler threads,
 * evaluate each as its build finishes with the backend (host or CUDA, both through the sandbox
 * process), complete it; heartbeat every held lease meanwhile; leave cleanly when asked
 * (SIGUSR1/SIGTERM from Slurm, Ctrl-C).
 *
 * Compile-ahead: the runner holds up to `ahead` leased items at once, each building on the pool
 * (compile_pool.h), so the device never waits for nvcc while the CPUs keep up; it evaluates
 * whichever build finishes first. Leaving: once `*stop` is set it claims nothing more, releases
 * every item not yet under evaluation (their reservations are voided; a release is not an
 * attempt), lets the evaluation under way finish when it ends within `grace_s` seconds of the
 * signal (its result is completed), else kills it and releases its item, and returns.
 */
#ifndef KB_RUNNER_WORKER_H
#define KB_RUNNER_WORKER_H

#include <signal.h>

struct kb_error;

struct kb_worker_opts {
  const char *redis;       /* address or NULL for $KB_REDIS (borrowed) */
  const char *campaign;    /* campaign id (borrowed) */
  const char *backend;     /* "host" or "cuda" (borrowed) */
  int device;              /* CUDA device ordinal (cuda backend) */
  const char *cache_dir;   /* compiled libraries and materialized tasks (borrowed) */
  const char *name;        /* runner name; NULL = "<host>:<pid>" */
  int min_tier, max_tier;  /* tiers served; max_tier -1 = all */
  int wait_s;              /* how long to wait for Redis and the campaign to appear */
  long max_items;          /* stop after this many evaluations; 0 = no limit (an item that
                              never reached a build, its candidate or task not loaded, is an
                              infra_error result and not counted) */
  int ahead;               /* items held at once (building or waiting); <= 0: workers + 1 */
  int compile_workers;     /* compiler threads; <= 0: the CPUs minus one */
  double grace_s;          /* after a stop, how long the evaluation under way may still run */
  int metrics;             /* enum kb_metrics_mode (evaluator.h): which full-tier evaluations
                              get the hardware-metrics pass; 0 = every; KB_METRICS_MARKED: the
                              ones the scheduler marked (kb/keys.h KB_KEY_METRICS) */
  int sample_chunk;        /* timed samples the sandbox queues before one wait; 0 = its own */
  int torch_reuse_s;       /* a task's torch eager/compile times reused this long (evaluator.h
                              kb__evaluator_set_torch_reuse); 0 = timed in every evaluation */
  int fresh;               /* enum kb_fresh_mode (evaluator.h): the fresh samples' schedule;
                              0 = by tier */
  volatile sig_atomic_t *stop; /* set by a signal handler: stop claiming and leave */
};

/* Why the worker returned. */
enum kb_worker_exit {
  KB_WORKER_FINISHED,   /* campaign done or cancelled */
  KB_WORKER_STOPPED,    /* asked to stop (signal) or max_items reached */
};

/* Runs until the campaign ends or `*opts->stop` is set. On return every lease this runner held
 * was completed or released. `*why` gets an enum kb_worker_exit when it returns KB_OK. Errors:
 * KB_ECONN (redis gone past the retry budget), KB_ENOTFOUND (campaign never appeared, or no
 * kb-sandbox), KB_EINVAL (bad options, a campaign of the other backend), KB_ECHILD (the sandbox
 * does not start: no GPU, no driver), KB_ECONFINE (this node cannot confine the sandbox as the
 * campaign's sandbox.require asks), KB_EINTERRUPTED (`*opts->stop` set while it waited for the
 * campaign). */
int kb__worker_run(const struct kb_worker_opts *opts, int *why, struct kb_error *err);

#endif
