/* --fill: a campaign the size of the target workload (230 tasks x 2,000 candidates), with
 * plausible CUDA-like sources stored as real candidates (zstd-compressed JSON) and one queue
 * item each, to measure what Redis needs to hold it.
 */
#ifndef KB_BENCH_FILL_H
#define KB_BENCH_FILL_H

#include <stdint.h>
#include <signal.h>

#include "kb/buf.h"

struct kb_error;

struct kb_bench_fill_opts {
  const char *addr;   /* redis address (borrowed) */
  const char *cid;    /* campaign, registered and running (borrowed) */
  int tasks;          /* tasks */
  int per_task;       /* candidates per task */
  int threads;        /* connections storing in parallel */
  int progress;       /* 1: progress on stderr */
  volatile sig_atomic_t *stop; /* set when asked to stop; may be NULL */
};

struct kb_bench_fill_stats {
  long candidates;       /* stored */
  long items;            /* queue items added */
  double source_bytes;   /* total length of the generated sources */
  double json_bytes;     /* total length of the candidate JSON before compression (sampled) */
  double zstd_bytes;     /* total length of the stored values (HSTRLEN; same sample) */
  long sampled;          /* candidates in that sample */
  double seconds;        /* wall time of the fill */
};

/* Appends to `out` (caller-owned) one plausible CUDA-like candidate source of 4 to 12 KB for
 * task `task` (borrowed), kernel family `family`, derived from `seed`: includes, tunable knobs,
 * device helpers, one to four kernels and the kb_forward entry point, with comments. Different
 * seeds give different identifiers, constants, loop shapes and sizes. Errors: KB_ENOMEM. */
int kb__bench_cuda_source(uint64_t seed, const char *task, int family, struct kb_buf *out);

/* Stores opts->tasks * opts->per_task candidates with kb_catalog_put_candidate and enqueues each
 * once with kb_queue_enqueue, from opts->threads connections. Fills `st` (caller-owned).
 * Errors: those of Redis and of the candidate functions; KB_EINTERRUPTED when stopped. */
int kb__bench_fill(const struct kb_bench_fill_opts *opts, struct kb_bench_fill_stats *st,
                  struct kb_error *err);

#endif
