/* The tiered work queue and budget ledger of one campaign in Redis. Every state change is one
 * Lua script from common/lua/ (see the comment at the top of each for its keys and replies);
 * this module builds the keys and decodes the replies.
 *
 * The keys (kb:{cid}:meta, :items, :q:<tier>, :lease, :ledger, :charges, :taskbudget,
 * :ledger:log, :results, :stray, :dead, :runners, :events), each with its type, fields and the
 * scripts that write it, are in kb/keys.h.
 */
#ifndef KB_QUEUE_H
#define KB_QUEUE_H

#include <signal.h>
#include <stdint.h>

#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/redis.h"

struct kb_error;

#define KB_ITEM_ID_MAX (KB_CAND_ID_LEN + 8)
#define KB_CHARGE_ID_MAX (KB_ITEM_ID_MAX + 16)

/* Tasks a runner may name as held prepared (kb_queue_set_affinity), at most. */
#define KB_AFFINITY_MAX 8

struct kb_queue {
  struct kb_redis *redis; /* borrowed */
  char cid[KB_ID_MAX];    /* campaign id */
  int n_tiers;            /* ladder length, from meta */
  struct kb_tier tiers[KB_MAX_TIERS]; /* the ladder, from meta */
  int backend;            /* enum kb_backend, from meta */
  int affinity;           /* kb_queue_set_affinity() with a list (maybe empty); 0 = plain */
  char prefer[KB_AFFINITY_MAX * KB_ID_MAX]; /* its task ids joined with ',' (kb_queue_open
                                               clears both) */
};

/* A leased item, as claim returns it. */
struct kb_claim {
  char item[KB_ITEM_ID_MAX];          /* "<candidate>:<tier>" */
  char candidate[KB_CAND_ID_LEN + 1];
  char task[KB_ID_MAX];
  int tier;
  int attempt;                        /* 1 for the first try */
  char charge_id[KB_CHARGE_ID_MAX];   /* idempotency key for complete */
  char token[33];                     /* lease token, proves ownership */
  int64_t cost_ms;                    /* reserved */
  int64_t deadline_ms;                /* lease deadline, Redis clock */
};

/* Campaign snapshot from the status script. */
struct kb_queue_status {
  char state[16];        /* submitting, running, draining, done, cancelled */
  int64_t open;          /* items enqueued and not yet done or dead */
  int64_t done;
  int64_t dead;
  int64_t leased;
  int64_t gpu_total, gpu_available, gpu_held, gpu_spent;     /* milliseconds */
  int64_t llm_total, llm_available, llm_held, llm_spent;     /* tokens */
  int64_t cheapest_ready; /* cost of the cheapest ready queue head, -1 when none is ready */
  int64_t ready[8];       /* ready items per tier */
  int n_tiers;
  int64_t stray;          /* results-stream entries the scheduler dropped: no lease of theirs
                             was settled (forged, replayed, unknown item, wrong runner/attempt) */
  int64_t gpu_overruns, gpu_overrun_ms; /* settlements beyond their reservation, and by how much */
  int64_t llm_overruns, llm_overrun;    /* the same for LLM tokens */
  int64_t infra_retries;  /* evaluations the runner failed (infra_error) whose item was queued
                             again for another attempt (kb_queue_retry) */
};

/* What the register script needs to create a campaign. Strings and `tiers` are borrowed. */
struct kb_campaign_reg {
  const char *cid;              /* campaign id */
  const char *spec_json;        /* campaign.json text (its SHA-256 makes resubmission safe) */
  const struct kb_tier *tiers;  /* the ladder */
  int n_tiers;
  int max_attempts;
  int64_t lease_ms;
  int backend;                  /* enum kb_backend */
  int64_t gpu_ms;               /* GPU budget, milliseconds */
  int64_t llm_tokens;           /* LLM budget, tokens */
};

/* Creates the campaign in state "submitting" and funds its ledger (the register script).
 * `*resumed` (may be NULL) is 1 when an identical interrupted submission exists already.
 * Errors: KB_EEXISTS (another campaign with this id), KB_ECONN, KB_EREDIS, KB_ENOMEM. */
int kb_queue_register(struct kb_redis *redis, const struct kb_campaign_reg *reg, const char *who,
                      int *resumed, struct kb_error *err);

/* Attaches to campaign `cid` (reads the ladder and backend from meta). `redis` is borrowed.
 * Errors: KB_ENOTFOUND when the campaign does not exist, KB_ECONN, KB_EREDIS. */
int kb_queue_open(struct kb_queue *q, struct kb_redis *redis, const char *cid,
                  struct kb_error *err);
