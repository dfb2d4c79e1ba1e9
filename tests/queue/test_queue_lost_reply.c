/* Lost replies: the connection drops after a script ran but before its reply was read (or
 * before the request arrived). The client talks to redis through a fault-injecting proxy
 * (redis_proxy.h) that breaks exactly the request carrying a given marker, so this exercises the
 * real code path: kb_redis's reconnect-and-retry, then the scripts' idempotency.
 *  - complete: the retry (inside the first call, then again by the caller with the same claim)
 *    reports duplicate=1; one post in the charges hash, the item once in the results stream, an
 *    exact ledger. A request lost before redis saw it is simply posted by the retry.
 *  - claim: the retry leases a second item; the first lease, which its runner never heard of,
 *    expires and the reaper requeues it with its reservation refunded.
 *  - complete_and_claim: the layer's retry finds the completion posted and returns the very
 *    lease the lost call took (one lease, not two); a retry by the caller is a duplicate with a
 *    fresh lease, and the one it never heard of is reaped; a request lost before redis saw it
 *    completes and claims once.
 *  - a batch (kb_queue_cycle_batch): the same as complete_and_claim, for every lease it took. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb/error.h"
#include "kb/keys.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "queue_helpers.h"
#include "redis_fixture.h"
#include "redis_proxy.h"

static struct kbt_redis server;
static struct kbt_proxy proxy;

static char *hget(struct kb_redis *r, const char *cid, const char *hash, const char *field) {
  char key[160];
  kb_key(key, sizeof key, cid, "%s", hash);
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(r, &rep, &err, "HGET %s %s", key, field))
    fail_msg("HGET %s %s: %s", key, field, err.msg);
  char *out = rep->type == REDIS_REPLY_STRING ? strdup(rep->str) : strdup("(nil)");
  freeReplyObject(rep);
  return out;
}

static void assert_hash_field(struct kb_redis *r, const char *cid, const char *hash,
                              const char *field, const char *want) {
  char *got = hget(r, cid, hash, field);
  if (strcmp(got, want) != 0)
    fail_msg("%s[%s] is \"%s\", expected \"%s\"", hash, field, got, want);
  free(got);
}

/* Number of results-stream entries for `item`. */
static int results_for(struct kb_redis *r, const char *cid, const char *item) {
  char key[160];
  kb_key(key, sizeof key, cid, KB_KEY_RESULTS);
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(r, &rep, &err, "XRANGE %s - +", key))
    fail_msg("XRANGE: %s", err.msg);
  int n = 0;
  for (size_t i = 0; i < rep->elements; i++) {
    redisReply *f = rep->element[i]->element[1];
    for (size_t j = 0; j + 1 < f->elements; j += 2)
      if (strcmp(f->element[j]->str, "item") == 0 && strcmp(f->element[j + 1]->str, item) == 0)
        n++;
  }
  freeReplyObject(rep);
  return n;
}

/* kbq_assert_final() on campaign `cid` of `n_items` items, all done, then the audit's posted
 * and voided charges and spent GPU ms; -1 skips a count. */
static void assert_all_done(struct kb_redis *direct, const char *cid, int n_items,
                            int64_t posted, int64_t voided, int64_t spent) {
  struct kbq_audit a;
  kbq_assert_final(direct, cid, n_items, &a);
  assert_int_equal(a.done, n_items);
  if (posted >= 0)
    assert_int_equal(a.posted, posted);
  if (voided >= 0)
    assert_int_equal(a.voided, voided);
  if (spent >= 0)
    assert_int_equal(a.spent, spent);
}

