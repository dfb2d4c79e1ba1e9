/* How a progress snapshot (progress.h) is shown: a screen for a terminal (progress bars, the
 * per-tier funnel, budget, runners, best speedup per task, ETA), one timestamped line for a log
 * or a pipe, or one JSON object. */
#ifndef KB_SUBMITTER_PROGRESS_VIEW_H
#define KB_SUBMITTER_PROGRESS_VIEW_H

#include <jansson.h>
#include <stdio.h>

#include "kb/buf.h"
#include "progress.h"

struct kb_view_opts {
  int color;  /* ANSI colours (a terminal, NO_COLOR unset, TERM not dumb) */
  int width;  /* columns to fit in; at least 40 */
  int height; /* rows to fit in (task rows are cut, with a note); 0 = no limit */
};

/* Appends the screen for `p` to `out`, one line per "\n", each at most `o->width` columns
 * (colour sequences aside) and at most `o->height` lines (when not 0). Returns KB_OK or
 * KB_ENOMEM. */
int kb__progress_screen(const struct kb_progress *p, const struct kb_view_opts *o,
                       struct kb_buf *out);
/* Prints one line for `p` to `f`: UTC time, campaign, state, items, budget, runners, best
 * speedups (of the first KB_LINE_TASKS tasks that have one, then "+N"), ETA. */
#define KB_LINE_TASKS 8
void kb__progress_line(const struct kb_progress *p, FILE *f);
/* The snapshot as a JSON object (new reference; NULL on ENOMEM). */
json_t *kb__progress_json(const struct kb_progress *p);
/* Formats `seconds` as "1h02m", "4m05s" or "12s" into `out`; "-" when negative. */
void kb__format_duration(double seconds, char *out, size_t size);

#endif
