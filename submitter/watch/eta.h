/* The time a campaign still needs, from what a progress snapshot shows: the open items per tier,
 * the promotion rates observed so far, the mean settled cost of a result per tier, the spend
 * rate up to the last settlement, and how long the items under way have run since it; with
 * several runners, each task's counts, the open items with their candidates' costs and the
 * runners busy, played on the runners, a candidate's cost at a tier it has not reached priced
 * from its own time per call (the per-call model: fixed part + timed calls, the baseline's
 * too at the last tier); and when its budget runs out at the recent spend rate.
 * docs/report.md ("The ETA") says how. Pure functions (they allocate only the simulation's
 * scratch, freed before they return): kb-submit status/watch call them on each snapshot, and
 * tests/report/test_eta.c on recorded campaigns' snapshots.
 */
#ifndef KB_SUBMITTER_ETA_H
#define KB_SUBMITTER_ETA_H

#include <stdint.h>

#include "kb/campaign.h"

/* Promotion rate assumed for a tier nothing was evaluated at yet: the policy's default top
 * 1/eta (eta 3) climbs, plus the baseline. */
#define KB_ETA_PRIOR_RATE (1.0 / 3.0)

/* One task's items and results per tier, for the estimate with several runners. */
struct kb_eta_task {
  int64_t ready[KB_MAX_TIERS];     /* items waiting */
  int64_t leased[KB_MAX_TIERS];    /* items leased by a runner */
  int64_t evaluated[KB_MAX_TIERS]; /* results so far */
  double settled_ms[KB_MAX_TIERS]; /* settled GPU ms of those results (sum) */
  double first_ms[KB_MAX_TIERS];   /* of settled_ms, its first result's (optional, 0 = unknown):
                                    * a task's first evaluation prepares what its later ones
                                    * reuse (its inputs, its reference), so it costs more */
  /* Optional (0 = unknown), what the cost of a tier not yet seen is predicted from: */
  double timed_ms[KB_MAX_TIERS];   /* of settled_ms, the timed calls' part (sum): per result
                                    * (warmup + samples) x its mean time per call, plus the
                                    * baseline's calls where it was re-timed in the same run */
  int64_t samples[KB_MAX_TIERS];   /* timed samples of those results (sum) */
  double cap_samples[KB_MAX_TIERS]; /* what kb__eta_samples_cap gives for each (sum): samples /
                                     * cap_samples is how far sampling ran towards its cap */
  double base_us[KB_MAX_TIERS];    /* its baseline's time per call at the tier (the baseline's
                                    * latest timed result there, or a same-run re-timing) */
  double pair_us[KB_MAX_TIERS];    /* over its timed results at the tier whose candidate was
                                    * timed at a lower tier before: their time per call (sum), */
  double pair_from_us[KB_MAX_TIERS]; /* and that candidate's at its tier before (sum): how a
                                      * kernel's time per call moved from tier to tier */
};

/* One open item (ready or leased), for the simulation: what its candidate cost so far. */
struct kb_eta_item {
  int task;        /* index into kb_eta_in.tasks */
  int tier;
  int leased;      /* 1: leased by a runner; 0: ready */
  double basis_ms; /* settled GPU ms of its candidate's result at basis_tier; 0 = none yet */
  int basis_tier;  /* the highest tier its candidate has a result at; -1 = none */
  double basis_us; /* that result's mean time per timed call, microseconds; 0 = not timed */
  int runner;      /* a leased item: its runner's id (as kb_eta_in.busy_runner), -1 unknown */
};

/* Busy runners tracked for the in-flight term (kb_eta_in.busy_s). */
#define KB_ETA_MAX_BUSY 256
/* An evaluation under way that has run past its expected duration is expected to run on for
 * this share of the time it has run so far (it is evidently dearer than its estimate). */
#define KB_ETA_OVERDUE 0.5
/* Items the runner simulation plays at most; past it the estimate is the work over all runners
 * (kb__eta_estimate). */
#define KB_ETA_SIM_ITEMS 20000

