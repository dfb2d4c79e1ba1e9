/* kb-bench-queue: throughput, claim latency and exactly-once checks of the queue and ledger
 * scripts against a real redis-server (docs/benchmarks.md explains the numbers).
 *
 * One run: start a throwaway redis-server (unless an address is given), register a campaign with
 * a 3-tier ladder, enqueue items, then move N simulated runners (threads, or processes that get
 * killed with --kills), each with its own connection, through these phases:
 *   warm-up    cycles for about a second, to size the queue
 *   cycles     cycles for `seconds`                         (cycles_per_s, claim latencies);
 *              a cycle is one kb_queue_complete_and_claim, as a runner does (the runner claims
 *              once first), or with two_call a kb_queue_claim and a kb_queue_complete;
 *              with --kills the runners are killed -9 and respawned at random moments, and
 *              leases are reaped meanwhile
 *   drain      (--kills only) the survivors finish every item
 *   ret1       EVALSHA "return 1" for `seconds`            (physical floor of a script call)
 *   debit      EVALSHA one-HINCRBY script for `seconds`     (the reference: raw_script_per_s)
 * then the runners leave, claim, complete and complete+claim are profiled alone from one
 * connection, and the campaign is verified: nothing lost, nothing charged twice, the ledger
 * exact.
 */
#ifndef KB_BENCH_QUEUE_H
#define KB_BENCH_QUEUE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "fill.h"
#include "verify.h"
#include "worker.h"

struct kb_error;
struct kb_buf;

#define KB_BENCH_MAX_RUNNERS 8192
#define KB_BENCH_MAX_STEPS 16 /* runner counts the search tries */
#define KB_BENCH_MAX_CMDS 24 /* commands kept in the per-cycle server profile */

struct kb_bench_queue_opts {
  int runners;                 /* simulated runners */
  double seconds;              /* length of each measured phase */
  long items;                  /* items enqueued up front; 0 = sized from the warm-up */
  const char *redis;           /* server to use instead of starting one; NULL = start one */
  int fill;                    /* 1: store tasks * per_task candidates first */
  int tasks, per_task;         /* shape of the fill */
  int kills;                   /* > 0: runners are processes, killed -9 this many times */
  double eval_ms;              /* simulated evaluation between claim and complete */
  int two_call;                /* 1: cycles are claim + complete (two script calls); 0: one
                                  kb_queue_complete_and_claim each, as a runner does */
  int batch;                   /* K: items a runner holds, completes and claims per call
                                  (kb_queue_cycle_batch); 1: the one-item calls above */
  int search;                  /* 1: afterwards, search the largest runner count whose claim
                                  p99 stays within p99_ms (from `runners`, doubling, then
                                  halving the interval) */
  double p99_ms;               /* the search's bound, milliseconds (default 2) */
  int event_loop;              /* 1: every runner in one thread, hiredis async over one
                                  connection per runner (0: a thread per runner) */
  int progress;                /* 1: progress lines on stderr */
  uint64_t seed;               /* random kill moments and victims */
  volatile sig_atomic_t *stop; /* set by a signal handler: end early; may be NULL */
};

/* One measured phase. */
struct kb_bench_phase_stats {
  uint64_t ops;          /* cycles or script calls completed */
  double wall_s;         /* seconds, from the phase's start until every runner stopped */
  double per_s;          /* ops / wall_s */
  double redis_cpu_s;    /* CPU seconds of the redis main thread (INFO cpu) */
  double machine_busy;   /* fraction of all CPUs busy (/proc/stat; -1 when unknown) */
  double client_cpu_s;   /* CPU seconds of this process, runner threads included (-1 with
                            runner processes) */
  long forks;            /* forks of redis (AOF rewrites) during the phase; -1 unknown */
  double fork_ms;        /* how long the latest of them stopped redis, milliseconds */
};

/* Calls and server time of one command during the cycles phase (INFO commandstats). */
struct kb_bench_cmd {
  char name[48];       /* "evalsha", "hincrby", ... */
  double calls_per_op; /* calls per cycle */
  double usec_per_op;  /* server microseconds per cycle */
};

