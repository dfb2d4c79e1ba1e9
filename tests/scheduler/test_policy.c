/* scheduler/policy.c and budget.c: promotion (top 1/eta, confidence bound, baseline, compile),
 * improvement tracking, stop conditions, the budget split, and the campaign's search section.
 * Pure functions, so plain results are fed in; no redis. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "budget.h"
#include "kb/campaign.h"
#include "kb/error.h"
#include "kb/result.h"
#include "policy.h"
#include "population.h"

#define N_TIERS 4

struct fx {
  struct kb_population pop;
  struct kb_policy policy;
  struct kb_search search;
};

static int setup(void **state) {
  static struct fx x;
  memset(&x, 0, sizeof x);
  kb_search_defaults(&x.search);
  kb__population_init(&x.pop, N_TIERS);
  kb__policy_init(&x.policy, &x.search, N_TIERS, 0);
  struct kb_task_pop *t = kb__population_task(&x.pop, "t");
  snprintf(t->baseline, sizeof t->baseline, "base");
  t->loaded = 1;
  *state = &x;
  return 0;
}

static int teardown(void **state) {
  struct fx *x = *state;
  kb__population_release(&x->pop);
  return 0;
}

/* Records a result of candidate `name` at `tier`: ok with `median` (0 = untimed) and a
 * relative standard error `se` of the median, or `status`. Returns the member. */
static struct kb_member *add(struct fx *x, const char *name, int tier, int status, double median,
                             double se, int64_t cost) {
  struct kb_result r;
  kb_result_init(&r);
  snprintf(r.task, sizeof r.task, "t");
  snprintf(r.candidate, sizeof r.candidate, "%s", name);
  r.tier = tier;
  r.attempt = 1;
  r.status = status;
  r.cost_ms = cost;
  if (median > 0) {
    int n = 16;
    double sigma = se * sqrt(n) / 1.2533;
    r.timing.samples = n;
    r.timing.median_us = median;
    r.timing.noise = sigma;
    r.timing.p10_us = median * (1 - 1.2816 * sigma);
    r.timing.p90_us = median * (1 + 1.2816 * sigma);
  }
  struct kb_member *m = kb__population_add(&x->pop, &r, name,
                                          strcmp(name, "base") == 0 ? "seed" : "llm");
  assert_non_null(m);
  kb__policy_observe(&x->policy, &x->pop.tasks[0], &r);
  return m;
}

static int promote(struct fx *x, struct kb_member *m, int tier) {
  return kb__policy_promote(&x->policy, &x->pop.tasks[0], m, tier);
}

/* The metrics mark (docs/search.md, "Hardware metrics"): the median a last-tier evaluation must
 * beat to rank among the task's best `top` there; 0 while fewer than `top` others are timed
 * there. */
static void test_metrics_bound(void **state) {
  struct fx *x = *state;
  struct kb_member *c1 = add(x, "c1", 2, KB_STATUS_OK, 500, 0.01, 200);
  assert_true(kb__policy_metrics_bound(&x->pop.tasks[0], c1, 3, 1) == 0); /* none at full */
  add(x, "base", 3, KB_STATUS_OK, 1000, 0.01, 1000);
  c1 = kb__population_member(&x->pop.tasks[0], "c1", NULL, NULL);
  assert_true(kb__policy_metrics_bound(&x->pop.tasks[0], c1, 3, 1) == 1000);
  /* the best three (an llm campaign's prompts): one timed at full, so any time ranks */
  assert_true(kb__policy_metrics_bound(&x->pop.tasks[0], c1, 3, 3) == 0);
  add(x, "c1", 3, KB_STATUS_OK, 400, 0.01, 1000);
  add(x, "c2", 3, KB_STATUS_OK, 700, 0.01, 1000);
  struct kb_member *mid = add(x, "mid", 2, KB_STATUS_OK, 600, 0.01, 200);
  assert_true(kb__policy_metrics_bound(&x->pop.tasks[0], mid, 3, 1) == 400);
  assert_true(kb__policy_metrics_bound(&x->pop.tasks[0], mid, 3, 2) == 700);
  assert_true(kb__policy_metrics_bound(&x->pop.tasks[0], mid, 3, 3) == 1000);
  /* its own last-tier result does not count, nor does a failure there */
  c1 = kb__population_member(&x->pop.tasks[0], "c1", NULL, NULL);
  assert_true(kb__policy_metrics_bound(&x->pop.tasks[0], c1, 3, 1) == 700);
  add(x, "bad", 3, KB_STATUS_WRONG_OUTPUT, 0, 0, 1000);
  mid = kb__population_member(&x->pop.tasks[0], "mid", NULL, NULL);
  assert_true(kb__policy_metrics_bound(&x->pop.tasks[0], mid, 3, 1) == 400);
}

