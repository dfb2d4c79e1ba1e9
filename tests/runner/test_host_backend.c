/* The host backend end to end: the built-in host tasks' seeds, and misbehaving candidates from
 * tests/runner/candidates/, each of which must get its status and the runner must live on. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "host_backend.h"
#include "kb/clock.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/error.h"
#include "kb/result.h"
#include "kb/task.h"
#include "evaluator.h"
#include "proc.h"
#include "stats.h"
#include "witness.h"

#define CANDIDATES KB_SOURCE_DIR "/tests/runner/candidates"

static struct runner_fixture fx;

static int group_setup(void **state) {
  (void)state;
  return fixture_setup(&fx, "/tmp/kb-test-runner.XXXXXX");
}

static int group_teardown(void **state) {
  (void)state;
  fixture_teardown(&fx);
  return 0;
}

/* Evaluates `source` with `flags` as a candidate of `task` at `tier` (index `index`) into `r`
 * (initialised here; the caller releases it). */
static void eval_source(const struct kb_task *task, const char *source, const char *flags,
                        const struct kb_tier *tier, int index, struct kb_result *r) {
  struct kb_error err = {0};
  if (fixture_eval(&fx, task, source, flags, tier, index, 0, r, &err) != KB_OK)
    fail_msg("evaluate: %s", err.msg);
}

static void eval_file(const struct kb_task *task, const char *path, int index,
                      struct kb_result *r) {
  char *source = tu_slurp(path);
  eval_source(task, source, "", &fx.ladder.tiers[index], index, r);
  kb_free(source);
}

/* Both seeds of `task` pass the full tier and `fast` is faster than `naive`. */
static void seeds_pass_and_differ(const struct kb_task *task, const char *fast) {
  double medians[2] = {0, 0};
  const char *names[2] = {"naive", fast};
  for (int k = 0; k < 2; k++) {
    int seed = -1;
    for (int i = 0; i < task->n_seeds; i++)
      if (strcmp(task->seeds[i].name, names[k]) == 0)
        seed = i;
    assert_true(seed >= 0);
    struct kb_result r;
    eval_file(task, task->seeds[seed].path, FX_TIER_FULL, &r);
    fixture_expect(&r, KB_STATUS_OK, NULL);
    assert_int_equal(r.sets_checked, task->n_sets);
    assert_true(r.timing.samples >= fx.ladder.tiers[FX_TIER_FULL].min_samples);
    assert_true(r.timing.min_us <= r.timing.median_us);
    assert_true(r.timing.p10_us <= r.timing.median_us && r.timing.median_us <= r.timing.p90_us);
    assert_true(r.cost_ms > 0);
    assert_true(r.max_abs_err >= 0);
    assert_string_not_equal(r.device, "");
    medians[k] = r.timing.median_us;
    print_message("%s/%s on %s: median %.1f us, p10 %.1f, p90 %.1f, noise %.3f, %d samples, "
                  "cost %lld ms, max abs err %.3g\n",
                  task->id, names[k], r.device, r.timing.median_us, r.timing.p10_us,
                  r.timing.p90_us, r.timing.noise, r.timing.samples, (long long)r.cost_ms,
                  r.max_abs_err);
    kb_result_release(&r);
  }
  /* under valgrind every instruction costs about the same: speed says nothing there */
  if (getenv("KB_TEST_SKIP_SPEED") == NULL)
    assert_true(medians[1] < medians[0]);
}

static void test_sum_seeds(void **state) {
  (void)state;
  seeds_pass_and_differ(&fx.sum, "unrolled");
}

static void test_matmul_seeds(void **state) {
  (void)state;
  seeds_pass_and_differ(&fx.matmul, "ikj");
}

static void test_compile_tier(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, fx.sum.seeds[0].path, FX_TIER_COMPILE, &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  assert_int_equal(r.cost_ms, 0);
  assert_int_equal(r.timing.samples, 0);
  assert_int_equal(r.sets_checked, 0);
  kb_result_release(&r);
}

static void test_smoke_checks_one_set(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.matmul, fx.matmul.seeds[0].path, FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  assert_int_equal(r.sets_checked, 1);
  assert_true(r.timing.samples >= 1);
  kb_result_release(&r);
}

