/* kb__sched_run (scheduler/sched.c) in this process against a real redis-server, with one real
 * kb-runner: a short campaign on the built-in host task "sum" runs to its end. The campaign is
 * done in redis, every item settled, and the task's HDF5 file and summary.json hold what was
 * evaluated. A second run with the stop flag set leaves at once without ending the campaign. A
 * third, on a task of its own, has a candidate passed over on arrival that could still win:
 * it climbs before the campaign says done, and wins (docs/search.md, "Before done").
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

#include <jansson.h>

#include "kb/candidate.h"
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

/* Writes campaign `cid` on task folder `task` with `extra` (more members of the campaign
 * object, each followed by a comma; "" for none) under `dir` and submits it. */
static void submit_task(const char *cid, const char *task, const char *extra) {
  char path[256], results[128];
  snprintf(path, sizeof path, "%s/%s.json", dir, cid);
  snprintf(results, sizeof results, "%s/results", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f,
          "{\"schema\": \"kernelbrain.campaign/1\", \"id\": \"%s\", \"backend\": \"host\",\n"
          " \"tasks\": [\"%s\"], \"budget\": {\"gpu_seconds\": 600},\n"
          " %s \"lease_seconds\": 5, \"results_dir\": \"%s\"}\n",
          cid, task, extra, results);
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

/* Campaign `cid` on the host task "sum" and its two seeds. */
static void submit(const char *cid) {
  char task[256];
  snprintf(task, sizeof task, "%s/tasks/host/sum", repo_dir);
  submit_task(cid, task, "");
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
  /* and a real item gone bad: the first seed's compile item, counted in "open", overwritten
   * with text that is not JSON; it moves from "open" to "dead" and the campaign still ends */
  redisReply *keys = NULL;
  if (kb_redis_commandf(r, &keys, &ierr, "HKEYS kb:{run}:items"))
    fail_msg("HKEYS: %s", ierr.msg);
  char real[KB_ITEM_ID_MAX] = "";
  for (size_t i = 0; i < keys->elements && !real[0]; i++)
    if (strlen(keys->element[i]->str) == 66 && strcmp(keys->element[i]->str + 64, ":0") == 0)
      snprintf(real, sizeof real, "%s", keys->element[i]->str);
  freeReplyObject(keys);
  assert_int_equal(strlen(real), 66);
  redisReply *bad = NULL;
  if (kb_redis_commandf(r, &bad, &ierr, "HSET kb:{run}:items %s not-json-any-more", real))
    fail_msg("HSET: %s", ierr.msg);
  freeReplyObject(bad);
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
  assert_true(st.done >= 2); /* at least the good seed's compile item and one of its own */
  assert_true(st.dead >= 1); /* the real item gone bad */
  char real_why[160];
  snprintf(real_why, sizeof real_why, "kb:{run}:items field \"%s\": not an item of layout 2", real);
  const char *const dead[][2] = {{"ghost:0", "kb:{run}:items field \"ghost:0\": no such"},
                                 {"junk:0", "kb:{run}:items field \"junk:0\": not an item of layout 2"},
                                 {"ghost:lease", "kb:{run}:items field \"ghost:lease\""},
                                 {real, real_why}};
  for (size_t i = 0; i < 4; i++) {
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
  assert_true(kb__store_candidate_count(s) >= 1); /* the good seed (the other one gone bad) */
  /* every settled item of the campaign is one row of its task's file, but the one gone bad:
   * dead-lettered with no result */
  assert_int_equal(kb__store_evaluation_count(s), st.done + st.dead - 1);
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

/* ---- before done: a candidate passed over on arrival climbs before the campaign ends ------- */

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* A sum kernel into `text` whose main loop is `loop` (over float a[16], zeroed; the tail and
 * the sum of a[] follow); `wrong` adds 1000 when the first 8 elements are all >= 0 (input set
 * 3, uniform 0..1: it fails at screen, which checks every set, and passes smoke, which checks
 * set 1 only). `variant` only changes a comment. */
static void seed_text(char *text, size_t size, const char *loop, int wrong, int variant) {
  snprintf(text, size,
           "/* variant %d */\n#include <stdint.h>\n#include \"kb_kernel.h\"\n"
           "int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *s) {\n"
           "  (void)n_in; (void)n_out; (void)s;\n"
           "  const float *x = in[0].data;\n  int64_t n = kb_tensor_numel(&in[0]), i = 0;\n"
           "  float a[16] = {0};\n  %s\n"
           "  for (; i < n; i++) a[0] += x[i];\n"
           "  float sum = 0;\n  for (int j = 0; j < 16; j++) sum += a[j];\n"
           "  int pos = 1;\n  for (int j = 0; j < 8; j++) pos &= x[j] >= 0;\n"
           "  *(float *)out[0].data = sum + (%d && pos ? 1000.0f : 0.0f);\n  return 0;\n}\n",
           variant, loop, wrong);
}

/* 16 independent chains: bound by memory bandwidth (about 2 ms here). */
#define FAST_LOOP "for (; i + 16 <= n; i += 16) for (int j = 0; j < 16; j++) a[j] += x[i + j];"
/* one chain of dependent adds, latency-bound (the tail loop does it all; about 5 ms). */
#define GOOD_LOOP ""
/* one chain of four dependent adds per element (x * 0.0f, which the compiler must keep: it is
 * -0.0f, NaN or 0): about three times GOOD's time here, a margin the noise of a shared
 * machine's timings does not cross. */
#define BASE_LOOP "for (; i < n; i++) a[0] = (((a[0] + x[i]) + x[i] * 0.0f) + x[i] * 0.0f) + x[i] * 0.0f;"

/* The task "trap": the baseline "naive" (BASE_LOOP), "good" (GOOD_LOOP: about 3x faster) and
 * "fast" (FAST_LOOP: about 7x; wrong at screen). Returns the folder in `out`, and the ids in
 * `fast_id` and `good_id`: good's comment is chosen so that fast's id sorts first (the queue
 * runs equal priorities by item id). */
static void write_trap_task(char *out, size_t size, char *fast_id, char *good_id) {
  char path[512], cmd[1024];
  snprintf(out, size, "%s/trap", dir);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/seeds' && cp '%s/tasks/host/sum/oracle.c' '%s/'", out,
           repo_dir, out);
  assert_int_equal(system(cmd), 0);
  char fast[2048], good[2048], base[2048];
  seed_text(base, sizeof base, BASE_LOOP, 0, 0);
  snprintf(path, sizeof path, "%s/seeds/naive.c", out);
  write_text(path, base);
  struct kb_error err = {0};
  seed_text(fast, sizeof fast, FAST_LOOP, 1, 0);
  assert_int_equal(kb_candidate_id("trap", fast, "", "", fast_id, &err), KB_OK);
  for (int v = 0;; v++) {
    seed_text(good, sizeof good, GOOD_LOOP, 0, v);
    assert_int_equal(kb_candidate_id("trap", good, "", "", good_id, &err), KB_OK);
    if (strcmp(fast_id, good_id) < 0)
      break;
  }
  snprintf(path, sizeof path, "%s/seeds/good.c", out);
  write_text(path, good);
  snprintf(path, sizeof path, "%s/seeds/fast.c", out);
  write_text(path, fast);
  snprintf(path, sizeof path, "%s/task.json", out);
  write_text(path,
             "{\"schema\": \"kernelbrain.task/1\", \"id\": \"trap\", \"name\": \"sum, a trap\",\n"
             " \"category\": \"reduction\", \"backend\": \"host\",\n"
             " \"oracle\": {\"kind\": \"c\", \"source\": \"oracle.c\"},\n"
             " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [4194304]}],\n"
             " \"outputs\": [{\"name\": \"sum\", \"dtype\": \"f32\", \"shape\": [1]}],\n"
             " \"tolerance\": {\"atol\": 1, \"rtol\": 1e-4},\n"
             " \"input_sets\": [\n"
             "  {\"seed\": 1, \"distribution\": \"uniform\", \"low\": -1, \"high\": 1},\n"
             "  {\"seed\": 2, \"distribution\": \"normal\", \"low\": 0, \"high\": 1},\n"
             "  {\"seed\": 3, \"distribution\": \"uniform\", \"low\": 0, \"high\": 1}],\n"
             " \"seeds\": [{\"name\": \"naive\", \"source\": \"seeds/naive.c\"},\n"
             "  {\"name\": \"good\", \"source\": \"seeds/good.c\"},\n"
             "  {\"name\": \"fast\", \"source\": \"seeds/fast.c\"}],\n"
             " \"baseline\": \"naive\"}\n");
}

/* A runner that compiles the three seeds and leaves, then, once the scheduler has enqueued
 * their smoke items, one for every tier: the smoke items then run in the queue's order (equal
 * priorities: by item id), which puts "fast" before "good". */
static pid_t spawn_two_phase_runner(const char *cid) {
  char cache[128], log[128], cmd[2048];
  snprintf(cache, sizeof cache, "%s/runner-cache", dir);
  snprintf(log, sizeof log, "%s/%s.runner.log", dir, cid);
  snprintf(cmd, sizeof cmd,
           "'%s' --campaign %s --redis %s --cache '%s' --name r0 --wait 30 --max-tier 0 "
           "--max-items 3 && sleep 2 && exec '%s' --campaign %s --redis %s --cache '%s' "
           "--name r1 --wait 30",
           runner_bin, cid, kbt_group_redis.addr, cache, runner_bin, cid, kbt_group_redis.addr,
           cache);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    FILE *l = freopen(log, "w", stderr);
    (void)l;
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* "fast" ranks first at smoke, so "good" (faster than the baseline there) does not climb on
 * arrival (top 1/3, confidence rule off); "fast" then fails at screen and the baseline reaches
 * full. Nothing is open and most of the budget is left: "good" could still win, so it climbs
 * before the campaign says done, and it is the winner at full. Without the rule the campaign
 * ends with the baseline as its best. */
static void test_promotes_before_done(void **state) {
  (void)state;
  char task[256], fast_id[KB_CAND_ID_LEN + 1], good_id[KB_CAND_ID_LEN + 1];
  write_trap_task(task, sizeof task, fast_id, good_id);
  /* top 1/3 on arrival, the confidence rule off; a short ladder (the default's input sets) */
  submit_task("trap", task,
              "\"search\": {\"confidence_z\": 0, \"eta\": 3},\n"
              " \"ladder\": [{\"name\": \"compile\"}, {\"name\": \"smoke\", \"input_sets\": 1},\n"
              "  {\"name\": \"screen\", \"min_samples\": 3, \"max_samples\": 10, "
              "\"max_seconds\": 0.2},\n"
              "  {\"name\": \"full\", \"min_samples\": 5, \"max_samples\": 20, "
              "\"max_seconds\": 0.3}],");
  setenv("KB_LOG", "debug", 1); /* the runner logs the metrics marks it reads */
  runner_pid = spawn_two_phase_runner("trap");
  unsetenv("KB_LOG");
  volatile sig_atomic_t stop = 0;
  int finished = run_sched("trap", &stop, 150);
  kill(runner_pid, SIGTERM);
  waitpid(runner_pid, NULL, 0);
  runner_pid = 0;
  assert_int_equal(finished, 1);

  char path[256];
  snprintf(path, sizeof path, "%s/results/trap/summary.json", dir);
  json_error_t jerr;
  json_t *sum = json_load_file(path, 0, &jerr);
  if (sum == NULL)
    fail_msg("%s: %s", path, jerr.text);
  json_t *t = json_array_get(json_object_get(sum, "tasks"), 0);
  json_t *board = json_object_get(t, "leaderboard"), *row;
  size_t i;
  const char *fast_status = NULL, *fast_seen = NULL, *good_seen = NULL;
  json_array_foreach(board, i, row) {
    const char *n = json_string_value(json_object_get(row, "name"));
    const char *id = json_string_value(json_object_get(row, "candidate"));
    if (strcmp(n, "fast") == 0) {
      fast_status = json_string_value(json_object_get(row, "status"));
      fast_seen = id;
    } else if (strcmp(n, "good") == 0) {
      good_seen = id;
    }
  }
  /* the premises: the ids the queue order was chosen by, and "fast" failed at screen */
  assert_non_null(fast_seen);
  assert_non_null(good_seen);
  assert_string_equal(fast_seen, fast_id);
  assert_string_equal(good_seen, good_id);
  if (fast_status == NULL || strcmp(fast_status, "wrong_output") != 0)
    fail_msg("\"fast\" should fail at screen, got %s", fast_status ? fast_status : "(none)");
  json_t *best = json_object_get(t, "best");
  const char *name = json_string_value(json_object_get(best, "name"));
  const char *tier = json_string_value(json_object_get(best, "tier_name"));
  if (name == NULL || strcmp(name, "good") != 0 || tier == NULL || strcmp(tier, "full") != 0) {
    char *text = json_dumps(board, JSON_COMPACT);
    fprintf(stderr, "leaderboard: %s\n", text);
    free(text);
  }
  if (name == NULL || strcmp(name, "good") != 0 || tier == NULL || strcmp(tier, "full") != 0)
    fail_msg("best is %s at %s, want good at full", name ? name : "(none)", tier ? tier : "-");
  assert_string_equal(json_string_value(json_object_get(best, "speedup_tier_name")), "full");
  assert_true(json_number_value(json_object_get(best, "speedup")) > 1.2);
  /* the metrics marks (docs/search.md, "Hardware metrics"): the baseline, first at full, with
   * no bound; "good", enqueued at full once the baseline had a full-tier median, with that
   * median as its bound ("fast" never reached full) */
  struct kb_redis *r = NULL;
  struct kb_error merr = {0};
  struct kb_redis_opts ro = {.addr = kbt_group_redis.addr, .retry_ms = 5000};
  if (kb_redis_connect(&ro, &r, &merr))
    fail_msg("connect: %s", merr.msg);
  redisReply *rep = NULL;
  if (kb_redis_commandf(r, &rep, &merr, "HGETALL kb:{trap}:metrics"))
    fail_msg("HGETALL: %s", merr.msg);
  assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
  int marks = 0, good_marked = 0, unbounded = 0;
  for (size_t k = 0; k + 1 < rep->elements; k += 2) {
    marks++;
    double bound = strtod(rep->element[k + 1]->str, NULL);
    unbounded += bound == 0;
    if (strcmp(rep->element[k]->str, good_id) == 0)
      good_marked = bound > 0;
    assert_string_not_equal(rep->element[k]->str, fast_id);
  }
  freeReplyObject(rep);
  kb_redis_free(r);
  print_message("metrics marks: %d (%d without a bound)\n", marks, unbounded);
  assert_int_equal(marks, 2);
  assert_int_equal(unbounded, 1);
  assert_true(good_marked);
  /* and the runner read them when it evaluated the two full-tier items */
  snprintf(path, sizeof path, "%s/trap.runner.log", dir);
  FILE *lf = fopen(path, "r");
  assert_non_null(lf);
  char line[1024];
  int read_marks = 0;
  int three = 0, one = 0;
  while (fgets(line, sizeof line, lf)) {
    read_marks += strstr(line, "marked (rank bound") != NULL;
    /* the witness's rounds by rank: the baseline (no bound) and "good" (under its bound) can
     * rank, so each gets every round */
    three += strstr(line, "round(s) of") != NULL && strstr(line, "its claim can rank") != NULL;
    one += strstr(line, "its claim cannot rank") != NULL;
  }
  fclose(lf);
  assert_int_equal(read_marks, 2);
  assert_int_equal(three, 2);
  assert_int_equal(one, 0);
  /* every currency of the ledger */
  json_t *ledger = json_object_get(sum, "ledger");
  assert_true(json_integer_value(json_object_get(json_object_get(ledger, "gpu"), "limit")) ==
              600000);
  assert_non_null(json_object_get(json_object_get(ledger, "llm_tokens"), "spent"));
  json_decref(sum);
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
      cmocka_unit_test(test_promotes_before_done),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
