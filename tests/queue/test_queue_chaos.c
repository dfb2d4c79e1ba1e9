/* Chaos, CI-sized: runner processes claim, work 0-20 ms and complete while the test kill -9's
 * about 30 of them at random moments (respawning each) and reaps lost leases every 200 ms.
 * At the end every invariant of the queue and the ledger is checked from Redis alone
 * (queue_helpers.h, kbq_assert_final), and the runners' own counts are reconciled with what the
 * kills can explain.
 *
 * Each kill first stops the runner (SIGSTOP, waited for), reads the phase it is in, then kills
 * it: the phase is then exact, not a guess racing the runner. Half of the kills wait for a
 * runner holding a lease it has not completed ("between claim and complete"), a quarter spin
 * until a runner is inside a claim or complete call, a quarter hit whatever it is doing (often
 * connecting, just after a respawn). Kills are paced by
 * progress (kill k once about k/30 of 70% of the items are done), so they all land while work
 * remains however fast the machine is.
 *
 * The schedule comes from a seed printed at the start; KB_TEST_SEED=<seed> replays it (timing
 * still varies: the seed fixes which runner is killed and when, not where it then is). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb/error.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "queue_helpers.h"
#include "redis_group.h"


enum {
  ITEMS = 600,      /* 200 per tier */
  RUNNERS = 4,
  KILLS = 30,
  LEASE_MS = 1500,
  REAP_EVERY_MS = 200,
  MAX_ATTEMPTS = 4,
  TIME_LIMIT_MS = 120000,
};

static const char *phase_name(int p) {
  switch (p) {
  case KBQ_IDLE: return "idle";
  case KBQ_IN_CLAIM: return "in claim";
  case KBQ_WORKING: return "between claim and complete";
  case KBQ_IN_COMPLETE: return "in complete";
  default: return "?";
  }
}

