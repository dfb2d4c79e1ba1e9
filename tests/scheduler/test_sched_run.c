/* kb__sched_run (scheduler/sched.c) in this process against a real redis-server, with one real
 * kb-runner: a short campaign on the built-in host task "sum" runs to its end. The campaign is
 * done in redis, every item settled, and the task's HDF5 file and summary.json hold what was
 * evaluated. A second run with the stop flag set leaves at once without ending the campaign.
 * Run as `test_sched_run KB_RUNNER REPO_DIR`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb/error.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "kb/submit.h"
#include "redis_group.h"
#include "sched.h"
#include "store.h"

static const char *runner_bin, *repo_dir;
static char dir[64];
static pid_t runner_pid; /* the kb-runner of the test under way, 0 when none */

/* Writes campaign `cid` (the host task "sum", its two seeds) under `dir` and submits it. */
static void submit(const char *cid) {
  char path[256], results[128];
  snprintf(path, sizeof path, "%s/%s.json", dir, cid);
  snprintf(results, sizeof results, "%s/results", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f,
          "{\"schema\": \"kernelbrain.campaign/1\", \"id\": \"%s\", \"backend\": \"host\",\n"
          " \"tasks\": [\"%s/tasks/host/sum\"], \"budget\": {\"gpu_seconds\": 600},\n"
          " \"lease_seconds\": 5, \"results_dir\": \"%s\"}\n",
          cid, repo_dir, results);
  assert_int_equal(fclose(f), 0);
  struct kb_submission s;
  struct kb_error err = {0};
  if (kb_submission_load(path, &s, &err))
    fail_msg("load %s: %s", path, err.msg);
  struct kb_redis *r = NULL;
  struct kb_redis_opts ro = {.addr = kbt_group_redis.addr, .retry_ms = 5000};
  if (kb_redis_connect(&ro, &r, &err) || kb_submission_register(&s, r, "test", NULL, &err))
    fail_msg("submit %s: %s", cid, err.msg);
  assert_true(s.n_candidates >= 1);
  kb_redis_free(r);
  kb_submission_release(&s);
}

static pid_t spawn_runner(const char *cid) {
  char cache[128], log[128];
  snprintf(cache, sizeof cache, "%s/runner-cache", dir);
  snprintf(log, sizeof log, "%s/%s.runner.log", dir, cid);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    FILE *l = freopen(log, "w", stderr);
    (void)l;
    execl(runner_bin, runner_bin, "--campaign", cid, "--redis", kbt_group_redis.addr, "--cache",
          cache, "--name", "r1", "--wait", "30", (char *)NULL);
    _exit(127);
  }
  return pid;
}

static void queue_status(const char *cid, struct kb_queue_status *st) {
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  struct kb_redis_opts ro = {.addr = kbt_group_redis.addr, .retry_ms = 5000};
  struct kb_queue q;
  if (kb_redis_connect(&ro, &r, &err) || kb_queue_open(&q, r, cid, &err) ||
      kb_queue_status(&q, st, &err))
    fail_msg("status of %s: %s", cid, err.msg);
  kb_redis_free(r);
}

/* kb__sched_run on campaign `cid` with stop flag `*stop`, failing the test on an error or after
 * `limit_s` seconds (SIGALRM); returns its `finished`. */
static int run_sched(const char *cid, volatile sig_atomic_t *stop, unsigned limit_s) {
  char work[128];
  snprintf(work, sizeof work, "%s/sched-cache", dir);
  struct kb_sched_opts o = {.redis = kbt_group_redis.addr, .campaign = cid, .work_dir = work,
                            .wait_s = 10, .stop = stop};
  int finished = -1;
  struct kb_error err = {0};
  alarm(limit_s);
  int rc = kb__sched_run(&o, &finished, &err);
  alarm(0);
  if (rc)
    fail_msg("kb__sched_run: %s (%d)", err.msg, rc);
  return finished;
}

