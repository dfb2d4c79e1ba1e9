/* The runner's main loop (kb__worker_run, runner/worker.h) end to end against a real
 * redis-server: a campaign of the built-in host task "sum" is submitted (its seeds queued at the
 * compile tier), one seed is queued at the smoke tier too, and the loop claims, builds,
 * evaluates in kb-sandbox and completes them. Each evaluation's result must land in the
 * campaign's results stream, for the item it was claimed for, with status ok, and no lease may
 * be left. An item whose candidate is missing gets an infra_error result and the loop goes on
 * to the next item. Also: the loop leaves at once (KB_EINTERRUPTED) when asked to stop before it starts,
 * and a campaign that never appears is KB_ENOTFOUND. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "compile_util.h"
#include "kb/error.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "kb/result.h"
#include "kb/submit.h"
#include "redis_fixture.h"
#include "worker.h"

#define CID "wtest"

static struct kbt_redis srv;
static char dir[64];
static struct kb_redis *redis;
static struct kb_submission sub;

/* The campaign file: the host task "sum", a compile and a smoke tier. */
static void write_campaign(const char *path) {
  char text[2048];
  snprintf(text, sizeof text,
           "{\"schema\": \"kernelbrain.campaign/1\", \"id\": \"%s\", \"backend\": \"host\",\n"
           " \"tasks\": [\"%s/tasks/host/sum\"], \"budget\": {\"gpu_seconds\": 600},\n"
           " \"lease_seconds\": 30, \"results_dir\": \"%s/results\",\n"
           " \"ladder\": [{\"name\": \"compile\"}, {\"name\": \"smoke\", \"max_samples\": 3,\n"
           "             \"min_samples\": 1, \"warmup\": 0, \"timeout_seconds\": 60}]}\n",
           CID, KB_SOURCE_DIR, dir);
  tu_write(path, text);
}

static int group_setup(void **state) {
  (void)state;
  setenv("KB_INCLUDE_DIR", KB_SOURCE_DIR "/common/include", 1);
  snprintf(dir, sizeof dir, "/tmp/kb-test-worker.XXXXXX");
  if (mkdtemp(dir) == NULL || kbt_redis_start(&srv) != 0)
    return -1;
  char path[128];
  snprintf(path, sizeof path, "%s/campaign.json", dir);
  write_campaign(path);
  struct kb_error err = {0};
  struct kb_redis_opts ro = {.addr = srv.addr};
  if (kb_redis_connect(&ro, &redis, &err) != KB_OK ||
      kb_submission_load(path, &sub, &err) != KB_OK ||
      kb_submission_register(&sub, redis, "test_worker", NULL, &err) != KB_OK) {
    fprintf(stderr, "test_worker: %s\n", err.msg);
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  kb_submission_release(&sub);
  kb_redis_free(redis);
  kbt_redis_destroy(&srv);
  kb_remove_tree(dir, NULL);
  return 0;
}

static volatile sig_atomic_t stop_flag;

static struct kb_worker_opts options(long max_items) {
  static char cache[128];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  struct kb_worker_opts o = {.redis = srv.addr,
                             .campaign = CID,
                             .backend = "host",
                             .cache_dir = cache,
                             .name = "test-worker",
                             .min_tier = 0,
                             .max_tier = -1,
                             .wait_s = 10,
                             .max_items = max_items,
                             .ahead = 1,
                             .compile_workers = 1,
                             .stop = &stop_flag};
  return o;
}

/* The results stream's entries as a reply (freeReplyObject it). */
static redisReply *results(void) {
  char key[256];
  assert_int_equal(kb_key(key, sizeof key, CID, "results"), KB_OK);
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(redis, &rep, &err, "XRANGE %s - +", key) != KB_OK)
    fail_msg("XRANGE: %s", err.msg);
  assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
  return rep;
}

/* The value of field `name` of stream entry `e` ([id, [field, value, ...]]), or NULL. */
static const char *entry_field(const redisReply *e, const char *name) {
  const redisReply *f = e->element[1];
  for (size_t i = 0; i + 1 < f->elements; i += 2)
    if (strcmp(f->element[i]->str, name) == 0)
      return f->element[i + 1]->str;
  return NULL;
}

