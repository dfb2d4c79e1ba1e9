/* Deterministic fixture data for the store tests (see fixture.h). */
#include "fixture.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const tier_names[] = {"compile", "smoke", "screen"};

struct kb_store_task_info fx_info(void) {
  struct kb_store_task_info info = {FX_CAMPAIGN, FX_TASK, FX_SPEC, FX_REFERENCE};
  return info;
}

void fx_id(char out[KB_CAND_ID_LEN + 1], unsigned long k) {
  snprintf(out, KB_CAND_ID_LEN + 1, "%064lx", k);
}

void fx_candidate(struct fx_candidate *fc, unsigned long k) {
  memset(fc, 0, sizeof *fc);
  struct kb_candidate *c = &fc->c;
  fx_id(c->id, k);
  snprintf(c->task, sizeof c->task, "%s", FX_TASK);
  snprintf(c->name, sizeof c->name, "cand-%lu", k);
  snprintf(c->generator, sizeof c->generator, "%s", k == 0 ? "seed" : "llm");
  if (k > 0)
    fx_id(c->parents[0], k - 1);
  if (k > 1)
    fx_id(c->parents[1], k - 2);
  snprintf(fc->knobs, sizeof fc->knobs, "-DBLOCK=%lu", 32 * (k % 4 + 1));
  snprintf(fc->flags, sizeof fc->flags, "-O3");
  int n = snprintf(fc->source, sizeof fc->source,
                   "// candidate %lu\nint kb_forward(void) { return %lu; }\n", k, k);
  size_t pad = (k * 37) % 500;
  memset(fc->source + n, '/', pad);
  fc->source[n + pad] = '\0';
  c->knobs = fc->knobs;
  c->flags = fc->flags;
  c->source = fc->source;
  c->created = 1700000000.0 + (double)k;
}

double fx_median(unsigned long i) { return 100.0 + (double)i; }

void fx_result(struct kb_result *r, unsigned long i, char log[64]) {
  memset(r, 0, sizeof *r);
  unsigned long tier = i % 3;
  snprintf(r->campaign, sizeof r->campaign, "%s", FX_CAMPAIGN);
  snprintf(r->task, sizeof r->task, "%s", FX_TASK);
  fx_id(r->candidate, i / 3);
  r->tier = (int)tier;
  snprintf(r->tier_name, sizeof r->tier_name, "%s", tier_names[tier]);
  r->attempt = 1;
  snprintf(r->charge_id, sizeof r->charge_id, "item-%lu#1", i);
  snprintf(r->runner, sizeof r->runner, "host:%lu", i % 5);
  r->backend = KB_BACKEND_HOST;
  snprintf(r->device, sizeof r->device, "cpu");
  r->status = i % 7 == 3 ? KB_STATUS_WRONG_OUTPUT : KB_STATUS_OK;
  if (r->status != KB_STATUS_OK)
    snprintf(r->reason, sizeof r->reason, "reason %lu", i);
  r->compile_s = 0.25 * (double)(i % 4);
  r->compile_cached = (int)(i % 2);
  r->registers = 32;
  r->spills = (int)(i % 3) - 1;
  r->shared_bytes = 0;
  r->compile_log = NULL;
  if (tier == 0 && i % 2 == 0) {
    snprintf(log, 64, "log for %lu\nwarning: x\n", i);
    r->compile_log = log;
  }
  r->sets_checked = (int)tier;
  r->max_abs_err = tier == 0 ? NAN : 1e-6 * (double)i;
  r->max_rel_err = tier == 0 ? NAN : 1e-7 * (double)i;
  if (tier == 0) {
    r->timing.samples = 0;
    r->timing.median_us = r->timing.p10_us = r->timing.p90_us = NAN;
    r->timing.mean_us = r->timing.min_us = r->timing.noise = NAN;
  } else {
    double m = fx_median(i);
    r->timing.samples = 10 * (int)tier;
    r->timing.warmup = 2;
    r->timing.median_us = m;
    r->timing.p10_us = m - 1;
    r->timing.p90_us = m + 1;
    r->timing.mean_us = m + 0.5;
    r->timing.min_us = m - 2;
    r->timing.noise = 0.01;
  }
  /* the top tier times torch (as a pytorch-oracle task's full tier does) on ok evaluations */
  r->torch_eager_us = tier == 2 && r->status == KB_STATUS_OK ? 200.0 + (double)i : NAN;
  r->torch_compile_us = tier == 2 && r->status == KB_STATUS_OK && i % 2 ? 150.0 + (double)i : NAN;
  r->cost_ms = 10 * (int64_t)i;
  r->started = 1700000000.0 + (double)i;
  r->finished = r->started + 0.5;
}

int fx_mkdtemp(char dir[64]) {
  const char *base = getenv("TMPDIR");
  int n = snprintf(dir, 64, "%s/kb-store-XXXXXX", base != NULL && base[0] ? base : "/tmp");
  if (n < 0 || n >= 64)
    return -1;
  return mkdtemp(dir) != NULL ? 0 : -1;
}

int fx_rmdir(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return -1;
  int rc = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char p[512];
    int n = snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (n < 0 || (size_t)n >= sizeof p || unlink(p) != 0)
      rc = -1;
  }
  closedir(d);
  if (rmdir(dir) != 0)
    rc = -1;
  return rc;
}