static void test_compile_and_baseline_climb(void **state) {
  struct fx *x = *state;
  struct kb_member *base = add(x, "base", 0, KB_STATUS_OK, 0, 0, 0);
  assert_int_equal(promote(x, base, 0), 1);
  base = add(x, "base", 1, KB_STATUS_OK, 1000, 0.01, 50);
  struct kb_member *fast = add(x, "fast", 1, KB_STATUS_OK, 100, 0.01, 50);
  /* the baseline climbs although "fast" beats it; nothing climbs past the top */
  assert_int_equal(promote(x, base, 1), 1);
  base = add(x, "base", 3, KB_STATUS_OK, 1000, 0.01, 1000);
  assert_int_equal(promote(x, base, 3), 0);
  /* a failure never climbs, even at compile */
  struct kb_member *bad = add(x, "bad", 0, KB_STATUS_COMPILE_ERROR, 0, 0, 0);
  assert_int_equal(promote(x, bad, 0), 0);
  assert_int_equal(promote(x, fast, 1), 1);
}

static void test_top_fraction(void **state) {
  struct fx *x = *state;
  x->policy.z = 0; /* the confidence rule off: only the top 1/eta */
  add(x, "base", 1, KB_STATUS_OK, 1000, 0.01, 50);
  /* cohort of 6 with eta 3 keeps the 2 fastest: c1 (100) and c2 (200) */
  struct kb_member *c[5];
  char name[16];
  for (int i = 0; i < 5; i++) {
    snprintf(name, sizeof name, "c%d", i + 1);
    c[i] = add(x, name, 1, KB_STATUS_OK, 100.0 * (i + 1), 0.01, 50);
  }
  assert_int_equal(promote(x, c[0], 1), 1);
  assert_int_equal(promote(x, c[1], 1), 1);
  assert_int_equal(promote(x, c[2], 1), 0);
  assert_int_equal(promote(x, c[4], 1), 0);
  x->policy.eta = 2; /* keeps 3 */
  assert_int_equal(promote(x, c[2], 1), 1);
  assert_int_equal(promote(x, c[3], 1), 0);
}

static void test_confidence_bound(void **state) {
  struct fx *x = *state;
  add(x, "base", 2, KB_STATUS_OK, 1000, 0.01, 200);
  for (int i = 0; i < 6; i++) {
    char name[16];
    snprintf(name, sizeof name, "f%d", i);
    add(x, name, 2, KB_STATUS_OK, 100 + i, 0.001, 200);
  }
  /* 8th in a cohort of 9 (keep 3): promoted only when its bound reaches the best (100) */
  struct kb_member *noisy = add(x, "noisy", 2, KB_STATUS_OK, 110, 0.2, 200);
  struct kb_member *sure = add(x, "sure", 2, KB_STATUS_OK, 111, 0.01, 200);
  x->policy.z = 1.0;
  assert_int_equal(promote(x, noisy, 2), 1);  /* 110 - 22 < 100 */
  assert_int_equal(promote(x, sure, 2), 0);   /* 111 - 1.1 > 100 */
  x->policy.z = 0.4;
  assert_int_equal(promote(x, noisy, 2), 0);  /* 110 - 8.8 > 100 */
  const struct kb_member_tier *mt = &noisy->tiers[2];
  assert_true(fabs(kb__policy_median_se(mt) - 22.0) < 0.5);
  /* a lucky, noisy best (90 +- 18): "sure" (111 +- 1.1) cannot be told from it at z = 2,
   * although its bound is far above the best's median */
  add(x, "lucky", 2, KB_STATUS_OK, 90, 0.2, 200);
  x->policy.z = 2.0;
  assert_int_equal(promote(x, sure, 2), 1);   /* 108.8 < 90 + 36 */
  x->policy.z = 0.5;
  assert_int_equal(promote(x, sure, 2), 0);   /* 110.4 > 90 + 9 */
}

