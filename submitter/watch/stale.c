/* Leases that dead runners hold (see stale.h). */
#include "stale.h"

#include <stdio.h>
#include <string.h>

#include "kb/error.h"

int kb__stale_read(struct kb_queue *q, struct kb_stale *s, struct kb_error *err) {
  memset(s, 0, sizeof *s);
  int rc = kb_queue_stale_leases(q, s->l, KB_STALE_SHOWN, &s->n, &s->now_ms, &s->last_ms, err);
  s->n_shown = s->n < KB_STALE_SHOWN ? s->n : KB_STALE_SHOWN;
  return rc;
}

/* Seconds from `a` to `b` (milliseconds), rounded. */
static long long secs(int64_t a, int64_t b) { return (long long)((b - a + 500) / 1000); }

int kb__stale_text(const struct kb_stale *s, struct kb_buf *b) {
  if (s->n == 0)
    return KB_OK;
  int rc = kb_buf_addf(b, "leases of runners that stopped: %d (the scheduler's reaper requeues "
                       "each once it has expired)\n", s->n);
  for (int i = 0; rc == KB_OK && i < s->n_shown; i++) {
    const struct kb_stale_lease *l = &s->l[i];
    char silent[48] = "never sent a heartbeat";
    if (l->seen_ms >= 0)
      snprintf(silent, sizeof silent, "silent for %lld s", secs(l->seen_ms, s->now_ms));
    char when[96];
    if (l->deadline_ms <= s->now_ms)
      snprintf(when, sizeof when, "expired %lld s ago, requeued at the next reap",
               secs(l->deadline_ms, s->now_ms));
    else
      snprintf(when, sizeof when, "expires in %lld s, then requeued",
               secs(s->now_ms, l->deadline_ms));
    rc = kb_buf_addf(b, "  item %.12s%s  runner %s (%s): %s\n", l->item,
                     strchr(l->item, ':') ? strchr(l->item, ':') : "",
                     l->runner[0] ? l->runner : "(none)", silent, when);
  }
  if (rc == KB_OK && s->n > s->n_shown)
    rc = kb_buf_addf(b, "  ... and %d more\n", s->n - s->n_shown);
  return rc;
}

json_t *kb__stale_json(const struct kb_stale *s) {
  json_t *a = json_array();
  for (int i = 0; a != NULL && i < s->n_shown; i++) {
    const struct kb_stale_lease *l = &s->l[i];
    json_t *o = json_pack("{s:s, s:s, s:I, s:f, s:o}", "item", l->item, "runner", l->runner,
                          "deadline_ms", (json_int_t)l->deadline_ms, "expired_s",
                          (double)(s->now_ms - l->deadline_ms) / 1000.0, "silent_s",
                          l->seen_ms >= 0
                              ? json_real((double)(s->now_ms - l->seen_ms) / 1000.0)
                              : json_null());
    if (o == NULL || json_array_append_new(a, o) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}
