/* Redis restarted under load: runner processes claim and complete while the test restarts
 * redis-server on the same folder (AOF, appendfsync everysec), either gracefully (SHUTDOWN: the
 * AOF is fsynced, nothing is lost) or with kill -9. The runners' connections drop; the connection
 * layer must reconnect with backoff, reload the scripts (NOSCRIPT) and retry, and every item must
 * still end exactly once with an exact ledger. A reaper in the test process requeues leases that
 * a retried claim leaked (a claim whose reply was lost in the drop is not known to its runner).
 *
 * The schedule (work times) comes from a seed printed at the start; KB_TEST_SEED replays it. */
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

static struct kbt_redis big; /* test_commands_wait_out_aof_loading's own server */

enum {
  ITEMS = 450,
  RUNNERS = 4,
  LEASE_MS = 1000,
  REAP_EVERY_MS = 200,
  TIME_LIMIT_MS = 90000,
};

/* Restarts at these fractions of the items done. */
static const double restart_at[] = {0.3, 0.6};

struct restart_run {
  const char *cid;
  int graceful;          /* SHUTDOWN, else kill -9 */
  int n_restarts;
  int64_t done_before[2];  /* done just before each stop (the test's last status) */
  int64_t done_after[2];   /* done right after each restart */
  long ok_at_restart[2][RUNNERS];
  int64_t reaped;
  long ok, dup, lost, missing;
  struct kbq_audit audit;
};

static void run_with_restarts(struct restart_run *run) {
  unsigned seed = kbq_seed(run->cid);
  /* The test's own connection reconnects through the restarts too. */
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 20000);
  struct kb_queue q;
  kbq_make_campaign(r, run->cid, 100000000, LEASE_MS, 50, &q);
  kbq_enqueue_items(&q, ITEMS, 0);
  struct kbq_slot *slots = kbq_alloc_slots(RUNNERS);
  struct kbq_runner_cfg cfg = {.addr = kbt_group_redis.addr, .cid = run->cid, .work_max_ms = 8,
                               .retry_ms = 20000, .allow_missing = !run->graceful};
  pid_t pids[RUNNERS];
  int running[RUNNERS];
  for (int s = 0; s < RUNNERS; s++) {
    char name[32];
    snprintf(name, sizeof name, "%s-r%d", run->cid, s);
    cfg.fused = s % 2; /* half the runners complete and claim in one call */
    pids[s] = kbq_spawn_runner(&cfg, &slots[s], name, seed * 17u + (unsigned)s);
    running[s] = 1;
  }
  int restarts = 0;
  int64_t start = kbq_now_ms(), next_reap = start;
  struct kb_error err = {0};
  struct kb_queue_status st;
  for (;;) {
    int64_t now = kbq_now_ms();
    if (now - start > TIME_LIMIT_MS)
      fail_msg("%s did not finish in %d ms after %d restarts", run->cid, TIME_LIMIT_MS, restarts);
    if (kb_queue_status(&q, &st, &err))
      fail_msg("status: %s", err.msg);
    if (restarts < run->n_restarts && st.done >= (int64_t)(restart_at[restarts] * ITEMS)) {
      run->done_before[restarts] = st.done;
      for (int s = 0; s < RUNNERS; s++)
        run->ok_at_restart[restarts][s] = slots[s].ok + slots[s].dup;
      pid_t old = kbt_group_redis.pid;
      if (!run->graceful)
        kbt_redis_stop(&kbt_group_redis, 0); /* kill -9; restart then finds it stopped */
      assert_int_equal(kbt_redis_restart(&kbt_group_redis), 0);
      assert_true(kbt_group_redis.pid != old);
      if (kb_queue_status(&q, &st, &err))
        fail_msg("status after restart %d: %s", restarts + 1, err.msg);
      run->done_after[restarts] = st.done;
      printf("%s: restart %d (%s) at %lld done; %lld done after it\n", run->cid, restarts + 1,
             run->graceful ? "SHUTDOWN" : "kill -9", (long long)run->done_before[restarts],
             (long long)st.done);
      restarts++;
    }
    if (now >= next_reap) {
      int rq = 0, dd = 0;
      if (kb_queue_reap(&q, 100, "reaper", &rq, &dd, &err))
        fail_msg("reap: %s", err.msg);
      run->reaped += rq + dd;
      next_reap = now + REAP_EVERY_MS;
    }
    int any = 0;
    for (int s = 0; s < RUNNERS; s++) {
      if (!running[s])
        continue;
      int wst = 0;
      if (waitpid(pids[s], &wst, WNOHANG) == pids[s]) {
        if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0)
          fail_msg("%s: runner %d (pid %d) ended with status 0x%x after %d restarts (seed %u)",
                   run->cid, s, (int)pids[s], wst, restarts, seed);
        running[s] = 0;
      }
      any |= running[s];
    }
    if (!any && st.open == 0)
      break;
    kbq_sleep_ms(5);
  }
  if (restarts != run->n_restarts) { /* seen once under a loaded ASan CI run, not reproduced */
    long ok = 0, dup = 0, lost = 0, missing = 0;
    for (int s = 0; s < RUNNERS; s++) {
      ok += slots[s].ok;
      dup += slots[s].dup;
      lost += slots[s].lease_lost;
      missing += slots[s].charge_missing;
    }
    fail_msg("%s ended after %d of %d restarts: open %lld, done %lld, dead %lld, leased %lld; "
             "runners ok %ld, dup %ld, lease lost %ld, charge missing %ld; %lld reaped (seed %u)",
             run->cid, restarts, run->n_restarts, (long long)st.open, (long long)st.done,
             (long long)st.dead, (long long)st.leased, ok, dup, lost, missing,
             (long long)run->reaped, seed);
  }
  /* Every runner reconnected: each exited 0, and it exits only after a status call that found
   * no open item, which cannot have happened before the last restart (items were open then).
   * Work went on after it too. */
  long after = 0;
  for (int s = 0; s < RUNNERS; s++) {
    run->ok += slots[s].ok;
    run->dup += slots[s].dup;
    run->lost += slots[s].lease_lost;
    run->missing += slots[s].charge_missing;
    after += slots[s].ok + slots[s].dup - run->ok_at_restart[restarts - 1][s];
  }
  if (after <= 0)
    fail_msg("%s: runners completed nothing after the last restart", run->cid);
  printf("%s: %lld ms; runners %ld ok, %ld dup, %ld lease lost, %ld charge missing; %lld "
         "leases reaped\n",
         run->cid, (long long)(kbq_now_ms() - start), run->ok, run->dup, run->lost, run->missing,
         (long long)run->reaped);
  kbq_assert_final(r, run->cid, ITEMS, &run->audit);
  kbq_free_slots(slots, RUNNERS);
  kb_redis_free(r);
}

