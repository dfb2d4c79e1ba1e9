/* The host backend end to end: the built-in host tasks' seeds, and misbehaving candidates from
 * tests/runner/candidates/, each of which must get its status and the runner must live on. */
#include <errno.h>
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "host_backend.h"
#include "kb/clock.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/error.h"
#include "kb/result.h"
#include "kb/task.h"
#include "proc.h"
#include "stats.h"

#define TASKS KB_SOURCE_DIR "/tasks/host"
#define CANDIDATES KB_SOURCE_DIR "/tests/runner/candidates"

enum { TIER_COMPILE = 0, TIER_SMOKE = 1, TIER_SCREEN = 2, TIER_FULL = 3 };

struct fixture {
  char cache[64];               /* temporary cache folder */
  struct kb_host_backend *b;
  struct kb_task sum;
  struct kb_task matmul;
  struct kb_campaign ladder;    /* only tiers are used */
};

static struct fixture fx;

/* rm -r `path`: the cache holds files and, at most, build folders with files. */
static void remove_tree(const char *path) {
  DIR *d = opendir(path);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char child[512];
      int n = snprintf(child, sizeof child, "%s/%s", path, e->d_name);
      if (n < 0 || (size_t)n >= sizeof child)
        continue;
      struct stat st;
      if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
        remove_tree(child);
      else
        unlink(child);
    }
    closedir(d);
  }
  rmdir(path);
}

static int group_setup(void **state) {
  (void)state;
  struct kb_error err = {0};
  setenv("KB_INCLUDE_DIR", KB_SOURCE_DIR "/common/include", 1);
  snprintf(fx.cache, sizeof fx.cache, "/tmp/kb-test-runner.XXXXXX");
  if (mkdtemp(fx.cache) == NULL)
    return -1;
  if (kb_host_backend_new(fx.cache, NULL, &fx.b, &err) != KB_OK) {
    fprintf(stderr, "backend: %s\n", err.msg);
    return -1;
  }
  if (kb_task_load(TASKS "/sum", &fx.sum, &err) != KB_OK ||
      kb_task_load(TASKS "/matmul", &fx.matmul, &err) != KB_OK) {
    fprintf(stderr, "task: %s\n", err.msg);
    return -1;
  }
  kb_campaign_default_ladder(&fx.ladder);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  kb_host_backend_free(fx.b);
  kb_task_release(&fx.sum);
  kb_task_release(&fx.matmul);
  remove_tree(fx.cache);
  return 0;
}

/* Reads a file into a new string; fails the test when it cannot. */
static char *slurp(const char *path) {
  struct kb_buf b;
  struct kb_error err = {0};
  kb_buf_init(&b);
  if (kb_buf_read_file(&b, path, &err) != KB_OK)
    fail_msg("%s", err.msg);
  return kb_buf_detach(&b);
}

/* Evaluates `source` with `flags` as a candidate of `task` at `tier` (index `index`) into `r`
 * (initialised here; the caller releases it). */
static void eval_source(const struct kb_task *task, const char *source, const char *flags,
                        const struct kb_tier *tier, int index, struct kb_result *r) {
  struct kb_candidate c;
  struct kb_error err = {0};
  assert_int_equal(kb_candidate_init(&c, task->id, "test", "seed", source, "", flags, &err),
                   KB_OK);
  kb_result_init(r);
  int rc = kb_host_backend_evaluate(fx.b, task, &c, tier, index, r, &err);
  if (rc != KB_OK)
    fail_msg("evaluate: %s", err.msg);
  kb_candidate_release(&c);
}

static void eval_file(const struct kb_task *task, const char *path, int index,
                      struct kb_result *r) {
  char *source = slurp(path);
  eval_source(task, source, "", &fx.ladder.tiers[index], index, r);
  kb_free(source);
}

