/* A campaign's live progress, read from Redis: the status script's snapshot (state, items,
 * ledger, ready items per tier), the leases per tier, the runners' heartbeats, and what the
 * results stream says so far (evaluations per tier, best speedup per task, throughput). Used by
 * `kb-submit status` (one snapshot) and `kb-submit watch` (one snapshot per refresh: the results
 * stream is read incrementally, from where the previous refresh stopped).
 *
 * Reads only; the keys are the ones kb/queue.h and kb/catalog.h document.
 */
#ifndef KB_SUBMITTER_PROGRESS_H
#define KB_SUBMITTER_PROGRESS_H

#include <stdint.h>

#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/queue.h"
#include "kb/rank.h"
#include "eta.h"

struct kb_error;

#define KB_PROGRESS_RING 512 /* result timestamps kept for the throughput estimate */
#define KB_PROGRESS_SPEND 64 /* snapshots of the ledger kept for the spend rates */
#define KB_PROGRESS_RUNNERS 256 /* runners tracked by name (leases, latest result) */
/* Per-task ready counts are read (the ready queues, ZRANGE) only while this many items or
 * fewer are ready: past it the tail is far off and the per-tier totals do (eta.h). */
#define KB_PROGRESS_TASK_READY 4096

struct kb_progress_task {
  char id[KB_ID_MAX];        /* task id */
  char baseline[KB_ID_MAX];  /* name of the baseline seed; "" when the task has none */
  int baseline_cand;         /* index into the candidate table, -1 until seen */
  int64_t results;           /* results recorded for this task */
  /* The best by the ranking rule (kb/rank.h) and its speedup over the baseline at the highest
   * tier where both are timed (docs/search.md, "Ranking"). */
  char best_name[KB_ID_MAX]; /* the best candidate's name; "" = none timed yet */
  int rank_tier;             /* the highest tier the best passed with a timing; -1 = none */
  double best_speedup;       /* baseline median / the best's median at best_tier; 0 = none */
  int best_tier;             /* tier of best_speedup; -1 = no tier has both timed */
  double torch_eager_us;     /* latest torch eager median a result carried (full tier); 0 none */
  double torch_compile_us;   /* latest torch.compile median; 0 none */
  int torch_tier;            /* tier those came from; -1 none */
  double best_vs_eager;      /* torch_eager_us / the best's median, when rank_tier is torch_tier;
                                0 = none */
  double best_vs_compile;    /* torch_compile_us / that median; 0 = none */
};

/* A runner seen holding a lease or settling a result (internal to progress.c). */
struct kb_progress_runner {
  char name[KB_ID_MAX];  /* as its leases and results name it */
  int leases;            /* leases it holds at this snapshot */
  int64_t seen_ms;       /* when it was first seen holding a lease, unix ms */
  int64_t last_ms;       /* its latest result's stream time, unix ms; 0 = none since it was
                          * last seen idle */
};

/* One candidate seen in the results stream (internal to progress.c, kept here for the size). */
struct kb_progress_cand {
  char id[KB_CAND_ID_LEN + 1];
  char name[KB_ID_MAX];
  int task;                       /* index into tasks */
  struct kb_rank rank;            /* per tier, the median of its latest result when that passed
                                     with a timing (kb_rank_timed); 0 = none */
  double eager_us[KB_MAX_TIERS];  /* per tier, torch eager timed with that result (its
                                     torch_eager_us), us; 0 = none */
  double cost_ms;                 /* settled GPU ms of its result at the highest tier it has one */
  int cost_tier;                  /* that tier; -1 = no result yet */
  double cost_us;                 /* that result's mean time per timed call, us; 0 = not timed */
};

