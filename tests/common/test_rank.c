/* kb/rank.h, the one ranking rule, on a table of cases: the cross-tier trap of issue 15 (6.28x
 * at smoke against a smoke baseline, 3.87x at full against the full one: the full one ranks
 * first and is the best shown), ties, a candidate that failed at a higher tier, candidates with
 * no timing, a baseline missing at a tier, and the one test of "passed with a timing". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "kb/rank.h"

/* The default ladder: compile, smoke, screen, full. */
enum { COMPILE, SMOKE, SCREEN, FULL };

#define NONE 0.0

static struct kb_rank r4(double smoke, double screen, double full) {
  struct kb_rank r = {{0}};
  r.median_us[SMOKE] = smoke;
  r.median_us[SCREEN] = screen;
  r.median_us[FULL] = full;
  return r;
}

/* The baseline of the trap: 18.2 ms at smoke (3 samples), 10.8 ms at full. */
static const double base_smoke = 18200, base_screen = 12000, base_full = 10800;

struct order_case {
  const char *what;
  struct kb_rank a, b;
  int cmp; /* kb_rank_cmp(a, b) */
};

static void test_order_table(void **state) {
  (void)state;
  const struct order_case cases[] = {
      {"cross-tier trap: 3.87x at full ranks above 6.28x at smoke",
       r4(NONE, NONE, base_full / 3.87), r4(base_smoke / 6.28, NONE, NONE), -1},
      {"a faster median at a lower tier does not beat a slower one higher up",
       r4(1, 1, NONE), r4(500, 500, 9000), 1},
      {"same tier: the lower median ranks first", r4(900, 800, 700), r4(100, 100, 750), -1},
      {"tie at the same tier: equal", r4(5, 6, 700), r4(9, 9, 700), 0},
      {"failed at full (no timing there) ranks by its screen time, below one timed at full",
       r4(100, 200, NONE), r4(900, 900, 10000), 1},
      {"both failed at full: compared at screen", r4(100, 300, NONE), r4(100, 200, NONE), 1},
      {"timed beats never timed", r4(NONE, 1e9, NONE), r4(NONE, NONE, NONE), -1},
      {"two never timed are equal", r4(NONE, NONE, NONE), r4(NONE, NONE, NONE), 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct order_case *c = &cases[i];
    int got = kb_rank_cmp(&c->a, &c->b), back = kb_rank_cmp(&c->b, &c->a);
    if (got != c->cmp || back != -c->cmp)
      fail_msg("%s: cmp %d (reverse %d), want %d", c->what, got, back, c->cmp);
    assert_int_equal(kb_rank_better(&c->a, &c->b), c->cmp < 0);
    assert_int_equal(kb_rank_better(&c->b, &c->a), c->cmp > 0);
  }
  struct kb_rank timed = r4(5, NONE, NONE), untimed = r4(NONE, NONE, NONE);
  assert_true(kb_rank_better(&timed, NULL));
  assert_false(kb_rank_better(NULL, &timed));
  assert_false(kb_rank_better(NULL, &untimed)); /* NULL and never timed: both last */
  assert_int_equal(kb_rank_tier(NULL), -1);
  assert_int_equal(kb_rank_tier(&untimed), -1);
  assert_int_equal(kb_rank_tier(&timed), SMOKE);
}

/* Picking the best of a population by the rule, and the speedup a display shows for it. */
static void test_trap_best_and_its_speedup(void **state) {
  (void)state;
  struct kb_rank base = r4(base_smoke, base_screen, base_full);
  struct kb_rank pop[] = {
      r4(base_smoke / 6.28, NONE, NONE),            /* tuned~LANES=64: smoke only */
      r4(base_smoke / 2.0, base_screen / 2.5, base_full / 3.87), /* tuned: up to full */
      base,
      r4(base_smoke / 1.5, base_screen / 1.4, NONE), /* screen only */
  };
  int best = 0;
  for (int i = 1; i < 4; i++)
    if (kb_rank_better(&pop[i], &pop[best]))
      best = i;
  assert_int_equal(best, 1);
  int tier = -2;
  double s = kb_rank_speedup(&pop[best], &base, &tier);
  assert_int_equal(tier, FULL);
  assert_true(fabs(s - 3.87) < 1e-9);
  /* the smoke candidate's own ratio is at smoke, and said so */
  s = kb_rank_speedup(&pop[0], &base, &tier);
  assert_int_equal(tier, SMOKE);
  assert_true(fabs(s - 6.28) < 1e-9);
  /* the baseline against itself: 1x at its top tier */
  s = kb_rank_speedup(&base, &base, &tier);
  assert_int_equal(tier, FULL);
  assert_true(fabs(s - 1.0) < 1e-12);
}

/* The baseline missing at a tier: the speedup is at the highest tier where both are timed,
 * and that tier is returned, never a ratio of two tiers. */
static void test_baseline_missing_at_a_tier(void **state) {
  (void)state;
  struct kb_rank cand = r4(100, 200, 400);
  struct kb_rank base_no_full = r4(300, 500, NONE), base_smoke_only = r4(300, NONE, NONE);
  struct kb_rank base_none = r4(NONE, NONE, NONE), base_full_only = r4(NONE, NONE, 800);
  int tier = -2;
  assert_true(fabs(kb_rank_speedup(&cand, &base_no_full, &tier) - 2.5) < 1e-12);
  assert_int_equal(tier, SCREEN);
  assert_true(fabs(kb_rank_speedup(&cand, &base_smoke_only, &tier) - 3.0) < 1e-12);
  assert_int_equal(tier, SMOKE);
  assert_true(kb_rank_speedup(&cand, &base_none, &tier) == 0);
  assert_int_equal(tier, -1);
  assert_true(kb_rank_speedup(&cand, NULL, &tier) == 0);
  assert_int_equal(tier, -1);
  /* the baseline timed only above the candidate's top tier: no ratio at all */
  struct kb_rank low = r4(100, NONE, NONE);
  assert_true(kb_rank_speedup(&low, &base_full_only, &tier) == 0);
  assert_int_equal(tier, -1);
  assert_true(kb_rank_speedup(&low, &base_full_only, NULL) == 0);
  assert_true(kb_rank_speedup(NULL, &base_full_only, &tier) == 0);
}

static void test_passed_with_a_timing(void **state) {
  (void)state;
  assert_true(kb_rank_timed(1, 3, 2.5));
  assert_false(kb_rank_timed(0, 3, 2.5));   /* not ok: wrong answer, timeout, ... */
  assert_false(kb_rank_timed(1, 0, 2.5));   /* ok but not timed (the compile tier) */
  assert_false(kb_rank_timed(1, 3, 0));     /* no median */
  assert_false(kb_rank_timed(1, 3, -1));    /* an unknown written as -1 */
  assert_false(kb_rank_timed(1, 3, NAN));   /* or as NaN */
}

/* Speedups over torch eager: against the eager timed beside the result where it has one (the
 * identity of a launch-bound model timed 1.00x beside its own eager and 0.79x against the task's
 * eager from another evaluation on the H100), else the task's; 0 when unknown. */
static void test_eager_speedup(void **state) {
  (void)state;
  int own = -1;
  assert_float_equal(kb_rank_eager_speedup(142.0, 144.6, 111.9, &own), 144.6 / 142.0, 1e-12);
  assert_int_equal(own, 1);
  assert_float_equal(kb_rank_eager_speedup(142.0, NAN, 111.9, &own), 111.9 / 142.0, 1e-12);
  assert_int_equal(own, 0);
  assert_float_equal(kb_rank_eager_speedup(142.0, 0, 111.9, &own), 111.9 / 142.0, 1e-12);
  assert_float_equal(kb_rank_eager_speedup(142.0, -1, 111.9, NULL), 111.9 / 142.0, 1e-12);
  assert_float_equal(kb_rank_eager_speedup(142.0, NAN, NAN, &own), 0, 0);
  assert_int_equal(own, 0);
  assert_float_equal(kb_rank_eager_speedup(0, 144.6, 111.9, NULL), 0, 0);
  assert_float_equal(kb_rank_eager_speedup(NAN, 144.6, 111.9, NULL), 0, 0);
  assert_float_equal(kb_rank_eager_speedup(142.0, INFINITY, 0, NULL), 0, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_table),
      cmocka_unit_test(test_trap_best_and_its_speedup),
      cmocka_unit_test(test_baseline_missing_at_a_tier),
      cmocka_unit_test(test_passed_with_a_timing),
      cmocka_unit_test(test_eager_speedup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
