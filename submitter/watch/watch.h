/* `kb-submit watch`: a campaign's progress, refreshed until it ends. */
#ifndef KB_SUBMITTER_WATCH_H
#define KB_SUBMITTER_WATCH_H

#include <signal.h>
#include <stdio.h>

#include "kb/redis.h"

enum kb_watch_mode {
  KB_WATCH_SCREEN, /* redraw one screen in place (a terminal that understands ANSI) */
  KB_WATCH_LINES,  /* one timestamped line per refresh (a pipe, a log, TERM=dumb) */
  KB_WATCH_JSON    /* one JSON object per refresh (JSON Lines) */
};

struct kb_watch_opts {
  enum kb_watch_mode mode;
  int color;       /* ANSI colours on the screen */
  double interval; /* seconds between refreshes */
  int once;        /* one refresh, then return (kb-submit status) */
};

/* Picks the mode and colours for `out` from isatty(), $TERM and $NO_COLOR; `json` forces JSON. */
void kb__watch_opts_for(FILE *out, int json, struct kb_watch_opts *o);

/* Shows the progress of campaign `cid` on `out` (borrowed) every `o->interval` seconds until the
 * campaign is done or cancelled, or `*stop` (borrowed; may be NULL) is set by a signal.
 * Returns KB_OK when the campaign ended (or after one refresh with `o->once`), KB_EINTERRUPTED
 * when stopped, else KB_ENOTFOUND, KB_ECONN, KB_EREDIS, KB_ENOMEM with `err` set. */
int kb__watch(struct kb_redis *redis, const char *cid, const struct kb_watch_opts *o, FILE *out,
             volatile sig_atomic_t *stop, struct kb_error *err);

#endif
