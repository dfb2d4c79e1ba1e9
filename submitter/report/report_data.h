/* A finished (or running) campaign as its result files tell it, for `kb-submit report` and
 * `kb-submit export`: every task's HDF5 file (results/<cid>/<task>.h5, layout
 * schemas/hdf5-layout.md) and, when present, summary.json. Nothing here talks to Redis.
 */
#ifndef KB_SUBMITTER_REPORT_DATA_H
#define KB_SUBMITTER_REPORT_DATA_H

#include <stdint.h>

#include "kb/campaign.h"
#include "kb/candidate.h"

struct kb_error;

/* One CUPTI kernel record of an evaluation's timed calls (/profiles/kernels). */
struct kb_rep_kernel {
  char name[256];     /* mangled */
  int grid[3];        /* blocks */
  int block[3];       /* threads */
  int registers;      /* per thread */
  int static_smem;    /* bytes per block */
  int dynamic_smem;   /* bytes per block */
  int64_t start_ns;   /* CUPTI clock */
  int64_t end_ns;     /* CUPTI clock */
  int64_t stream;     /* CUPTI stream id */
};

struct kb_rep_eval {
  int tier; /* index into the campaign's ladder */
  char tier_name[KB_ID_MAX];
  int attempt;      /* 1 for the first try */
  char status[16];  /* "ok", "compile_error", ... */
  char reason[256]; /* why, for any status but ok */
  char runner[KB_ID_MAX];
  char device[KB_ID_MAX];
  double started;     /* unix seconds; NaN unknown */
  double finished;    /* unix seconds; NaN unknown */
  double compile_s;   /* seconds */
  int compile_cached; /* 1 when the library came from the cache */
  int registers;      /* per thread; -1 unknown */
  int spills;         /* bytes; -1 unknown */
  int shared_bytes;   /* bytes; -1 unknown */
  int sets_checked;
  double max_abs_err;                     /* NaN when not checked */
  double max_rel_err;                     /* NaN when not checked */
  int samples;                            /* timed calls; 0 = not timed */
  double median_us;                       /* microseconds; NaN when not timed */
  double p10_us, p90_us, mean_us, min_us; /* microseconds */
  double noise;                           /* relative */
  int64_t cost_ms;                        /* settled GPU (host: CPU) milliseconds */
  char *compile_log;                      /* owned; NULL when none */
  /* Format 2 (NaN or -1 in files of format 1): */
  double baseline_median_us; /* baseline re-timed in the same run, microseconds; NaN none */
  double same_run_speedup;   /* baseline_median_us / median_us; NaN none */
  double kernel_us;          /* Range Profiler: the longest kernel, microseconds; NaN none */
  double dram_pct, sm_pct, occupancy_pct, l2_hit_pct; /* % ; NaN unknown */
  int64_t trace_kernels;     /* kernel trace: kernels seen; -1 when not traced */
  int64_t trace_own_kernels; /* the candidate's, on its stream */
  int64_t trace_own_ns;      /* their time, nanoseconds */
  int64_t trace_other_ns;    /* on other streams, nanoseconds */
  int64_t trace_late_ns;     /* outside the timed windows, nanoseconds */
  int64_t kernels_dropped;   /* records not stored (past the cap) */
  struct kb_rep_kernel *kernels; /* owned, n_kernels; NULL when none */
  int n_kernels;
  /* Format 3 (NaN in earlier files): */
  double torch_eager_us;     /* torch eager median timed after this evaluation; NaN none */
  double torch_compile_us;   /* torch.compile median; NaN none */
};

/* One LLM exchange of the task (/llm/requests and /llm/text). */
struct kb_rep_llm {
  char request[KB_CAND_ID_LEN + 1]; /* its id, "llm:<task>:<seq>" */
  double time;                      /* unix seconds */
  char kind[16];                    /* translate, mutate, crossover, repair */
  char status[16];                  /* ok, no_code, failed */
  char model[KB_ID_MAX];
  int attempts;
  int64_t tokens_in, tokens_out;
  char candidate[KB_CAND_ID_LEN + 1]; /* the candidate it produced; "" none */
  char parent0[KB_CAND_ID_LEN + 1];
  char parent1[KB_CAND_ID_LEN + 1];
  char error[256];
  char *prompt;   /* owned */
  char *response; /* owned */
};