/* kb_queue_open(), retried every half second for up to `wait_s` seconds while the campaign does
 * not exist yet (a Slurm runner may start before the submission), or until `*stop` is set
 * (`stop` may be NULL). */
int kb_queue_open_wait(struct kb_queue *q, struct kb_redis *redis, const char *cid, int wait_s,
                       volatile sig_atomic_t *stop, struct kb_error *err);
/* Builds the key "kb:{cid}:<suffix>" into `out` (`size` bytes); `suffix` is one of kb/keys.h
 * (borrowed). Returns KB_OK, or KB_EINVAL when it does not fit (no message). */
int kb_queue_key(const struct kb_queue *q, char *out, size_t size, const char *suffix);

/* Adds (candidate, tier) to its tier's queue with `priority` (lower first), once.
 * `*added` (may be NULL) is 1 when new. Errors: KB_ESTATE when the campaign is closed. */
int kb_queue_enqueue(struct kb_queue *q, const char *candidate, const char *task, int tier,
                     int64_t cost_ms, double priority, int *added, struct kb_error *err);
/* Runner names (`runner` below, borrowed) may be any string of up to about 500 bytes once
 * JSON-escaped (KB_EINVAL beyond); they are escaped here before the scripts embed them in items
 * and audit entries. Claim, complete, complete_and_claim and cycle_batch are the forms of one
 * script, common/lua/complete_claim.lua. */

/* Leases the best ready item among tiers [min_tier, max_tier], highest tier first.
 * Returns KB_OK with `*c` filled, KB_EEMPTY (nothing ready), KB_EBUDGET (ready items cost more
 * than the budget left) or KB_ESTATE (campaign not running; `state` gets it when not NULL). */
int kb_queue_claim(struct kb_queue *q, const char *runner, int min_tier, int max_tier,
                   struct kb_claim *c, char state[16], struct kb_error *err);
/* Extends the leases in `claims` (any number, 0 too, in one script call) and records the
 * runner alive. `*extended` and `state` (16 bytes) may be NULL. */
int kb_queue_heartbeat(struct kb_queue *q, const char *runner, const struct kb_claim *claims,
                       int n, int *extended, char state[16], struct kb_error *err);
/* Settles the claim at `cost_ms`, appends `result_json` to the results stream, ends the lease.
 * Idempotent: `*duplicate` (may be NULL) is 1 when this charge had already been posted.
 * Errors: KB_ELEASE when the lease was lost (the item was requeued by the reaper). */
int kb_queue_complete(struct kb_queue *q, const struct kb_claim *c, int64_t cost_ms,
                      const char *result_json, const char *runner, int *duplicate,
                      struct kb_error *err);
/* Completes `done` as kb_queue_complete() does, then claims the next item among tiers
 * [min_tier, max_tier] as kb_queue_claim() does, in one script call (one round trip): the path
 * of a runner that claims again as soon as it has completed. Every pointer is borrowed; `next`
 * (caller-owned) may be the same struct as `done` (it is read first); it is zeroed unless an
 * item was claimed. `*duplicate` (may be
 * NULL) is 1 when `done`'s charge had been posted already; `state` (16 bytes, may be NULL) gets
 * the campaign state with KB_ESTATE.
 * Returns KB_OK: completed (or duplicate) and `*next` leased; KB_EEMPTY, KB_EBUDGET or
 * KB_ESTATE: completed (or duplicate), nothing claimed. Errors, where nothing was completed and
 * nothing claimed: KB_ELEASE (the lease of `done` was lost), KB_ENOTFOUND (unknown charge),
 * KB_ECONN, KB_EREDIS, KB_EIO (no random lease token), KB_EINVAL.
 * Retries: a reply lost in the connection layer is retried with the same request, which finds
 * the completion posted and returns the lease the first attempt took. A caller that retries
 * after an error (same `done`) gets duplicate = 1 and a fresh claim; a lease the lost call may
 * have taken expires and is requeued with its reservation refunded, as after a lost claim. */
int kb_queue_complete_and_claim(struct kb_queue *q, const struct kb_claim *done, int64_t cost_ms,
                                const char *result_json, const char *runner, int min_tier,
                                int max_tier, int *duplicate, struct kb_claim *next,
                                char state[16], struct kb_error *err);
/* Items one kb_queue_cycle_batch call completes, and claims, at most. */
#define KB_QUEUE_BATCH_MAX 32

/* One item to complete in a batch: its claim, measured cost and result (all borrowed). */
struct kb_queue_done {
  const struct kb_claim *claim;
  int64_t cost_ms;
  const char *result_json;
};

