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
  const char *results; /* the campaign's results folder (borrowed; NULL = unknown): when Redis
                          goes away, a summary.json there says the campaign ended */
};

/* Picks the mode and colours for `out` from isatty(), $TERM and $NO_COLOR; `json` forces JSON. */
void kb__watch_opts_for(FILE *out, int json, struct kb_watch_opts *o);

/* Shows the progress of campaign `cid` on `out` (borrowed) every `o->interval` seconds until the
 * campaign is done or cancelled, or `*stop` (borrowed; may be NULL) is set by a signal.
 * Returns KB_OK when the campaign ended (or after one refresh with `o->once`), KB_EINTERRUPTED
 * when stopped, else KB_ENOTFOUND, KB_ECONN, KB_EREDIS, KB_ENOMEM with `err` set. The campaign
 * has ended when a snapshot says done or cancelled, or when Redis is unreachable and
 * `o->results`/summary.json says so (kb-launch --local stops its Redis at the end). */
int kb__watch(struct kb_redis *redis, const char *cid, const struct kb_watch_opts *o, FILE *out,
             volatile sig_atomic_t *stop, struct kb_error *err);

/* 1 when `results` (borrowed; NULL = no) holds a summary.json whose state is done or cancelled:
 * prints "campaign <cid> <state>: <reason> (from <path>)" to `out` first. Else 0. */
int kb__watch_ended_by_summary(const char *results, const char *cid, FILE *out);

#endif
