/* Candidate pools for kb-bench-ladder: per candidate its true time, the noise of one measured
 * median at each timed tier, and how it fails. Format: bench/data/README.md. */
#ifndef KB_BENCH_LADDER_POOL_H
#define KB_BENCH_LADDER_POOL_H

#include "kb/campaign.h"

struct kb_error;

struct kb_bench_pool_cand {
  char task[KB_ID_MAX];
  char name[KB_ID_MAX];          /* candidate id in the pool (up to 63 bytes) */
  int baseline;                  /* 1 for the task's baseline */
  double true_us;                /* microseconds */
  double noise[KB_MAX_TIERS];    /* relative standard error of a measured median; [0] unused */
  int status;                    /* enum kb_status: KB_STATUS_OK or how it fails */
  int fail_tier;                 /* tier that catches the failure; -1 when ok */
};

struct kb_bench_pool {
  char name[256];                /* file name without folder and ".csv" */
  struct kb_bench_pool_cand *c;           /* owned */
  int n;
  int n_tiers;                   /* 1 + noise columns */
};

/* Reads the pool at `path` (borrowed) into `p` (caller-owned). Errors: KB_EIO, KB_EPARSE
 * "path:line: what is wrong", KB_ENOMEM. */
int kb__bench_pool_load(const char *path, struct kb_bench_pool *p, struct kb_error *err);
void kb__bench_pool_release(struct kb_bench_pool *p);

#endif