/* The batch form of kb_queue_complete_and_claim(), one script call: completes the `n_done`
 * items of `done` (0..KB_QUEUE_BATCH_MAX; 0: none) as kb_queue_complete() does, then claims up
 * to `k` items (0..KB_QUEUE_BATCH_MAX; 0: none) among tiers [min_tier, max_tier] into
 * `next[0..k-1]` (caller-owned; may be the same memory as the claims `done` points to: those
 * are read first), each as kb_queue_claim() would, one after another, every one with its own
 * lease, charge and reservation. Every pointer is borrowed. `*n_next` (may be NULL) gets how
 * many were claimed; `dups` (may be NULL, else n_done entries) gets 1 for each item whose
 * charge had been posted already; `state` (16 bytes, may be NULL) gets the campaign state
 * with KB_ESTATE.
 * Returns KB_OK: everything in `done` completed (or duplicate) and, with k > 0, at least one
 * item claimed (fewer than k when no more were ready or affordable); KB_EEMPTY, KB_EBUDGET
 * or KB_ESTATE: completed, nothing claimed (k > 0). Errors, where nothing was completed and
 * nothing claimed (all or nothing: every completion is checked before anything is written):
 * KB_ELEASE (the lease of one of `done` was lost), KB_ENOTFOUND (an unknown charge), KB_EINVAL
 * (more than KB_QUEUE_BATCH_MAX, or one charge twice), KB_ECONN, KB_EREDIS, KB_EIO.
 * Retries: as kb_queue_complete_and_claim(): a resent request whose completions are all found
 * posted gets back the leases the first attempt took (still held with its token), and claims
 * afresh for the rest of `k`. A batch that only claims is not idempotent (as kb_queue_claim):
 * the leases of a lost reply expire and are requeued with their reservations refunded. */
int kb_queue_cycle_batch(struct kb_queue *q, const struct kb_queue_done *done, int n_done,
                         const char *runner, int min_tier, int max_tier, int k,
                         struct kb_claim *next, int *n_next, int *dups, char state[16],
                         struct kb_error *err);
/* kb_queue_cycle_batch() in three steps, for a caller that sends the script call on a
 * connection of its own (kb-bench-queue's event loop: hiredis's async API over many
 * connections). kb_queue_cycle_prepare() builds the call exactly as kb_queue_cycle_batch()
 * sends it, with the same arguments and limits (`done` and `runner` are borrowed and must
 * outlive the call's reply: the result texts are not copied; `*out` is new, to
 * kb_queue_cycle_free()). kb_queue_cycle_argv() gives the whole command, "EVALSHA <sha>
 * <nkeys> <keys> <args>", with `sha` from kb_redis_script_sha(r, "complete_claim") (borrowed,
 * kept until the command is sent); `*argv` and `*lens` point into `c`; returns argc.
 * kb_queue_cycle_parse() reads the reply (borrowed; an error reply too) as
 * kb_queue_cycle_batch() returns it, same codes. A NOSCRIPT reply is KB_EREDIS: the caller
 * loads the script first. Errors of prepare: KB_EINVAL, KB_ENOMEM, KB_EIO (no random token). */
struct kb_queue_cycle;
int kb_queue_cycle_prepare(struct kb_queue *q, const struct kb_queue_done *done, int n_done,
                           const char *runner, int min_tier, int max_tier, int k,
                           struct kb_queue_cycle **out, struct kb_error *err);
int kb_queue_cycle_argv(struct kb_queue_cycle *c, const char *sha, const char ***argv,
                        const size_t **lens);
int kb_queue_cycle_parse(const struct kb_queue *q, const struct kb_queue_cycle *c,
                         const redisReply *rep, struct kb_claim *next, int *n_next, int *dups,
                         char state[16], struct kb_error *err);
void kb_queue_cycle_free(struct kb_queue_cycle *c);
/* Task affinity: every later claim through `q` (any form) prefers items of the `n` tasks of
 * `tasks` (ids, borrowed, copied; the first KB_AFFINITY_MAX; n may be 0), then of tasks no
 * other runner holds, within the bound complete_claim.lua documents (docs/architecture.md,
 * "Task affinity"): among the first K + 16 entries of the running tiers' queues, unless the
 * entry a plain claim would take has been passed over for meta "affinity_ms" (default 2,000
 * ms). `tasks` NULL: affinity off, the plain order. Returns KB_OK, or KB_EINVAL (an id that is
 * not a task id: affinity off). */
int kb_queue_set_affinity(struct kb_queue *q, const char *const *tasks, int n);
/* Gives the item back (not an attempt) and voids its reservation. `*released` may be NULL. */
int kb_queue_release(struct kb_queue *q, const struct kb_claim *c, const char *runner,
                     int *released, struct kb_error *err);
