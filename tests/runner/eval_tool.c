/* kb-test-eval: evaluates a task bundle's seeds and given candidate files through the sandbox,
 * without Redis, on the default ladder; one line per evaluation. For measurements on the GPU
 * machine (tests/gpu/sandbox.sh) and a smoke test of the whole evaluation path in CI.
 *
 * usage: kb-test-eval --backend host|cuda [--cache DIR] [--tiers 1,2,3] [--repeat N] TASK_DIR
 *                     [CANDIDATE_FILE...]
 * Prints, per evaluation: task, name, tier, status, median/p10/p90 (us), noise, samples,
 * same-run speedup, cost (ms), the evaluation's wall time, the runner's overhead (wall time
 * minus the timed time, ms), sandbox starts and the last start's seconds, and the reason.
 * Exit status: 0 when every seed was ok at every tier, 1 otherwise, 2 for usage. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_file.h"
#include "evaluator.h"
#include "kb/alloc.h"
#include "kb/campaign.h"
#include "kb/cli.h"
#include "kb/error.h"
#include "kb/log.h"
#include "kb/result.h"
#include "kb/task.h"

static int eval_one(struct kb_evaluator *ev, const struct kb_task *task, const char *name,
                    const char *path, const char *flags, const struct kb_campaign *ladder,
                    int tier) {
  struct kb_error err = {0};
  struct kb_result r;
  double wall = 0;
  int rc = kb_test_eval_file(ev, task, name, path, flags ? flags : "", ladder, tier, &r, &wall,
                             &err);
  if (rc == 1) {
    fprintf(stderr, "kb-test-eval: %s\n", err.msg);
    kb_result_release(&r);
    return -1;
  }
  if (rc == 2) {
    printf("%-12s %-22s %-6s infra_error: %s\n", task->id, name, ladder->tiers[tier].name,
           err.msg);
    kb_result_release(&r);
    return 1;
  }
  char profile[160] = "";
  if (isfinite(r.dram_pct) || isfinite(r.sm_pct))
    snprintf(profile, sizeof profile,
             " | profile: kernel %.1f us, dram %.1f%%, sm %.1f%%, occupancy %.1f%%, l2 hit %.1f%%",
             r.kernel_us, r.dram_pct, r.sm_pct, r.occupancy_pct, r.l2_hit_pct);
  double timed_ms = r.timing.samples ? r.timing.mean_us * r.timing.samples / 1000.0 : 0;
  if (isfinite(r.baseline_median_us) && r.timing.samples)
    timed_ms += r.baseline_median_us * r.timing.samples / 1000.0;
  printf("%-12s %-22s %-6s %-13s median %10.2f p10 %10.2f p90 %10.2f noise %.4f n %4d "
         "same-run %5.2fx cost %6lld ms wall %7.3f s overhead %8.2f ms starts %d (%.3f s)%s%s%s\n",
         task->id, name, ladder->tiers[tier].name, kb_status_name(r.status),
         r.timing.samples ? r.timing.median_us : 0, r.timing.samples ? r.timing.p10_us : 0,
         r.timing.samples ? r.timing.p90_us : 0, r.timing.samples ? r.timing.noise : 0,
         r.timing.samples, isfinite(r.same_run_speedup) ? r.same_run_speedup : 0,
         (long long)r.cost_ms, wall, wall * 1000.0 - timed_ms, kb__evaluator_sandbox_starts(ev),
         kb__evaluator_sandbox_start_s(ev), profile, r.reason[0] ? " | " : "", r.reason);
  fflush(stdout);
  int ok = r.status == KB_STATUS_OK;
  kb_result_release(&r);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  kb_log_init("kb-test-eval");
  const char *backend = "host", *cache = "/tmp/kb-test-eval-cache", *tiers = "1,2,3";
  long repeat = 1;
  static const struct option longopts[] = {{"backend", required_argument, NULL, 'b'},
                                           {"cache", required_argument, NULL, 'C'},
                                           {"tiers", required_argument, NULL, 't'},
                                           {"repeat", required_argument, NULL, 'r'},
                                           {"help", no_argument, NULL, 'h'},
                                           {"version", no_argument, NULL, 'V'},
                                           {NULL, 0, NULL, 0}};
  static const char usage[] = "usage: kb-test-eval --backend host|cuda [--cache DIR] "
                              "[--tiers 1,2,3] [--repeat N] TASK_DIR [CANDIDATE_FILE...]\n";
  struct kb_error err = {0};
  int ch;
  while ((ch = getopt_long(argc, argv, "b:C:t:r:h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'b': backend = optarg; break;
    case 'C': cache = optarg; break;
    case 't': tiers = optarg; break;
    case 'r':
      if (kb_cli_parse_long("--repeat", optarg, 1, 1000000, &repeat, &err))
        return kb_cli_usage("kb-test-eval", &err);
      break;
    case 'h': fputs(usage, stdout); return 0;
    case 'V': return kb_cli_version("kb-test-eval");
    default: return kb_cli_try_help("kb-test-eval");
    }
  }
  if (kb_backend_from_name(backend) < 0) {
    fprintf(stderr, "kb-test-eval: --backend must be host or cuda, not \"%s\"\n", backend);
    return kb_cli_try_help("kb-test-eval");
  }
  if (optind >= argc) {
    fprintf(stderr, "kb-test-eval: missing TASK_DIR\n");
    return kb_cli_try_help("kb-test-eval");
  }
  struct kb_task task;
  struct kb_campaign ladder;
  struct kb_evaluator *ev = NULL;
  double ready_s = 0;
  if (kb_test_eval_open(argv[optind], backend, cache, &task, &ladder, &ev, &ready_s, &err) !=
      KB_OK) {
    fprintf(stderr, "kb-test-eval: %s\n", err.msg);
    return 1;
  }
  printf("# backend %s, device %s, sandbox started in %.3f s (backend ready in %.3f s)\n",
         backend, kb__evaluator_device(ev), kb__evaluator_sandbox_start_s(ev), ready_s);
  int bad = 0;
  for (long k = 0; k < repeat; k++)
    for (const char *t = tiers; *t; t++) {
      if (*t < '0' || *t > '9')
        continue;
      int tier = *t - '0';
      if (tier >= ladder.n_tiers)
        continue;
      for (int s = 0; s < task.n_seeds; s++)
        bad |= eval_one(ev, &task, task.seeds[s].name, task.seeds[s].path, task.seeds[s].flags,
                        &ladder, tier) != 0;
      for (int i = optind + 1; i < argc; i++) {
        const char *base = strrchr(argv[i], '/');
        eval_one(ev, &task, base ? base + 1 : argv[i], argv[i], "", &ladder, tier);
      }
    }
  kb__evaluator_free(ev);
  kb_task_release(&task);
  return bad;
}
