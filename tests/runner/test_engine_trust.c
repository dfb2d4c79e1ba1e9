/* The sandbox engine's hardening against candidates that game the verdict (issue 12), through
 * the real kb-sandbox on the host backend: output caches keyed by content or by call count are
 * caught by timed calls on unseen inputs, a candidate whose two calls on the same inputs
 * disagree is `not deterministic`, and no honest seed of a built-in host task is rejected at
 * smoke, screen or full (with the cost of the fresh samples per tier printed: KB_LOG=debug
 * shows each evaluation's phases, "fresh" among them). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evaluator.h"
#include "fixture.h"
#include "kb/alloc.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/log.h"
#include "kb/result.h"
#include "kb/task.h"

#define CANDIDATES KB_SOURCE_DIR "/tests/runner/candidates"

static struct runner_fixture fx;
static int group_setup(void **state) {
  (void)state;
  return fixture_setup(&fx, "/tmp/kb-test-trust.XXXXXX");
}

static int group_teardown(void **state) {
  (void)state;
  fixture_teardown(&fx);
  return 0;
}

static void expect(const char *file, int tier, int status, const char *in_reason) {
  struct kb_result r;
  fixture_eval_file(&fx, &fx.row_sum, file, "", tier, &r);
  fixture_expect(&r, status, in_reason);
  kb_result_release(&r);
}

/* Keyed by a hash of sampled elements: right on every call, fast on repeated contents only.
 * Caught at every tier by the schedule of the cheap tiers (one fresh sample at least: the
 * fixture evaluates without KB_EVAL_FULL) and by the full schedule (--fresh full). */
static void test_content_memoizer(void **state) {
  (void)state;
  struct kb_evaluator *ev = kb_host_backend_generic(fx.backend);
  for (int mode = KB_FRESH_TIER; mode <= KB_FRESH_FULL; mode++) {
    kb__evaluator_set_fresh(ev, mode);
    for (int t = FX_TIER_SMOKE; t <= FX_TIER_FULL; t++)
      expect(CANDIDATES "/memo_content.c", t, KB_STATUS_REJECTED,
             "results kept between calls");
  }
  kb__evaluator_set_fresh(ev, KB_FRESH_TIER);
  expect(CANDIDATES "/memo_content.c", FX_TIER_SMOKE, KB_STATUS_REJECTED, "unseen inputs");
}

/* Keyed by the call count: the outputs of an earlier call returned for unseen contents. */
static void test_call_count_memoizer(void **state) {
  (void)state;
  expect(CANDIDATES "/memo_calls.c", FX_TIER_SMOKE, KB_STATUS_REJECTED,
         "wrong output on unseen inputs: output \"sums\" for contents never seen before");
}

static void test_nondeterministic(void **state) {
  (void)state;
  for (int t = FX_TIER_SMOKE; t <= FX_TIER_FULL; t++)
    expect(CANDIDATES "/nondeterministic.c", t, KB_STATUS_REJECTED,
           "not deterministic: two calls on input set 0 disagree");
}

/* Every seed of every built-in host task stays ok at smoke, screen and full. Under ASan (`make
 * asan`, -O0) the full tier is evaluated for each task's first seed only: its timed samples
 * run to max_seconds whatever the build, so the other seeds' full tiers add some 40 s of the
 * sanitized pass and no code path (the plain pass evaluates every seed at full). */
#if defined(__SANITIZE_ADDRESS__)
#define FULL_FOR_FIRST_SEED_ONLY 1
#else
#define FULL_FOR_FIRST_SEED_ONLY 0
#endif
static void test_honest_seeds(void **state) {
  (void)state;
  DIR *dir = opendir(KB_SOURCE_DIR "/tasks/host");
  assert_non_null(dir);
  struct dirent *de;
  int evaluated = 0, rejected = 0;
  double per_tier[4] = {0, 0, 0, 0};
  kb_log_set_level(KB_LOG_DEBUG); /* each evaluation's phases, the fresh samples' among them */
  while ((de = readdir(dir)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    char path[512];
    snprintf(path, sizeof path, "%s/tasks/host/%s", KB_SOURCE_DIR, de->d_name);
    struct kb_task task;
    struct kb_error err = {0};
    if (kb_task_load(path, &task, &err) != KB_OK)
      fail_msg("task %s: %s", path, err.msg);
    for (int i = 0; i < task.n_seeds; i++)
      for (int t = FX_TIER_SMOKE; t <= FX_TIER_FULL; t++) {
        if (FULL_FOR_FIRST_SEED_ONLY && i > 0 && t == FX_TIER_FULL)
          continue;
        struct kb_result r;
        double t0 = kb_now_mono();
        fixture_eval_file(&fx, &task, task.seeds[i].path, task.seeds[i].flags, t, &r);
        double wall = kb_now_mono() - t0;
        per_tier[t] += wall;
        print_message("%-14s %-8s %-6s %-9s median %10.2f us  n %3d  cost %5lld ms  %s\n",
                      task.id, task.seeds[i].name, fx.ladder.tiers[t].name,
                      kb_status_name(r.status), r.timing.median_us, r.timing.samples,
                      (long long)r.cost_ms, r.reason);
        evaluated++;
        if (r.status != KB_STATUS_OK)
          rejected++;
        kb_result_release(&r);
      }
    kb_task_release(&task);
  }
  closedir(dir);
  kb_log_set_level(KB_LOG_INFO);
  print_message("%d honest evaluations, %d not ok; wall time smoke %.2f s, screen %.2f s, full "
                "%.2f s\n",
                evaluated, rejected, per_tier[1], per_tier[2], per_tier[3]);
  assert_true(evaluated >= (FULL_FOR_FIRST_SEED_ONLY ? 2 : 3) * 15);
  assert_int_equal(rejected, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_content_memoizer),
      cmocka_unit_test(test_call_count_memoizer),
      cmocka_unit_test(test_nondeterministic),
      cmocka_unit_test(test_honest_seeds),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
