/* The ladder as it travels in Redis (field "tiers" of kb:{cid}:meta): a JSON array of tier
 * objects with every field of struct kb_tier, so runners need not read the campaign file.
 * The Lua scripts read "name" and "cost_ms" from it. */
#ifndef KB_LADDER_H
#define KB_LADDER_H

#include <stdint.h>

#include "kb/campaign.h"

struct kb_error;

/* Encodes `n` tiers of `tiers` (borrowed) into `*out` (new, kb_free; compact JSON).
 * Errors: KB_ENOMEM. */
int kb_ladder_to_json(const struct kb_tier *tiers, int n, char **out, struct kb_error *err);
/* Decodes the ladder `text` (borrowed) into `tiers` (caller-owned, KB_MAX_TIERS entries) and
 * `*n`. `where` (borrowed) names the origin for messages. Errors: KB_EPARSE. */
int kb_ladder_from_json(const char *text, const char *where, struct kb_tier *tiers, int *n,
                        struct kb_error *err);

/* ---- The reservation: the most device time one evaluation may be charged ------------------
 * What a runner counts as an item's cost_ms (runner/evaluator.c), each part under a limit the
 * runner enforces:
 *   setup    the sandbox's (re)start when this item needs one, the oracle's build when not
 *            cached, and the task's preparation in the sandbox: together at most
 *            KB_SETUP_LIMIT_S (each step gets what is left of it);
 *   eval     the evaluation call: the tier's timeout_seconds;
 *   torch    at the last tier of a ladder of 2 or more, a PyTorch-oracle task's torch eager and
 *            torch.compile timing: the tier's timeout_seconds again;
 *   witness  at the last tier of any task, the witness calls timed on the runner's clock and
 *            checked by a trusted process (runner/witness.h): KB_WITNESS_LIMIT_S;
 *   slack    KB_RESERVE_SLACK_MS for the clocks' granularity and the ends of the limits.
 * The compile tier (index 0) uses no device and costs 0. A tier's "cost_ms" is the planning
 * estimate of the budget split (scheduler/budget.c); the reservation is this bound, which every
 * enqueue passes. A settlement charges the measured cost and refunds the rest; one beyond the
 * reservation (a broken limit) is charged whole and logged as an overrun (complete_claim.lua). */
#define KB_SETUP_LIMIT_S 20.0
#define KB_WITNESS_LIMIT_S 30.0
#define KB_RESERVE_SLACK_MS 2000

/* The reservation, GPU milliseconds, of an evaluation at tier `k` of the `n` tiers `tiers`
 * (borrowed): 0 for k == 0, else the sum of the limits above; `torch` 1 for a PyTorch-oracle
 * task (only then does the last tier add the torch timing's limit; the witness's it adds for
 * every task). */
int64_t kb_tier_reserve_ms(const struct kb_tier *tiers, int n, int k, int torch);

#endif
