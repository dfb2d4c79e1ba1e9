/* kb-bench-ladder's runs and metrics: for each task of a pool and each seed, a flat and a
 * ladder replay (replay.h), compared as docs/search.md ("How the benchmark is computed") says:
 * gpu_s_ratio, top5_survival, false_prune_rate, and the anytime curves. */
#ifndef KB_BENCH_LADDER_LADDER_H
#define KB_BENCH_LADDER_LADDER_H

#include <stdio.h>

#include "pool.h"
#include "replay.h"

struct kb_error;

/* Metrics summed over runs (one run = one task of one pool with one seed). */
struct kb_bench_totals {
  double log_ratio_sum;  /* sum of log(gpu_s_ratio) over runs */
  double ratio_min;
  int runs;
  double top5_sum;       /* sum of per-run survival */
  long winners, pruned;  /* winners: ok, true time within 5% of the pool's best */
};

/* Replays every task of pool `p` (borrowed) with seeds first_seed..first_seed+n_seeds-1 under `o` (borrowed; its seed
 * is set per run), prints a table row per run and a line for the pool on stdout when `level` >= 1
 * (0: nothing), and when `level` >= 2 also where each method's GPU seconds went (explain()),
 * writes anytime curves to `csv_dir`/<pool>-<task>-seed<N>.csv when `csv_dir` is not NULL, and
 * adds every run to `all`. Errors: KB_EPARSE (a task without exactly one baseline), KB_EIO (a
 * curve file), KB_ENOMEM. */
int kb__bench_ladder_pool(const struct kb_bench_pool *p, struct kb_bench_replay_opts *o,
                         int first_seed, int n_seeds, const char *csv_dir, int level,
                         struct kb_bench_totals *all, struct kb_error *err);
/* Prints the final JSON line of `all` (borrowed) to `out`: geometric mean of the ratios, mean
 * top-5 survival, pooled false-prune rate. */
void kb__bench_ladder_json(FILE *out, const struct kb_bench_totals *all);

#endif