static void test_segfault(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/segfault.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_CRASH, "SIGSEGV");
  assert_true(r.cost_ms >= 0);
  kb_result_release(&r);
}

static void test_opens_file(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/opens_file.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_REJECTED, "fopen");
  assert_int_equal(r.timing.samples, 0); /* rejected before it ran */
  kb_result_release(&r);
}

static void test_infinite_loop(void **state) {
  (void)state;
  struct kb_tier tier = fx.ladder.tiers[FX_TIER_SMOKE];
  tier.timeout_s = 1.0;
  char *source = tu_slurp(CANDIDATES "/infinite_loop.c");
  struct kb_result r;
  eval_source(&fx.sum, source, "", &tier, FX_TIER_SMOKE, &r);
  kb_free(source);
  fixture_expect(&r, KB_STATUS_TIMEOUT, "timed out");
  assert_true(r.cost_ms >= 1000);
  kb_result_release(&r);
}

static void test_writes_inputs(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/writes_inputs.c", FX_TIER_SCREEN, &r);
  fixture_expect(&r, KB_STATUS_REJECTED, "modified its inputs");
  assert_non_null(strstr(r.reason, "element 0 of input \"x\""));
  kb_result_release(&r);
  /* the inputs were restored: an honest candidate still passes */
  eval_file(&fx.sum, fx.sum.seeds[0].path, FX_TIER_SCREEN, &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  kb_result_release(&r);
}

static void test_no_output(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/no_output.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_WRONG_OUTPUT, "element 0 is nan");
  kb_result_release(&r);
}

static void test_returns_nan(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/returns_nan.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_WRONG_OUTPUT, "is nan, expected");
  kb_result_release(&r);
}

static void test_off_by_one(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.matmul, CANDIDATES "/off_by_one.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_WRONG_OUTPUT, "output \"c\" of input set 0: element ");
  assert_non_null(strstr(r.reason, "expected"));
  assert_true(r.max_abs_err > fx.matmul.atol);
  kb_result_release(&r);
}

static void test_syntax_error(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/syntax_error.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_COMPILE_ERROR, "candidate.c:7:");
  assert_non_null(r.compile_log);
  assert_non_null(strstr(r.compile_log, "candidate.c:7:"));
  assert_non_null(strstr(r.compile_log, "undeclared_variable"));
  assert_int_equal(r.cost_ms, 0);
  kb_result_release(&r);
  /* a failure is cached too */
  eval_file(&fx.sum, CANDIDATES "/syntax_error.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_COMPILE_ERROR, "candidate.c:7:");
  assert_int_equal(r.compile_cached, 1);
  assert_non_null(r.compile_log);
  kb_result_release(&r);
}

static void test_no_forward(void **state) {
  (void)state;
  for (int tier = FX_TIER_COMPILE; tier <= FX_TIER_SMOKE; tier++) {
    struct kb_result r;
    eval_file(&fx.sum, CANDIDATES "/no_forward.c", tier, &r);
    fixture_expect(&r, KB_STATUS_COMPILE_ERROR, "does not export kb_forward");
    kb_result_release(&r);
  }
}

static void test_undefined_symbol(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/undefined_symbol.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_COMPILE_ERROR, "kb_missing_helper");
  kb_result_release(&r);
}

static void test_calls_exit(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/calls_exit.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_CRASH, "exited with status 0");
  assert_non_null(strstr(r.reason, "bye from the candidate"));
  kb_result_release(&r);
}

static void test_returns_error(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/returns_error.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_CRASH, "kb_forward returned 7 on input set 0");
  kb_result_release(&r);
}

static void test_stateful(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/stateful.c", FX_TIER_SCREEN, &r);
  fixture_expect(&r, KB_STATUS_REJECTED, "wrong after repeated calls");
  kb_result_release(&r);
}

static void test_bad_flag(void **state) {
  (void)state;
  char *source = tu_slurp(fx.sum.seeds[0].path);
  struct kb_result r;
  eval_source(&fx.sum, source, "-o /tmp/elsewhere.so", &fx.ladder.tiers[0], 0, &r);
  fixture_expect(&r, KB_STATUS_COMPILE_ERROR, "flag \"-o\" is not allowed");
  kb_result_release(&r);
  kb_free(source);
}