static void test_lost_complete_reply(void **state) {
  (void)state;
  struct kb_redis *direct = kbq_connect(server.addr, 5000);
  struct kb_redis *r = kbq_connect(proxy.addr, 5000); /* the runner's, through the proxy */
  struct kb_queue setup_q, q;
  struct kb_error err = {0};
  kbq_make_campaign(direct, "lost-c", 1000, 60000, 3, &setup_q);
  kbq_enqueue_items(&setup_q, 3, 0); /* tiers 0, 1, 2: costs 0, 10, 100 */
  assert_int_equal(kb_queue_open(&q, r, "lost-c", &err), KB_OK);

  /* The reply is lost: redis posted; the layer reconnects and retries, which finds the post. */
  struct kb_claim c;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  assert_int_equal(c.tier, 2);
  assert_int_equal(c.cost_ms, 100);
  int fired = proxy.ctl->fired;
  kbt_proxy_arm(&proxy, KBT_DROP_REPLY, c.charge_id);
  int dup = -1;
  if (kb_queue_complete(&q, &c, 40, "{\"n\":1}", "r1", &dup, &err))
    fail_msg("complete after a lost reply: %s", err.msg);
  assert_int_equal(proxy.ctl->fired, fired + 1); /* the reply was really dropped */
  assert_int_equal(dup, 1);
  /* The caller retries with the same claim, even with another cost: nothing changes. */
  dup = -1;
  assert_int_equal(kb_queue_complete(&q, &c, 40, "{\"n\":2}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 1);
  dup = -1;
  assert_int_equal(kb_queue_complete(&q, &c, 99, "{\"n\":3}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 1);
  assert_hash_field(direct, "lost-c", KB_KEY_CHARGES, c.charge_id, "P:40");
  assert_int_equal(results_for(direct, "lost-c", c.item), 1);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&setup_q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_spent, 40);
  assert_int_equal(st.gpu_held, 0);
  assert_int_equal(st.gpu_available, 1000 - 40);
  assert_int_equal(st.done, 1);

  /* The request is lost before redis saw it: the retry posts, once. */
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  assert_int_equal(c.tier, 1);
  fired = proxy.ctl->fired;
  kbt_proxy_arm(&proxy, KBT_DROP_REQUEST, c.charge_id);
  dup = -1;
  if (kb_queue_complete(&q, &c, 7, "{\"n\":4}", "r1", &dup, &err))
    fail_msg("complete after a lost request: %s", err.msg);
  assert_int_equal(proxy.ctl->fired, fired + 1);
  assert_int_equal(dup, 0);
  dup = -1;
  assert_int_equal(kb_queue_complete(&q, &c, 7, "{\"n\":5}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 1);
  assert_hash_field(direct, "lost-c", KB_KEY_CHARGES, c.charge_id, "P:7");
  assert_int_equal(results_for(direct, "lost-c", c.item), 1);

  /* The last item without faults, then the whole audit: one post per charge, the results
   * stream holds each item once, the ledger replays exactly. */
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  assert_int_equal(kb_queue_complete(&q, &c, 0, "{\"n\":6}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 0);
  assert_all_done(direct, "lost-c", 3, 3, 0, 47);
  kb_redis_free(r);
  kb_redis_free(direct);
}

static void test_lost_claim_reply(void **state) {
  (void)state;
  struct kb_redis *direct = kbq_connect(server.addr, 5000);
  struct kb_redis *r = kbq_connect(proxy.addr, 5000);
  struct kb_queue setup_q, q;
  struct kb_error err = {0};
  kbq_make_campaign(direct, "lost-k", 1000, 300, 3, &setup_q);
  char a_id[65], b_id[65], a_item[80], b_item[80];
  kbq_cand_id(100, a_id);
  kbq_cand_id(101, b_id);
  assert_int_equal(kb_queue_enqueue(&setup_q, a_id, "t", 1, 10, 0.0, NULL, &err), KB_OK);
  assert_int_equal(kb_queue_enqueue(&setup_q, b_id, "t", 1, 10, 1.0, NULL, &err), KB_OK);
  snprintf(a_item, sizeof a_item, "%s:1", a_id);
  snprintf(b_item, sizeof b_item, "%s:1", b_id);
  assert_int_equal(kb_queue_open(&q, r, "lost-k", &err), KB_OK);

  /* The claim of A runs but its reply is lost; the layer's retry claims B. */
  int fired = proxy.ctl->fired;
  kbt_proxy_arm(&proxy, KBT_DROP_REPLY, "ghost-runner");
  struct kb_claim c;
  if (kb_queue_claim(&q, "ghost-runner", 0, -1, &c, NULL, &err))
    fail_msg("claim after a lost reply: %s", err.msg);
  assert_int_equal(proxy.ctl->fired, fired + 1);
  assert_string_equal(c.item, b_item);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&setup_q, &st, &err), KB_OK);
  assert_int_equal(st.leased, 2);
  assert_int_equal(st.gpu_held, 20);
  char charge_a[KB_CHARGE_ID_MAX];
  snprintf(charge_a, sizeof charge_a, "%s#1", a_item);
  assert_hash_field(direct, "lost-k", KB_KEY_CHARGES, charge_a, "H:10");
  kbq_assert_ledger_invariant(&setup_q);

  /* B completes normally; heartbeats of B do not keep A alive. */
  int extended = -1;
  assert_int_equal(kb_queue_heartbeat(&q, "ghost-runner", &c, 1, &extended, NULL, &err), KB_OK);
  assert_int_equal(extended, 1);
  int dup = -1;
  assert_int_equal(kb_queue_complete(&q, &c, 6, "{}", "ghost-runner", &dup, &err), KB_OK);
  assert_int_equal(dup, 0);

  /* A's lease expires; the reaper requeues it and refunds its reservation. */
  kbq_sleep_ms(450);
  int requeued = -1, dead = -1;
  assert_int_equal(kb_queue_reap(&setup_q, 10, "reaper", &requeued, &dead, &err), KB_OK);
  assert_int_equal(requeued, 1);
  assert_int_equal(dead, 0);
  assert_hash_field(direct, "lost-k", KB_KEY_CHARGES, charge_a, "V:10");
  assert_int_equal(kb_queue_status(&setup_q, &st, &err), KB_OK);
  assert_int_equal(st.leased, 0);
  assert_int_equal(st.gpu_held, 0);
  assert_int_equal(st.gpu_spent, 6);
  assert_int_equal(st.gpu_available, 1000 - 6);
  assert_int_equal(st.ready[1], 1);

  /* A is claimed again as attempt 2 under a new charge, and completes. */
  struct kb_claim c2;
  assert_int_equal(kb_queue_claim(&q, "r2", 0, -1, &c2, NULL, &err), KB_OK);
  assert_string_equal(c2.item, a_item);
  assert_int_equal(c2.attempt, 2);
  assert_string_not_equal(c2.charge_id, charge_a);
  assert_int_equal(kb_queue_complete(&q, &c2, 10, "{}", "r2", &dup, &err), KB_OK);
  assert_int_equal(dup, 0);
  assert_all_done(direct, "lost-k", 2, -1, 1, 16);
  kb_redis_free(r);
  kb_redis_free(direct);
}

/* Leased items of campaign `cid` (ZCARD of its lease set). */
static long long leased(struct kb_redis *r, const char *cid) {
  char key[160];
  kb_key(key, sizeof key, cid, KB_KEY_LEASE);
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(r, &rep, &err, "ZCARD %s", key))
    fail_msg("ZCARD: %s", err.msg);
  long long n = rep->integer;
  freeReplyObject(rep);
  return n;
}

static void test_lost_complete_and_claim_reply(void **state) {
  (void)state;
  struct kb_redis *direct = kbq_connect(server.addr, 5000);
  struct kb_redis *r = kbq_connect(proxy.addr, 5000);
  struct kb_queue setup_q, q;
  struct kb_error err = {0};
  kbq_make_campaign(direct, "lost-f", 1000, 300, 3, &setup_q);
  kbq_enqueue_items(&setup_q, 5, 0); /* tiers 0, 1, 2, 0, 1 */
  assert_int_equal(kb_queue_open(&q, r, "lost-f", &err), KB_OK);
  struct kb_claim c1, n1, n1_again, n2, n3;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c1, NULL, &err), KB_OK);
  assert_int_equal(c1.tier, 2);

  /* The reply is lost: the layer's retry is a duplicate and returns the same lease. */
  int fired = proxy.ctl->fired;
  kbt_proxy_arm(&proxy, KBT_DROP_REPLY, c1.charge_id);
  int dup = -1;
  if (kb_queue_complete_and_claim(&q, &c1, 40, "{\"n\":1}", "r1", 0, -1, &dup, &n1, NULL, &err))
    fail_msg("complete_and_claim after a lost reply: %s", err.msg);
  assert_int_equal(proxy.ctl->fired, fired + 1);
  assert_int_equal(dup, 1);
  assert_int_equal(n1.tier, 1);
  assert_int_equal(leased(direct, "lost-f"), 1); /* the lost call's lease, returned, not a 2nd */
  assert_hash_field(direct, "lost-f", KB_KEY_CHARGES, c1.charge_id, "P:40");
  assert_int_equal(results_for(direct, "lost-f", c1.item), 1);
  char charge_n1[KB_CHARGE_ID_MAX];
  snprintf(charge_n1, sizeof charge_n1, "%s#1", n1.item);
  assert_string_equal(n1.charge_id, charge_n1);
  assert_hash_field(direct, "lost-f", KB_KEY_CHARGES, n1.charge_id, "H:10");
  int extended = -1; /* the returned lease is really ours: its token extends it */
  assert_int_equal(kb_queue_heartbeat(&q, "r1", &n1, 1, &extended, NULL, &err), KB_OK);
  assert_int_equal(extended, 1);

  /* The caller retries the same completion: a duplicate again, and a fresh lease (its new
   * token does not own n1, which stays leased until it expires). */
  dup = -1;
  assert_int_equal(kb_queue_complete_and_claim(&q, &c1, 40, "{\"n\":2}", "r1", 0, -1, &dup,
                                               &n1_again, NULL, &err),
                   KB_OK);
  assert_int_equal(dup, 1);
  assert_string_not_equal(n1_again.item, n1.item);
  assert_int_equal(leased(direct, "lost-f"), 2);
  assert_hash_field(direct, "lost-f", KB_KEY_CHARGES, c1.charge_id, "P:40");
  assert_int_equal(results_for(direct, "lost-f", c1.item), 1);

  /* The request is lost before redis saw it: the retry completes and claims, once. */
  fired = proxy.ctl->fired;
  kbt_proxy_arm(&proxy, KBT_DROP_REQUEST, n1_again.charge_id);
  dup = -1;
  if (kb_queue_complete_and_claim(&q, &n1_again, 7, "{\"n\":3}", "r1", 0, -1, &dup, &n2, NULL,
                                  &err))
    fail_msg("complete_and_claim after a lost request: %s", err.msg);
  assert_int_equal(proxy.ctl->fired, fired + 1);
  assert_int_equal(dup, 0);
  assert_int_equal(results_for(direct, "lost-f", n1_again.item), 1);
  assert_int_equal(leased(direct, "lost-f"), 2); /* n1 and n2 */

  /* n1, never heard of by the retrying caller, expires: reaped, refunded, claimed again. */
  kbq_sleep_ms(450);
  int requeued = -1, dead = -1;
  assert_int_equal(kb_queue_reap(&setup_q, 10, "reaper", &requeued, &dead, &err), KB_OK);
  assert_int_equal(requeued + dead, 2); /* n1 and n2 (no heartbeat kept n2 alive either) */
  assert_hash_field(direct, "lost-f", KB_KEY_CHARGES, n1.charge_id, "V:10");
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &n3, NULL, &err), KB_OK);
  for (;;) {
    int rc = kb_queue_complete_and_claim(&q, &n3, 1, "{}", "r1", 0, -1, &dup, &n3, NULL, &err);
    assert_int_equal(dup, 0);
    if (rc == KB_EEMPTY)
      break;
    assert_int_equal(rc, KB_OK);
  }
  assert_all_done(direct, "lost-f", 5, -1, -1, -1);
  kb_redis_free(r);
  kb_redis_free(direct);
}

