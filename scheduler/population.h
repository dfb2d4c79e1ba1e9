/* What the scheduler knows about each task's candidates: per tier, the latest verdict and time.
 * Rebuilt from the results stream on restart; feeds the promotion policy and the leaderboard.
 */
#ifndef KB_SCHED_POPULATION_H
#define KB_SCHED_POPULATION_H

#include <stdio.h>

#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/rank.h"
#include "kb/result.h"

struct kb_error;

struct kb_member_tier {
  int evaluated;     /* 1 once a result arrived for this tier */
  int status;        /* enum kb_status of the latest result */
  double median_us;  /* microseconds; 0 when not timed */
  double noise;      /* relative: standard deviation / mean of the samples */
  double p10_us;     /* microseconds, 10th percentile; 0 when unknown */
  double p90_us;     /* microseconds, 90th percentile; 0 when unknown */
  int samples;
  int attempt;       /* attempt of the latest result */
  double eager_us;   /* torch eager timed with the latest result (its torch_eager_us),
                        microseconds; 0 when none */
};

struct kb_member {
  char id[KB_CAND_ID_LEN + 1];
  char name[KB_ID_MAX];
  char generator[16];
  int promoted_to;   /* highest tier this candidate was enqueued at */
  struct kb_member_tier tiers[KB_MAX_TIERS];
};

struct kb_task_pop {
  char task[KB_ID_MAX];
  char baseline[KB_ID_MAX];  /* seed name speedups are measured against ("" = none) */
  struct kb_member *members; /* owned */
  int n, cap;
  long evaluations;          /* results seen */
  int loaded;                /* 1 once the task's spec (baseline, oracle kind) was read */
  int torch;                 /* 1: a PyTorch-oracle task (its last tier also times torch) */
  double torch_eager_us;     /* latest torch eager median a result carried, microseconds; 0 none */
  double torch_compile_us;   /* latest torch.compile median, microseconds; 0 none */
  int torch_tier;            /* tier those came from (the full tier); -1 none */
  /* Search state, kept by kb__policy_observe() (policy.h) from the same results: */
  long observed;             /* results the policy has seen (== evaluations when up to date) */
  double spent_ms;           /* GPU milliseconds settled for this task's results */
  double ema_gain;           /* recent log-gains, exponentially weighted over the window */
  double ema_cost;           /* recent GPU milliseconds, weighted the same way */
  long since_gain;           /* results since the last improvement */
  long gains;                /* improvements seen */
  int stopped;               /* 1 once the task met a stop condition: nothing more climbs */
  char stop_reason[96];      /* why ("" while running) */
};

struct kb_population {
  struct kb_task_pop *tasks; /* owned */
  int n, cap;
  int n_tiers;
};

void kb__population_init(struct kb_population *p, int n_tiers);
void kb__population_release(struct kb_population *p);
/* Lifetimes: the tasks and members these return are elements of arrays that grow by
 * reallocation. A pointer from kb__population_task() stays valid until the next call that adds
 * a task to `p`; one from kb__population_member(), kb__population_add(),
 * kb__population_baseline() or kb__population_best() until the next call that adds a member to
 * that task (kb__population_member() or kb__population_add() with a new candidate). All are
 * borrowed: kb__population_release() frees them. */
/* The population of `task`, created when absent (NULL on ENOMEM). */
struct kb_task_pop *kb__population_task(struct kb_population *p, const char *task);
/* The member `id` of `t`, created with `name`/`generator` when absent (NULL on ENOMEM). */
struct kb_member *kb__population_member(struct kb_task_pop *t, const char *id, const char *name,
                                       const char *generator);
/* Records a result; the same (candidate, tier, attempt) again changes nothing (a restarted
 * scheduler sees results twice). Returns the member, or NULL on ENOMEM. */
struct kb_member *kb__population_add(struct kb_population *p, const struct kb_result *r,
                                    const char *name, const char *generator);
/* The baseline member of `t` (by seed name), or NULL. */
const struct kb_member *kb__population_baseline(const struct kb_task_pop *t);
/* `m` (borrowed) as the ranking rule sees it (kb/rank.h): per tier, the median of its latest
 * result when that result passed with a timing. Fills `out` (caller-owned). */
void kb__member_rank(const struct kb_member *m, struct kb_rank *out);
/* The best member of `t` by the ranking rule (kb/rank.h: highest tier passed with a timing, then
 * the lower median there), or NULL when none passed with a timing. `*tier` gets that tier. */
const struct kb_member *kb__population_best(const struct kb_task_pop *t, int *tier);

#endif
