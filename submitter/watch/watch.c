/* The watch loop (see watch.h). */
#include "watch.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "kb/buf.h"
#include "kb/error.h"
#include "progress.h"
#include "progress_view.h"
#include "stale.h"

void kb__watch_opts_for(FILE *out, int json, struct kb_watch_opts *o) {
  const char *term = getenv("TERM");
  const char *no_color = getenv("NO_COLOR");
  int tty = isatty(fileno(out));
  int dumb = term == NULL || *term == '\0' || strcmp(term, "dumb") == 0;
  o->mode = json ? KB_WATCH_JSON : (tty && !dumb) ? KB_WATCH_SCREEN : KB_WATCH_LINES;
  o->color = o->mode == KB_WATCH_SCREEN && (no_color == NULL || *no_color == '\0');
}

/* Terminal rows, 0 when unknown (not a terminal). */
static int rows(FILE *out) {
  struct winsize ws;
  if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0)
    return ws.ws_row;
  return 0;
}

static int columns(FILE *out) {
  struct winsize ws;
  if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  const char *env = getenv("COLUMNS");
  long n = 0;
  if (env) {
    char *end = NULL;
    n = strtol(env, &end, 10);
    if (end == env || *end != '\0')
      n = 0;
  }
  return n > 0 ? (int)n : isatty(fileno(out)) ? 80 : 120;
}

