/* Leases that dead runners hold, for `kb-submit status` and `watch`: those past their deadline
 * that the scheduler's reaper has not requeued yet, and those whose runner stopped sending
 * heartbeats (killed, node lost) and that the reaper will requeue once they expire
 * (kb_queue_stale_leases, kb/queue.h). Shown under the progress screen, after each progress
 * line, and as "stale_leases" in JSON.
 */
#ifndef KB_SUBMITTER_STALE_H
#define KB_SUBMITTER_STALE_H

#include <jansson.h>
#include <stdint.h>

#include "kb/buf.h"
#include "kb/queue.h"

struct kb_error;

#define KB_STALE_SHOWN 8 /* leases listed; the count covers them all */

struct kb_stale {
  struct kb_stale_lease l[KB_STALE_SHOWN]; /* earliest deadline first */
  int n_shown;                             /* entries of l used */
  int n;                                   /* stale leases in all */
  int64_t now_ms;                          /* redis clock at the read, unix milliseconds */
  int64_t last_ms;                         /* the latest of their deadlines, 0 = none */
};

/* Reads the stale leases of the campaign `q` (borrowed) into `s` (caller-owned). Errors: those
 * of kb_queue_stale_leases. */
int kb__stale_read(struct kb_queue *q, struct kb_stale *s, struct kb_error *err);
/* Appends to `b` (borrowed) one line per stale lease, after a heading line; nothing when there
 * is none. Errors: KB_ENOMEM. */
int kb__stale_text(const struct kb_stale *s, struct kb_buf *b);
/* The stale leases as a JSON array (new reference; NULL when out of memory): objects with
 * "item", "runner", "deadline_ms", "expired_s" (seconds since the deadline, negative before
 * it), "silent_s" (since the runner's last heartbeat, null when it never sent one). */
json_t *kb__stale_json(const struct kb_stale *s);

#endif
