/* Two-phase charges on a campaign's ledger, for any currency (see common/lua/charge.lua).
 * GPU time is reserved and settled by claim/complete (kb/queue.h); this is for the rest, LLM
 * tokens above all: reserve an estimate before a request, post what was used after it, or void.
 * Every operation is idempotent by charge id and appears once in the audit stream.
 */
#ifndef KB_LEDGER_H
#define KB_LEDGER_H

#include <stdint.h>

#include "kb/queue.h"

struct kb_error;

enum kb_currency { KB_GPU_MS = 0, KB_LLM_TOKENS = 1 };

/* "llm_tokens" for KB_LLM_TOKENS, else "gpu_ms" (static strings). */
const char *kb__currency_name(int currency);

/* Holds `amount` of `currency` under `charge_id` (borrowed). `*dup` (may be NULL) is 1 when
 * this charge was already reserved with the same amount. Errors: KB_EBUDGET (not enough
 * available), KB_ESTATE (the id was used), KB_EINVAL. */
int kb__ledger_reserve(struct kb_queue *q, int currency, const char *charge_id, int64_t amount,
                      const char *who, int *dup, struct kb_error *err);
/* Settles a reserved charge at `actual`, never clipped: the rest of the reservation returns;
 * an actual beyond it is charged whole (the overrun taken from available, which may go below
 * 0, with an "overrun" audit entry, meta <currency>:overruns and :overrun counted, and a
 * warning logged). A retry of a posted charge (`*dup` 1) charges nothing.
 * Errors: KB_ENOTFOUND, KB_ESTATE (already voided). */
int kb__ledger_post(struct kb_queue *q, int currency, const char *charge_id, int64_t actual,
                   const char *who, int *dup, struct kb_error *err);
/* Returns a reserved charge's whole amount to available. Errors: KB_ENOTFOUND, KB_ESTATE. */
int kb__ledger_void(struct kb_queue *q, int currency, const char *charge_id, const char *who,
                   int *dup, struct kb_error *err);

#endif