/* One script alone: `n` calls in a row from one connection after the runners left. */
struct kb_bench_script_profile {
  int n;                 /* calls */
  double usec;           /* server microseconds per call (evalsha in INFO commandstats), in
                            the fastest of 5 batches */
  double p50_ms, p99_ms; /* latency the caller saw */
  struct kb_bench_cmd cmds[KB_BENCH_MAX_CMDS]; /* commands it ran, per call */
  int n_cmds;
};

/* One runner count the search tried. */
struct kb_bench_search_step {
  int runners;
  double items_per_s;    /* items completed per second over the step */
  double calls_per_s;    /* queue script calls per second */
  double p50_ms, p99_ms; /* claim latency (every call after the ramp) */
  uint64_t samples;      /* calls measured */
  int pass;              /* p99_ms <= the bound */
};

struct kb_bench_queue_result {
  int runners;
  int kills;                          /* kill -9s performed */
  double seconds;
  char cid[64];                       /* campaign */
  struct kb_bench_phase_stats warmup, ret1, debit, cycles;
  double ratio;                       /* cycles.per_s / debit.per_s (items per second with
                                         --batch: cycles.ops counts items) */
  double calls_per_s;                 /* queue script calls per second in the cycles phase */
  struct kb_bench_search_step steps[KB_BENCH_MAX_STEPS]; /* --search, in the order tried */
  int n_steps;
  int max_runners;                    /* --search: the largest count that passed (0: none) */
  int max_capped;                     /* 1: it is KB_BENCH_MAX_RUNNERS, the search's limit */
  double claim_p50_ms, claim_p90_ms, claim_p99_ms, claim_max_ms;
  double complete_p50_ms, complete_p99_ms;
  uint64_t samples;                   /* measured cycles offered to the latency sample */
  uint64_t kept;                      /* samples kept (reservoir) */
  uint64_t empty;                     /* claims that found nothing ready in the cycles phase */
  uint64_t lease_lost;                /* completes refused because a lease had been reaped */
  long enqueued;                      /* items the benchmark added */
  long reaped;                        /* leases the reaper requeued */
  double drain_s;                     /* --kills: seconds to finish every item */
  struct kb_bench_cmd cmds[KB_BENCH_MAX_CMDS]; /* per cycle, during the cycles phase */
  int n_cmds;
  struct kb_bench_script_profile claim, complete; /* each script alone, after the phases */
  struct kb_bench_script_profile fused;           /* kb_queue_complete_and_claim alone */
  struct kb_bench_script_profile batched;         /* --batch: kb_queue_cycle_batch alone (K
                                                     completed and K claimed per call) */
  struct kb__bench_verify verify;
  long lost, double_charged;          /* from verify, also counting a failed drain as lost */
  /* --fill */
  struct kb_bench_fill_stats fill;
  long long used_memory_before;       /* bytes, before the fill */
  long long used_memory;              /* bytes, right after the fill */
  double bytes_per_candidate;         /* used_memory / candidates */
  double cand_key_bytes;              /* MEMORY USAGE of a candidate key, sampled mean */
  long long items_hash_bytes;         /* MEMORY USAGE of the items hash */
  long long queues_bytes;             /* MEMORY USAGE of the tier queues together */
};

/* Runs the benchmark described by `o` (borrowed) and fills `res` (caller-owned). Returns KB_OK
 * when it ran to the end, whatever the checks found (see res->lost, res->double_charged and
 * res->verify.ledger_exact). Errors: KB_EINVAL (bad options), KB_EIO (cannot start redis or a
 * runner), KB_ECONN, KB_EREDIS, KB_ENOMEM, KB_ETIMEOUT (runners or the drain stalled),
 * KB_EINTERRUPTED (*o->stop was set), or the first error a runner hit. */
int kb__bench_queue_run(const struct kb_bench_queue_opts *o, struct kb_bench_queue_result *res,
                       struct kb_error *err);

/* 1 when the run passed: nothing lost, nothing charged twice, the ledger exact. */
int kb__bench_queue_passed(const struct kb_bench_queue_result *res);

/* Writes the human-readable table. */
void kb__bench_queue_print_table(FILE *out, const struct kb_bench_queue_opts *o,
                                const struct kb_bench_queue_result *res);
/* Appends the final one-line JSON object (no newline) to `out` (caller-owned).
 * Errors: KB_ENOMEM. */
int kb__bench_queue_json(const struct kb_bench_queue_opts *o,
                        const struct kb_bench_queue_result *res, struct kb_buf *out);

#endif
