/* Simulated runners of the queue benchmark and the control block that drives them.
 *
 * The control block lives in one shared anonymous mapping, so the same code drives runners that
 * are threads (the default) and runners that are forked processes (--kills). The coordinator
 * (main thread or parent process) moves every worker through phases by writing one control word
 * (epoch << 8 | phase); a worker acknowledges a word by storing it into its slot when it is
 * between operations, so "every slot acknowledged" means no operation of the old phase is still
 * in flight. Each worker has its OWN Redis connection, made in the worker itself (a forked
 * runner connects after fork, and inherits no connection of its parent that it would use).
 */
#ifndef KB_BENCH_WORKER_H
#define KB_BENCH_WORKER_H

#include <stdatomic.h>
#include <stdint.h>

#include "kb/queue.h"

enum kb_bench_phase {
  KB_BENCH_IDLE,    /* wait for the next phase */
  KB_BENCH_WARMUP,  /* cycles (claim -> no-op -> complete), not measured */
  KB_BENCH_CYCLES,  /* cycles, measured (latencies recorded) */
  KB_BENCH_RET1,    /* EVALSHA of "return 1" */
  KB_BENCH_DEBIT,   /* EVALSHA of a one-HINCRBY debit script */
  KB_BENCH_DRAIN,   /* cycles until the coordinator sees the queue empty (--kills) */
  KB_BENCH_EXIT,    /* leave */
  KB_BENCH_PHASES
};

#define KB_BENCH_LAT_CAP 65536 /* latency samples kept per slot (reservoir beyond) */

/* What one runner slot did. Written by its worker only (a respawned process continues the
 * counts of the one it replaces); read by the coordinator. */
struct kb_bench_slot {
  _Atomic uint64_t ack;                  /* last control word acknowledged */
  _Atomic uint64_t ops[KB_BENCH_PHASES]; /* cycles (with --batch: items completed) or raw
                                            calls, per phase */
  _Atomic uint64_t calls[KB_BENCH_PHASES]; /* queue script calls made in cycles, per phase */
  _Atomic uint64_t empty[KB_BENCH_PHASES]; /* claims answered "nothing ready", per phase */
  _Atomic uint64_t lease_lost;           /* completes refused because the lease was reaped */
  _Atomic uint64_t failed;               /* 1 once the worker hit an error (see `error`) */
  _Atomic uint64_t lat_seen;             /* measured cycles offered to the reservoir */
  uint64_t rng;                          /* reservoir sampling state */
  char error[256];                       /* first error, when `failed` */
  uint32_t claim_ns[KB_BENCH_LAT_CAP];   /* claim latency samples, nanoseconds */
  uint32_t complete_ns[KB_BENCH_LAT_CAP]; /* complete latency samples, nanoseconds */
};

/* Shared by the coordinator and every worker. */
struct kb_bench_ctl {
  _Atomic uint64_t word;   /* epoch << 8 | enum kb_bench_phase */
  char addr[256];          /* redis address */
  char cid[64];            /* campaign id */
  char debit_key[160];     /* hash the debit script increments */
  char sha_ret1[41];       /* SHA-1 of the "return 1" script */
  char sha_debit[41];      /* SHA-1 of the debit script */
  long eval_ns;            /* simulated evaluation between claim and complete; 0 = none */
  int two_call;            /* 1: a cycle is kb_queue_claim + kb_queue_complete; 0: one
                              kb_queue_complete_and_claim (what a runner does) */
  int event_loop;          /* 1: every runner in one thread (kb__bench_loop_run) */
  int batch;               /* > 1: a runner holds up to `batch` items and completes and claims
                              them with one kb_queue_cycle_batch call (1: the calls above) */
  _Atomic int active;      /* slots [0, active) take part in a phase; the rest stay idle (the
                              runner-count search) */
  _Atomic int64_t record_from_ns; /* latencies of calls started before this (monotonic
                              clock) are not recorded: the ramp of a search step */
  _Atomic uint32_t seq;    /* bumped with every new control word: idle runners wait on it
                              (a futex), so thousands of them cost nothing while idle */
  int nslots;              /* runner slots */
  struct kb_bench_slot slots[]; /* nslots of them */
};

/* Maps a zeroed control block for `nslots` slots, shared with future children. Returns it (new;
 * kb__bench_ctl_free) or NULL when out of memory. */
struct kb_bench_ctl *kb__bench_ctl_new(int nslots);
void kb__bench_ctl_free(struct kb_bench_ctl *ctl);

/* The control word for (epoch, phase). */
static inline uint64_t kb_bench_word(uint64_t epoch, int phase) {
  return (epoch << 8) | (uint64_t)phase;
}

/* Stores control word `word` and wakes every runner waiting for a new one. */
void kb__bench_ctl_publish(struct kb_bench_ctl *ctl, uint64_t word);

/* Runs runner slot `slot` of `ctl` (borrowed): connects, acknowledges the current word, then
 * follows the phases until KB_BENCH_EXIT. Errors are recorded in the slot, which then stops
 * working but keeps acknowledging phases, so the coordinator never waits on it forever.
 * Returns 0, or 1 when the slot failed. */
int kb__bench_worker_run(struct kb_bench_ctl *ctl, int slot);

/* Runs every runner slot of `ctl` (borrowed) in the calling thread (--event-loop): one
 * connection per slot, made when the slot first takes part, all driven by one epoll set
 * through hiredis's async API; each slot follows the phases as kb__bench_worker_run's would
 * (batch cycles with kb_queue_cycle_prepare/_parse, the raw scripts), its claim latency taken
 * from the moment its call is written to the moment its reply is read. Not for --kills or
 * --two-call. Returns 0, or 1 when a slot failed (its error is in the slot). */
int kb__bench_loop_run(struct kb_bench_ctl *ctl);

/* Monotonic clock in nanoseconds. */
int64_t kb__bench_now_ns(void);
/* Sleeps `ns` nanoseconds (restarts after signals). */
void kb__bench_sleep_ns(int64_t ns);

#endif