struct kb_rep_cand {
  char id[KB_CAND_ID_LEN + 1];
  char name[KB_ID_MAX];
  char generator[16];
  char parent0[KB_CAND_ID_LEN + 1]; /* "" when none */
  char parent1[KB_CAND_ID_LEN + 1]; /* "" when none */
  char knobs[256];
  char flags[256];
  double created;            /* unix seconds */
  int best_tier;             /* highest evaluated tier; -1 when not evaluated */
  char status[16];           /* status at best_tier; "" when not evaluated */
  char *source;              /* owned */
  struct kb_rep_eval *evals; /* owned, n_evals */
  int n_evals;
  /* Derived by kb__report_load. */
  int timed_tier;   /* highest tier with an ok timed evaluation; -1 none */
  double median_us; /* at timed_tier; NaN none */
  double speedup;   /* baseline median / median_us at timed_tier; NaN none */
  double speedup_eager;   /* torch eager / its median at the task's torch_tier, when it is
                             timed (ok) there: the eager timed with that evaluation where it
                             was, else the task's torch_eager_us (kb_rank_eager_speedup); NaN
                             otherwise */
  double speedup_compile; /* the same against torch_compile_us */
  int rank;         /* 1 = best in its task */
};

/* A candidate's id and index, sorted by id (kb__rep_find). */
struct kb_rep_id {
  const char *id; /* borrowed from the candidate */
  int index;      /* into the task's cands */
};

struct kb_rep_task {
  char id[KB_ID_MAX];
  char name[128];            /* task.json "name" */
  char category[64];         /* task.json "category" */
  char baseline[KB_ID_MAX];  /* baseline seed name; "" none */
  int baseline_cand;         /* index into cands; -1 none */
  char *file;                /* owned: the HDF5 file read */
  char *spec_json;           /* owned: task.json text */
  char *reference;           /* owned: reference source */
  struct kb_rep_cand *cands; /* owned, n_cands, in file order */
  int n_cands;
  int *order;              /* owned: indices into cands by rank */
  struct kb_rep_id *by_id; /* owned: n_cands entries sorted by id */
  int *child_off;          /* owned: children of cands[i] are child_idx[child_off[i] ..
                              child_off[i + 1]) */
  int *child_idx;          /* owned: indices into cands */
  int64_t n_evals;
  struct kb_rep_llm *llm;  /* owned, n_llm, in the order they finished; NULL in format 1 */
  int n_llm;
  int format;              /* the file's format version: 1, 2, 3 */
  /* Torch baselines (format 3, /torch; kb__rep_torch_best): */
  double torch_eager_us;   /* median of the evaluations' torch eager times, microseconds; NaN */
  double torch_compile_us; /* the same for torch.compile; NaN none */
  int torch_tier;          /* tier they were timed at (the full tier); -1 none */
  int level;               /* KernelBench level (category "kernelbench-level<N>"); 0 none */
  int problem;             /* KernelBench problem number (id "l<N>_<problem>_..."); -1 none */
  int torch_best;          /* index into cands of rank 1 when timed at torch_tier; -1 none */
};

struct kb_report {
  char campaign[KB_ID_MAX];
  char state[16];       /* from summary.json; "unknown" without one */
  char reason[256];     /* why it ended, from summary.json */
  int64_t gpu_total_ms; /* budget; -1 unknown */
  int64_t gpu_spent_ms; /* from the ledger (summary) or the evaluations' costs */
  int64_t gpu_rows_ms;  /* the evaluations' cost_ms summed over the files (the burn-down's end):
                           equal to the ledger's spent at the end of a campaign */
  double finished;      /* unix seconds, from summary.json; 0 unknown */
  char tier_names[KB_MAX_TIERS][KB_ID_MAX]; /* names seen in the evaluations */
  int n_tiers;                              /* highest tier seen + 1 */
  struct kb_rep_task *tasks;                /* owned */
  int n_tasks;
  char *dir; /* owned: the results folder read */
  int top;   /* html, md: candidates shown per task (by rank); 0 = all */
  int tier;  /* export --tier: only evaluations at this ladder tier when tier_only is 1 */
  int tier_only; /* 0: each candidate at its best tier (what kb__report_load sets) */
};