static void test_baseline_gate(void **state) {
  struct fx *x = *state;
  x->policy.z = 2.0;
  x->policy.eta_max = x->policy.eta; /* a plain 1/eta cut */
  /* at screen (tier 2, where timings count as progress) a cohort of losers: base 100 */
  add(x, "base", 2, KB_STATUS_OK, 100, 0.01, 200);
  struct kb_member *l1 = add(x, "l1", 2, KB_STATUS_OK, 150, 0.01, 200);
  add(x, "l2", 2, KB_STATUS_OK, 300, 0.01, 200);
  add(x, "l3", 2, KB_STATUS_OK, 400, 0.01, 200);
  /* "l1" is second of 4 (keep 2) but 150 - 3 > 100 + 2: confidently slower than the baseline */
  assert_int_equal(kb__policy_promote_reason(&x->policy, &x->pop.tasks[0], l1, 2),
                   KB_PROMOTE_NO);
  x->policy.baseline_gate = 0;
  assert_int_equal(kb__policy_promote_reason(&x->policy, &x->pop.tasks[0], l1, 2),
                   KB_PROMOTE_RANK);
  x->policy.baseline_gate = 1;
  x->policy.eta = 1; /* recording a pool: every candidate climbs, gate or not */
  assert_int_equal(promote(x, l1, 2), 1);
  x->policy.eta = 3;
  struct kb_member *tie = add(x, "tie", 2, KB_STATUS_OK, 101, 0.01, 200);
  assert_int_equal(kb__policy_promote_reason(&x->policy, &x->pop.tasks[0], tie, 2),
                   KB_PROMOTE_RANK);
  /* at smoke (tier 1) the gate does not apply: one input set and a few launches */
  x->policy.baseline_gate = 1;
  add(x, "base", 1, KB_STATUS_OK, 100, 0.01, 50);
  struct kb_member *s1 = add(x, "l1", 1, KB_STATUS_OK, 150, 0.01, 50);
  add(x, "l2", 1, KB_STATUS_OK, 300, 0.01, 50);
  add(x, "l3", 1, KB_STATUS_OK, 400, 0.01, 50);
  assert_int_equal(promote(x, s1, 1), 1);
}

static void test_reliable_eta(void **state) {
  struct fx *x = *state;
  x->policy.z = 0; /* the rank rule alone */
  x->policy.eta_max = 6;
  x->policy.keep_top = 2;
  x->policy.baseline_gate = 0;
  /* a spread of log medians far above the noise: reliability near 1, eta near 6 */
  char name[16];
  add(x, "base", 2, KB_STATUS_OK, 5000, 0.01, 200);
  for (int i = 0; i < 22; i++) {
    snprintf(name, sizeof name, "c%d", i);
    add(x, name, 2, KB_STATUS_OK, 100.0 * (i + 1), 0.01, 200);
  }
  /* looked up after the adds: adding members may move the array */
  struct kb_member *c[22];
  for (int i = 0; i < 22; i++) {
    snprintf(name, sizeof name, "c%d", i);
    c[i] = kb__population_member(&x->pop.tasks[0], name, NULL, NULL);
    assert_non_null(c[i]);
  }
  /* cohort 23: eta 3 keeps 8; eta ~6 keeps 4 (the floor min(keep_top 2, 8) does not bind) */
  assert_int_equal(promote(x, c[3], 2), 1);  /* 4 faster: base is slowest, c0..c2 */
  assert_int_equal(promote(x, c[4], 2), 0);
  x->policy.keep_top = 6; /* the floor: min(6, 8) */
  assert_int_equal(promote(x, c[5], 2), 1);
  assert_int_equal(promote(x, c[6], 2), 0);
  x->policy.eta = 1; /* every candidate climbs, whatever eta_max */
  assert_int_equal(promote(x, c[20], 2), 1);
  x->policy.eta = 3;
  x->policy.eta_max = 3; /* off: eta 3 keeps 8 */
  assert_int_equal(promote(x, c[7], 2), 1);
  assert_int_equal(promote(x, c[8], 2), 0);
  /* reliability: spread equal to the noise gives 0; small cohorts give 0 */
  double sum = 0, sum2 = 0;
  for (int i = 0; i < 10; i++) { /* log medians +-0.1: variance 0.01 */
    double l = i % 2 ? 0.1 : -0.1;
    sum += l;
    sum2 += l * l;
  }
  assert_true(fabs(kb__policy_reliability(10, sum, sum2, 10 * 0.0025) - 0.75) < 1e-9);
  assert_true(kb__policy_reliability(10, sum, sum2, 10 * 0.02) == 0);
  assert_true(kb__policy_reliability(KB_POLICY_MIN_COHORT - 1, sum, sum2, 0) == 0);
  x->policy.eta_max = 7;
  assert_true(fabs(kb__policy_eta(&x->policy, 10, sum, sum2, 10 * 0.0025) - 6.0) < 1e-9);
}

