/* Pool files (see pool.h). */
#include "pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/result.h"

#define LINE_MAX_LEN 1024
#define FIELDS_MAX 32

/* Splits `line` in place at commas into `f` (at most FIELDS_MAX); returns the count. */
static int split(char *line, char **f) {
  int n = 0;
  char *p = line;
  for (;;) {
    if (n == FIELDS_MAX)
      return n + 1;
    f[n++] = p;
    char *comma = strchr(p, ',');
    if (comma == NULL)
      break;
    *comma = '\0';
    p = comma + 1;
  }
  return n;
}

static int number(const char *s, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0)
    return 0;
  *out = v;
  return 1;
}

int kb__bench_pool_load(const char *path, struct kb_bench_pool *p, struct kb_error *err) {
  memset(p, 0, sizeof *p);
  const char *base = strrchr(path, '/');
  snprintf(p->name, sizeof p->name, "%s", base ? base + 1 : path);
  char *dot = strrchr(p->name, '.');
  if (dot && strcmp(dot, ".csv") == 0)
    *dot = '\0';
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return kb_error_set(err, KB_EIO, "cannot open \"%s\": %s", path, strerror(errno));
  char line[LINE_MAX_LEN];
  int lineno = 0, header = 0, cap = 0, rc = KB_OK;
  while (rc == KB_OK && fgets(line, sizeof line, f) != NULL) {
    lineno++;
    size_t len = strlen(line);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = '\0';
    if (len == 0 || line[0] == '#')
      continue;
    char *fld[FIELDS_MAX + 1];
    int nf = split(line, fld);
    if (!header) {
      /* task,candidate,baseline,true_us,noise_1..noise_K,failure,fail_tier */
      int k = nf - 6;
      if (nf > FIELDS_MAX || k < 1 || k >= KB_MAX_TIERS || strcmp(fld[0], "task") != 0 ||
          strcmp(fld[3], "true_us") != 0 || strcmp(fld[nf - 1], "fail_tier") != 0) {
        rc = kb_error_set(err, KB_EPARSE, "%s:%d: header must be task,candidate,baseline,"
                          "true_us,noise_1,...,noise_K,failure,fail_tier", path, lineno);
        break;
      }
      p->n_tiers = k + 1;
      header = 1;
      continue;
    }
    if (nf != p->n_tiers + 5) {
      rc = kb_error_set(err, KB_EPARSE, "%s:%d: %d fields, want %d", path, lineno, nf,
                        p->n_tiers + 5);
      break;
    }
    if (p->n == cap) {
      cap = cap ? cap * 2 : 256;
      struct kb_bench_pool_cand *c = kb_reallocarray(p->c, (size_t)cap, sizeof *c);
      if (c == NULL) {
        rc = kb_error_set(err, KB_ENOMEM, "out of memory");
        break;
      }
      p->c = c;
    }
    struct kb_bench_pool_cand *c = &p->c[p->n];
    memset(c, 0, sizeof *c);
    double v = 0, tier = 0;
    int ok = strlen(fld[0]) < sizeof c->task && strlen(fld[1]) < sizeof c->name &&
             fld[1][0] != '\0' && number(fld[2], &v) && (v == 0 || v == 1);
    snprintf(c->task, sizeof c->task, "%s", fld[0]);
    snprintf(c->name, sizeof c->name, "%s", fld[1]);
    c->baseline = (int)v;
    ok = ok && number(fld[3], &c->true_us) && c->true_us > 0;
    for (int k = 1; ok && k < p->n_tiers; k++)
      ok = number(fld[3 + k], &c->noise[k]) && c->noise[k] >= 0;
    c->status = kb_status_from_name(fld[p->n_tiers + 3]);
    ok = ok && c->status >= 0 && number(fld[p->n_tiers + 4], &tier);
    c->fail_tier = (int)tier;
    ok = ok && (c->status == KB_STATUS_OK ? c->fail_tier == -1
                                          : c->fail_tier >= 0 && c->fail_tier < p->n_tiers);
    if (!ok) {
      rc = kb_error_set(err, KB_EPARSE, "%s:%d: bad row (names up to 63 bytes, baseline 0 or "
                        "1, true_us > 0, noise >= 0, a status name, fail_tier -1 for ok else a "
                        "tier)", path, lineno);
      break;
    }
    p->n++;
  }
  fclose(f);
  if (rc == KB_OK && p->n == 0)
    rc = kb_error_set(err, KB_EPARSE, "%s: no candidates", path);
  if (rc)
    kb__bench_pool_release(p);
  return rc;
}

void kb__bench_pool_release(struct kb_bench_pool *p) {
  if (p == NULL)
    return;
  kb_free(p->c);
  memset(p, 0, sizeof *p);
}