/* What kb_queue_retry did. */
enum kb_retry {
  KB_RETRY_REQUEUED = 0, /* the item is queued for another attempt (or was, by a resent call) */
  KB_RETRY_FINAL,        /* it has used max_attempts: nothing changed; complete it with its
                          * infra_error result */
  KB_RETRY_LOST          /* the lease is no longer the caller's (reaped): nothing changed */
};
/* The runner failed the evaluation of `c` (an infra_error, not the candidate's verdict): while
 * the item has attempts left (meta max_attempts, counting this one), settles its charge at
 * `cost_ms` (the device time used is charged, as kb_queue_complete settles it), ends the lease
 * and queues the item again; `reason` (borrowed) is kept as meta "infra_last". Idempotent: a
 * resent call finds the charge posted and gets KB_RETRY_REQUEUED. `*out` gets the outcome.
 * Errors: KB_ECONN, KB_EREDIS. common/lua/retry.lua. */
int kb_queue_retry(struct kb_queue *q, const struct kb_claim *c, int64_t cost_ms,
                   const char *runner, const char *reason, enum kb_retry *out,
                   struct kb_error *err);
/* Requeues or dead-letters up to `max` expired leases. Counts may be NULL. */
int kb_queue_reap(struct kb_queue *q, int max, const char *who, int *requeued, int *dead,
                  struct kb_error *err);
/* Moves the campaign to `to` when its state is one of `from` ("a,b" or "*"); a campaign in
 * state `to` already is left as it is. Errors: KB_ENOTFOUND (no campaign), KB_ESTATE (its state
 * is not one of `from`), KB_ECONN, KB_EREDIS. */
int kb_queue_set_state(struct kb_queue *q, const char *from, const char *to, const char *reason,
                       const char *who, struct kb_error *err);
/* A lease a dead runner holds (kb_queue_stale_leases). */
struct kb_stale_lease {
  char item[KB_ITEM_ID_MAX];  /* the leased item */
  char runner[128];           /* its runner, "" when the item names none */
  int64_t deadline_ms;        /* the lease's deadline, Redis clock */
  int64_t seen_ms;            /* the runner's last heartbeat, Redis clock; -1 never */
};
/* A runner silent this long (milliseconds; it beats every second) counts as stopped. */
#define KB_RUNNER_SILENT_MS 5000
/* Fills `out` (caller-owned, `max` entries) with the leases past their deadline or held by a
 * runner silent for KB_RUNNER_SILENT_MS (one that never sent a heartbeat: silent since the
 * lease was taken or last extended, its deadline less lease_ms), earliest deadline first (the leases script,
 * read-only); `*n` gets how many there are in all (may exceed `max`), `*now_ms` Redis's clock,
 * `*last_ms` the latest of their deadlines (0 when none). The reaper requeues each once its
 * deadline has passed. Errors: KB_ECONN, KB_EREDIS. */
int kb_queue_stale_leases(struct kb_queue *q, struct kb_stale_lease *out, int max, int *n,
                          int64_t *now_ms, int64_t *last_ms, struct kb_error *err);
/* Fills `*st` (caller-owned) from the status script (read-only). Errors: KB_ENOTFOUND (no
 * campaign), KB_ECONN, KB_EREDIS. */
int kb_queue_status(struct kb_queue *q, struct kb_queue_status *st, struct kb_error *err);

/* Acknowledges the `n` results-stream entries `ids` (group "scheduler") the scheduler drops as
 * forged or stray, recording `why[i]` for each in kb:{cid}:stray and counting in meta "stray"
 * those this call acknowledged (an entry acknowledged before is not counted again), in one
 * script (common/lua/stray.lua). `*counted` (may be NULL) gets that number. */
int kb_queue_drop_stray(struct kb_queue *q, const char *const *ids, const char *const *why, int n,
                        int *counted, struct kb_error *err);

/* Caps what `task` may hold plus spend at `cap_ms` GPU milliseconds; claim skips its items that
 * would exceed it. A negative cap removes the cap. Held and spent are counted from the start;
 * claims read caps only once one was set in the campaign (meta "task_caps"). One script,
 * common/lua/task_cap.lua. Errors: KB_EINVAL (task id too long), KB_ECONN, KB_EREDIS. */
int kb_queue_set_task_cap(struct kb_queue *q, const char *task, int64_t cap_ms,
                          struct kb_error *err);
/* Reads a task's cap (-1 when none), held and spent GPU milliseconds. */
int kb_queue_task_budget(struct kb_queue *q, const char *task, int64_t *cap_ms, int64_t *held_ms,
                         int64_t *spent_ms, struct kb_error *err);

#endif