static void test_campaign_runs_to_its_end(void **state) {
  (void)state;
  submit("run");
  /* bad state in redis (issue 16, item 1): a queue entry with no item, a non-JSON item, a lease
   * with no item, a result that does not decode; the scheduler's status, reap and results
   * reading set each aside and the campaign still ends */
  static const char *const inject[] = {
      "ZADD kb:{run}:q:0 -99 ghost:0", "HSET kb:{run}:items junk:0 not-json",
      "ZADD kb:{run}:q:0 -100 junk:0", "ZADD kb:{run}:lease 0 ghost:lease",
      "XADD kb:{run}:results * item ghost:0 result not-json charge ghost:0#1 runner r9 "
      "attempt 1"};
  struct kb_redis *r = NULL;
  struct kb_error ierr = {0};
  struct kb_redis_opts ro = {.addr = kbt_group_redis.addr, .retry_ms = 5000};
  if (kb_redis_connect(&ro, &r, &ierr))
    fail_msg("connect: %s", ierr.msg);
  for (size_t i = 0; i < sizeof inject / sizeof inject[0]; i++) {
    redisReply *rep = NULL;
    if (kb_redis_commandf(r, &rep, &ierr, inject[i]))
      fail_msg("%s: %s", inject[i], ierr.msg);
    freeReplyObject(rep);
  }
  runner_pid = spawn_runner("run");
  volatile sig_atomic_t stop = 0;
  /* a scheduler that never ends the campaign fails the test (SIGALRM), not the suite */
  int finished = run_sched("run", &stop, 150);
  kill(runner_pid, SIGTERM);
  waitpid(runner_pid, NULL, 0);
  runner_pid = 0;
  assert_int_equal(finished, 1);

  struct kb_queue_status st;
  queue_status("run", &st);
  assert_string_equal(st.state, "done");
  assert_int_equal(st.open, 0);
  assert_int_equal(st.leased, 0);
  assert_true(st.done >= 2); /* at least both seeds' compile items */
  static const char *const dead[][2] = {{"ghost:0", "kb:{run}:items field \"ghost:0\": no such"},
                                        {"junk:0", "kb:{run}:items field \"junk:0\": not a JSON"},
                                        {"ghost:lease", "kb:{run}:items field \"ghost:lease\""}};
  for (size_t i = 0; i < 3; i++) {
    redisReply *rep = NULL;
    if (kb_redis_commandf(r, &rep, &ierr, "HGET kb:{run}:dead %s", dead[i][0]))
      fail_msg("HGET: %s", ierr.msg);
    if (rep->type != REDIS_REPLY_STRING || strstr(rep->str, dead[i][1]) == NULL)
      fail_msg("%s: dead-letter reason %s, want \"%s\"", dead[i][0],
               rep->type == REDIS_REPLY_STRING ? rep->str : "(none)", dead[i][1]);
    freeReplyObject(rep);
  }
  kb_redis_free(r);
  assert_int_equal(st.gpu_held, 0);
  assert_int_equal(st.gpu_available + st.gpu_spent, st.gpu_total);

  char path[256];
  snprintf(path, sizeof path, "%s/results/run/summary.json", dir);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_true(sb.st_size > 0);
  snprintf(path, sizeof path, "%s/results/run/sum.h5", dir);
  struct kb_store *s = NULL;
  struct kb_error err = {0};
  if (kb__store_open(path, NULL, &s, &err))
    fail_msg("open %s: %s", path, err.msg);
  assert_true(kb__store_candidate_count(s) >= 2);
  /* every settled item of the campaign is one row of its task's file */
  assert_int_equal(kb__store_evaluation_count(s), st.done + st.dead);
  kb__store_close(s);
}

static void test_stop_leaves_the_campaign_open(void **state) {
  (void)state;
  submit("left");
  volatile sig_atomic_t stop = 1;
  assert_int_equal(run_sched("left", &stop, 60), 0);
  struct kb_queue_status st;
  queue_status("left", &st);
  assert_string_not_equal(st.state, "done");
  assert_true(st.open > 0);
}

static int setup(void **state) {
  snprintf(dir, sizeof dir, "/tmp/kb-sched-run-XXXXXX");
  if (mkdtemp(dir) == NULL)
    return -1;
  return kbt_redis_group_setup(state);
}

static int teardown(void **state) {
  if (runner_pid > 0) { /* a failed test left its runner */
    kill(runner_pid, SIGKILL);
    waitpid(runner_pid, NULL, 0);
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  return kbt_redis_group_teardown(state);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_sched_run KB_RUNNER REPO_DIR\n");
    return 2;
  }
  runner_bin = argv[1];
  repo_dir = argv[2];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_campaign_runs_to_its_end),
      cmocka_unit_test(test_stop_leaves_the_campaign_open),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