static void test_gain_and_stagnation(void **state) {
  struct fx *x = *state;
  x->policy.stagnation = 3;
  struct kb_task_pop *t = &x->pop.tasks[0];
  assert_int_equal(kb__policy_gain_tier(&x->policy), 2);
  add(x, "base", 2, KB_STATUS_OK, 1000, 0.01, 200);
  assert_int_equal(t->since_gain, 1); /* the first at a tier is no gain */
  add(x, "a", 1, KB_STATUS_OK, 100, 0.01, 50); /* smoke does not count */
  assert_int_equal(t->gains, 0);
  add(x, "a", 2, KB_STATUS_OK, 500, 0.01, 200);
  assert_int_equal(t->gains, 1);
  assert_int_equal(t->since_gain, 0);
  assert_true(fabs(t->spent_ms - 450) < 1e-9);
  assert_true(kb__policy_rate(t) > 0);
  add(x, "b", 2, KB_STATUS_OK, 498, 0.01, 200); /* 0.4%: below min_improvement */
  assert_int_equal(t->gains, 1);
  /* the same result again (a restarted scheduler) changes nothing */
  long seen = t->since_gain;
  add(x, "b", 2, KB_STATUS_OK, 498, 0.01, 200);
  assert_int_equal(t->since_gain, seen);
  assert_int_equal(kb__policy_check_stop(&x->policy, t), 0);
  add(x, "c", 2, KB_STATUS_WRONG_OUTPUT, 0, 0, 50);
  add(x, "d", 2, KB_STATUS_OK, 900, 0.01, 200);
  assert_int_equal(kb__policy_check_stop(&x->policy, t), 1);
  assert_int_equal(t->stopped, 1);
  assert_non_null(strstr(t->stop_reason, "stagnated"));
  /* a stopped task promotes nothing */
  struct kb_member *e = add(x, "e", 0, KB_STATUS_OK, 0, 0, 0);
  assert_int_equal(promote(x, e, 0), 0);
}

static void test_target_speedup(void **state) {
  struct fx *x = *state;
  x->policy.target_speedup = 2.0;
  struct kb_task_pop *t = &x->pop.tasks[0];
  add(x, "base", 3, KB_STATUS_OK, 1000, 0.01, 1000);
  add(x, "a", 2, KB_STATUS_OK, 100, 0.01, 200); /* 10x, but not at the top tier */
  assert_int_equal(kb__policy_check_stop(&x->policy, t), 0);
  add(x, "a", 3, KB_STATUS_OK, 600, 0.01, 1000);
  assert_int_equal(kb__policy_check_stop(&x->policy, t), 0);
  add(x, "b", 3, KB_STATUS_OK, 450, 0.01, 1000);
  assert_int_equal(kb__policy_check_stop(&x->policy, t), 1);
  assert_non_null(strstr(t->stop_reason, "target speedup"));
}

/* Before done (kb__policy_could_win): the trap of issue 15. "lanes" ran 6.28x at smoke against
 * the smoke baseline and never climbed; "tuned" is the best, 3.87x at full. "lanes" is faster at
 * smoke than "tuned" was there, so it could still win and climbs before the campaign ends; the
 * ranking itself puts "tuned" first (no cross-tier comparison). */