struct kb_eta_in {
  int n_tiers;
  int64_t ready[KB_MAX_TIERS];     /* items waiting per tier */
  int64_t leased[KB_MAX_TIERS];    /* items being evaluated per tier */
  int64_t evaluated[KB_MAX_TIERS]; /* results per tier so far */
  double cost_ms[KB_MAX_TIERS];    /* mean settled GPU ms of a result per tier; 0 = none yet */
  double plan_ms[KB_MAX_TIERS];    /* the tier's planning estimate (cost_ms of the ladder) */
  double gpu_rate;     /* GPU ms settled per second, recently, up to the last settlement
                        * (kb__eta_work_rate); 0 = unknown */
  double since_settled_s; /* seconds since the last settlement: the leased items' progress,
                           * counted up to their expected cost */
  double spend_rate;   /* GPU ms settled per second, recently, up to now (kb__eta_rate), for
                        * when the budget runs out; 0 = use gpu_rate */
  double gpu_left_ms;  /* GPU ms available (not spent nor held) */
  double deadline_s;   /* seconds to the deadline; < 0 = none */
  int generating;      /* 1: generators propose new candidates until budget or a stop rule */
  /* With several runners (all optional: absent, the estimate above over the per-tier totals): */
  double max_s[KB_MAX_TIERS]; /* the tier's max_seconds (timed time per input set at most);
                               * 0 = none: an unseen tier is then priced by plan_ms */
  const struct kb_eta_task *tasks; /* per task (borrowed); NULL = not known */
  int n_tasks;
  const struct kb_eta_item *items; /* the open items (borrowed); NULL = only the per-task
                                    * counts (every item priced at its task's cost) */
  int n_items;
  int runners;         /* runners that can take work (alive, at least the busy ones); 0 = unknown */
  double runner_rate;  /* GPU ms settled per second per busy runner (kb__eta_runner_rate);
                        * 0 = unknown. Only as "something settled": the simulation times an
                        * item by its cost plus over_ms, which this rate folds together */
  double over_ms[KB_MAX_TIERS]; /* per tier, a runner's mean time on a result beyond its
                                 * settled cost, ms (claim, compile wait, start-up) */
  int64_t over_n[KB_MAX_TIERS]; /* results that mean is over; 0 = unknown (then cost / rate) */
  int warmup[KB_MAX_TIERS];      /* the ladder's sample rules per tier (kb/campaign.h), for */
  int min_samples[KB_MAX_TIERS]; /* the cost of a candidate at a tier it has not reached: */
  int max_samples[KB_MAX_TIERS]; /* max_samples 0 = unknown (then priced by tier_ratio) */
  int n_busy;          /* runners holding a lease, and for each */
  double busy_s[KB_ETA_MAX_BUSY]; /* the seconds since its latest result (or since it was
                                   * first seen busy): how far its evaluation under way is */
  int busy_runner[KB_ETA_MAX_BUSY]; /* its id (any int, the leased items' kb_eta_item.runner);
                                     * -1 unknown: then it is matched with any leased item */
};

struct kb_eta {
  double work_ms;       /* expected GPU ms of the open items and their promotions */
  double eta_s;         /* seconds until the campaign ends; -1 = unknown */
  double exhaust_s;     /* seconds until the GPU budget runs out at spend_rate; -1 = unknown */
  int bound;            /* what ends it: 0 the work, 1 the budget, 2 the deadline */
  int simulated;        /* 1: the runners were simulated per task (kb_eta_in.tasks), 0: the
                         * work over the work rate */
};

/* A spend rate per second from `n` snapshots (oldest first) at times `t_ms` (unix ms) of the
 * amount spent `spent` (both borrowed), the last being now: over those of the last minute when
 * they span 10 s or more, else since `created_ms` (the campaign's submission; 0 = unknown, then
 * 0 is returned for a short span). */
#define KB_ETA_RATE_WINDOW_MS 60000
#define KB_ETA_RATE_MIN_SPAN_MS 10000
double kb__eta_rate(const int64_t *t_ms, const int64_t *spent, int n, int64_t created_ms);
/* The rate the work is done at: kb__eta_rate over the snapshots up to the first one that shows
 * the current amount spent (the last settlement), so that the time an evaluation under way has
 * run but not yet settled does not sag the rate; `*since_s` gets the seconds from that snapshot
 * to now (the last). Same arguments as kb__eta_rate. */
double kb__eta_work_rate(const int64_t *t_ms, const int64_t *spent, int n, int64_t created_ms,
                         double *since_s);
/* GPU ms settled per second per busy runner: over the snapshots up to the last settlement (as
 * kb__eta_work_rate), the last minute of them when they span 10 s or more, else all of them:
 * the GPU ms settled over the runner-seconds, each interval's runners the mean of the busy
 * runners `busy` at its two ends. Arrays borrowed, `n` long, oldest first. 0 when no
 * runner-second passed. */
double kb__eta_runner_rate(const int64_t *t_ms, const int64_t *spent, const int *busy, int n);
/* The predicted end, smoothed: `pred_end_s` (now_s + an estimate) moved towards from
 * `prev_end_s` (the previous smoothed end; < 0 = none) by 1 - exp(-dt_s / tau), so that a
 * snapshot taken between a result and its promotion (the promoted item not yet counted at the
 * tier above, so the promotion rate dips) and the step at each settlement do not jolt the
 * display. tau is KB_ETA_SMOOTH_S, or KB_ETA_SMOOTH_REL of the time the estimate leaves when
 * that is less (the display's lag stays a small part of what is left; at the end, none).
 * Returns the new smoothed end. */
#define KB_ETA_SMOOTH_S 5.0
#define KB_ETA_SMOOTH_REL 0.2
double kb__eta_smooth(double prev_end_s, double pred_end_s, double now_s, double dt_s);
/* Fills `out` from `in` (both caller-owned). With per-task counts, runners and a rate
 * (in->tasks, in->runners, runner_rate or gpu_rate), it plays the open items and their
 * expected promotions on the runners (docs/report.md, "The ETA"); otherwise the work over the
 * work rate. */
void kb__eta_estimate(const struct kb_eta_in *in, struct kb_eta *out);
/* The timed samples an evaluation at a tier with these sample rules takes of a kernel of
 * `us` microseconds per call when the noise target does not stop it first: max_seconds of
 * timed time, at least min_samples, at most max_samples. 0 when max_samples is 0 or us <= 0. */
double kb__eta_samples_cap(int min_samples, int max_samples, double max_seconds, double us);

#endif