static void test_cache(void **state) {
  (void)state;
  char *base = tu_slurp(fx.sum.seeds[0].path);
  struct kb_buf src;
  kb_buf_init(&src);
  /* a source no earlier run has cached */
  assert_int_equal(kb_buf_addf(&src, "%s/* %ld %d */\n", base, (long)time(NULL), (int)getpid()),
                   KB_OK);
  struct kb_result r;
  double t0 = kb_now_mono();
  eval_source(&fx.sum, src.data, "", &fx.ladder.tiers[0], 0, &r);
  double first = kb_now_mono() - t0;
  fixture_expect(&r, KB_STATUS_OK, NULL);
  assert_int_equal(r.compile_cached, 0);
  assert_true(r.compile_s > 0);
  kb_result_release(&r);
  t0 = kb_now_mono();
  eval_source(&fx.sum, src.data, "", &fx.ladder.tiers[0], 0, &r);
  double second = kb_now_mono() - t0;
  fixture_expect(&r, KB_STATUS_OK, NULL);
  assert_int_equal(r.compile_cached, 1);
  assert_true(r.compile_s == 0);
  print_message("compile %.1f ms, cached %.2f ms\n", first * 1e3, second * 1e3);
  assert_true(second < first);
  assert_true(second < 0.1);
  kb_result_release(&r);
  /* different knobs are a different build */
  struct kb_candidate c;
  struct kb_error err = {0};
  assert_int_equal(kb_candidate_init(&c, "sum", "knobbed", "tune", src.data, "-DUNUSED=1", "",
                                     &err),
                   KB_OK);
  kb_result_init(&r);
  assert_int_equal(
      kb_host_backend_evaluate(fx.backend, &fx.sum, &c, &fx.ladder.tiers[0], 0, &r, &err), KB_OK);
  assert_int_equal(r.compile_cached, 0);
  kb_result_release(&r);
  kb_candidate_release(&c);
  kb_buf_release(&src);
  kb_free(base);
}

