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
 *   "generators": (optional; user docs: docs/generators.md) {
 *      "seed": bool (default true: enqueue the bundles' seeds),
 *      "low_water": int 0..10000 (default 2: generate while fewer than low_water x tasks
 *                   items are open),
 *      "max_per_task": int 1..100000 (default 64: generation attempts per task at most),
 *      "tune": {"weight": number>=0 (default 1)}        (absent: off),
 *      "llm": {"weight": number>=0 (default 1), "api": "openai" | "anthropic",
 *              "endpoint": "http(s)://..." (the full URL of chat/completions or messages),
 *              "model": string, "key_env": env var name | "key_file": absolute path (exactly
 *              one, unless "auth": "none": neither; "auth": "key" (default) | "none": a keyless
 *              endpoint, no key header sent), "concurrency": int 1..256 (default 4), "max_tokens": int 1..1e6 (default
 *              4096), "temperature": number 0..2 (default 0.7), "timeout_seconds": number>0
 *              (default 120), "max_retries": int 0..20 (default 5), "backoff_seconds": number>0
 *              (default 1), "backoff_max_seconds": number>0 (default 60),
 *              "format": "native" | "kernelbench" (default native: C/CUDA kernels of the ABI;
 *              kernelbench: ModelNew Python files, only when every task has a pytorch
 *              oracle)}  (absent: off;
 *              needs "budget.llm_tokens" > 0),
 *      "archive": {"path": absolute folder (default: $KB_ARCHIVE of the scheduler; kb-submit
 *                  checks it is a folder), "propose": int 0..1000 (default 4), "examples": int
 *                  0..8 (default 2), "save": int 0..100 (default 3), "tags": [1..40 printable
 *                  ASCII characters] (0..8)}  (absent: on with these defaults when the
 *                  scheduler's $KB_ARCHIVE is set, else off)}
 *   "target_speedup": number>0 (optional; stop a task once reached)
 *   "search": (optional; user docs: docs/search.md) {
 *      "eta": int 1..100 (default 3: promote the top 1/eta of a tier's cohort; 1 = every
 *             candidate climbs every tier, to record benchmark pools),
 *      "confidence_z": number 0..10 (default KB_SEARCH_Z, 2: also promote when median - z *
 *                      standard error is below the best's median + z * its standard error at
 *                      that tier; 0 = off),
 *      "floor_share": number 0..1 (default 0.25: share of the GPU budget split evenly),
 *      "explore": number 0..100 (default 1: UCB exploration weight of the budget bandit),
 *      "window": int 1..10000 (default 32: results per task the improvement rate is taken over),
 *      "rebalance_seconds": number >0..86400 (default 5: how often task caps are recomputed),
 *      "stagnation_evaluations": int 0..1000000 (default 100; 0 = never: stop a task after this
 *                                many results without improvement),
 *      "min_improvement": number 0..1 (default 0.01: relative gain that counts as one),
 *      "eta_max": int 1..100 (default KB_SEARCH_ETA_MAX: eta grows from "eta" towards this as the
 *                 share of a tier cohort's spread that is not noise grows; <= eta: off),
 *      "keep_top": int 1..1000 (default 5: however reliable, a cohort's top min(keep_top,
 *                  cohort/eta) still climb),
 *      "baseline_gate": boolean (default true: at screen and above, the top-1/eta rule does not
 *                       promote a candidate confidently slower than the task's baseline)}
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

enum kb_llm_api { KB_LLM_OPENAI = 0, KB_LLM_ANTHROPIC = 1 };

/* The "llm" generator's settings (generators.llm). */
struct kb_gen_llm_cfg {
  int enabled;           /* 1 when the section is present */
  double weight;         /* share among generators */
  int api;               /* enum kb_llm_api */
  char *endpoint;        /* full URL (owned) */
  char *model;           /* model name (owned) */
  char *key_env;         /* environment variable holding the key, or NULL (owned) */
  char *key_file;        /* absolute path of a 0600 key file, or NULL (owned) */
  int auth_none;         /* "auth": "none": a keyless endpoint, no key read, no key header */
  int concurrency;       /* requests in flight at most */
  int max_tokens;        /* completion tokens per request */
  double temperature;    /* sampling temperature */
  double timeout_s;      /* per attempt, seconds */
  int max_retries;       /* retries after the first attempt */
  double backoff_s;      /* first retry delay, seconds (doubles, with jitter) */
  double backoff_max_s;  /* cap of the retry delay, seconds */
  int format;            /* enum kb_cand_format of the answers asked for (default native) */
};

/* The "archive" generator's settings (generators.archive; docs/generators.md). */
#define KB_ARCHIVE_CFG_TAGS 8
struct kb_gen_archive_cfg {
  int enabled;           /* 1 when the section is present */
  char *path;            /* absolute archive folder; NULL: the scheduler's $KB_ARCHIVE (owned) */
  int propose;           /* archived kernels per task proposed as candidates; 0 = none */
  int examples;          /* archive entries of the task's category shown in llm prompts */
  int save;              /* verified best kernels per task added when the campaign ends */
  char tags[KB_ARCHIVE_CFG_TAGS][41]; /* user tags put on the entries this campaign adds */
  int n_tags;
};

/* The generators section: which generators propose candidates, and how much. */
struct kb_generators {
  int seed;              /* 1: the bundles' seeds are enqueued at submission */
  int low_water;         /* generate while fewer than low_water x tasks items are open */
  int max_per_task;      /* generation attempts (tune proposals, llm requests) per task */
  int tune;              /* 1: the tune generator is on */
  double tune_weight;    /* its share */
  struct kb_gen_llm_cfg llm;
  struct kb_gen_archive_cfg archive;
};

/* The search section: promotion, budget split and stop parameters (docs/search.md). */
struct kb_search {
  int eta;                    /* promote the top 1/eta of each tier's cohort; 1 = all */
  double confidence_z;        /* z of the lower confidence bound; 0 = rule off */
  double floor_share;         /* share of the GPU budget split evenly across tasks, 0..1 */
  double explore;             /* UCB exploration weight of the budget bandit */
  int window;                 /* results per task the improvement rate is taken over */
  double rebalance_s;         /* seconds between recomputations of the task caps */
  int stagnation;             /* stop a task after this many results without gain; 0 = never */
  double min_improvement;     /* relative gain (0.01 = 1%) that counts as an improvement */
  int eta_max;                /* eta for a cohort whose ranking is fully reliable; <= eta: off */
  int keep_top;               /* eta_max never cuts a cohort below its top min(this, n/eta) */
  int baseline_gate;          /* 1: the rank rule skips candidates confidently slower than the
                                 baseline at screen and above (docs/search.md) */
};
/* Default z of the confidence rule (docs/search.md says how it was chosen). */
#define KB_SEARCH_Z 2.0
/* Default eta_max (docs/search.md says how it was chosen). */
#define KB_SEARCH_ETA_MAX 6

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
  int deadline_line;     /* line of "deadline" in the file read, 0 = none */
  int deadline_col;      /* its column */
  int max_attempts;      /* evaluation attempts before an item is dead-lettered */
  int lease_seconds;     /* how long a runner's claim lasts without a heartbeat, seconds */
  char *results_dir;     /* absolute (owned) */
  struct kb_tier tiers[KB_MAX_TIERS]; /* the ladder; tiers[0] is "compile" */
  int n_tiers;           /* tiers used */
  double target_speedup; /* 0 = none */
  struct kb_generators gen; /* generators section, defaults filled in */
  struct kb_search search;  /* search section, defaults filled in */
  char *spec_json;       /* the campaign.json text exactly as read (owned) */
  char sandbox_require[24]; /* "sandbox": {"require": ...}: the confinement level every
                               sandbox must reach, "none" (default), "seccomp" or
                               "seccomp+landlock" (docs/campaign.md) */
};

/* The rank of a confinement level name: 0 "none", 1 "seccomp", 2 "seccomp+landlock", -1 for
 * any other string. */
int kb_confinement_rank(const char *level);
/* KB_OK when `reached` satisfies `required` (both level names, borrowed), else KB_ECONFINE
 * with a message naming campaign `cid`, the required and the reached level. */
int kb_confinement_check(const char *cid, const char *required, const char *reached,
                         struct kb_error *err);

/* Loads and validates the campaign file at `path` (borrowed; messages name it as given) into `c`
 * (caller-owned, zeroed first; released on failure). Does not load the task bundles (see
 * kb_task_load), but checks that each task folder exists and holds a readable task.json, after
 * every check of the text itself. Errors: KB_EPARSE with "campaign.json:line:col: what is
 * wrong" (also for a missing task folder), KB_EIO when the file cannot be read, KB_ENOMEM. */
int kb_campaign_load(const char *path, struct kb_campaign *c, struct kb_error *err);
/* Same as kb_campaign_load, from `text` already in memory (borrowed): `name` (borrowed) is used
 * in messages, relative paths resolve against folder `dir` (borrowed), and with `check_files` = 0
 * the task folders are neither checked nor resolved (`task_dirs` stays NULL): how the scheduler
 * reads the campaign it finds in Redis. */
int kb_campaign_parse(const char *name, const char *text, const char *dir, int check_files,
                      struct kb_campaign *c, struct kb_error *err);
/* KB_OK when campaign `c` (borrowed) has no deadline or one after `now` (unix seconds), else
 * KB_EPARSE "campaign.json:line:col: \"deadline\" ... is in the past": what kb-submit validate
 * and submit refuse (a campaign that cannot start would only spend budget). Not part of
 * kb_campaign_load, since a rerun of a campaign past its deadline is fine: it stops at once. */
int kb_campaign_check_deadline(const struct kb_campaign *c, int64_t now, struct kb_error *err);
/* Fills `c->tiers` (borrowed `c`) with the default ladder and sets `c->n_tiers`. */
void kb_campaign_default_ladder(struct kb_campaign *c);
/* Fills `s` (caller-owned) with the search section's defaults. */
void kb_search_defaults(struct kb_search *s);
/* Frees the contents of `c`; NULL is fine. */
void kb_campaign_release(struct kb_campaign *c);

#endif
