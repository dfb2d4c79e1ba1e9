/* The ladder as it travels in Redis (field "tiers" of kb:{cid}:meta): a JSON array of tier
 * objects with every field of struct kb_tier, so runners need not read the campaign file.
 * The Lua scripts read "name" and "cost_ms" from it. */
#ifndef KB_LADDER_H
#define KB_LADDER_H

#include "kb/campaign.h"

struct kb_error;

/* Encodes `n` tiers into `*out` (new, compact JSON). Errors: KB_ENOMEM. */
int kb_ladder_to_json(const struct kb_tier *tiers, int n, char **out, struct kb_error *err);
/* Decodes a ladder into `tiers` (KB_MAX_TIERS entries) and `*n`. `where` names the origin for
 * messages. Errors: KB_EPARSE. */
int kb_ladder_from_json(const char *text, const char *where, struct kb_tier *tiers, int *n,
                        struct kb_error *err);

#endif