static void test_compile_timeout(void **state) {
  (void)state;
  char *base = tu_slurp(fx.sum.seeds[0].path);
  struct kb_buf src;
  kb_buf_init(&src);
  assert_int_equal(kb_buf_addf(&src, "%s/* timeout %d */\n", base, (int)getpid()), KB_OK);
  kb_host_backend_set_compile_timeout(fx.backend, 0.001);
  struct kb_result r;
  eval_source(&fx.sum, src.data, "", &fx.ladder.tiers[0], 0, &r);
  fixture_expect(&r, KB_STATUS_COMPILE_ERROR, "compiler timed out");
  kb_result_release(&r);
  /* a timeout is not remembered: with time enough the same source builds */
  kb_host_backend_set_compile_timeout(fx.backend, 60);
  eval_source(&fx.sum, src.data, "", &fx.ladder.tiers[0], 0, &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  assert_int_equal(r.compile_cached, 0);
  kb_result_release(&r);
  kb_buf_release(&src);
  kb_free(base);
}

static void test_timing_stats(void **state) {
  (void)state;
  double v[10] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  struct kb_timing t;
  kb__timing_stats(v, 10, 4, &t);
  assert_int_equal(t.samples, 10);
  assert_int_equal(t.warmup, 4);
  assert_float_equal(t.median_us, 5.5, 1e-12);
  assert_float_equal(t.p10_us, 1.9, 1e-12);
  assert_float_equal(t.p90_us, 9.1, 1e-12);
  assert_float_equal(t.mean_us, 5.5, 1e-12);
  assert_float_equal(t.min_us, 1.0, 1e-12);
  assert_float_equal(t.noise, sqrt(55.0 / 6.0) / 5.5, 1e-12);
  kb__timing_stats(v, 0, 0, &t);
  assert_int_equal(t.samples, 0);
}

/* The witness's rounds follow the scheduler's mark (kb__evaluator_set_mark): every round when
 * the candidate is not marked or its claim could rank, one when the claim is no faster than the
 * bound; an ok result either way (its outputs checked by the trusted sandbox each round). */
static void test_witness_rounds_follow_the_mark(void **state) {
  (void)state;
  struct kb_evaluator *ev = kb_host_backend_generic(fx.backend);
  char *source = tu_slurp(fx.sum.seeds[0].path);
  const double marks[] = {-1, 1e12, 1e-3, 0};
  const long want[] = {KB_WITNESS_ROUNDS, KB_WITNESS_ROUNDS, 1, KB_WITNESS_ROUNDS};
  for (int i = 0; i < 4; i++) {
    kb__evaluator_set_mark(ev, marks[i]);
    long before = kb__evaluator_witness_rounds(ev);
    double s0 = kb__evaluator_witness_s(ev);
    struct kb_result r;
    struct kb_error err = {0};
    if (fixture_eval(&fx, &fx.sum, source, "", &fx.ladder.tiers[FX_TIER_FULL], FX_TIER_FULL,
                     KB_EVAL_FULL, &r, &err) != KB_OK)
      fail_msg("evaluate: %s", err.msg);
    fixture_expect(&r, KB_STATUS_OK, NULL);
    long rounds = kb__evaluator_witness_rounds(ev) - before;
    print_message("mark %g us, claim %.1f us: %ld witness round(s) in %.2f s\n", marks[i],
                  r.timing.median_us, rounds, kb__evaluator_witness_s(ev) - s0);
    kb_result_release(&r);
    /* a second witness (a rejection by the clocks, asked again) runs every round as well */
    if (rounds != want[i] && rounds != want[i] + KB_WITNESS_ROUNDS)
      fail_msg("mark %g: %ld witness rounds, want %ld", marks[i], rounds, want[i]);
  }
  kb__evaluator_set_mark(ev, -1);
  kb_free(source);
}

/* A candidate that leaves the floating-point environment changed (rounding up, FTZ and DAZ)
 * after each call: the sandbox puts its own back after every call, so the candidate's fresh
 * inputs are redrawn as they were checksummed and the honest seeds after it in the same process
 * are still right (before, it was "modified its inputs" and sum's naive seed after it
 * wrong_output). */
static void test_fenv_left_changed(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/fenv_leak.c", FX_TIER_SCREEN, &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  kb_result_release(&r);
  for (int i = 0; i < fx.sum.n_seeds; i++) {
    eval_file(&fx.sum, fx.sum.seeds[i].path, FX_TIER_SCREEN, &r);
    fixture_expect(&r, KB_STATUS_OK, NULL);
    kb_result_release(&r);
  }
}

/* Runs last: freeing the backend ends its sandbox, and every process an evaluation started was
 * reaped. */
static void test_no_children_left(void **state) {
  (void)state;
  kb_host_backend_free(fx.backend);
  fx.backend = NULL;
  errno = 0;
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
  assert_int_equal(errno, ECHILD);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_timing_stats),
      cmocka_unit_test(test_compile_tier),
      cmocka_unit_test(test_smoke_checks_one_set),
      cmocka_unit_test(test_sum_seeds),
      cmocka_unit_test(test_matmul_seeds),
      cmocka_unit_test(test_segfault),
      cmocka_unit_test(test_opens_file),
      cmocka_unit_test(test_infinite_loop),
      cmocka_unit_test(test_writes_inputs),
      cmocka_unit_test(test_no_output),
      cmocka_unit_test(test_returns_nan),
      cmocka_unit_test(test_off_by_one),
      cmocka_unit_test(test_syntax_error),
      cmocka_unit_test(test_no_forward),
      cmocka_unit_test(test_undefined_symbol),
      cmocka_unit_test(test_calls_exit),
      cmocka_unit_test(test_returns_error),
      cmocka_unit_test(test_stateful),
      cmocka_unit_test(test_fenv_left_changed),
      cmocka_unit_test(test_bad_flag),
      cmocka_unit_test(test_cache),
      cmocka_unit_test(test_compile_timeout),
      cmocka_unit_test(test_witness_rounds_follow_the_mark),
      cmocka_unit_test(test_no_children_left),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