/* Reads the campaign in folder `dir` (borrowed): summary.json when present (its task order and
 * ledger), and every <task>.h5 (the ones summary.json names, else all *.h5 in `dir`, sorted).
 * Files a writer still has open are read as SWMR readers, up to their last commit.
 * Errors: KB_ENOTFOUND (no result files in `dir`), KB_EHDF5 or KB_EPARSE naming the file,
 * KB_EIO, KB_ENOMEM. `r` (caller-owned) is released on failure. */
int kb__report_load(const char *dir, struct kb_report *r, struct kb_error *err);
/* Frees what `r` owns; NULL is fine. */
void kb__report_release(struct kb_report *r);

/* Index of candidate `id` in `t->cands`, or -1. O(log n). */
int kb__rep_find(const struct kb_rep_task *t, const char *id);
/* 1 when the html and md reports show candidate `c` (its rank is within r->top). */
int kb__rep_shown(const struct kb_report *r, const struct kb_rep_cand *c);
/* The evaluation of `c` at its best tier (latest attempt; borrowed from `c`), or NULL when it
 * has none. */
const struct kb_rep_eval *kb__rep_best_eval(const struct kb_rep_cand *c);

/* The median of `c` at `tier` when its latest evaluation there passed with a timing
 * (kb_rank_timed, kb/rank.h), else NaN. */
double kb__rep_timed_median(const struct kb_rep_cand *c, int tier);

/* The walk every writer shares: what kb__rep_walk() calls. Each callback may be NULL; `arg`
 * (borrowed) is passed to each; every pointer a callback gets is borrowed from the report. */
struct kb_rep_walker {
  /* before a task's candidates; `ti` is its index in r->tasks */
  void (*task_begin)(void *arg, const struct kb_rep_task *t, int ti);
  /* each candidate of the task, in rank order */
  void (*cand)(void *arg, const struct kb_rep_task *t, int ti, const struct kb_rep_cand *c);
  /* each evaluation of that candidate, in file order, after `cand` */
  void (*eval)(void *arg, const struct kb_rep_cand *c, const struct kb_rep_eval *e);
  /* after a task's candidates */
  void (*task_end)(void *arg, const struct kb_rep_task *t, int ti);
  int shown_only; /* 1: only the candidates the html and md reports show (kb__rep_shown) */
  void *arg;
};
/* Walks `r`: task by task in report order, its candidates by rank, their evaluations. */
void kb__rep_walk(const struct kb_report *r, const struct kb_rep_walker *w);
/* The name of ladder tier `tier` as the files give it; "" when unknown (borrowed from `r`). */
const char *kb__rep_tier_name(const struct kb_report *r, int tier);

/* KernelBench's level and problem number into t->level and t->problem (from t->category and
 * t->id), for tasks made by tools/kb-import-kernelbench: its category is
 * "kernelbench-level<N>" and its id "l<N>_<problem>_<name>"; 0 and -1 when not such a task.
 * kb__report_load calls it. */
void kb__rep_kernelbench_ids(struct kb_rep_task *t);
/* The candidate of `t` that fast_p and the task's torch speedups use: the task's best by the
 * ranking rule (kb/rank.h; rank 1) when its highest timed tier is t->torch_tier, the full tier
 * the torch baselines come from; -1 otherwise (no candidate timed there, or torch never timed). */
int kb__rep_torch_best(const struct kb_rep_task *t);
/* The task's speedup of its torch_best over torch eager (`compile` 0) or torch.compile (1), for
 * fast_p: that speedup; 0 when the baseline is known but no candidate is correct and timed at
 * the full tier; NaN when the baseline is unknown. */
double kb__rep_torch_speedup(const struct kb_rep_task *t, int compile);

/* Builds t->by_id from t->cands. Returns KB_OK or KB_ENOMEM. Internal. */
int kb__rep_index(struct kb_rep_task *t);
/* Reads one task file into `t` (caller-owned, zeroed; released by kb__report_release).
 * Internal to report_h5.c and report_data.c. */
int kb__report_read_h5(const char *path, struct kb_rep_task *t, struct kb_report *r,
                       struct kb_error *err);

#endif
