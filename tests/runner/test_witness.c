/* The witness's rules (runner/witness.h): a table of what the two workers' clocks measured
 * against what the candidate's process claimed, each with the verdict it must get; and the
 * number of calls per request. The requests themselves run against the real workers in
 * tasks_modelnew (tests/tasks/test_modelnew.py, reference_tampering). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kb/result.h"
#include "witness.h"

/* the `cuda` column: 1 a device, 0 a host's wall clock (a PyTorch worker), CPU a host's
 * kb-sandbox on the kernel's count of each process's CPU time (the plan's cpu_clock) */
#define CPU 2

struct judge_case {
  const char *what;
  int cuda;
  int calls;
  double cand_s[3], ref_s[3], module_us[3]; /* the rounds (KB_WITNESS_ROUNDS) */
  double claimed_us, eager_same_us;
  int status;      /* expected */
  int eager_held;  /* expected */
  const char *reason; /* expected start of the reason, "" for ok */
};

static const struct judge_case cases[] = {
    /* 32 calls of 100 us against eager's 100 us: the clocks agree */
    {"an honest identity on the device", 1, 32,
     {0.0050, 0.0052, 0.0052}, {0.0050, 0.0051, 0.0051}, {100, 101, 101},
     100, 102, KB_STATUS_OK, 0, ""},
    /* its samples 25 us, its calls 400 us: rejected */
    {"a claim four times under its calls", 1, 32,
     {0.0160, 0.0161, 0.0161}, {0.0040, 0.0041, 0.0041}, {25, 25, 25},
     100, 100, KB_STATUS_REJECTED, 0, "timing not confirmed outside its process"},
    /* 1.8x under its calls: within the device's factor of 2 */
    {"a claim within the factor", 1, 32,
     {0.0100, 0.0100, 0.0100}, {0.0050, 0.0050, 0.0050}, {100, 100, 100},
     140, 100, KB_STATUS_OK, 0, ""},
    /* a short call: 5 us claimed, 30 us witnessed (a wait for the device per call): the slack */
    {"a short call's wait", 1, 32,
     {0.0020, 0.0020, 0.0020}, {0.0020, 0.0020, 0.0020}, {30, 30, 30},
     5, 5, KB_STATUS_OK, 0, ""},
    /* a short call on a device, shaped like one on an H100 (2026-12-06: samples 80 us,
     * witnessed 234 us, its module 47.5 us in the trusted worker; that run did not log the
     * trusted worker's whole call, taken here as 200 us): within the bound, which allows the
     * confined worker that much time around its call again */
    {"a short call's overhead", 1, 256,
     {0.0989, 0.1000, 0.1000}, {0.0512, 0.0520, 0.0520}, {47.5, 48, 48},
     80, 66, KB_STATUS_OK, 0, ""},
    /* the median round counts: one slow round of either process (the host's load) neither
     * condemns an honest claim nor excuses a false one */
    {"a slow round of the candidate's", 1, 32,
     {0.0300, 0.0050, 0.0050}, {0.0050, 0.0050, 0.0050}, {100, 100, 100},
     100, 100, KB_STATUS_OK, 0, ""},
    {"a slow round of the reference's", 1, 32,
     {0.0160, 0.0160, 0.0160}, {0.0040, 0.0300, 0.0040}, {25, 25, 25},
     100, 100, KB_STATUS_REJECTED, 0, "timing not confirmed"},
    /* the host under the test suite's load (2026-12-06, task sum, 5 calls, its samples 1063
     * us, the oracle 2900 us): each round's time per call moved with the load while the two
     * processes of a round agreed; the fastest round of each, from different rounds, said
     * 4.5 ms a call and rejected it; the rounds, each on its own, say 1.1 ms */
    {"rounds under a moving load", 0, 5, {0.0505, 0.0360, 0.0230}, {0.0600, 0.0450, 0.0150},
     {2900, 2900, 2900}, 1063, NAN, KB_STATUS_OK, 0, ""},
    /* the same load, a claim ten times under its calls */
    {"a false claim under a moving load", 0, 5, {0.0505, 0.0360, 0.0230},
     {0.0600, 0.0450, 0.0150}, {2900, 2900, 2900}, 106, NAN, KB_STATUS_REJECTED, 0,
     "timing not confirmed"},
    /* eager 10x in the candidate's process: rejected */
    {"the reference slowed", 1, 32,
     {0.0050, 0.0050, 0.0050}, {0.0050, 0.0050, 0.0050}, {100, 100, 100},
     100, 1000, KB_STATUS_REJECTED, 0, "slowed the reference in its process"},
    /* eager 2x there: reported from the trusted worker */
    {"eager twice the trusted worker's", 1, 32,
     {0.0050, 0.0050, 0.0050}, {0.0050, 0.0050, 0.0050}, {100, 100, 100},
     100, 200, KB_STATUS_OK, 1, ""},
    /* the host: 3x and 100 us of slack */
    {"the host's factor", 0, 32,
     {0.0128, 0.0128, 0.0128}, {0.0032, 0.0032, 0.0032}, {100, 100, 100},
     120, 100, KB_STATUS_OK, 0, ""},
    {"the host: a claim ten times under", 0, 32, {0.0352, 0.0352, 0.0352}, {0.0032, 0.0032, 0.0032},
     {100, 100, 100}, 100, 100, KB_STATUS_REJECTED, 0, "timing not confirmed"},
    /* a host's kb-sandbox on its CPU-time clock: 2x and 20 us. forges_timer_state
     * (tests/catalogue/host, task row_sum, 2026-12-07): its samples shortened to 2.3 us by
     * writing the sandbox's timer state, its calls witnessed at 68.7 us a call (64 calls, the
     * oracle 620 us): within the wall clock's 3x and 100 us, ok before */
    {"the host's CPU clock: samples forged under 100 us", CPU, 64,
     {0.0108672, 0.0108672, 0.0108672}, {0.0461632, 0.0461632, 0.0461632}, {620.2, 620.2, 620.2},
     2.3, NAN, KB_STATUS_REJECTED, 0, "timing not confirmed outside its process"},
    /* the same calls claimed honestly (honest_unrolled: 65.6 us) */
    {"the host's CPU clock: the same calls honest", CPU, 64,
     {0.0108672, 0.0108672, 0.0108672}, {0.0461632, 0.0461632, 0.0461632}, {620.2, 620.2, 620.2},
     65.6, NAN, KB_STATUS_OK, 0, ""},
    /* the most over its claim an honest seed of tasks/host was witnessed under load
     * (row_sum's tuned seed, 163.7 us against 113.2, 1.45x; 64 calls, the oracle 593.3 us) */
    {"the host's CPU clock: an honest seed at 1.45x", CPU, 64,
     {0.0356544, 0.0356544, 0.0356544}, {0.0631488, 0.0631488, 0.0631488}, {593.3, 593.3, 593.3},
     113.2, NAN, KB_STATUS_OK, 0, ""},
    /* under ASan at -O0 (layernorm's tuned seed, 2026-12-07: 788.4 us against 363.3, 16 calls,
     * the oracle 1900 us, 9981 us around each call in the trusted process): over 2x and 20 us,
     * under the tenth of the time around the calls that the two processes' shares of the
     * caches and memory move */
    {"the host's CPU clock: an honest seed under ASan", CPU, 16,
     {0.1723104, 0.1723104, 0.1723104}, {0.190096, 0.190096, 0.190096}, {1900, 1900, 1900},
     363.3, NAN, KB_STATUS_OK, 0, ""},
    /* witnessed 2.2x its claim, 1000 us around each call: over 2x, 20 us and 100 us (the wall
     * clock's rule let it through) */
    {"the host's CPU clock: 2.2x its claim", CPU, 10,
     {0.0320, 0.0320, 0.0320}, {0.0200, 0.0200, 0.0200}, {1000, 1000, 1000},
     1000, NAN, KB_STATUS_REJECTED, 0, "timing not confirmed"},
    /* no eager beside the candidate (NAN): only its own time judged */
    {"no eager beside it", 1, 32,
     {0.0050, 0.0050, 0.0050}, {0.0050, 0.0050, 0.0050}, {100, 100, 100},
     100, NAN, KB_STATUS_OK, 0, ""},
};