/* SHUTDOWN twice mid-run: nothing is lost, every item is done exactly once. */
static void test_graceful_restarts(void **state) {
  (void)state;
  struct restart_run run = {.cid = "rs-graceful", .graceful = 1, .n_restarts = 2};
  run_with_restarts(&run);
  for (int i = 0; i < 2; i++)
    if (run.done_after[i] < run.done_before[i])
      fail_msg("restart %d lost completions: %lld done before SHUTDOWN, %lld after", i + 1,
               (long long)run.done_before[i], (long long)run.done_after[i]);
  assert_int_equal(run.audit.done, ITEMS);
  assert_int_equal(run.audit.dead, 0);
  /* No write was lost, so every claim a runner heard of still exists. */
  assert_int_equal(run.missing, 0);
  /* A runner's post is seen by it either directly (ok) or, when the reply was lost in the
   * drop, as a duplicate of its retry; each done item is exactly one of those. */
  assert_true(run.ok <= run.audit.done);
  assert_int_equal(run.ok + run.dup, run.audit.done);
}

/* kill -9 of redis-server, then a restart from the AOF. With appendfsync everysec a crash may
 * lose up to about a second of acknowledged writes (when the process dies, what it had written
 * to the kernel survives; what the fsync thread had not yet written, or what a postponed write
 * held, does not): a completion a runner was told about may be gone, a claim may have vanished
 * (its complete then meets KB_ENOTFOUND or KB_ELEASE), a post may be re-done by the next
 * claimer. appendfsync always would lose nothing but fsyncs every write. So this asserts only
 * what must hold whatever was lost: redis restarts from a consistent prefix of history (each
 * script is one MULTI/EXEC in the AOF), hence no item done twice, no charge posted twice, an
 * exact ledger that the audit log replays, and, once the reaper has run, every item done or
 * dead. It does not assert the runners' counts against Redis's. */
