/* Test helper: a stand-in for a CUDA runner that posts results carrying a CUPTI profile through
 * the real queue path (kb_queue_claim, kb_queue_complete), so that a test without a GPU can
 * check what the scheduler writes to /profiles. Every claimed item gets an "ok" result with
 * timing, a same-run baseline, Range Profiler metrics, a kernel trace summary and kernel
 * records, all derived from (candidate, tier) as profile_expect() in check_writer.py derives
 * them: n = 1 + (first hex digit of the candidate) % 4 kernels; kernel k is named
 * "_Z4kernILi<k>EEvPf", grid (k+1, 2, 1), block (128, 1, 1), 32+k registers, 1024*k static and
 * 16*tier dynamic shared bytes, start 1000*(k+1) ns, end start+500+tier, stream 7,
 * correlation 100+k; median 50+tier us, baseline 100 us, dram 10+tier %, sm 20+tier %,
 * occupancy 30 %, l2 hit 40 %, kernel_us 5.5; trace kernels n+2, own n, own_ns 1000*n;
 * kernels_dropped = that hex digit % 2.
 *
 * usage: profile_runner CAMPAIGN MAX_RESULTS [DELAY_MS]   (redis from $KB_REDIS)
 * DELAY_MS: a pause after each result (default 0), so that a long test keeps a slow pace.
 * Exits 0 after MAX_RESULTS results or when the campaign is no longer running, 1 on an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "kb/result.h"

static int hex_digit(char c) { return c >= '0' && c <= '9' ? c - '0' : c - 'a' + 10; }

/* Fills `r` (initialized) for claim `c` as the header says. Returns KB_OK or KB_ENOMEM. */
static int make_result(const struct kb_queue *q, const struct kb_claim *c, struct kb_result *r) {
  int h = hex_digit(c->candidate[0]);
  int n = 1 + h % 4;
  snprintf(r->campaign, sizeof r->campaign, "%s", q->cid);
  snprintf(r->task, sizeof r->task, "%s", c->task);
  snprintf(r->candidate, sizeof r->candidate, "%s", c->candidate);
  r->tier = c->tier;
  snprintf(r->tier_name, sizeof r->tier_name, "%s", q->tiers[c->tier].name);
  r->attempt = c->attempt;
  snprintf(r->charge_id, sizeof r->charge_id, "%s", c->charge_id);
  snprintf(r->runner, sizeof r->runner, "profile-runner");
  r->backend = KB_BACKEND_CUDA;
  snprintf(r->device, sizeof r->device, "NVIDIA H200 (stand-in)");
  r->status = KB_STATUS_OK;
  r->sets_checked = 1;
  r->max_abs_err = 0;
  r->max_rel_err = 0;
  r->timing.samples = 10;
  r->timing.warmup = 2;
  r->timing.median_us = 50 + c->tier;
  r->timing.p10_us = r->timing.median_us;
  r->timing.p90_us = r->timing.median_us;
  r->timing.mean_us = r->timing.median_us;
  r->timing.min_us = r->timing.median_us;
  r->timing.noise = 0.01;
  r->baseline_median_us = 100;
  r->same_run_speedup = 100.0 / r->timing.median_us;
  r->kernel_us = 5.5;
  r->dram_pct = 10 + c->tier;
  r->sm_pct = 20 + c->tier;
  r->occupancy_pct = 30;
  r->l2_hit_pct = 40;
  r->trace = (struct kb_trace_summary){n + 2, n, 1000 * n, 0, 0, 0};
  r->kernels = kb_calloc((size_t)n, sizeof *r->kernels);
  if (r->kernels == NULL)
    return KB_ENOMEM;
  r->n_kernels = n;
  r->kernels_dropped = h % 2;
  for (int k = 0; k < n; k++) {
    struct kb_kernel_rec *x = &r->kernels[k];
    snprintf(x->name, sizeof x->name, "_Z4kernILi%dEEvPf", k);
    x->grid[0] = k + 1;
    x->grid[1] = 2;
    x->grid[2] = 1;
    x->block[0] = 128;
    x->block[1] = 1;
    x->block[2] = 1;
    x->registers = 32 + k;
    x->static_smem = 1024 * k;
    x->dynamic_smem = 16 * c->tier;
    x->start_ns = 1000 * (k + 1);
    x->end_ns = x->start_ns + 500 + c->tier;
    x->stream = 7;
    x->correlation = 100 + k;
  }
  /* a measured cost well inside the reservation (kb_tier_reserve_ms, which bounds it), as a
   * real evaluation's: posting the whole reservation would exhaust the budget in a few items */
  r->cost_ms = c->cost_ms / 1000;
  r->started = (double)time(NULL);
  r->finished = r->started;
  return KB_OK;
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: profile_runner CAMPAIGN MAX_RESULTS [DELAY_MS]\n");
    return 2;
  }
  long max = strtol(argv[2], NULL, 10);
  long delay_ms = argc == 4 ? strtol(argv[3], NULL, 10) : 0;
  struct kb_error err = {0};
  struct kb_redis *redis = NULL;
  struct kb_redis_opts ro = {.addr = NULL, .retry_ms = 5000};
  struct kb_queue q;
  int rc = kb_redis_connect(&ro, &redis, &err);
  if (rc == KB_OK)
    rc = kb_queue_open(&q, redis, argv[1], &err);
  long posted = 0;
  int idle = 0;
  while (rc == KB_OK && posted < max && idle < 600) {
    struct kb_claim c;
    char state[16] = "";
    rc = kb_queue_claim(&q, "profile-runner", 0, q.n_tiers - 1, &c, state, &err);
    if (rc == KB_EEMPTY || rc == KB_EBUDGET) {
      rc = KB_OK;
      idle++;
      struct timespec ts = {0, 50 * 1000 * 1000};
      nanosleep(&ts, NULL);
      continue;
    }
    if (rc == KB_ESTATE) {
      rc = KB_OK;
      break;
    }
    if (rc)
      break;
    idle = 0;
    struct kb_result r;
    kb_result_init(&r);
    char *json = NULL;
    rc = make_result(&q, &c, &r) == KB_OK ? kb_result_to_json(&r, &json, &err)
                                          : kb_error_set(&err, KB_ENOMEM, "out of memory");
    if (rc == KB_OK)
      rc = kb_queue_complete(&q, &c, r.cost_ms, json, "profile-runner", NULL, &err);
    kb_free(json);
    kb_result_release(&r);
    posted++;
    if (delay_ms > 0) {
      struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  kb_redis_free(redis);
  if (rc) {
    fprintf(stderr, "profile_runner: %s\n", err.msg);
    return 1;
  }
  printf("%ld\n", posted);
  return 0;
}