static void test_could_win_before_done(void **state) {
  struct fx *x = *state;
  struct kb_task_pop *t = &x->pop.tasks[0];
  int tier = -2;
  struct kb_member *base = add(x, "base", 1, KB_STATUS_OK, 18200, 0.01, 50);
  add(x, "base", 2, KB_STATUS_OK, 12000, 0.01, 200);
  base = add(x, "base", 3, KB_STATUS_OK, 10800, 0.01, 1000);
  add(x, "tuned", 1, KB_STATUS_OK, 18200 / 2.0, 0.01, 50);
  add(x, "tuned", 2, KB_STATUS_OK, 12000 / 2.5, 0.01, 200);
  struct kb_member *tuned = add(x, "tuned", 3, KB_STATUS_OK, 10800 / 3.87, 0.01, 1000);
  struct kb_member *lanes = add(x, "lanes", 1, KB_STATUS_OK, 18200 / 6.28, 0.01, 50);
  struct kb_member *slow = add(x, "slow", 1, KB_STATUS_OK, 18200 / 1.5, 0.01, 50);
  int best_tier = -1;
  assert_ptr_equal(kb__population_best(t, &best_tier), tuned);
  assert_int_equal(best_tier, 3);
  assert_int_equal(kb__policy_could_win(&x->policy, t, lanes, &tier), 1);
  assert_int_equal(tier, 1);
  assert_int_equal(kb__policy_could_win(&x->policy, t, slow, &tier), 0); /* slower than tuned */
  assert_int_equal(kb__policy_could_win(&x->policy, t, tuned, &tier), 0); /* at the last tier */
  assert_int_equal(kb__policy_could_win(&x->policy, t, base, &tier), 0);
  /* once it climbed and failed there, it has had its chance */
  lanes = add(x, "lanes", 2, KB_STATUS_WRONG_OUTPUT, 0, 0, 200);
  assert_int_equal(kb__policy_could_win(&x->policy, t, lanes, &tier), 0);
  assert_ptr_equal(kb__population_best(t, &best_tier), tuned);
  /* without a smoke time of the best, by speedup over the baseline: 1820x at smoke > 3.87x */
  add(x, "only", 1, KB_STATUS_OK, 10, 0.01, 50);
  t->members[1].tiers[1].evaluated = 0; /* tuned: no smoke result known */
  struct kb_member *only = kb__population_member(t, "only", NULL, NULL);
  assert_int_equal(kb__policy_could_win(&x->policy, t, only, &tier), 1);
  /* the best failing at its higher tiers on a retry: the ranking falls back to what is timed */
  tuned->tiers[3].status = KB_STATUS_TIMEOUT;
  tuned->tiers[2].status = KB_STATUS_TIMEOUT;
  assert_ptr_equal(kb__population_best(t, &best_tier), base); /* base at full now */
  /* a stopped task promotes nothing */
  t->stopped = 1;
  assert_int_equal(kb__policy_could_win(&x->policy, t, only, &tier), 0);
}

static void test_budget_split(void **state) {
  struct fx *x = *state;
  x->search.floor_share = 0.5;
  x->search.explore = 0;
  struct kb_budget_task tasks[3] = {
      {.used_ms = 0, .rate = 2e-3, .results = 10},
      {.used_ms = 5000, .rate = 1e-3, .results = 10},
      {.used_ms = 100, .rate = 0, .results = 10, .stopped = 1}};
  int64_t caps[3];
  /* total 30000: floors of 5000 each; task 0 needs 5000, task 1 none; pool 20000 - 5000 */
  kb__budget_split(&x->search, 30000, 20000, 0, tasks, 3, caps);
  assert_int_equal(caps[2], -1);
  assert_int_equal(caps[0], 5000 + 10000);
  assert_int_equal(caps[1], 5000 + 5000);
  assert_true(caps[0] - tasks[0].used_ms + caps[1] - tasks[1].used_ms <= 20000);
  /* nothing left to split: unused floors shrink in proportion; the minimum grant still lets a
   * task start its dearest evaluation while that much is available */
  kb__budget_split(&x->search, 30000, 2500, 0, tasks, 3, caps);
  assert_int_equal(caps[0], 2500);
  assert_int_equal(caps[1], 5000);
  kb__budget_split(&x->search, 30000, 2500, 1000, tasks, 3, caps);
  assert_int_equal(caps[1], 6000);
  /* no rate anywhere and no exploration: an even split of the pool */
  tasks[0].rate = tasks[1].rate = 0;
  tasks[0].used_ms = 5000;
  kb__budget_split(&x->search, 30000, 10000, 0, tasks, 3, caps);
  assert_int_equal(caps[0], 10000);
  assert_int_equal(caps[1], 10000);
  /* exploration favours the task with fewer results */
  x->search.explore = 1;
  tasks[1].results = 1000;
  kb__budget_split(&x->search, 30000, 10000, 0, tasks, 3, caps);
  assert_true(caps[0] > caps[1]);
}