static int lease_count(void) {
  char key[256];
  assert_int_equal(kb_key(key, sizeof key, CID, "lease"), KB_OK);
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(redis, &rep, &err, "ZCARD %s", key) != KB_OK)
    fail_msg("ZCARD: %s", err.msg);
  int n = (int)rep->integer;
  freeReplyObject(rep);
  return n;
}

/* Asked to stop before it starts: it leaves while attaching to the campaign, claiming nothing. */
static void test_stop_before_start(void **state) {
  (void)state;
  struct kb_worker_opts o = options(0);
  int why = -1;
  struct kb_error err = {0};
  stop_flag = 1;
  int rc = kb__worker_run(&o, &why, &err);
  stop_flag = 0;
  assert_int_equal(rc, KB_EINTERRUPTED);
  redisReply *rep = results();
  assert_int_equal(rep->elements, 0);
  freeReplyObject(rep);
  assert_int_equal(lease_count(), 0);
}

/* Both seeds at the compile tier and one at the smoke tier: three results, each for its item,
 * all ok; the smoke one was timed in the sandbox. */
static void test_results_land(void **state) {
  (void)state;
  assert_true(sub.n_candidates >= 1);
  const struct kb_candidate *seed = &sub.candidates[0];
  struct kb_queue q;
  struct kb_error err = {0};
  if (kb_queue_open(&q, redis, CID, &err) != KB_OK ||
      kb_queue_enqueue(&q, seed->id, seed->task, 1, 100, 0, NULL, &err) != KB_OK)
    fail_msg("enqueue: %s", err.msg);
  /* bad state in redis ahead of the good items (issue 16, item 1): an item id that is not
   * "<64 hex>:<tier>", a line that is not an item, a queue entry with no item; the runner sets
   * each aside */
  static const char *const inject[] = {
      "HSET kb:{" CID "}:items bad:1 queued|0|0|100|-100|sum|||||",
      "ZADD kb:{" CID "}:q:1 -100 bad:1", "HSET kb:{" CID "}:items junk:0 not-an-item",
      "ZADD kb:{" CID "}:q:0 -100 junk:0", "ZADD kb:{" CID "}:q:0 -99 ghost:0"};
  for (size_t i = 0; i < sizeof inject / sizeof inject[0]; i++) {
    redisReply *ir = NULL;
    if (kb_redis_commandf(redis, &ir, &err, inject[i]) != KB_OK)
      fail_msg("%s: %s", inject[i], err.msg);
    freeReplyObject(ir);
  }
  long want = sub.n_candidates + 1;
  struct kb_worker_opts o = options(want);
  int why = -1;
  if (kb__worker_run(&o, &why, &err) != KB_OK)
    fail_msg("kb__worker_run: %s", err.msg);
  static const char *const dead[][2] = {{"bad:1", "the id is not"},
                                        {"junk:0", "not an item of layout 2"},
                                        {"ghost:0", "no such item"}};
  for (size_t i = 0; i < 3; i++) {
    redisReply *dr = NULL;
    if (kb_redis_commandf(redis, &dr, &err, "HGET kb:{" CID "}:dead %s", dead[i][0]) != KB_OK)
      fail_msg("HGET: %s", err.msg);
    if (dr->type != REDIS_REPLY_STRING || strstr(dr->str, "kb:{" CID "}:items field") == NULL ||
        strstr(dr->str, dead[i][1]) == NULL)
      fail_msg("%s: dead-letter reason %s, want key, field and \"%s\"", dead[i][0],
               dr->type == REDIS_REPLY_STRING ? dr->str : "(none)", dead[i][1]);
    freeReplyObject(dr);
  }
  assert_int_equal(why, KB_WORKER_STOPPED); /* max_items reached */
  redisReply *rep = results();
  assert_int_equal((long)rep->elements, want);
  int smoke = 0;
  for (size_t i = 0; i < rep->elements; i++) {
    const char *item = entry_field(rep->element[i], "item");
    const char *text = entry_field(rep->element[i], "result");
    assert_non_null(item);
    assert_non_null(text);
    struct kb_result r;
    if (kb_result_from_json(text, "results stream", &r, &err) != KB_OK)
      fail_msg("%s", err.msg);
    if (r.status != KB_STATUS_OK)
      fail_msg("item %s: status %s: %s", item, kb_status_name(r.status), r.reason);
    char expect[128];
    snprintf(expect, sizeof expect, "%s:%d", r.candidate, r.tier);
    assert_string_equal(item, expect);
    assert_string_equal(r.task, "sum");
    assert_string_equal(r.runner, "test-worker");
    if (r.tier == 1) {
      smoke++;
      assert_string_equal(r.candidate, seed->id);
      assert_true(r.timing.samples > 0);
    }
    kb_result_release(&r);
  }
  freeReplyObject(rep);
  assert_int_equal(smoke, 1);
  assert_int_equal(lease_count(), 0);
}

