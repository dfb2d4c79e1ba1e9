/* kb-bench-queue-ir: a fixed sequence of batch cycles (complete K, claim K) from one connection,
 * for counting the instructions redis-server spends per item (bench/queue/instructions.sh runs
 * the server under callgrind around it). Rates measured on a shared machine scatter with its
 * load; the instruction count of the same sequence does not (within 1% between runs), so it
 * compares two versions of the scripts where kb-bench-queue cannot (docs/benchmarks.md, "Batch
 * claims").
 *
 * --setup registers campaign "ir" (the queue tests' 3-tier ladder) and enqueues enough items
 * for the runs that follow; without it, one run: a claim of K, then CYCLES calls that each
 * complete the K items held (a result of about 700 bytes, as a runner's) and claim K more.
 * Exit codes: 0 done, 1 a queue call failed (the message names it), 2 bad command line. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/campaign.h"
#include "kb/error.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "small_ladder.h"

#define CID "ir"
#define RESULT_MAX 1024

static void usage(FILE *out) {
  fputs("usage: kb-bench-queue-ir --redis ADDR [--setup] [--cycles N] [--batch K]\n"
        "  --redis ADDR  the redis-server (unix:PATH or HOST:PORT)\n"
        "  --setup       register campaign \"ir\" and enqueue items for N cycles of K, twice over\n"
        "  --cycles N    batch calls after the first claim (default 50)\n"
        "  --batch K     items completed and claimed per call (default 8; 1..32; 1 is the\n"
        "                fused complete+claim form)\n",
        out);
}

/* Registers and opens the campaign and enqueues `n` items, spread over 230 tasks, tiers 1 and 2
 * (10 and 100 ms). */
static int setup(struct kb_redis *r, int n, struct kb_error *err) {
  struct kb_tier tiers[KBT_SMALL_LADDER_TIERS];
  kbt_small_ladder(tiers);
  struct kb_campaign_reg reg = {.cid = CID, .spec_json = "{}", .tiers = tiers, .n_tiers = 3,
                                .max_attempts = 3, .lease_ms = 600000,
                                .backend = KB_BACKEND_HOST, .gpu_ms = 1000000000000LL};
  struct kb_queue q;
  int rc = kb_queue_register(r, &reg, "kb-bench-queue-ir", NULL, err);
  if (rc == KB_OK)
    rc = kb_queue_open(&q, r, CID, err);
  if (rc == KB_OK)
    rc = kb_queue_set_state(&q, "submitting", "running", "ir", "kb-bench-queue-ir", err);
  for (int i = 0; rc == KB_OK && i < n; i++) {
    uint64_t s = (uint64_t)i * 0x2545f4914f6cdd1dULL + 1;
    char cand[KB_CAND_ID_LEN + 1], task[32];
    for (int j = 0; j < KB_CAND_ID_LEN; j++) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      cand[j] = "0123456789abcdef"[s & 15];
    }
    cand[KB_CAND_ID_LEN] = '\0';
    snprintf(task, sizeof task, "task-%03d", i % 230);
    rc = kb_queue_enqueue(&q, cand, task, 1 + i % 2, i % 2 ? 100 : 10, (double)i, NULL, err);
  }
  return rc;
}

/* The first claim, then `cycles` batch calls of `k`. */
static int run(struct kb_redis *r, int cycles, int k, struct kb_error *err) {
  static struct kb_claim held[KB_QUEUE_BATCH_MAX], next[KB_QUEUE_BATCH_MAX];
  static char res[KB_QUEUE_BATCH_MAX][RESULT_MAX];
  struct kb_queue_done d[KB_QUEUE_BATCH_MAX];
  struct kb_queue q;
  int n = 0;
  int rc = kb_queue_open(&q, r, CID, err);
  if (rc == KB_OK)
    rc = kb_queue_cycle_batch(&q, NULL, 0, "bench-r1", 0, -1, k, held, &n, NULL, NULL, err);
  for (int c = 0; rc == KB_OK && c < cycles; c++) {
    for (int j = 0; j < n; j++) {
      const struct kb_claim *h = &held[j];
      snprintf(res[j], sizeof res[j],
               "{\"schema\":\"kernelbrain.result/1\",\"campaign\":\"" CID "\",\"task\":\"%s\","
               "\"candidate\":\"%s\",\"tier\":%d,\"tier_name\":\"smoke\",\"attempt\":%d,"
               "\"charge_id\":\"%s\",\"runner\":\"bench-r1\",\"backend\":\"host\",\"device\":\"\","
               "\"status\":\"ok\",\"reason\":\"\",\"check\":{\"sets\":3,\"max_abs_err\":"
               "1.1920929e-07,\"max_rel_err\":2.3841858e-07},\"timing\":{\"median_us\":41.25,"
               "\"p10_us\":40.875,\"p90_us\":43.5,\"mean_us\":41.9,\"min_us\":40.5,\"noise\":"
               "0.0125,\"samples\":50,\"warmup\":3},\"cost_ms\":%lld}",
               h->task, h->candidate, h->tier, h->attempt, h->charge_id,
               (long long)(h->cost_ms / 2));
      d[j] = (struct kb_queue_done){.claim = h, .cost_ms = h->cost_ms / 2, .result_json = res[j]};
    }
    int m = 0;
    rc = kb_queue_cycle_batch(&q, d, n, "bench-r1", 0, -1, k, next, &m, NULL, NULL, err);
    if (rc == KB_OK) {
      memcpy(held, next, sizeof held);
      n = m;
    }
  }
  return rc;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {{"redis", required_argument, NULL, 'r'},
                                       {"setup", no_argument, NULL, 'S'},
                                       {"cycles", required_argument, NULL, 'c'},
                                       {"batch", required_argument, NULL, 'k'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *addr = NULL;
  int do_setup = 0, cycles = 50, k = 8, o;
  while ((o = getopt_long(argc, argv, "r:Sc:k:h", opts, NULL)) != -1) {
    switch (o) {
    case 'r': addr = optarg; break;
    case 'S': do_setup = 1; break;
    case 'c': cycles = atoi(optarg); break;
    case 'k': k = atoi(optarg); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (!addr || optind != argc || cycles < 1 || k < 1 || k > KB_QUEUE_BATCH_MAX) {
    usage(stderr);
    return 2;
  }
  struct kb_error err = {0};
  struct kb_redis *r = NULL;
  struct kb_redis_opts ro = {.addr = addr, .no_credentials = 1};
  int rc = kb_redis_connect(&ro, &r, &err);
  if (rc == KB_OK)
    rc = do_setup ? setup(r, k * (2 * cycles + 10), &err) : run(r, cycles, k, &err);
  if (rc != KB_OK)
    fprintf(stderr, "kb-bench-queue-ir: %s: %s\n", kb_err_name(rc),
            err.msg[0] ? err.msg : (rc == KB_EEMPTY ? "the queue ran dry" : "failed"));
  kb_redis_free(r);
  return rc == KB_OK ? 0 : 1;
}
