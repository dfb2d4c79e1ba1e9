/* The campaign's one scheduler: a lock in Redis (kb:{cid}:scheduler, common/lua/sched_lock.lua)
 * that a kb-scheduler takes before it reads anything of the campaign (the results stream, the
 * LLM generator's open charges) and renews from a thread of its own while it runs.
 *
 * A second kb-scheduler of the campaign, on any host and with any results folder, is refused
 * (KB_ELOCKED, exit 5) naming the holder once the lock did not expire within its time to live
 * and 2 s (its holder renews it). A holder killed with kill -9 does not block its restart: on
 * the same host and PID namespace a holder whose process is gone (or a zombie) is taken over at
 * once; from elsewhere the lock is waited for until it expires (KB_SCHED_LOCK_TTL_MS after its
 * last renewal).
 */
#ifndef KB_SCHED_SCHED_LOCK_H
#define KB_SCHED_SCHED_LOCK_H

#include <pthread.h>
#include <signal.h>

struct kb_error;
struct kb_queue;
struct kb_redis;

#define KB_SCHED_LOCK_TTL_MS 10000 /* the lock lasts this long after its last renewal */

struct kb__sched_lock {
  char key[200];            /* kb:{cid}:scheduler */
  char meta[200];           /* kb:{cid}:meta */
  char value[200];          /* "<token> host=H/pidns:[N] pid=P since=MS": this scheduler's */
  char addr[512];           /* the redis address, for the renewal thread's own connection */
  pthread_t thread;         /* renews every TTL / 4 */
  int started;              /* 1 while the thread runs */
  pthread_mutex_t mu;       /* guards quit, lost, holder */
  int quit;                 /* set to stop the thread */
  int lost;                 /* 1 once another scheduler holds the lock */
  char holder[200];         /* the value found in its place */
  volatile sig_atomic_t *stop; /* the process's stop flag (borrowed; set by the caller before
                                  kb__sched_lock_take, or NULL): the renewal thread's waits for a
                                  lost or hung redis end KB_REDIS_STOP_WAIT_MS after it is set */
};

/* Takes the lock of `q`'s campaign over `r` (borrowed; `addr` its address, copied, for the
 * renewal thread) and starts renewing it. Takes over at once from a holder of this host and PID
 * namespace whose process is gone; else waits, logging once, at most until the lock expires
 * (KB_SCHED_LOCK_TTL_MS and 2 s more). Errors:
 * KB_ELOCKED "campaign \"ID\" has a scheduler already: <holder> (...)" when it is still
 * held, KB_EGONE, the connection's. `l` is the caller's; kb__sched_lock_release() after. */
int kb__sched_lock_take(struct kb__sched_lock *l, struct kb_redis *r, const struct kb_queue *q,
                        const char *addr, struct kb_error *err);

/* KB_ELOCKED when the lock went to another scheduler (this one must stop before it writes or
 * acknowledges anything more), else KB_OK. */
int kb__sched_lock_check(struct kb__sched_lock *l, struct kb_error *err);

/* Stops the renewal thread and deletes the lock when it is still this scheduler's (over `r`,
 * borrowed; best effort). An `l` never taken is fine. */
void kb__sched_lock_release(struct kb__sched_lock *l, struct kb_redis *r);

#endif