struct kb_progress {
  struct kb_queue q;               /* the campaign (attached by kb__progress_open) */
  char cid[KB_ID_MAX];             /* campaign id */
  struct kb_queue_status st;       /* status script snapshot */
  int64_t now_ms;                  /* redis clock at the snapshot, unix milliseconds */
  int64_t deadline;                /* unix seconds; 0 = none */
  int64_t lease_ms;                /* a runner is alive while its heartbeat is this recent */
  int64_t leased[KB_MAX_TIERS];    /* leases per tier */
  int64_t evaluated[KB_MAX_TIERS]; /* results per tier */
  int64_t passed[KB_MAX_TIERS];    /* results with status ok per tier */
  int64_t results;                 /* results read from the stream so far */
  int64_t bad_entries;             /* stream entries that were not valid results */
  int runners_alive;               /* heartbeats within lease_ms */
  int runners_known;               /* runners that ever sent a heartbeat */
  int runners_busy;                /* runners holding a lease now (live leases) */
  int task_ready;                  /* 1: counts[].ready was read at this snapshot */
  struct kb_eta_task *counts;      /* owned, per task (n_tasks): items and results per tier */
  struct kb_eta_item *items;       /* owned, the open items when task_ready (n_items of
                                      cap_items): each with its candidate's latest cost */
  int n_items, cap_items;
  double runner_rate;              /* GPU ms settled per second per busy runner (eta.h,
                                      kb__eta_runner_rate); 0 = unknown */
  struct kb_progress_runner *runners; /* owned, n_runners used (at most KB_PROGRESS_RUNNERS) */
  int n_runners;
  double rate;                     /* results per second over the last minute (or less) */
  double eta_s;                    /* seconds until the campaign ends (eta.h); -1 = unknown */
  int64_t created_ms;              /* when the campaign was submitted, unix ms; 0 = unknown */
  int generating;                  /* 1: the campaign file enables generators */
  double cost_ms[KB_MAX_TIERS];    /* settled GPU ms of the results read, per tier (sum) */
  /* Per tier, over the results whose runner's previous result (or first lease, when it had
   * been idle) is known: the runner's time from that to this result beyond the result's
   * settled cost (sum, ms; the claim, compile wait, start-up and settling), and how many. */
  double over_ms[KB_MAX_TIERS];
  int64_t over_n[KB_MAX_TIERS];
  double gpu_rate;                 /* GPU ms spent per second: the last minute of snapshots,
                                      else since the campaign was submitted; 0 = unknown */
  double llm_rate;                 /* LLM tokens spent per second, the same way */
  struct kb_eta eta;               /* the estimate behind eta_s, and the budget projection */
  double end_s;                    /* the smoothed predicted end, unix seconds; -1 = none */
  int64_t end_at_ms;               /* the snapshot end_s was last moved at */
  struct kb_progress_task *tasks;  /* owned */
  int n_tasks;
  /* Incremental reading state. */
  char stream_pos[48];            /* id of the last results stream entry read */
  struct kb_progress_cand *cands; /* owned, n_cands used of cap_cands */
  int n_cands, cap_cands;
  int *slots;                     /* owned open-addressing index into cands, -1 = free */
  int n_slots;                    /* a power of two */
  int64_t ring[KB_PROGRESS_RING]; /* stream entry times of recent results, milliseconds */
  int ring_n;                     /* entries used (at most KB_PROGRESS_RING) */
  int ring_head;                  /* next slot to write */
  int64_t spend_t[KB_PROGRESS_SPEND];   /* snapshot times, unix ms */
  int64_t spend_gpu[KB_PROGRESS_SPEND]; /* GPU ms spent then */
  int64_t spend_llm[KB_PROGRESS_SPEND]; /* LLM tokens spent then */
  int spend_busy[KB_PROGRESS_SPEND];    /* runners busy then */
  int spend_n;                          /* snapshots kept (oldest first) */
};

/* Attaches `p` (caller-owned; zeroed here) to campaign `cid` over `redis` (borrowed, must outlive
 * `p`) and reads the task list. Errors: KB_ENOTFOUND (no such campaign), KB_ECONN, KB_EREDIS,
 * KB_ENOMEM. Release with kb__progress_release, also on failure. */
int kb__progress_open(struct kb_progress *p, struct kb_redis *redis, const char *cid,
                     struct kb_error *err);
/* Takes a new snapshot: the status script, leases, runners, and the results stream entries
 * added since the last call. Errors: KB_ENOTFOUND (the campaign was removed), KB_ECONN,
 * KB_EREDIS, KB_ENOMEM. */
int kb__progress_update(struct kb_progress *p, struct kb_error *err);
/* The ETA inputs of the current snapshot (eta.h), into `in` (caller-owned). in->tasks is
 * borrowed from `p` (valid until its next update or release), NULL when the per-task counts
 * were not read. */
void kb__progress_eta_input(const struct kb_progress *p, struct kb_eta_in *in);
/* 1 when the campaign has ended (state done or cancelled). */
int kb__progress_ended(const struct kb_progress *p);
/* Frees what `p` owns; NULL is fine. */
void kb__progress_release(struct kb_progress *p);

#endif
