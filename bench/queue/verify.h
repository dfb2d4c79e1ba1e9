/* After a benchmark run: nothing lost, nothing charged twice, the ledger exact. Reads the whole
 * campaign (items hash, results stream, charges, queues, leases, ledger), so call it only when
 * no runner is working any more.
 */
#ifndef KB_BENCH_VERIFY_H
#define KB_BENCH_VERIFY_H

#include <stdint.h>

#include "kb/queue.h"

struct kb_error;

struct kb__bench_verify {
  long items;            /* fields of the items hash */
  long queued, leased, done, dead, other; /* items by state */
  long in_queues;        /* members of the tier queues */
  long in_leases;        /* members of the lease set */
  long results;          /* entries of the results stream (XLEN) */
  long results_distinct; /* distinct item ids among them */
  long charges_posted;   /* charges settled ("P:") */
  long lost;             /* items gone: missing, done without a result, stranded outside
                            every queue and lease, or in no known state */
  long double_charged;   /* items with two results or two posted charges, or a result or
                            posted charge while not done, or a result for an unknown item */
  int64_t total, available, held, spent; /* the GPU ledger, milliseconds */
  int64_t posted_sum;    /* sum of the posted charges */
  int64_t held_sum;      /* sum of the charges still held */
  int ledger_exact;      /* available+held+spent == total, spent == posted_sum,
                            held == held_sum == 0 */
};

/* Checks campaign `q` (borrowed) against `enqueued`, the number of items the benchmark added.
 * Fills `v` (caller-owned). Returns KB_OK when the check ran, whatever it found; errors are
 * those of Redis (KB_ECONN, KB_EREDIS) and KB_ENOMEM. */
int kb__bench_verify(struct kb_queue *q, long enqueued, struct kb__bench_verify *v,
                    struct kb_error *err);

#endif