static void judges_the_table(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct judge_case *c = &cases[i];
    struct kb__witness_obs o;
    memset(&o, 0, sizeof o);
    o.calls = c->calls;
    o.rounds = 3;
    for (int r = 0; r < 3; r++) {
      o.cand_s[r] = c->cand_s[r];
      o.ref_s[r] = c->ref_s[r];
      o.module_us[r] = c->module_us[r];
    }
    o.cpu_clock = c->cuda == CPU;
    struct kb__witness_verdict v;
    memset(&v, 0, sizeof v);
    v.status = KB_STATUS_OK;
    kb__witness_judge(&o, c->claimed_us, NAN, c->eager_same_us, c->cuda == 1,
                      o.cpu_clock ? KB__WITNESS_ORACLE : KB__WITNESS_TORCH, &v);
    print_message("%s: %s %s\n", c->what, kb_status_name(v.status), v.reason);
    assert_int_equal(v.status, c->status);
    assert_int_equal(v.eager_held, c->eager_held);
    assert_memory_equal(v.reason, c->reason, strlen(c->reason));
    assert_true(v.cand_us > 0 || c->module_us[0] <= 0);
  }
}

static void keeps_a_workers_verdict(void **state) {
  (void)state;
  /* a verdict already set (the trusted worker found the outputs wrong) is not replaced, and
   * no rounds means nothing measured */
  struct kb__witness_obs o;
  memset(&o, 0, sizeof o);
  struct kb__witness_verdict v;
  memset(&v, 0, sizeof v);
  v.status = KB_STATUS_REJECTED;
  kb__witness_judge(&o, 100, NAN, 100, 1, KB__WITNESS_TORCH, &v);
  assert_int_equal(v.status, KB_STATUS_REJECTED);
  assert_true(isnan(v.cand_us));
  o.calls = 8;
  o.rounds = 1;
  o.cand_s[0] = 0.008;
  o.ref_s[0] = 0.001;
  o.module_us[0] = 100;
  kb__witness_judge(&o, 10, NAN, 100, 1, KB__WITNESS_TORCH, &v);
  assert_int_equal(v.status, KB_STATUS_REJECTED);
  assert_true(fabs(v.cand_us - 975.0) < 1e-6);
}