static void test_search_section(void **state) {
  (void)state;
  static const char *text =
      "{\"schema\": \"kernelbrain.campaign/1\", \"id\": \"c\", \"backend\": \"host\",\n"
      " \"tasks\": [\"t\"], \"budget\": {\"gpu_seconds\": 1},\n"
      " \"search\": {\"eta\": 4, \"confidence_z\": 0, \"floor_share\": 0.5, \"explore\": 2,\n"
      "            \"window\": 8, \"rebalance_seconds\": 0.5, \"stagnation_evaluations\": 0,\n"
      "            \"min_improvement\": 0.05, \"eta_max\": 9, \"keep_top\": 2,\n"
      "            \"baseline_gate\": false}}";
  struct kb_campaign c;
  struct kb_error err = {0};
  assert_int_equal(kb_campaign_parse("c.json", text, "/", 0, &c, &err), KB_OK);
  assert_int_equal(c.search.eta, 4);
  assert_true(c.search.confidence_z == 0);
  assert_true(c.search.floor_share == 0.5);
  assert_true(c.search.explore == 2);
  assert_int_equal(c.search.window, 8);
  assert_true(c.search.rebalance_s == 0.5);
  assert_int_equal(c.search.stagnation, 0);
  assert_true(c.search.min_improvement == 0.05);
  assert_int_equal(c.search.eta_max, 9);
  assert_int_equal(c.search.keep_top, 2);
  assert_int_equal(c.search.baseline_gate, 0);
  kb_campaign_release(&c);
  static const char *plain =
      "{\"schema\": \"kernelbrain.campaign/1\", \"id\": \"c\", \"backend\": \"host\",\n"
      " \"tasks\": [\"t\"], \"budget\": {\"gpu_seconds\": 1}}";
  assert_int_equal(kb_campaign_parse("c.json", plain, "/", 0, &c, &err), KB_OK);
  assert_int_equal(c.search.eta, 3);
  assert_true(c.search.confidence_z == KB_SEARCH_Z);
  assert_int_equal(c.search.stagnation, 100);
  assert_int_equal(c.search.eta_max, KB_SEARCH_ETA_MAX);
  assert_int_equal(c.search.keep_top, 5);
  assert_int_equal(c.search.baseline_gate, 1);
  kb_campaign_release(&c);
  static const char *bad =
      "{\"schema\": \"kernelbrain.campaign/1\", \"id\": \"c\", \"backend\": \"host\",\n"
      " \"tasks\": [\"t\"], \"budget\": {\"gpu_seconds\": 1},\n"
      " \"search\": {\"window\": 0}}";
  assert_int_equal(kb_campaign_parse("c.json", bad, "/", 0, &c, &err), KB_EPARSE);
  if (strstr(err.msg, "c.json:3:23: \"search.window\" must be") == NULL)
    fail_msg("message: %s", err.msg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_compile_and_baseline_climb, setup, teardown),
      cmocka_unit_test_setup_teardown(test_top_fraction, setup, teardown),
      cmocka_unit_test_setup_teardown(test_confidence_bound, setup, teardown),
      cmocka_unit_test_setup_teardown(test_baseline_gate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reliable_eta, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gain_and_stagnation, setup, teardown),
      cmocka_unit_test_setup_teardown(test_target_speedup, setup, teardown),
      cmocka_unit_test_setup_teardown(test_could_win_before_done, setup, teardown),
      cmocka_unit_test_setup_teardown(test_budget_split, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_bound, setup, teardown),
      cmocka_unit_test(test_search_section),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
