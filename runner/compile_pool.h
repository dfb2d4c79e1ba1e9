/* A pool of compiler threads that builds candidates ahead of the GPU.
 *
 * nvcc takes seconds per candidate and a GPU evaluation often less, so a runner keeps the
 * CPUs compiling what it will evaluate next: it claims up to `capacity` items ahead, submits
 * each as a build job with a tag of its own (the item), and collects finished builds in the
 * order they finish, with a non-blocking poll or a wait with a timeout. Every job runs
 * kb__compile_req() (compile.h) on one of the worker threads, so tier 0 (build, cache, resource
 * usage, import allow-list) happens entirely off the runner's thread. Compilers are started with
 * posix_spawn (spawn_tool.h), never by running code in a forked copy of this multithreaded process;
 * each build has its timeout. Worker threads block every signal: SIGUSR1/SIGTERM reach the
 * runner's own thread. Freeing the pool kills the compilers still running (within 20 ms) and
 * drops queued and uncollected jobs.
 *
 * All functions are for the thread that created the pool; the workers are internal.
 */
#ifndef KB_RUNNER_COMPILE_POOL_H
#define KB_RUNNER_COMPILE_POOL_H

#include <stdint.h>

#include "compile.h"
#include "kb/error.h"

struct kb__compile_pool; /* opaque */

/* A finished job, as poll and wait hand it over. */
struct kb__compiled {
  uint64_t tag;           /* the caller's tag from kb__compile_pool_submit */
  int rc;                 /* KB_OK: `build` holds the verdict; otherwise the runner-level
                             error kb__compile_req() returned (KB_ECHILD, KB_EIO, ...) */
  struct kb_error err;    /* the message when rc != KB_OK */
  struct kb__build build; /* the build (owned: kb__compiled_release) */
  double wait_s;          /* seconds from submit until a worker took it */
  double build_s;         /* seconds the worker spent on it, cache lookup and checks included */
};

/* Empties `c` (caller-owned); kb__compiled_release() frees its contents (NULL is fine). */
void kb__compiled_init(struct kb__compiled *c);
void kb__compiled_release(struct kb__compiled *c);

/* The default number of workers: the CPUs this process may run on (its affinity mask, which
 * Slurm sets to the job's CPUs) minus one for the runner itself, at least 1. */
int kb__compile_pool_default_workers(void);

/* Starts a pool of `workers` threads (<= 0: the default) building with `cc` (borrowed: must
 * outlive the pool, and not change while it lives). At most `capacity` jobs (<= 0: twice the
 * workers) are in it at once, queued, building, or finished and not yet collected. Returns it in
 * `*out` (new). Errors: KB_ENOMEM, KB_EINTERNAL (threads cannot be started). */
int kb__compile_pool_new(const struct kb__compiler *cc, int workers, int capacity,
                         struct kb__compile_pool **out, struct kb_error *err);

/* Kills running compilers, waits for the workers to end, frees queued and uncollected jobs
 * and the pool. NULL is fine. */
void kb__compile_pool_free(struct kb__compile_pool *p);

/* The number of workers. */
int kb__compile_pool_workers(const struct kb__compile_pool *p);

/* How many more jobs kb__compile_pool_submit() accepts now: capacity minus the jobs in the pool.
 * A runner claims at most this many items before submitting them. */
int kb__compile_pool_space(struct kb__compile_pool *p);

/* Jobs submitted and not yet collected (queued, building, or finished). */
int kb__compile_pool_pending(struct kb__compile_pool *p);

/* Queues a build of `req` (its strings are copied) under `tag`. Errors: KB_EINVAL when the pool
 * is full (see kb__compile_pool_space), KB_ENOMEM. */
int kb__compile_pool_submit(struct kb__compile_pool *p, uint64_t tag,
                            const struct kb__compile_req *req, struct kb_error *err);

/* Hands over the job that finished first and was not yet collected, without waiting: `*got` = 1
 * and `*out` (initialised; old contents released) filled, or `*got` = 0 when none has finished.
 * Returns KB_OK, or KB_EEMPTY when nothing is pending at all (nothing will ever finish). */
int kb__compile_pool_poll(struct kb__compile_pool *p, struct kb__compiled *out, int *got,
                          struct kb_error *err);

/* As kb__compile_pool_poll(), waiting up to `timeout_s` seconds for a job to finish (<= 0: not
 * at all). */
int kb__compile_pool_wait(struct kb__compile_pool *p, double timeout_s, struct kb__compiled *out,
                          int *got, struct kb_error *err);

#endif