/* The chaos run on campaign `cid`; `fused`: runners complete and claim in one call. */
static void chaos(const char *cid, int fused) {
  unsigned seed = kbq_seed(cid);
  unsigned rng = seed;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 10000);
  struct kb_queue q;
  kbq_make_campaign(r, cid, 100000000, LEASE_MS, MAX_ATTEMPTS, &q);
  kbq_enqueue_items(&q, ITEMS, 0);

  struct kbq_slot *slots = kbq_alloc_slots(RUNNERS);
  struct kbq_runner_cfg cfg = {.addr = kbt_group_redis.addr, .cid = cid, .work_max_ms = 20,
                               .retry_ms = 10000, .allow_missing = 0, .fused = fused};
  int gen[RUNNERS] = {0};
  int running[RUNNERS] = {0};
  char name[32];
  for (int s = 0; s < RUNNERS; s++) {
    snprintf(name, sizeof name, "r%d.%d", s, gen[s]);
    kbq_spawn_runner(&cfg, &slots[s], name, seed * 31u + (unsigned)s);
    running[s] = 1;
  }

  int kills = 0, kills_by_phase[4] = {0};
  int64_t requeued = 0, dead = 0;
  int64_t start = kbq_now_ms(), next_reap = start + REAP_EVERY_MS, last_kill = start;
  struct kb_error err = {0};
  struct kb_queue_status st;
  for (;;) {
    int64_t now = kbq_now_ms();
    if (now - start > TIME_LIMIT_MS)
      fail_msg("chaos did not finish in %d ms (seed %u): %d kills", TIME_LIMIT_MS, seed, kills);
    if (kb_queue_status(&q, &st, &err))
      fail_msg("status: %s", err.msg);
    if (now >= next_reap) {
      int rq = 0, dd = 0;
      if (kb_queue_reap(&q, 100, "reaper", &rq, &dd, &err))
        fail_msg("reap: %s", err.msg);
      requeued += rq;
      dead += dd;
      next_reap = now + REAP_EVERY_MS;
    }
    /* Kill k is due once k/KILLS of 70% of the items are done, plus a random 0-8 items. */
    int64_t due = (int64_t)kills * ITEMS * 7 / 10 / KILLS + (int64_t)(rand_r(&rng) % 9);
    if (kills < KILLS && st.done >= due && now - last_kill >= 5) {
      int s = (int)(rand_r(&rng) % RUNNERS);
      int mode = (int)(rand_r(&rng) % 4);
      if (running[s] && mode < 2) {
        /* wait (up to 60 ms) until it holds a lease it has not completed */
        for (int i = 0; i < 60 && slots[s].phase != KBQ_WORKING; i++)
          kbq_sleep_ms(1);
      } else if (running[s] && mode == 2) {
        /* spin (up to 40 ms) until it is inside a script call: claim or complete */
        for (int64_t until = kbq_now_ms() + 40; kbq_now_ms() < until;) {
          int p = __atomic_load_n(&slots[s].phase, __ATOMIC_SEQ_CST);
          if (p == KBQ_IN_CLAIM || p == KBQ_IN_COMPLETE)
            break;
        }
      } /* mode 3: whatever it is doing now */
      if (running[s]) {
        pid_t pid = slots[s].pid;
        assert_int_equal(kill(pid, SIGSTOP), 0);
        int wst = 0;
        assert_int_equal(waitpid(pid, &wst, WUNTRACED), pid);
        if (WIFSTOPPED(wst)) {
          int phase = __atomic_load_n(&slots[s].phase, __ATOMIC_SEQ_CST);
          assert_int_equal(kill(pid, SIGKILL), 0);
          assert_int_equal(waitpid(pid, &wst, 0), pid);
          assert_true(WIFSIGNALED(wst));
          kills++;
          kills_by_phase[phase]++;
          last_kill = now;
          if (getenv("KB_TEST_VERBOSE"))
            printf("kill %d: runner %d.%d (pid %d) %s, done %lld\n", kills, s, gen[s],
                   (int)pid, phase_name(phase), (long long)st.done);
        } else {
          /* it had exited on its own just before the stop */
          assert_true(WIFEXITED(wst));
          assert_int_equal(WEXITSTATUS(wst), 0);
        }
        gen[s]++;
        snprintf(name, sizeof name, "r%d.%d", s, gen[s]);
        kbq_spawn_runner(&cfg, &slots[s], name, seed * 31u + (unsigned)(s + 97 * gen[s]));
      }
    }
    /* Runners that finished on their own: all must exit 0. */
    for (int s = 0; s < RUNNERS; s++) {
      if (!running[s])
        continue;
      int wst = 0;
      pid_t got = waitpid(slots[s].pid, &wst, WNOHANG);
      if (got == slots[s].pid) {
        if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0)
          fail_msg("runner %d.%d (pid %d) ended with status 0x%x (seed %u)", s, gen[s],
                   (int)got, wst, seed);
        running[s] = 0;
        slots[s].pid = 0;
      }
    }
    int any = 0;
    for (int s = 0; s < RUNNERS; s++)
      any |= running[s];
    if (!any && st.open == 0)
      break;
    kbq_sleep_ms(3);
  }
  int64_t elapsed = kbq_now_ms() - start;

  long ok = 0, dup = 0, lost = 0, missing = 0, claims = 0;
  for (int s = 0; s < RUNNERS; s++) {
    ok += slots[s].ok;
    dup += slots[s].dup;
    lost += slots[s].lease_lost;
    missing += slots[s].charge_missing;
    claims += slots[s].claims;
  }
  printf("%s: %d items, %d kills (idle %d, in claim %d, between claim and complete %d, in "
         "complete %d), reaped %lld requeued + %lld dead, runners: %ld ok, %ld dup, %ld lease "
         "lost, %ld claims, %lld ms\n",
         cid, ITEMS, kills, kills_by_phase[KBQ_IDLE], kills_by_phase[KBQ_IN_CLAIM],
         kills_by_phase[KBQ_WORKING], kills_by_phase[KBQ_IN_COMPLETE], (long long)requeued,
         (long long)dead, ok, dup, lost, claims, (long long)elapsed);

  /* Not vacuous: the kills happened, and many of them between claim and complete. */
  assert_int_equal(kills, KILLS);
  assert_in_range(kills_by_phase[KBQ_WORKING], 5, KILLS);

  struct kbq_audit a;
  kbq_assert_final(r, cid, ITEMS, &a);
  assert_int_equal(a.done + a.dead, ITEMS);

  /* The runners' view agrees with Redis's. Without lost replies nothing is a duplicate; every
   * post was seen by a live runner except those whose runner died inside complete. */
  assert_int_equal(dup, 0);
  assert_int_equal(missing, 0);
  assert_true(ok <= a.done);
  if (a.done > ok + kills_by_phase[KBQ_IN_COMPLETE])
    fail_msg("%lld items done but runners saw %ld posts and only %d died inside complete",
             (long long)a.done, ok, kills_by_phase[KBQ_IN_COMPLETE]);
  /* Every runner killed between claim and complete left a lease that only the reaper ended;
   * leases of runners killed inside a call or refused with KB_ELEASE may add to that. */
  int64_t reaped = requeued + dead;
  assert_in_range(reaped, kills_by_phase[KBQ_WORKING],
                  kills_by_phase[KBQ_WORKING] + kills_by_phase[KBQ_IN_CLAIM] +
                      kills_by_phase[KBQ_IN_COMPLETE] + lost);
  /* A voided charge is a reaped lease (no release here). */
  assert_int_equal(a.voided, reaped);

  kbq_free_slots(slots, RUNNERS);
  kb_redis_free(r);
}

static void test_chaos_kill_runners(void **state) {
  (void)state;
  chaos("chaos", 0);
}

/* The same with runners that complete and claim in one call (kb_queue_complete_and_claim): a
 * kill inside that call may leave the lease of the next item, which the reaper ends. */
static void test_chaos_kill_fused_runners(void **state) {
  (void)state;
  chaos("chaos-fused", 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chaos_kill_runners),
      cmocka_unit_test(test_chaos_kill_fused_runners),
  };
  return cmocka_run_group_tests(tests, kbt_redis_group_setup, kbq_group_teardown);
}