/* One round on the host's CPU clock: the candidate's calls witnessed at `cand_us` a call (the
 * trusted process's module at 500 us, 20 us around each call), judged against a wall-clock
 * claim and a CPU-time claim. */
static int judge_cpu(double cand_us, double wall_us, double cpu_us, char *reason) {
  struct kb__witness_obs o;
  memset(&o, 0, sizeof o);
  o.calls = 10;
  o.rounds = 1;
  o.cpu_clock = 1;
  o.module_us[0] = 500;
  o.ref_s[0] = 10 * 520e-6;
  o.cand_s[0] = o.ref_s[0] + 10 * (cand_us - 500) * 1e-6;
  struct kb__witness_verdict v;
  memset(&v, 0, sizeof v);
  v.status = KB_STATUS_OK;
  kb__witness_judge(&o, wall_us, cpu_us, NAN, 0, KB__WITNESS_ORACLE, &v);
  print_message("witnessed %.0f us, wall claim %.0f, CPU claim %.0f: %s %s\n", cand_us, wall_us,
                cpu_us, kb_status_name(v.status), v.reason);
  strcpy(reason, v.reason);
  return v.status;
}

static void judges_cpu_claims(void **state) {
  (void)state;
  char why[256];
  /* honest, on a loaded host: wall time well over the CPU time, the witness near the latter */
  assert_int_equal(judge_cpu(520, 900, 510, why), KB_STATUS_OK);
  assert_int_equal(judge_cpu(520, 530, 515, why), KB_STATUS_OK);
  /* a tiny call: the CPU clock's reads around the wall clock's may exceed it by a microsecond */
  assert_int_equal(judge_cpu(4, 3.0, 4.0, why), KB_STATUS_OK);
  /* forges_timer_state under load: both stamps moved by two thirds of each call (CPU claim
   * 173 us), the wall-clock claim grown back to 480 us by the load's waits, which the rule
   * against the wall-clock claim alone let through (2 x 480 + 20 + 2 > 520) */
  assert_int_equal(judge_cpu(520, 480, 173, why), KB_STATUS_REJECTED);
  assert_non_null(strstr(why, "in CPU time"));
  /* no CPU-time claim (NAN): the wall-clock rule as before */
  assert_int_equal(judge_cpu(520, 480, NAN, why), KB_STATUS_OK);
  /* only the wall-clock stamps moved: its intervals shorter than its thread's CPU time */
  assert_int_equal(judge_cpu(520, 173, 515, why), KB_STATUS_REJECTED);
  assert_non_null(strstr(why, "cannot exceed the wall time"));
}