static void expect(const struct kb_result *r, int status, const char *in_reason) {
  if (r->status != status)
    fail_msg("status %s, expected %s; reason: %s", kb_status_name(r->status),
             kb_status_name(status), r->reason);
  if (in_reason != NULL && strstr(r->reason, in_reason) == NULL)
    fail_msg("reason \"%s\" does not mention \"%s\"", r->reason, in_reason);
  if (r->status != KB_STATUS_OK)
    print_message("%s: %s\n", kb_status_name(r->status), r->reason);
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
    eval_file(task, task->seeds[seed].path, TIER_FULL, &r);
    expect(&r, KB_STATUS_OK, NULL);
    assert_int_equal(r.sets_checked, task->n_sets);
    assert_true(r.timing.samples >= fx.ladder.tiers[TIER_FULL].min_samples);
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
  eval_file(&fx.sum, fx.sum.seeds[0].path, TIER_COMPILE, &r);
  expect(&r, KB_STATUS_OK, NULL);
  assert_int_equal(r.cost_ms, 0);
  assert_int_equal(r.timing.samples, 0);
  assert_int_equal(r.sets_checked, 0);
  kb_result_release(&r);
}

static void test_smoke_checks_one_set(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.matmul, fx.matmul.seeds[0].path, TIER_SMOKE, &r);
  expect(&r, KB_STATUS_OK, NULL);
  assert_int_equal(r.sets_checked, 1);
  assert_true(r.timing.samples >= 1);
  kb_result_release(&r);
}

static void test_segfault(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/segfault.c", TIER_SMOKE, &r);
  expect(&r, KB_STATUS_CRASH, "SIGSEGV");
  assert_true(r.cost_ms >= 0);
  kb_result_release(&r);
}

static void test_opens_file(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/opens_file.c", TIER_SMOKE, &r);
  expect(&r, KB_STATUS_REJECTED, "fopen");
  assert_int_equal(r.timing.samples, 0); /* rejected before it ran */
  kb_result_release(&r);
}

static void test_infinite_loop(void **state) {
  (void)state;
  struct kb_tier tier = fx.ladder.tiers[TIER_SMOKE];
  tier.timeout_s = 1.0;
  char *source = slurp(CANDIDATES "/infinite_loop.c");
  struct kb_result r;
  eval_source(&fx.sum, source, "", &tier, TIER_SMOKE, &r);
  kb_free(source);
  expect(&r, KB_STATUS_TIMEOUT, "timed out");
  assert_true(r.cost_ms >= 1000);
  kb_result_release(&r);
}

static void test_writes_inputs(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/writes_inputs.c", TIER_SCREEN, &r);
  expect(&r, KB_STATUS_REJECTED, "modified its inputs");
  assert_non_null(strstr(r.reason, "element 0 of input \"x\""));
  kb_result_release(&r);
  /* the inputs were restored: an honest candidate still passes */
  eval_file(&fx.sum, fx.sum.seeds[0].path, TIER_SCREEN, &r);
  expect(&r, KB_STATUS_OK, NULL);
  kb_result_release(&r);
}

static void test_no_output(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/no_output.c", TIER_SMOKE, &r);
  expect(&r, KB_STATUS_WRONG_OUTPUT, "element 0 is nan");
  kb_result_release(&r);
}

static void test_returns_nan(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/returns_nan.c", TIER_SMOKE, &r);
  expect(&r, KB_STATUS_WRONG_OUTPUT, "is nan, expected");
  kb_result_release(&r);
}

static void test_off_by_one(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.matmul, CANDIDATES "/off_by_one.c", TIER_SMOKE, &r);
  expect(&r, KB_STATUS_WRONG_OUTPUT, "output \"c\" of input set 0: element ");
  assert_non_null(strstr(r.reason, "expected"));
  assert_true(r.max_abs_err > fx.matmul.atol);
  kb_result_release(&r);
}

static void test_syntax_error(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/syntax_error.c", TIER_SMOKE, &r);
  expect(&r, KB_STATUS_COMPILE_ERROR, "candidate.c:7:");
  assert_non_null(r.compile_log);
  assert_non_null(strstr(r.compile_log, "candidate.c:7:"));
  assert_non_null(strstr(r.compile_log, "undeclared_variable"));
  assert_int_equal(r.cost_ms, 0);
  kb_result_release(&r);
  /* a failure is cached too */
  eval_file(&fx.sum, CANDIDATES "/syntax_error.c", TIER_SMOKE, &r);
  expect(&r, KB_STATUS_COMPILE_ERROR, "candidate.c:7:");
  assert_int_equal(r.compile_cached, 1);
  assert_non_null(r.compile_log);
  kb_result_release(&r);
}

static void test_no_forward(void **state) {
  (void)state;
  for (int tier = TIER_COMPILE; tier <= TIER_SMOKE; tier++) {
    struct kb_result r;
    eval_file(&fx.sum, CANDIDATES "/no_forward.c", tier, &r);
    expect(&r, KB_STATUS_COMPILE_ERROR, "does not export kb_forward");
    kb_result_release(&r);
  }
}