static void test_crash_restarts(void **state) {
  (void)state;
  struct restart_run run = {.cid = "rs-crash", .graceful = 0, .n_restarts = 2};
  run_with_restarts(&run);
  assert_int_equal(run.audit.done + run.audit.dead, ITEMS);
}

/* While redis replays its AOF after a restart it accepts connections but answers every command
 * "-LOADING Redis is loading the dataset in memory". That is a server on its way back, like one
 * that refuses connections: the connection layer must wait it out within its retry budget, not
 * fail the command (a runner reconnecting at that moment would otherwise die, as the tests
 * above show at random). Here the AOF is made large enough that loading takes a while, and a
 * process connects as soon as the restarted server listens (so certainly while it loads) and
 * opens the campaign and reads its status: both must succeed. */
static void test_commands_wait_out_aof_loading(void **state) {
  (void)state;
  assert_int_equal(kbt_redis_start(&big), 0);
  struct kb_redis *r = kbq_connect(big.addr, 20000);
  struct kb_queue q;
  kbq_make_campaign(r, "loading", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 3, 0);
  struct kb_error err = {0};
  for (int b = 0; b < 3; b++) { /* 300k small keys: an AOF replay of about half a second */
    redisReply *rep = NULL;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "fill:%d:", b);
    if (kb_redis_commandf(r, &rep, &err,
                          "EVAL %s 0 %s",
                          "for i = 1, 100000 do redis.call('SET', ARGV[1] .. i, i) end return 1",
                          prefix))
      fail_msg("fill: %s", err.msg);
    freeReplyObject(rep);
  }
  kb_redis_free(r);
  kbt_redis_stop(&big, 1);

  /* shm->ok: when the child's connection succeeded; shm->dup: when its commands succeeded
   * (monotonic ms, the slot's counters reused as plain shared longs). */
  struct kbq_slot *shm = kbq_alloc_slots(1);
  fflush(stdout);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int64_t give_up = kbq_now_ms() + 30000;
    struct kb_redis *cr = NULL;
    struct kb_redis_opts ro = {.addr = big.addr, .retry_ms = 20000};
    for (;;) {
      struct kb_error e = {0};
      if (kb_redis_connect(&ro, &cr, &e) == KB_OK)
        break;
      if (kbq_now_ms() > give_up) {
        fprintf(stderr, "child: redis did not come back: %s\n", e.msg);
        _exit(2);
      }
      kbq_sleep_ms(2);
    }
    shm->ok = (long)kbq_now_ms();
    struct kb_queue cq;
    struct kb_queue_status st;
    struct kb_error e = {0};
    if (kb_queue_open(&cq, cr, "loading", &e) || kb_queue_status(&cq, &st, &e)) {
      fprintf(stderr, "child: command on a loading server failed: %s (%s)\n", e.msg,
              kb_err_name(e.code));
      _exit(1);
    }
    shm->dup = (long)kbq_now_ms();
    _exit(st.open == 3 ? 0 : 3);
  }
  int64_t t0 = kbq_now_ms();
  int rc = kbt_redis_restart(&big);
  int64_t ready = kbq_now_ms();
  int wst = 0;
  assert_int_equal(waitpid(pid, &wst, 0), pid);
  printf("loading: restart took %lld ms; the child connected after %lld ms\n",
         (long long)(ready - t0), (long long)(shm->ok ? shm->ok - t0 : -1));
  assert_int_equal(rc, 0);
  /* Not vacuous: the child was connected before the server finished loading. */
  assert_true(shm->ok > 0);
  assert_true(shm->ok < ready);
  assert_true(WIFEXITED(wst));
  assert_int_equal(WEXITSTATUS(wst), 0);
  assert_true(shm->dup >= shm->ok);
  kbq_free_slots(shm, 1);
  kbt_redis_destroy(&big);
}

static int kill_runners(void **state) {
  (void)state;
  kbq_kill_runners();
  return 0;
}

static int destroy_big(void **state) {
  (void)state;
  kbt_redis_destroy(&big); /* also after a failure, which skips the test's own cleanup */
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_graceful_restarts, kill_runners),
      cmocka_unit_test_teardown(test_crash_restarts, kill_runners),
      cmocka_unit_test_teardown(test_commands_wait_out_aof_loading, destroy_big),
  };
  return cmocka_run_group_tests(tests, kbt_redis_group_setup, kbq_group_teardown);
}