static void sizes_the_requests(void **state) {
  (void)state;
  assert_int_equal(kb__witness_calls(10000, 10000), 3);  /* 10 ms calls: the minimum */
  assert_int_equal(kb__witness_calls(2000, 5000), 6);    /* the slower of the two counts */
  assert_int_equal(kb__witness_calls(1, 1), 256);        /* the most */
  assert_int_equal(kb__witness_calls(NAN, -1), 256);     /* unknown: as a short call */
  /* on a host's CPU clock: at least the draw's time in calls, at most 64 (task sum: 4 Mi
   * elements, some 29 ms to draw; a 1 ms kernel against a 2.9 ms oracle; a claim unknown) */
  assert_int_equal(kb__witness_cpu_calls(1000, 2900, 4194304), 30);
  assert_int_equal(kb__witness_cpu_calls(NAN, 2900, 4194304), 11);
  assert_int_equal(kb__witness_cpu_calls(100, 100, 4194304), KB_WITNESS_CPU_MAX_CALLS);
  assert_int_equal(kb__witness_cpu_calls(10000, 10000, 16), 3);
  /* a PyTorch task's draws: 256 calls of 8 us after 50 ms draws would take 77 s; a quarter of
   * the 30 s limit over 2 workers x 3 rounds of (50 ms + 9 us) is 24 calls */
  assert_int_equal(kb__witness_fit_calls(256, 0.05, 8, 9), 24);
  assert_int_equal(kb__witness_fit_calls(256, 1e-5, 8, 9), 256); /* quick draws: as given */
  assert_int_equal(kb__witness_fit_calls(256, 0.0, 8, 9), 256);  /* not known */
  assert_int_equal(kb__witness_fit_calls(256, NAN, 8, 9), 256);
  assert_int_equal(kb__witness_fit_calls(32, 2.0, 8, 9), 3);     /* the minimum */
  assert_int_equal(kb__witness_fit_calls(256, 0.01, 8, 90000), 12); /* the slower call counts */
}

/* Three rounds for a claim that could rank among its task's best, one for a claim no faster
 * than the scheduler's bound (the median of a result already witnessed). */
static void rounds_by_rank(void **state) {
  (void)state;
  assert_int_equal(kb__witness_rounds(100, -1), KB_WITNESS_ROUNDS);  /* not marked */
  assert_int_equal(kb__witness_rounds(100, 0), KB_WITNESS_ROUNDS);   /* any time ranks */
  assert_int_equal(kb__witness_rounds(100, 150), KB_WITNESS_ROUNDS); /* faster than the best */
  assert_int_equal(kb__witness_rounds(150, 150), 1);                 /* ties rank below it */
  assert_int_equal(kb__witness_rounds(200, 150), 1);                 /* slower */
  assert_int_equal(kb__witness_rounds(NAN, 150), KB_WITNESS_ROUNDS); /* no claim: all rounds */
  assert_int_equal(kb__witness_rounds(0, 150), KB_WITNESS_ROUNDS);
  assert_int_equal(kb__witness_rounds(200, NAN), KB_WITNESS_ROUNDS);
}

/* A confined request past the witness's time: the machine's when the trusted process, given as
 * long, needed over half of it or did not finish; the candidate's when it was quick. */
static void overrun_whose(void **state) {
  (void)state;
  struct kb__witness_obs o = {.rounds = 0};
  assert_int_equal(kb__witness_slow_machine(&o, 30, 1.2, 1), 0);  /* its calls alone slow */
  assert_int_equal(kb__witness_slow_machine(&o, 30, 15, 1), 0);   /* half: still its own */
  assert_int_equal(kb__witness_slow_machine(&o, 30, 15.5, 1), 1); /* the reference as slow */
  assert_int_equal(kb__witness_slow_machine(&o, 30, 30, 0), 1);   /* nor did it finish */
  assert_int_equal(kb__witness_slow_machine(&o, 30, NAN, 1), 0);  /* no time measured */
  /* the rounds done before: each must have been as slow for the reference (seen on this
   * machine: 915.7 ms a call against the reference's 14.3, then a round ran out) */
  o.rounds = 2;
  o.cand_s[0] = 2.0;
  o.ref_s[0] = 1.5;
  o.cand_s[1] = 9.2;
  o.ref_s[1] = 0.14;
  assert_int_equal(kb__witness_slow_machine(&o, 7.1, 7.1, 0), 0);
  o.ref_s[1] = 8.0;
  assert_int_equal(kb__witness_slow_machine(&o, 7.1, 7.1, 0), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(overrun_whose),
      cmocka_unit_test(judges_the_table),
      cmocka_unit_test(keeps_a_workers_verdict),
      cmocka_unit_test(judges_cpu_claims),
      cmocka_unit_test(sizes_the_requests),
      cmocka_unit_test(rounds_by_rank),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