static void test_undefined_symbol(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/undefined_symbol.c", TIER_SMOKE, &r);
  expect(&r, KB_STATUS_COMPILE_ERROR, "kb_missing_helper");
  kb_result_release(&r);
}

static void test_calls_exit(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/calls_exit.c", TIER_SMOKE, &r);
  expect(&r, KB_STATUS_CRASH, "exited with status 0");
  assert_non_null(strstr(r.reason, "bye from the candidate"));
  kb_result_release(&r);
}

static void test_returns_error(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/returns_error.c", TIER_SMOKE, &r);
  expect(&r, KB_STATUS_CRASH, "kb_forward returned 7 on input set 0");
  kb_result_release(&r);
}

static void test_stateful(void **state) {
  (void)state;
  struct kb_result r;
  eval_file(&fx.sum, CANDIDATES "/stateful.c", TIER_SCREEN, &r);
  expect(&r, KB_STATUS_REJECTED, "wrong after repeated calls");
  kb_result_release(&r);
}

static void test_bad_flag(void **state) {
  (void)state;
  char *source = slurp(fx.sum.seeds[0].path);
  struct kb_result r;
  eval_source(&fx.sum, source, "-o /tmp/elsewhere.so", &fx.ladder.tiers[0], 0, &r);
  expect(&r, KB_STATUS_COMPILE_ERROR, "flag \"-o\" is not allowed");
  kb_result_release(&r);
  kb_free(source);
}

static void test_cache(void **state) {
  (void)state;
  char *base = slurp(fx.sum.seeds[0].path);
  struct kb_buf src;
  kb_buf_init(&src);
  /* a source no earlier run has cached */
  assert_int_equal(kb_buf_addf(&src, "%s/* %ld %d */\n", base, (long)time(NULL), (int)getpid()),
                   KB_OK);
  struct kb_result r;
  double t0 = kb_now_mono();
  eval_source(&fx.sum, src.data, "", &fx.ladder.tiers[0], 0, &r);
  double first = kb_now_mono() - t0;
  expect(&r, KB_STATUS_OK, NULL);
  assert_int_equal(r.compile_cached, 0);
  assert_true(r.compile_s > 0);
  kb_result_release(&r);
  t0 = kb_now_mono();
  eval_source(&fx.sum, src.data, "", &fx.ladder.tiers[0], 0, &r);
  double second = kb_now_mono() - t0;
  expect(&r, KB_STATUS_OK, NULL);
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
  assert_int_equal(kb_host_backend_evaluate(fx.b, &fx.sum, &c, &fx.ladder.tiers[0], 0, &r, &err),
                   KB_OK);
  assert_int_equal(r.compile_cached, 0);
  kb_result_release(&r);
  kb_candidate_release(&c);
  kb_buf_release(&src);
  kb_free(base);
}

static void test_compile_timeout(void **state) {
  (void)state;
  char *base = slurp(fx.sum.seeds[0].path);
  struct kb_buf src;
  kb_buf_init(&src);
  assert_int_equal(kb_buf_addf(&src, "%s/* timeout %d */\n", base, (int)getpid()), KB_OK);
  kb_host_backend_set_compile_timeout(fx.b, 0.001);
  struct kb_result r;
  eval_source(&fx.sum, src.data, "", &fx.ladder.tiers[0], 0, &r);
  expect(&r, KB_STATUS_COMPILE_ERROR, "compiler timed out");
  kb_result_release(&r);
  /* a timeout is not remembered: with time enough the same source builds */
  kb_host_backend_set_compile_timeout(fx.b, 60);
  eval_source(&fx.sum, src.data, "", &fx.ladder.tiers[0], 0, &r);
  expect(&r, KB_STATUS_OK, NULL);
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

/* Runs last: freeing the backend ends its sandbox, and every process an evaluation started was
 * reaped. */
static void test_no_children_left(void **state) {
  (void)state;
  kb_host_backend_free(fx.b);
  fx.b = NULL;
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
      cmocka_unit_test(test_bad_flag),
      cmocka_unit_test(test_cache),
      cmocka_unit_test(test_compile_timeout),
      cmocka_unit_test(test_no_children_left),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