#define LOST_MAX_S 120 /* how long a watch waits for an unreachable Redis */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps `seconds`, returning early when a signal sets `*stop`. */
static void nap(double seconds, volatile sig_atomic_t *stop) {
  struct timespec ts = {(time_t)seconds, (long)((seconds - floor(seconds)) * 1e9)};
  while ((stop == NULL || !*stop) && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

/* Draws the screen over the previous one: back up `*drawn` lines, rewrite each (clearing the
 * rest of the line) and clear what is left below. */
static int draw(const struct kb_progress *p, const struct kb_stale *stale,
                const struct kb_watch_opts *o, FILE *out, int *drawn) {
  /* Redrawn in place, the screen must fit the terminal (a line fewer: the cursor's). Printed
   * once (status), it may scroll. */
  int h = o->once ? 0 : rows(out);
  struct kb_view_opts v = {.color = o->color, .width = columns(out), .height = h > 1 ? h - 1 : 0};
  struct kb_buf b;
  kb_buf_init(&b);
  int rc = kb__progress_screen(p, &v, &b);
  if (rc == KB_OK)
    rc = kb__stale_text(stale, &b);
  if (rc == KB_OK) {
    if (o->once) {
      fputs(b.data, out);
    } else {
      if (*drawn > 0)
        fprintf(out, "\r\033[%dA", *drawn);
      for (const char *s = b.data; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        fprintf(out, "\033[2K%.*s\n", (int)n, s);
        s += n + (nl != NULL);
      }
      fputs("\033[J", out);
      *drawn = count_lines(b.data);
    }
    fflush(out);
  }
  kb_buf_release(&b);
  return rc;
}

static int show(const struct kb_progress *p, const struct kb_stale *stale,
                const struct kb_watch_opts *o, FILE *out, int *drawn, struct kb_error *err) {
  switch (o->mode) {
  case KB_WATCH_SCREEN:
    if (draw(p, stale, o, out, drawn))
      return kb_error_set(err, KB_ENOMEM, "out of memory drawing the screen");
    return KB_OK;
  case KB_WATCH_LINES:
    kb__progress_line(p, out);
    if (stale->n != *drawn) { /* the stale leases when their number changes (in this mode
                                `*drawn` holds the number last printed) */
      struct kb_buf b;
      kb_buf_init(&b);
      if (kb__stale_text(stale, &b) == KB_OK && b.data != NULL)
        fputs(b.data, out);
      kb_buf_release(&b);
      *drawn = stale->n;
    }
    fflush(out);
    return KB_OK;
  case KB_WATCH_JSON: {
    json_t *j = kb__progress_json(p);
    if (j != NULL)
      json_object_set_new(j, "stale_leases", kb__stale_json(stale));
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text == NULL)
      return kb_error_set(err, KB_ENOMEM, "out of memory encoding the progress");
    fprintf(out, "%s\n", text);
    free(text);
    fflush(out);
    return KB_OK;
  }
  }
  return KB_OK;
}

int kb__watch_ended_by_summary(const char *results, const char *cid, FILE *out) {
  if (results == NULL)
    return 0;
  char path[4200];
  snprintf(path, sizeof path, "%s/summary.json", results);
  json_t *s = json_load_file(path, 0, NULL);
  const char *state = json_string_value(json_object_get(s, "state"));
  const char *reason = json_string_value(json_object_get(s, "reason"));
  const char *id = json_string_value(json_object_get(s, "campaign"));
  int ended = state && (strcmp(state, "done") == 0 || strcmp(state, "cancelled") == 0) &&
              (id == NULL || strcmp(id, cid) == 0);
  if (ended) {
    fprintf(out, "campaign %s %s: %s (Redis has gone; from %s)\n", cid, state,
            reason ? reason : "", path);
    fflush(out);
  }
  json_decref(s);
  return ended;
}

int kb__watch(struct kb_redis *redis, const char *cid, const struct kb_watch_opts *o, FILE *out,
             volatile sig_atomic_t *stop, struct kb_error *err) {
  struct kb_progress p;
  struct kb_stale stale;
  int drawn = 0, cursor_hidden = 0;
  double lost_since = 0; /* monotonic seconds when redis became unreachable; 0 = reachable */
  int rc = kb__progress_open(&p, redis, cid, err);
  if (rc == KB_ECONN && kb__watch_ended_by_summary(o->results, cid, out)) {
    kb_error_clear(err);
    kb__progress_release(&p);
    return KB_OK;
  }
  while (rc == KB_OK) {
    rc = kb__progress_update(&p, err);
    if (rc == KB_OK)
      rc = kb__stale_read(&p.q, &stale, err);
    /* Redis gone after the end: kb-launch --local stops it once the summary is written. */
    if (rc == KB_ECONN && kb__watch_ended_by_summary(o->results, cid, out)) {
      kb_error_clear(err);
      rc = KB_OK;
      break;
    }
    /* A watch outlives a Redis restart: it keeps trying for LOST_MAX_S, Ctrl-C still works. */
    if (rc == KB_ECONN && !o->once && (lost_since == 0 || now_s() - lost_since < LOST_MAX_S)) {
      if (lost_since == 0) {
        lost_since = now_s();
        fprintf(stderr, "kb-submit: %s; retrying for %d s\n", err ? err->msg : "redis unreachable",
                LOST_MAX_S);
      }
      kb_error_clear(err);
      rc = KB_OK;
      nap(o->interval, stop);
      if (stop && *stop)
        rc = kb_error_set(err, KB_EINTERRUPTED, "interrupted");
      continue;
    }
    if (rc == KB_OK)
      lost_since = 0;
    if (rc == KB_OK && stop && *stop)
      rc = kb_error_set(err, KB_EINTERRUPTED, "interrupted");
    if (rc)
      break;
    if (o->mode == KB_WATCH_SCREEN && !o->once && !cursor_hidden) {
      fputs("\033[?25l", out);
      cursor_hidden = 1;
    }
    rc = show(&p, &stale, o, out, &drawn, err);
    if (rc || o->once || kb__progress_ended(&p))
      break;
    nap(o->interval, stop);
    if (stop && *stop)
      rc = kb_error_set(err, KB_EINTERRUPTED, "interrupted");
  }
  if (cursor_hidden) {
    fputs("\033[?25h", out);
    fflush(out);
  }
  kb__progress_release(&p);
  return rc;
}
