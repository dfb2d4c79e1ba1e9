/* Decoding a queue item's line, layout 2 (kb/item.h). */
#include "kb/item.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kb/error.h"

#define N_FIELDS 11

/* Copies the `n` bytes at `s` into `out` (`size` bytes) as a string. Returns 0, or -1 when they
 * do not fit. */
static int copy_field(char *out, size_t size, const char *s, size_t n) {
  if (n >= size)
    return -1;
  memcpy(out, s, n);
  out[n] = '\0';
  return 0;
}

/* A whole non-negative number of the `n` bytes at `s` into `*v`. Returns 0, or -1. */
static int whole(const char *s, size_t n, long long *v) {
  char buf[24];
  if (n == 0 || copy_field(buf, sizeof buf, s, n) || strspn(buf, "0123456789") != n)
    return -1;
  errno = 0;
  *v = strtoll(buf, NULL, 10);
  return errno ? -1 : 0;
}

/* The runner as stored (the inside of a JSON string, `n` bytes at `s`) into `out` (`size` bytes)
 * as a name. Returns 0, or -1 when it does not decode or fit. */
static int unescape_runner(char *out, size_t size, const char *s, size_t n) {
  if (memchr(s, '\\', n) == NULL)
    return copy_field(out, size, s, n);
  char buf[1024];
  if (n + 2 > sizeof buf)
    return -1;
  buf[0] = '"';
  memcpy(buf + 1, s, n);
  buf[n + 1] = '"';
  json_t *v = json_loadb(buf, n + 2, JSON_DECODE_ANY, NULL);
  int rc = json_is_string(v) ? copy_field(out, size, json_string_value(v), json_string_length(v))
                             : -1;
  json_decref(v);
  return rc;
}

/* Fills `out` from the fields `f` (starts) and `len` (lengths) of a line of id `id`. Returns 0,
 * or -1 with `*why` set. */
static int fill(const char *id, const char *const *f, const size_t *len, struct kb_item *out,
                const char **why) {
  static const char *const states[] = {"queued", "leased", "done", "dead"};
  int known = 0;
  for (size_t i = 0; i < sizeof states / sizeof *states; i++)
    known = known || (len[0] == strlen(states[i]) && memcmp(f[0], states[i], len[0]) == 0);
  if (!known || copy_field(out->state, sizeof out->state, f[0], len[0]))
    return *why = "its state is not queued, leased, done or dead", -1;
  if (whole(f[1], len[1], &out->attempt) || whole(f[2], len[2], &out->claims) ||
      whole(f[3], len[3], &out->cost_ms))
    return *why = "its attempt, claims or cost is not a whole number", -1;
  char pri[64], *end = NULL;
  if (copy_field(pri, sizeof pri, f[4], len[4]) || len[4] == 0)
    return *why = "its priority is not a number", -1;
  errno = 0;
  out->priority = strtod(pri, &end);
  if (errno || *end != '\0' || !isfinite(out->priority))
    return *why = "its priority is not a finite number", -1;
  if (len[5] == 0 || copy_field(out->task, sizeof out->task, f[5], len[5]))
    return *why = "its task is empty or too long", -1;
  if (copy_field(out->token, sizeof out->token, f[6], len[6]) ||
      unescape_runner(out->runner, sizeof out->runner, f[7], len[7]) ||
      copy_field(out->charge, sizeof out->charge, f[8], len[8]) ||
      copy_field(out->result, sizeof out->result, f[9], len[9]))
    return *why = "its token, runner, charge or result does not decode or is too long", -1;
  size_t n = strlen(id);
  long long tier = -1;
  if (n < KB_CAND_ID_LEN + 2 || id[KB_CAND_ID_LEN] != ':' ||
      strspn(id, "0123456789abcdef") != KB_CAND_ID_LEN ||
      whole(id + KB_CAND_ID_LEN + 1, n - KB_CAND_ID_LEN - 1, &tier) || tier > 1000)
    return *why = "its id is not \"<candidate, 64 hex digits>:<tier>\"", -1;
  memcpy(out->cand, id, KB_CAND_ID_LEN);
  out->cand[KB_CAND_ID_LEN] = '\0';
  out->tier = (int)tier;
  return 0;
}

int kb_item_parse(const char *id, const char *line, struct kb_item *out, struct kb_error *err) {
  memset(out, 0, sizeof *out);
  if (line[0] == '{')
    return kb_error_set(err, KB_EINVAL, "item \"%s\": a JSON item of layout 1 (before "
                        "2026-12-07); this version reads layout %d only", id, KB_ITEM_LAYOUT);
  const char *f[N_FIELDS];
  size_t len[N_FIELDS];
  const char *p = line;
  int n = 0, more = 0; /* fields found; whether a "|" follows the last one read */
  while (n < N_FIELDS) {
    const char *bar = strchr(p, '|');
    f[n] = p;
    len[n] = bar ? (size_t)(bar - p) : strlen(p);
    n++;
    more = bar != NULL;
    if (!more)
      break;
    p = bar + 1;
  }
  const char *why = NULL;
  if (n != N_FIELDS || more)
    why = "not an item of layout 2 (11 fields separated by \"|\")";
  else
    fill(id, f, len, out, &why);
  if (why) {
    memset(out, 0, sizeof *out);
    return kb_error_set(err, KB_EINVAL, "item \"%s\": %s", id, why);
  }
  return KB_OK;
}