static void on_alarm(int sig) {
  (void)sig;
  stop_flag = 1;
}

/* An item whose candidate is not in redis (its id 64 hex digits, no candidate stored) ahead of
 * a good one, and --max-items 1: the first gets an infra_error result naming the candidate, is
 * not an evaluation, and the runner goes on to claim and evaluate the good one, then leaves
 * (it once stopped claiming, having claimed 1, and waited forever for its 1 evaluation). A
 * runner stuck that way is stopped after 10 s by SIGALRM and fails the test. */
static void test_missing_candidate(void **state) {
  (void)state;
  assert_true(sub.n_candidates >= 2); /* the first seed's smoke item is test_results_land's */
  const struct kb_candidate *good = &sub.candidates[sub.n_candidates - 1];
  static const char missing[] =
      "00000000000000000000000000000000000000000000000000000000000000aa";
  struct kb_queue q;
  struct kb_error err = {0};
  if (kb_queue_open(&q, redis, CID, &err) != KB_OK ||
      kb_queue_enqueue(&q, missing, good->task, 1, 100, -100, NULL, &err) != KB_OK ||
      kb_queue_enqueue(&q, good->id, good->task, 1, 100, 0, NULL, &err) != KB_OK)
    fail_msg("enqueue: %s", err.msg);
  redisReply *before = results();
  size_t first = before->elements;
  freeReplyObject(before);
  struct kb_worker_opts o = options(1);
  int why = -1;
  signal(SIGALRM, on_alarm);
  alarm(10);
  int rc = kb__worker_run(&o, &why, &err);
  alarm(0);
  signal(SIGALRM, SIG_DFL);
  if (stop_flag) {
    stop_flag = 0;
    fail_msg("the runner did not leave within 10 s (rc %s)", kb_err_name(rc));
  }
  if (rc != KB_OK)
    fail_msg("kb__worker_run: %s", err.msg);
  assert_int_equal(why, KB_WORKER_STOPPED); /* max_items reached */
  redisReply *rep = results();
  assert_int_equal((long)rep->elements, (long)first + 2);
  static const char *const want[] = {"infra_error", "ok"};
  for (size_t i = 0; i < 2; i++) {
    struct kb_result r;
    if (kb_result_from_json(entry_field(rep->element[first + i], "result"), "results stream",
                            &r, &err) != KB_OK)
      fail_msg("%s", err.msg);
    assert_string_equal(kb_status_name(r.status), want[i]);
    assert_string_equal(r.candidate, i == 0 ? missing : good->id);
    if (i == 0 && strstr(r.reason, missing) == NULL)
      fail_msg("reason \"%s\" does not name candidate %s", r.reason, missing);
    kb_result_release(&r);
  }
  freeReplyObject(rep);
  assert_int_equal(lease_count(), 0);
}

/* A campaign that never appears within wait_s. */
static void test_no_campaign(void **state) {
  (void)state;
  struct kb_worker_opts o = options(0);
  o.campaign = "nosuchcampaign";
  o.wait_s = 1;
  int why = -1;
  struct kb_error err = {0};
  assert_int_equal(kb__worker_run(&o, &why, &err), KB_ENOTFOUND);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stop_before_start),
      cmocka_unit_test(test_results_land),
      cmocka_unit_test(test_missing_candidate),
      cmocka_unit_test(test_no_campaign),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