/* A batch (two completions, three claims) whose reply is lost: the layer's retry finds both
 * charges posted and returns the three leases the lost call took, not three more. */
static void test_lost_batch_reply(void **state) {
  (void)state;
  struct kb_redis *direct = kbq_connect(server.addr, 5000);
  struct kb_redis *r = kbq_connect(proxy.addr, 5000);
  struct kb_queue setup_q, q;
  struct kb_error err = {0};
  kbq_make_campaign(direct, "lost-b", 1000, 60000, 3, &setup_q);
  kbq_enqueue_items(&setup_q, 6, 100);
  assert_int_equal(kb_queue_open(&q, r, "lost-b", &err), KB_OK);
  struct kb_claim c[4], n[3]; /* c: the last batch below claims up to 4 into it */
  int got = -1;
  assert_int_equal(kb_queue_cycle_batch(&q, NULL, 0, "r1", 0, -1, 2, c, &got, NULL, NULL, &err),
                   KB_OK);
  assert_int_equal(got, 2);
  int fired = proxy.ctl->fired;
  kbt_proxy_arm(&proxy, KBT_DROP_REPLY, c[1].charge_id);
  struct kb_queue_done d[2] = {{&c[0], 3, "{\"n\":1}"}, {&c[1], 4, "{\"n\":2}"}};
  int dups[2] = {-1, -1};
  if (kb_queue_cycle_batch(&q, d, 2, "r1", 0, -1, 3, n, &got, dups, NULL, &err))
    fail_msg("batch after a lost reply: %s", err.msg);
  assert_int_equal(proxy.ctl->fired, fired + 1);
  assert_int_equal(dups[0], 1);
  assert_int_equal(dups[1], 1);
  assert_int_equal(got, 3);
  assert_int_equal(leased(direct, "lost-b"), 3); /* the lost call's leases, returned */
  for (int i = 0; i < 2; i++)
    assert_int_equal(results_for(direct, "lost-b", c[i].item), 1);
  int extended = -1; /* the returned leases are really ours: their token extends them */
  assert_int_equal(kb_queue_heartbeat(&q, "r1", n, 3, &extended, NULL, &err), KB_OK);
  assert_int_equal(extended, 3);
  struct kb_queue_done e[3];
  for (int i = 0; i < 3; i++)
    e[i] = (struct kb_queue_done){&n[i], 1, "{}"};
  assert_int_equal(kb_queue_cycle_batch(&q, e, 3, "r1", 0, -1, 4, c, &got, NULL, NULL, &err),
                   KB_OK);
  assert_int_equal(got, 1);
  assert_int_equal(kb_queue_complete(&q, &c[0], 0, "{}", "r1", NULL, &err), KB_OK);
  assert_all_done(direct, "lost-b", 6, -1, -1, -1);
  kb_redis_free(r);
  kb_redis_free(direct);
}

static int setup(void **state) {
  (void)state;
  if (kbt_redis_start(&server))
    return -1;
  char up[128], listen_path[128];
  snprintf(up, sizeof up, "%s/redis.sock", server.dir);
  snprintf(listen_path, sizeof listen_path, "%s/proxy.sock", server.dir);
  return kbt_proxy_start(&proxy, up, listen_path);
}

static int teardown(void **state) {
  (void)state;
  kbt_proxy_stop(&proxy);
  kbt_redis_destroy(&server);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lost_complete_reply),
      cmocka_unit_test(test_lost_claim_reply),
      cmocka_unit_test(test_lost_complete_and_claim_reply),
      cmocka_unit_test(test_lost_batch_reply),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
