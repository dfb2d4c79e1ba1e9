/* A queue item as Redis holds it (kb:{cid}:items, kb/keys.h): the one reader of its line for C.
 *
 * Layout 2 (meta "layout" = "2"; campaigns registered from 2026-12-07): each item is one line
 * of 11 fields separated by "|",
 *   state|attempt|claims|cost|priority|task|token|runner|charge|result|next
 * written only by the scripts in common/lua/ (common/lua/lib/prelude.lua reads and writes it
 * there). The candidate and the tier are the item id's, "<64 hex>:<tier>". The claim and the
 * completion read and rewrite this short line instead of a JSON object (docs/benchmarks.md,
 * "Items apart from JSON"). Layout 1, a JSON object per item, is refused.
 */
#ifndef KB_ITEM_H
#define KB_ITEM_H

#include "kb/candidate.h"
#include "kb/queue.h"
#include "kb/task.h"

struct kb_error;

/* The item layout this version reads and writes (meta "layout"). */
#define KB_ITEM_LAYOUT 2

/* One item, decoded. Text fields are "" when the line leaves them empty. */
struct kb_item {
  char cand[KB_CAND_ID_LEN + 1];    /* candidate id, from the item id */
  int tier;                         /* tier index, from the item id */
  char state[8];                    /* "queued", "leased", "done" or "dead" */
  long long attempt;                /* attempts started (claims that counted) */
  long long claims;                 /* claims (its charge ids are "<item>#<claims>") */
  long long cost_ms;                /* the reservation of one evaluation, milliseconds */
  double priority;                  /* lower goes first */
  char task[KB_ID_MAX];             /* task id */
  char token[64];                   /* lease token while leased */
  char runner[512];                 /* the lease's runner (leased, done, dead), unescaped */
  char charge[KB_CHARGE_ID_MAX];    /* the charge settled (done, dead) */
  char result[48];                  /* the results entry that settled it (done, dead) */
};

/* Decodes item `id` (borrowed) from its line `line` (borrowed; HGET's reply) into `out`
 * (caller's). Returns KB_OK, or KB_EINVAL with a message naming the item and what is wrong (a
 * line of layout 1, "not an item of layout 2", a bad state or number, an id that is not
 * "<64 hex>:<tier>", a field too long for `out`); `out` is then zeroed. */
int kb_item_parse(const char *id, const char *line, struct kb_item *out, struct kb_error *err);

#endif
