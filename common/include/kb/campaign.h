/* Campaigns: what to optimize, with what budget, by when. Spec: schemas/campaign.schema.json.
 * Example: examples/demo/campaign.json. User docs: docs/campaign.md.
 *
 * campaign.json fields:
 *   "schema": "kernelbrain.campaign/1"
 *   "id": "[a-z0-9][a-z0-9_.-]{0,62}"
 *   "name": string (optional, default: the id)
 *   "backend": "host" | "cuda"
 *   "tasks": [path to a task bundle folder, relative to the campaign file] (1..1024, unique;
 *            each folder must exist and hold a task.json)
 *   "budget": {"gpu_seconds": number>0 and <=1e9, "llm_tokens": int>=0 (optional, default 0)}
 *   "deadline": RFC 3339 UTC time "2026-12-01T08:00:00Z", optional fraction, "Z" only (optional)
 *   "max_attempts": int 1..20 (optional, default 3)
 *   "lease_seconds": int 5..86400 (optional, default 120)
 *   "results_dir": path relative to the campaign file (optional, default "results")
 *   "ladder": [tier objects] (optional; default: compile, smoke, screen, full as below)
 *      {"name": id, "cost_ms": int>=0 reserved per evaluation, "input_sets": int 0..32 (0 = all),
 *       "warmup": int 0..1e6, "min_samples": int 1..1e6, "max_samples": int 1..1e6 (>= min),
 *       "max_seconds": number>0, "noise": number>0 relative noise target,
 *       "timeout_seconds": number>0}
 *      The first tier is always named "compile" (it does not time: its sample fields are
 *      ignored); 1..8 tiers with unique names. A tier named like a default one (compile, smoke,
 *      screen, full) takes that tier's values for the fields it leaves out; any other tier
 *      must give every field.
 *   Default ladder:  name     cost_ms sets warmup samples  max_seconds noise timeout_seconds
 *                    compile        0    -      -       -            -     -             120
 *                    smoke         50    1      1    3..5          0.5   1.0              10
 *                    screen       200  all      2  10..50          1.0  0.05              30
 *                    full        1000  all      3 20..200          3.0  0.01              60
 *   "generators": {"seed": bool} (optional, default true; only the seed generator exists yet)
 *   "target_speedup": number>0 (optional; stop a task once reached)
 * Unknown fields are errors at every level; so are task paths naming the same folder.
 */
#ifndef KB_CAMPAIGN_H
#define KB_CAMPAIGN_H

#include <stdint.h>

#include "kb/task.h"

#define KB_MAX_TIERS 8
#define KB_MAX_TASKS 1024

struct kb_error;

struct kb_tier {
  char name[KB_ID_MAX]; /* "compile", "smoke", "screen", "full" */
  int64_t cost_ms;      /* budget reserved per evaluation, GPU milliseconds */
  int input_sets;       /* input sets checked; 0 = all of the task's */
  int warmup;           /* untimed calls before sampling */
  int min_samples;      /* timed calls at least */
  int max_samples;      /* timed calls at most */
  double max_seconds;   /* stop sampling after this much timed time, seconds */
  double noise;         /* stop sampling once relative noise (stddev/mean of median) is below */
  double timeout_s;     /* watchdog for one evaluation, seconds */
};

struct kb_campaign {
  char id[KB_ID_MAX];    /* campaign id */
  char *name;            /* owned */
  char *path;            /* absolute path of campaign.json (owned) */
  char *dir;             /* absolute folder of campaign.json (owned) */
  int backend;           /* enum kb_backend */
  char **task_dirs;      /* absolute task bundle folders, symbolic links resolved (owned) */
  int n_tasks;           /* entries of task_dirs */
  int64_t budget_gpu_ms;     /* GPU milliseconds */
  int64_t budget_llm_tokens; /* LLM tokens */
  int64_t deadline;      /* unix seconds, 0 = none */
  int max_attempts;      /* evaluation attempts before an item is dead-lettered */
  int lease_seconds;     /* how long a runner's claim lasts without a heartbeat, seconds */
  char *results_dir;     /* absolute (owned) */
  struct kb_tier tiers[KB_MAX_TIERS]; /* the ladder; tiers[0] is "compile" */
  int n_tiers;           /* tiers used */
  double target_speedup; /* 0 = none */
  char *spec_json;       /* the campaign.json text exactly as read (owned) */
};

/* Loads and validates the campaign file at `path` (borrowed; messages name it as given) into `c`
 * (caller-owned, zeroed first; released on failure). Does not load the task bundles (see
 * kb_task_load), but checks that each task folder exists and holds a readable task.json, after
 * every check of the text itself. Errors: KB_EPARSE with "campaign.json:line:col: what is
 * wrong" (also for a missing task folder), KB_EIO when the file cannot be read, KB_ENOMEM. */
int kb_campaign_load(const char *path, struct kb_campaign *c, struct kb_error *err);
/* Fills `c->tiers` (borrowed `c`) with the default ladder and sets `c->n_tiers`. */
void kb_campaign_default_ladder(struct kb_campaign *c);
/* Frees the contents of `c`; NULL is fine. */
void kb_campaign_release(struct kb_campaign *c);

#endif
