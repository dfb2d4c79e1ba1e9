/* Ladder JSON for Redis (see kb/ladder.h). */
#include "kb/ladder.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/error.h"

int kb_ladder_to_json(const struct kb_tier *tiers, int n, char **out, struct kb_error *err) {
  *out = NULL;
  json_t *arr = json_array();
  for (int i = 0; arr && i < n; i++) {
    const struct kb_tier *t = &tiers[i];
    json_t *o = json_pack("{s:s, s:I, s:i, s:i, s:i, s:i, s:f, s:f, s:f}", "name", t->name,
                          "cost_ms", (json_int_t)t->cost_ms, "input_sets", t->input_sets,
                          "warmup", t->warmup, "min_samples", t->min_samples, "max_samples",
                          t->max_samples, "max_seconds", t->max_seconds, "noise", t->noise,
                          "timeout_seconds", t->timeout_s);
    if (o == NULL || json_array_append_new(arr, o) != 0) {
      json_decref(arr);
      arr = NULL;
    }
  }
  char *text = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
  json_decref(arr);
  if (text == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  /* jansson allocates with malloc; hand back memory the caller frees with kb_free. */
  *out = kb_strdup(text);
  free(text);
  return *out ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
}

int kb_ladder_from_json(const char *text, const char *where, struct kb_tier *tiers, int *n,
                        struct kb_error *err) {
  json_error_t jerr;
  json_t *arr = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
  if (arr == NULL)
    return kb_error_set(err, KB_EPARSE, "%s: bad ladder JSON: %s", where, jerr.text);
  int rc = KB_OK;
  size_t len = json_array_size(arr);
  if (!json_is_array(arr) || len < 1 || len > KB_MAX_TIERS) {
    rc = kb_error_set(err, KB_EPARSE, "%s: ladder must be an array of 1..%d tiers", where,
                      KB_MAX_TIERS);
    goto out;
  }
  for (size_t i = 0; i < len; i++) {
    struct kb_tier *t = &tiers[i];
    memset(t, 0, sizeof *t);
    const char *name = NULL;
    json_int_t cost = 0;
    json_error_t e;
    if (json_unpack_ex(json_array_get(arr, i), &e, JSON_STRICT,
                       "{s:s, s:I, s:i, s:i, s:i, s:i, s:F, s:F, s:F}", "name", &name,
                       "cost_ms", &cost, "input_sets", &t->input_sets, "warmup", &t->warmup,
                       "min_samples", &t->min_samples, "max_samples", &t->max_samples,
                       "max_seconds", &t->max_seconds, "noise", &t->noise, "timeout_seconds",
                       &t->timeout_s) != 0) {
      rc = kb_error_set(err, KB_EPARSE, "%s: tier %zu: %s", where, i, e.text);
      goto out;
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    t->cost_ms = cost;
  }
  *n = (int)len;
out:
  json_decref(arr);
  return rc;
}

int64_t kb_tier_reserve_ms(const struct kb_tier *tiers, int n, int k, int torch) {
  if (k <= 0 || k >= n)
    return 0;
  double limit = tiers[k].timeout_s > 0 ? tiers[k].timeout_s : 0;
  double last = k == n - 1 ? (torch ? limit : 0) + KB_WITNESS_LIMIT_S : 0;
  double s = KB_SETUP_LIMIT_S + limit + last;
  return (int64_t)ceil(s * 1000.0) + KB_RESERVE_SLACK_MS;
}
