/* The queue and ledger scripts against a real redis-server: each script's happy path and error
 * codes, the ledger invariant, idempotent completes, reaping, and many processes at once. */
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
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "kb/item.h"
#include "kb/campaign.h"
#include "kb/error.h"
#include "kb/ladder.h"
#include "ledger.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "queue_helpers.h"
#include "redis_group.h"


static struct kb_redis *connect_or_die(void) {
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  struct kb_redis_opts ro = {.addr = kbt_group_redis.addr, .retry_ms = 5000};
  if (kb_redis_connect(&ro, &r, &err))
    fail_msg("connect: %s", err.msg);
  return r;
}

/* Registers campaign `cid` with the 3-tier test ladder (0/10/100 ms) and opens it. */
static void make_campaign(struct kb_redis *r, const char *cid, long gpu_ms, long lease_ms,
                          int max_attempts) {
  struct kb_queue q;
  kbq_make_campaign(r, cid, gpu_ms, lease_ms, max_attempts, &q);
}

static void assert_ledger_exact(struct kb_queue *q) {
  struct kb_queue_status st;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_status(q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_available + st.gpu_held + st.gpu_spent, st.gpu_total);
  assert_true(st.gpu_available >= -st.gpu_overrun_ms && st.gpu_held >= 0 && st.gpu_spent >= 0);
}

static char cand_id(int i, char out[65]) {
  snprintf(out, 65, "%064x", i + 1);
  return out[0];
}

static void test_enqueue_claim_complete(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "c1", 1000, 60000, 3);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "c1", &err), KB_OK);
  assert_int_equal(q.n_tiers, 3);
  assert_string_equal(q.tiers[2].name, "full");
  char id[65];
  cand_id(0, id);
  int added = -1;
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 1, 10, 1.0, &added, &err), KB_OK);
  assert_int_equal(added, 1);
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 1, 10, 1.0, &added, &err), KB_OK);
  assert_int_equal(added, 0); /* idempotent on (candidate, tier) */

  struct kb_claim c;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  assert_string_equal(c.candidate, id);
  assert_int_equal(c.tier, 1);
  assert_int_equal(c.attempt, 1);
  assert_int_equal(c.cost_ms, 10);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_held, 10);
  assert_int_equal(st.leased, 1);
  assert_ledger_exact(&q);

  struct kb_claim none;
  assert_int_equal(kb_queue_claim(&q, "r2", 0, -1, &none, NULL, &err), KB_EEMPTY);

  int dup = -1;
  assert_int_equal(kb_queue_complete(&q, &c, 7, "{\"x\":1}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 0);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_spent, 7);
  assert_int_equal(st.gpu_held, 0);
  assert_int_equal(st.gpu_available, 993);
  assert_int_equal(st.open, 0);
  assert_int_equal(st.done, 1);
  /* A retry after a lost reply changes nothing. */
  assert_int_equal(kb_queue_complete(&q, &c, 7, "{\"x\":1}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 1);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_spent, 7);
  assert_int_equal(st.done, 1);
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XLEN kb:{c1}:results"), KB_OK);
  assert_int_equal(rep->integer, 1);
  freeReplyObject(rep);
  assert_ledger_exact(&q);
  kb_redis_free(r);
}

/* The string reply of a command (new, free()), or fails. */
static char *reply_str(struct kb_redis *r, const char *fmt, const char *a, const char *b) {
  redisReply *rep = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb_redis_commandf(r, &rep, &err, fmt, a, b), KB_OK);
  char *out = rep->type == REDIS_REPLY_STRING ? strdup(rep->str) : NULL;
  freeReplyObject(rep);
  return out;
}

/* A settlement is never clipped: a cost beyond the reservation is charged whole, the overrun
 * taken from available (below 0 here) with its own audit entry, the charge record and meta
 * counting it; a retried complete charges nothing again; the results entry names its lease and
 * the done item names that entry. */
static void test_cost_beyond_reservation_charged(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "cap", 1000, 60000, 3);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "cap", &err), KB_OK);
  char id[65], id2[65], item[80];
  cand_id(1, id);
  cand_id(2, id2);
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 2, 100, 1.0, NULL, &err), KB_OK);
  assert_int_equal(kb_queue_enqueue(&q, id2, "t", 2, 100, 2.0, NULL, &err), KB_OK);
  struct kb_claim c;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  int dup = -1;
  assert_int_equal(kb_queue_complete(&q, &c, 5000, "{}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 0);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_spent, 5000);
  assert_int_equal(st.gpu_held, 0);
  assert_int_equal(st.gpu_available, 1000 - 5000);
  assert_int_equal(st.gpu_overruns, 1);
  assert_int_equal(st.gpu_overrun_ms, 4900);
  assert_ledger_exact(&q);
  char *v = reply_str(r, "HGET %s %s", "kb:{cap}:charges", c.charge_id);
  assert_non_null(v);
  assert_string_equal(v, "P:5000:O:4900");
  free(v);
  /* the audit stream: one settle of reservation 100 at 5000, with the balances after it; read
   * move by move, the post of the reservation, then the overrun */
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XREVRANGE kb:{cap}:ledger:log + - COUNT 1"),
                   KB_OK);
  assert_int_equal(rep->elements, 1);
  const redisReply *f = rep->element[0]->element[1];
  assert_int_equal(f->elements, 2);
  assert_string_equal(f->element[0]->str, "moves");
  char settle[256];
  snprintf(settle, sizeof settle, "\"moves\":[[\"settle\",\"%s\",100,5000]],", c.charge_id);
  assert_non_null(strstr(f->element[1]->str, settle));
  assert_non_null(strstr(f->element[1]->str, "\"available\":-4000,\"held\":0,\"spent\":5000,\"total\":1000}"));
  freeReplyObject(rep);
  size_t n_mv = 0;
  struct kbq_move *mv = kbq_ledger_moves(r, "cap", &n_mv);
  assert_true(n_mv >= 2);
  assert_string_equal(mv[n_mv - 2].op, "post");
  assert_int_equal(mv[n_mv - 2].amount, 100);
  assert_int_equal(mv[n_mv - 2].available, 900);
  assert_int_equal(mv[n_mv - 2].spent, 100);
  assert_string_equal(mv[n_mv - 1].op, "overrun");
  assert_int_equal(mv[n_mv - 1].amount, 4900);
  assert_int_equal(mv[n_mv - 1].available, -4000);
  free(mv);

  /* a retry (lost reply) charges nothing twice, records nothing twice */
  assert_int_equal(kb_queue_complete(&q, &c, 5000, "{}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 1);
  assert_int_equal(kb_queue_complete(&q, &c, 9000, "{}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 1);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_spent, 5000);
  assert_int_equal(st.gpu_overruns, 1);
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XLEN kb:{cap}:results"), KB_OK);
  assert_int_equal(rep->integer, 1);
  freeReplyObject(rep);

  /* the results entry names the lease it settled by its charge (item, result, charge: no
   * runner or attempt, which the done item holds); the done item names the entry */
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XRANGE kb:{cap}:results - +"), KB_OK);
  const redisReply *e = rep->element[0];
  f = e->element[1];
  assert_int_equal(f->elements, 6);
  assert_string_equal(f->element[0]->str, "item");
  assert_string_equal(f->element[2]->str, "result");
  assert_string_equal(f->element[4]->str, "charge");
  assert_string_equal(f->element[5]->str, c.charge_id);
  snprintf(item, sizeof item, "%s", c.item);
  v = reply_str(r, "HGET %s %s", "kb:{cap}:items", item);
  char want[200];
  snprintf(want, sizeof want, "|r1|%s|%s|", c.charge_id, e->element[0]->str);
  assert_non_null(strstr(v, want));
  free(v);
  freeReplyObject(rep);

  /* with available below 0 nothing that costs can be claimed */
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_EBUDGET);
  kb_redis_free(r);
}

static void test_budget_distinct_from_empty(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "poor", 50, 60000, 3);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "poor", &err), KB_OK);
  char id[65];
  cand_id(2, id);
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 2, 100, 1.0, NULL, &err), KB_OK);
  struct kb_claim c;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_EBUDGET);
  kb_error_clear(&err);
  /* A cheaper item in a lower tier is still claimable: all or nothing per item. */
  char id2[65];
  cand_id(3, id2);
  assert_int_equal(kb_queue_enqueue(&q, id2, "t", 1, 10, 1.0, NULL, &err), KB_OK);
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  assert_string_equal(c.candidate, id2);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.cheapest_ready, 100);
  assert_ledger_exact(&q);
  kb_redis_free(r);
}

static void test_state_and_missing(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "nope", &err), KB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "nope"));
  make_campaign(r, "st", 1000, 60000, 3);
  kb_error_clear(&err);
  assert_int_equal(kb_queue_open(&q, r, "st", &err), KB_OK);
  assert_int_equal(kb_queue_set_state(&q, "running", "cancelled", "t", "t", &err), KB_OK);
  struct kb_claim c;
  char st_name[16] = "";
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, st_name, &err), KB_ESTATE);
  assert_string_equal(st_name, "cancelled");
  kb_error_clear(&err);
  char id[65];
  cand_id(4, id);
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 1, 10, 1.0, NULL, &err), KB_ESTATE);
  kb_error_clear(&err);
  assert_int_equal(kb_queue_set_state(&q, "running", "done", "t", "t", &err), KB_ESTATE);
  /* register refuses an existing campaign */
  kb_error_clear(&err);
  const char *kp[] = {"kb:{st}:meta", "kb:{st}:ledger", "kb:{st}:ledger:log", "kb:{st}:events"};
  const char *args[] = {"st", "{}", "other", "3", "[]", "3", "1000", "host", "1", "0", "t"};
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_script(r, "register", 4, kp, 11, args, NULL, &rep, &err), KB_EEXISTS);
  assert_non_null(strstr(err.msg, "already exists"));
  kb_redis_free(r);
}

static void test_release_is_not_an_attempt(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "rel", 1000, 60000, 3);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "rel", &err), KB_OK);
  char id[65];
  cand_id(5, id);
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 1, 10, 1.0, NULL, &err), KB_OK);
  struct kb_claim c;
  for (int i = 0; i < 5; i++) {
    assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
    assert_int_equal(c.attempt, 1);
    int released = 0;
    assert_int_equal(kb_queue_release(&q, &c, "r1", &released, &err), KB_OK);
    assert_int_equal(released, 1);
    assert_int_equal(kb_queue_release(&q, &c, "r1", &released, &err), KB_OK);
    assert_int_equal(released, 0); /* second release: no-op */
    assert_ledger_exact(&q);
  }
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_available, 1000);
  assert_int_equal(st.ready[1], 1);
  /* A completion with a released claim is refused: the lease is gone. */
  assert_int_equal(kb_queue_complete(&q, &c, 1, "{}", "r1", NULL, &err), KB_ELEASE);
  kb_redis_free(r);
}

static void test_reap_requeues_then_dead_letters(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "reap", 1000, 100, 2);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "reap", &err), KB_OK);
  char id[65];
  cand_id(6, id);
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 1, 10, 1.0, NULL, &err), KB_OK);
  struct kb_claim c1, c2;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c1, NULL, &err), KB_OK);
  /* heartbeat with a wrong token extends nothing */
  struct kb_claim forged = c1;
  snprintf(forged.token, sizeof forged.token, "%s", "00000000000000000000000000000000");
  int extended = -1;
  assert_int_equal(kb_queue_heartbeat(&q, "r9", &forged, 1, &extended, NULL, &err), KB_OK);
  assert_int_equal(extended, 0);
  assert_int_equal(kb_queue_heartbeat(&q, "r1", &c1, 1, &extended, NULL, &err), KB_OK);
  assert_int_equal(extended, 1);
  usleep(250 * 1000);
  int requeued = 0, dead = 0;
  assert_int_equal(kb_queue_reap(&q, 10, "t", &requeued, &dead, &err), KB_OK);
  assert_int_equal(requeued, 1);
  assert_int_equal(dead, 0);
  assert_ledger_exact(&q);
  /* the lost runner's late completion is refused and charges nothing */
  assert_int_equal(kb_queue_complete(&q, &c1, 10, "{}", "r1", NULL, &err), KB_ELEASE);
  kb_error_clear(&err);
  assert_int_equal(kb_queue_claim(&q, "r2", 0, -1, &c2, NULL, &err), KB_OK);
  assert_int_equal(c2.attempt, 2);
  assert_string_not_equal(c2.charge_id, c1.charge_id);
  usleep(250 * 1000);
  assert_int_equal(kb_queue_reap(&q, 10, "t", &requeued, &dead, &err), KB_OK);
  assert_int_equal(dead, 1);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.open, 0);
  assert_int_equal(st.dead, 1);
  assert_int_equal(st.gpu_available, 1000);
  assert_ledger_exact(&q);
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XRANGE kb:{reap}:results - +"), KB_OK);
  assert_int_equal(rep->elements, 1);
  assert_non_null(strstr(rep->element[0]->element[1]->element[3]->str, "infra_error"));
  freeReplyObject(rep);
  kb_redis_free(r);
}

/* An evaluation the runner failed (infra_error) goes back to the queue for another attempt with
 * its device time charged, until max_attempts: then nothing changes and the caller completes it
 * (retry.lua). A resent retry changes nothing; a late completion of a retried claim is a
 * duplicate that records nothing; a forged token is "lost". */
static void test_infra_retry(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "retry", 1000, 60000, 3);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "retry", &err), KB_OK);
  char id[65];
  cand_id(40, id);
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 1, 10, 1.0, NULL, &err), KB_OK);
  struct kb_claim c1, c2, c3;
  enum kb_retry out = KB_RETRY_LOST;
  struct kb_queue_status st;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c1, NULL, &err), KB_OK);
  assert_int_equal(c1.attempt, 1);
  struct kb_claim forged = c1;
  snprintf(forged.token, sizeof forged.token, "%s", "00000000000000000000000000000000");
  assert_int_equal(kb_queue_retry(&q, &forged, 4, "r9", "forged", &out, &err), KB_OK);
  assert_int_equal(out, KB_RETRY_LOST);
  assert_int_equal(kb_queue_retry(&q, &c1, 4, "r1", "oracle build: out of memory", &out, &err),
                   KB_OK);
  assert_int_equal(out, KB_RETRY_REQUEUED);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.ready[1], 1);
  assert_int_equal(st.leased, 0);
  assert_int_equal(st.gpu_spent, 4); /* the failed attempt's device time */
  assert_int_equal(st.gpu_held, 0);
  assert_int_equal(st.infra_retries, 1);
  assert_int_equal(st.open, 1);
  assert_ledger_exact(&q);
  /* resent (a lost reply): nothing changes */
  assert_int_equal(kb_queue_retry(&q, &c1, 4, "r1", "oracle build: out of memory", &out, &err),
                   KB_OK);
  assert_int_equal(out, KB_RETRY_REQUEUED);
  int dup = 0;
  assert_int_equal(kb_queue_complete(&q, &c1, 7, "{}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 1);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_spent, 4);
  assert_int_equal(st.infra_retries, 1);
  assert_int_equal(st.done, 0);
  /* second attempt: an overrun beyond the reservation is charged whole */
  assert_int_equal(kb_queue_claim(&q, "r2", 0, -1, &c2, NULL, &err), KB_OK);
  assert_int_equal(c2.attempt, 2);
  assert_string_not_equal(c2.charge_id, c1.charge_id);
  assert_int_equal(kb_queue_retry(&q, &c2, 25, "r2", "sandbox died while preparing", &out, &err),
                   KB_OK);
  assert_int_equal(out, KB_RETRY_REQUEUED);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_spent, 29);
  assert_int_equal(st.gpu_overruns, 1);
  assert_int_equal(st.gpu_overrun_ms, 15);
  assert_ledger_exact(&q);
  /* the last attempt: final, nothing written; the caller completes it */
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c3, NULL, &err), KB_OK);
  assert_int_equal(c3.attempt, 3);
  assert_int_equal(kb_queue_retry(&q, &c3, 3, "r1", "again", &out, &err), KB_OK);
  assert_int_equal(out, KB_RETRY_FINAL);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.leased, 1);
  assert_int_equal(st.gpu_held, 10);
  assert_int_equal(st.infra_retries, 2);
  assert_int_equal(kb_queue_complete(&q, &c3, 3, "{\"status\":\"infra_error\"}", "r1", &dup, &err),
                   KB_OK);
  assert_int_equal(dup, 0);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.done, 1);
  assert_int_equal(st.open, 0);
  assert_int_equal(st.gpu_spent, 32);
  assert_int_equal(st.gpu_held, 0);
  assert_ledger_exact(&q);
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XLEN kb:{retry}:results"), KB_OK);
  assert_int_equal(rep->integer, 1); /* one result: the final attempt's */
  freeReplyObject(rep);
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET kb:{retry}:meta infra_last"), KB_OK);
  assert_non_null(strstr(rep->str, "sandbox died while preparing"));
  freeReplyObject(rep);
  kb_redis_free(r);
}

/* A runner that compiles ahead holds a lease per CPU and more (16 on the H200): one heartbeat
 * extends them all, past the deadline the claim gave them (a bound of 8 once left every lease of
 * such a runner to expire and be reaped while it still worked on them). */
static void test_heartbeat_many_leases(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  struct kb_queue q;
  struct kb_error err = {0};
  enum { N = 40 };
  kbq_make_campaign(r, "beat", 1000000, 400, 2, &q);
  kbq_enqueue_items(&q, N, 0);
  struct kb_claim c[N];
  int n = 0;
  while (n < N) {
    int got = 0;
    assert_int_equal(kb_queue_cycle_batch(&q, NULL, 0, "r1", 0, -1, N - n > 32 ? 32 : N - n,
                                          c + n, &got, NULL, NULL, &err), KB_OK);
    assert_true(got > 0);
    n += got;
  }
  for (int k = 0; k < 3; k++) { /* 3 beats 200 ms apart: 600 ms, past the 400 ms lease */
    usleep(200 * 1000);
    int extended = -1;
    assert_int_equal(kb_queue_heartbeat(&q, "r1", c, N, &extended, NULL, &err), KB_OK);
    assert_int_equal(extended, N);
  }
  int requeued = -1, dead = -1;
  assert_int_equal(kb_queue_reap(&q, 100, "t", &requeued, &dead, &err), KB_OK);
  assert_int_equal(requeued, 0);
  assert_int_equal(dead, 0);
  for (int i = 0; i < N; i++)
    assert_int_equal(kb_queue_complete(&q, &c[i], 0, "{}", "r1", NULL, &err), KB_OK);
  assert_ledger_exact(&q);
  kb_redis_free(r);
}

static void test_scripts_reload_after_restart(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "rs", 1000, 60000, 3);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "rs", &err), KB_OK);
  char id[65];
  cand_id(7, id);
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 1, 10, 1.0, NULL, &err), KB_OK);
  /* Restart from the AOF: the connection drops and the script cache is empty. */
  assert_int_equal(kbt_redis_restart(&kbt_group_redis), 0);
  struct kb_claim c;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  assert_string_equal(c.candidate, id);
  kb_redis_free(r);
}

static void test_unreachable_names_address(void **state) {
  (void)state;
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  struct kb_redis_opts ro = {.addr = "127.0.0.1:1", .retry_ms = 1};
  assert_int_equal(kb_redis_connect(&ro, &r, &err), KB_ECONN);
  assert_non_null(strstr(err.msg, "127.0.0.1:1"));
  assert_int_equal(kb_exit_code(err.code), KB_EXIT_REDIS);
  kb_error_clear(&err);
  ro.addr = "nohost";
  assert_int_equal(kb_redis_connect(&ro, &r, &err), KB_EINVAL);
}

/* 16 processes claim and complete until nothing is left: every item done exactly once. */
static void test_many_processes(void **state) {
  (void)state;
  enum { ITEMS = 400, PROCS = 16 };
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "many", 1000000, 60000, 3);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "many", &err), KB_OK);
  for (int i = 0; i < ITEMS; i++) {
    char id[65];
    cand_id(1000 + i, id);
    assert_int_equal(kb_queue_enqueue(&q, id, "t", i % 3, q.tiers[i % 3].cost_ms, i, NULL, &err),
                     KB_OK);
  }
  pid_t pids[PROCS];
  for (int p = 0; p < PROCS; p++) {
    pids[p] = fork();
    if (pids[p] == 0) {
      struct kb_redis *cr = connect_or_die();
      struct kb_queue cq;
      struct kb_error e = {0};
      if (kb_queue_open(&cq, cr, "many", &e))
        _exit(2);
      char name[16];
      snprintf(name, sizeof name, "p%d", p);
      for (;;) {
        struct kb_claim c;
        int rc = kb_queue_claim(&cq, name, 0, -1, &c, NULL, &e);
        if (rc == KB_EEMPTY)
          _exit(0);
        if (rc == KB_OK)
          rc = kb_queue_complete(&cq, &c, c.cost_ms / 2, c.item, name, NULL, &e);
        if (rc) {
          fprintf(stderr, "%s: %s\n", name, e.msg);
          _exit(3);
        }
      }
    }
  }
  for (int p = 0; p < PROCS; p++) {
    int status = 0;
    waitpid(pids[p], &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.done, ITEMS);
  assert_int_equal(st.open, 0);
  assert_ledger_exact(&q);
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XLEN kb:{many}:results"), KB_OK);
  assert_int_equal(rep->integer, ITEMS);
  freeReplyObject(rep);
  kb_redis_free(r);
}


static void test_task_cap(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "caps", 10000, 60000, 3);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "caps", &err), KB_OK);
  assert_int_equal(kb_queue_set_task_cap(&q, "a", 150, &err), KB_OK);
  char id[65];
  for (int i = 0; i < 3; i++) {
    cand_id(20 + i, id);
    assert_int_equal(kb_queue_enqueue(&q, id, "a", 2, 100, i, NULL, &err), KB_OK);
  }
  cand_id(30, id);
  assert_int_equal(kb_queue_enqueue(&q, id, "b", 2, 100, 10, NULL, &err), KB_OK);
  struct kb_claim c1, c2, c3;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c1, NULL, &err), KB_OK);
  assert_string_equal(c1.task, "a");
  /* a's next item would take it to 200 > 150: the scan skips to task b */
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c2, NULL, &err), KB_OK);
  assert_string_equal(c2.task, "b");
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c3, NULL, &err), KB_EBUDGET);
  kb_error_clear(&err);
  int64_t cap, held, spent;
  assert_int_equal(kb_queue_task_budget(&q, "a", &cap, &held, &spent, &err), KB_OK);
  assert_int_equal(cap, 150);
  assert_int_equal(held, 100);
  assert_int_equal(kb_queue_complete(&q, &c1, 40, "{}", "r1", NULL, &err), KB_OK);
  assert_int_equal(kb_queue_task_budget(&q, "a", &cap, &held, &spent, &err), KB_OK);
  assert_int_equal(held, 0);
  assert_int_equal(spent, 40);
  /* 40 spent + 100 <= 150: a's next item fits now */
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c3, NULL, &err), KB_OK);
  assert_string_equal(c3.task, "a");
  int released = 0;
  assert_int_equal(kb_queue_release(&q, &c3, "r1", &released, &err), KB_OK);
  assert_int_equal(kb_queue_task_budget(&q, "a", &cap, &held, &spent, &err), KB_OK);
  assert_int_equal(held, 0);
  assert_int_equal(kb_queue_set_task_cap(&q, "a", -1, &err), KB_OK);
  assert_int_equal(kb_queue_task_budget(&q, "a", &cap, &held, &spent, &err), KB_OK);
  assert_int_equal(cap, -1);
  assert_ledger_exact(&q);
  kb_redis_free(r);
}

/* The budget split leaves a running task room for one dearest reservation (its cap: used + R).
 * Once it has spent anything its cap no longer fits R, yet a task with nothing held may always
 * start one evaluation: its next item is claimed at once, not after the scheduler's next
 * rebalance (runners idled up to rebalance_seconds at a campaign's end waiting for it). A
 * second item while one is held still waits for room under the cap. */
static void test_cap_lets_one_start(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "capone", 10000, 60000, 3);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "capone", &err), KB_OK);
  assert_int_equal(kb_queue_set_task_cap(&q, "a", 100, &err), KB_OK); /* used 0 + R 100 */
  char id[65];
  for (int i = 0; i < 3; i++) {
    cand_id(50 + i, id);
    assert_int_equal(kb_queue_enqueue(&q, id, "a", 2, 100, i, NULL, &err), KB_OK);
  }
  struct kb_claim c1, c2;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c1, NULL, &err), KB_OK);
  /* one held: a second of 100 would pass the cap */
  assert_int_equal(kb_queue_claim(&q, "r2", 0, -1, &c2, NULL, &err), KB_EBUDGET);
  kb_error_clear(&err);
  /* completed at 7 ms: spent 7 + 100 > 100, but nothing is held, so the next one starts,
   * also in the same call that completes the first */
  int dup = 0;
  assert_int_equal(kb_queue_complete_and_claim(&q, &c1, 7, "{}", "r1", 0, -1, &dup, &c2, NULL,
                                               &err), KB_OK);
  assert_string_equal(c2.task, "a");
  struct kb_claim c3;
  assert_int_equal(kb_queue_claim(&q, "r2", 0, -1, &c3, NULL, &err), KB_EBUDGET);
  kb_error_clear(&err);
  assert_int_equal(kb_queue_complete(&q, &c2, 5, "{}", "r1", &dup, &err), KB_OK);
  assert_int_equal(kb_queue_claim(&q, "r2", 0, -1, &c3, NULL, &err), KB_OK);
  int64_t cap, held, spent;
  assert_int_equal(kb_queue_task_budget(&q, "a", &cap, &held, &spent, &err), KB_OK);
  assert_int_equal(held, 100);
  assert_int_equal(spent, 12);
  assert_ledger_exact(&q);
  kb_redis_free(r);
}

static void test_llm_charges(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  make_campaign(r, "llm", 1000, 60000, 3);
  struct kb_queue q;
  struct kb_error err = {0};
  assert_int_equal(kb_queue_open(&q, r, "llm", &err), KB_OK);
  /* the campaign was funded with 0 tokens: fund it as a submitter would */
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HSET kb:{llm}:ledger llm_tokens:total 5000 "
                                     "llm_tokens:available 5000"), KB_OK);
  freeReplyObject(rep);
  int dup = -1;
  assert_int_equal(kb__ledger_reserve(&q, KB_LLM_TOKENS, "req-1", 3000, "t", &dup, &err), KB_OK);
  assert_int_equal(dup, 0);
  assert_int_equal(kb__ledger_reserve(&q, KB_LLM_TOKENS, "req-1", 3000, "t", &dup, &err), KB_OK);
  assert_int_equal(dup, 1);
  assert_int_equal(kb__ledger_reserve(&q, KB_LLM_TOKENS, "req-2", 3000, "t", &dup, &err),
                   KB_EBUDGET);
  kb_error_clear(&err);
  assert_int_equal(kb__ledger_post(&q, KB_LLM_TOKENS, "req-1", 1200, "t", &dup, &err), KB_OK);
  assert_int_equal(dup, 0);
  assert_int_equal(kb__ledger_post(&q, KB_LLM_TOKENS, "req-1", 1200, "t", &dup, &err), KB_OK);
  assert_int_equal(dup, 1);
  assert_int_equal(kb__ledger_void(&q, KB_LLM_TOKENS, "req-1", "t", &dup, &err), KB_ESTATE);
  kb_error_clear(&err);
  assert_int_equal(kb__ledger_void(&q, KB_LLM_TOKENS, "nope", "t", &dup, &err), KB_ENOTFOUND);
  kb_error_clear(&err);
  assert_int_equal(kb__ledger_reserve(&q, KB_LLM_TOKENS, "req-2", 500, "t", &dup, &err), KB_OK);
  assert_int_equal(kb__ledger_void(&q, KB_LLM_TOKENS, "req-2", "t", &dup, &err), KB_OK);
  assert_int_equal(kb__ledger_post(&q, KB_LLM_TOKENS, "req-2", 10, "t", &dup, &err), KB_ESTATE);
  kb_error_clear(&err);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.llm_spent, 1200);
  assert_int_equal(st.llm_held, 0);
  assert_int_equal(st.llm_available, 3800);
  assert_int_equal(st.llm_available + st.llm_held + st.llm_spent, st.llm_total);
  /* usage beyond the reservation (max_tokens plus the prompt estimate) is charged whole */
  assert_int_equal(kb__ledger_reserve(&q, KB_LLM_TOKENS, "req-3", 100, "t", &dup, &err), KB_OK);
  assert_int_equal(kb__ledger_post(&q, KB_LLM_TOKENS, "req-3", 250, "t", &dup, &err), KB_OK);
  assert_int_equal(dup, 0);
  assert_int_equal(kb__ledger_post(&q, KB_LLM_TOKENS, "req-3", 250, "t", &dup, &err), KB_OK);
  assert_int_equal(dup, 1); /* a retry charges nothing */
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.llm_spent, 1200 + 250);
  assert_int_equal(st.llm_available, 3800 - 250);
  assert_int_equal(st.llm_held, 0);
  assert_int_equal(st.llm_overruns, 1);
  assert_int_equal(st.llm_overrun, 150);
  assert_int_equal(st.llm_available + st.llm_held + st.llm_spent, st.llm_total);
  char *v = reply_str(r, "HGET %s %s", "kb:{llm}:charges:llm_tokens", "req-3");
  assert_string_equal(v, "P:250:O:150");
  free(v);
  assert_ledger_exact(&q);
  kb_redis_free(r);
}

/* Tasks' held and spent are counted from the start, caps or not (the scheduler splits the budget
 * on them); a cap set later applies to what was counted before it. */
static void test_task_budget_counted_before_caps(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "caps-late", 10000, 60000, 3, &q);
  char id[65];
  for (int i = 0; i < 2; i++) {
    cand_id(40 + i, id);
    assert_int_equal(kb_queue_enqueue(&q, id, "a", 2, 100, i, NULL, &err), KB_OK);
  }
  struct kb_claim first, second;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &first, NULL, &err), KB_OK);
  int64_t cap, held, spent;
  assert_int_equal(kb_queue_task_budget(&q, "a", &cap, &held, &spent, &err), KB_OK);
  assert_int_equal(cap, -1);
  assert_int_equal(held, 100); /* counted without caps */
  assert_int_equal(kb_queue_set_task_cap(&q, "a", 120, &err), KB_OK);
  /* 100 held + 100 > 120 */
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &second, NULL, &err), KB_EBUDGET);
  kb_error_clear(&err);
  /* the completion comes first within the call: it ends the task's only hold, and a task
   * with nothing held may start one evaluation although 30 spent + 100 > 120 */
  assert_int_equal(kb_queue_complete_and_claim(&q, &first, 30, "{}", "r1", 0, -1, NULL, &second,
                                               NULL, &err),
                   KB_OK);
  assert_int_equal(kb_queue_task_budget(&q, "a", &cap, &held, &spent, &err), KB_OK);
  assert_int_equal(held, 100);
  assert_int_equal(spent, 30);
  assert_int_equal(kb_queue_complete(&q, &second, 60, "{}", "r1", NULL, &err), KB_OK);
  assert_int_equal(kb_queue_task_budget(&q, "a", &cap, &held, &spent, &err), KB_OK);
  assert_int_equal(held, 0);
  assert_int_equal(spent, 90);
  assert_ledger_exact(&q);
  kb_redis_free(r);
}

/* An item's priority survives a release and a reap exactly: items keep it with the shortest
 * digits that read back as the same double (0.1 as "0.1", 0.1 + 0.2 with 17 digits). */
static void test_priority_exact_after_requeue(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "prio", 1000, 200, 3, &q);
  const double prio[2] = {0.1, 0.1 + 0.2};
  char id[65];
  for (int i = 0; i < 2; i++) {
    cand_id(60 + i, id);
    assert_int_equal(kb_queue_enqueue(&q, id, "t", 1, 10, prio[i], NULL, &err), KB_OK);
  }
  struct kb_claim a, b;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &a, NULL, &err), KB_OK);
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &b, NULL, &err), KB_OK);
  assert_int_equal(kb_queue_release(&q, &a, "r1", NULL, &err), KB_OK); /* back by release */
  kbq_sleep_ms(300);
  int requeued = 0;
  assert_int_equal(kb_queue_reap(&q, 10, "reaper", &requeued, NULL, &err), KB_OK); /* b */
  assert_int_equal(requeued, 1);
  for (int i = 0; i < 2; i++) {
    cand_id(60 + i, id);
    redisReply *rep = NULL;
    assert_int_equal(kb_redis_commandf(r, &rep, &err, "ZSCORE kb:{prio}:q:1 %s:1", id), KB_OK);
    char *end = NULL;
    double got = strtod(rep->str, &end);
    freeReplyObject(rep);
    if (got != prio[i])
      fail_msg("item %d requeued with priority %.17g, enqueued with %.17g", i, got, prio[i]);
  }
  kb_redis_free(r);
}

/* XLEN of `key`. */
static long long xlen(struct kb_redis *r, const char *key) {
  redisReply *rep = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XLEN %s", key), KB_OK);
  long long n = rep->integer;
  freeReplyObject(rep);
  return n;
}

/* complete_and_claim: the completion and the next lease in one call, one audit stream entry
 * for the settlement and the reservation, `next` aliasing `done`, and what it returns when
 * nothing can be claimed (the completion is recorded all the same) or the lease was lost
 * (nothing is recorded). */
static void test_complete_and_claim(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "fused", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 3, 0); /* tiers 0, 1, 2: costs 0, 10, 100 */
  struct kb_claim c, n;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  assert_int_equal(c.cost_ms, 100);
  long long log0 = xlen(r, "kb:{fused}:ledger:log");
  int dup = -1;
  assert_int_equal(kb_queue_complete_and_claim(&q, &c, 40, "{\"n\":1}", "r1", 0, -1, &dup, &n,
                                               NULL, &err),
                   KB_OK);
  assert_int_equal(dup, 0);
  assert_int_equal(n.tier, 1);
  assert_int_equal(n.cost_ms, 10);
  assert_int_equal(n.attempt, 1);
  assert_string_not_equal(n.item, c.item);
  assert_int_equal(strlen(n.token), 32);
  /* settle 100 at 40 and reserve 10: one stream entry, one "moves" field with both */
  assert_int_equal(xlen(r, "kb:{fused}:ledger:log"), log0 + 1);
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XREVRANGE kb:{fused}:ledger:log + - "
                                     "COUNT 1"), KB_OK);
  assert_int_equal(rep->element[0]->element[1]->elements, 2);
  char want[512];
  snprintf(want, sizeof want, "\"moves\":[[\"settle\",\"%s\",100,40],[\"reserve\",\"%s\",10]],",
           c.charge_id, n.charge_id);
  assert_non_null(strstr(rep->element[0]->element[1]->element[1]->str, want));
  freeReplyObject(rep);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.done, 1);
  assert_int_equal(st.open, 2);
  assert_int_equal(st.leased, 1);
  assert_int_equal(st.gpu_held, 10);
  assert_int_equal(st.gpu_spent, 40);
  /* next may be done: the tier-0 item costs nothing and writes no audit entry of its own */
  assert_int_equal(kb_queue_complete_and_claim(&q, &n, 10, "{\"n\":2}", "r1", 0, -1, &dup, &n,
                                               NULL, &err),
                   KB_OK);
  assert_int_equal(n.tier, 0);
  assert_int_equal(n.cost_ms, 0);
  /* the last one: completed, nothing left to claim; `next` comes back zeroed */
  struct kb_claim last = n;
  assert_int_equal(kb_queue_complete_and_claim(&q, &last, 0, "{\"n\":3}", "r1", 0, -1, &dup, &n,
                                               NULL, &err),
                   KB_EEMPTY);
  assert_int_equal(dup, 0);
  assert_string_equal(n.item, "");
  kb_error_clear(&err);
  /* the same completion again: a duplicate, and still nothing to claim */
  assert_int_equal(kb_queue_complete_and_claim(&q, &last, 0, "{\"n\":3}", "r1", 0, -1, &dup, &n,
                                               NULL, &err),
                   KB_EEMPTY);
  assert_int_equal(dup, 1);
  kb_error_clear(&err);
  kbq_assert_final(r, "fused", 3, NULL);

  /* A lost lease: nothing is recorded and nothing claimed. */
  kbq_enqueue_items(&q, 3, 10);
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  struct kb_claim forged = c;
  memset(forged.token, 'f', 32);
  dup = -1;
  assert_int_equal(kb_queue_complete_and_claim(&q, &forged, 5, "{}", "r1", 0, -1, &dup, &n, NULL,
                                               &err),
                   KB_ELEASE);
  assert_int_equal(dup, -1);
  kb_error_clear(&err);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.done, 3);
  assert_int_equal(st.leased, 1);
  assert_int_equal(st.ready[0] + st.ready[1] + st.ready[2], 2);
  /* Draining: the completion is recorded, no new lease; the state comes back. */
  assert_int_equal(kb_queue_set_state(&q, "running", "draining", "test", "test", &err), KB_OK);
  char st_name[16] = "";
  assert_int_equal(kb_queue_complete_and_claim(&q, &c, 5, "{}", "r1", 0, -1, &dup, &n, st_name,
                                               &err),
                   KB_ESTATE);
  assert_string_equal(st_name, "draining");
  assert_int_equal(dup, 0);
  kb_error_clear(&err);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.done, 4);
  assert_int_equal(st.leased, 0);
  assert_ledger_exact(&q);
  kb_redis_free(r);
}

/* Runner names reach items and audit entries without cjson: the C side escapes them, so a name
 * with quotes, backslashes, control characters and "|" (the item line's separator) still gives
 * valid JSON and a valid item line, read back intact. */
static void test_runner_name_escaped(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "names", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 3, 0);
  const char *name = "node \"7\"\\gpu\t0|x";
  struct kb_claim c;
  assert_int_equal(kb_queue_claim(&q, name, 0, -1, &c, NULL, &err), KB_OK);
  assert_int_equal(kb_queue_complete_and_claim(&q, &c, 50, "{}", name, 0, -1, NULL, &c, NULL,
                                               &err),
                   KB_OK);
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET kb:{names}:items %s", c.item), KB_OK);
  struct kb_item item;
  assert_int_equal(kb_item_parse(c.item, rep->str, &item, &err), KB_OK);
  freeReplyObject(rep);
  assert_string_equal(item.runner, name);
  assert_string_equal(item.state, "leased");
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XREVRANGE kb:{names}:ledger:log + - COUNT 1"),
                   KB_OK);
  json_t *entry = json_loads(rep->element[0]->element[1]->element[1]->str, 0, NULL);
  freeReplyObject(rep);
  assert_non_null(entry);
  assert_string_equal(json_string_value(json_object_get(entry, "who")), name);
  json_decref(entry);
  assert_int_equal(kb_queue_complete_and_claim(&q, &c, 5, "{}", name, 0, -1, NULL, &c, NULL,
                                               &err),
                   KB_OK);
  assert_int_equal(kb_queue_complete(&q, &c, 0, "{}", name, NULL, &err), KB_OK);
  kbq_assert_final(r, "names", 3, NULL);
  kb_redis_free(r);
}

/* Counts of campaign `q` that a failed batch must leave as they were. */
struct snap {
  struct kb_queue_status st;
  long long log, results;
};

static void take_snap(struct kb_redis *r, struct kb_queue *q, const char *cid, struct snap *s) {
  struct kb_error err = {0};
  char key[96];
  assert_int_equal(kb_queue_status(q, &s->st, &err), KB_OK);
  snprintf(key, sizeof key, "kb:{%s}:ledger:log", cid);
  s->log = xlen(r, key);
  snprintf(key, sizeof key, "kb:{%s}:results", cid);
  s->results = xlen(r, key);
}

static void assert_snap_same(const struct snap *a, const struct snap *b) {
  assert_int_equal(a->st.done, b->st.done);
  assert_int_equal(a->st.open, b->st.open);
  assert_int_equal(a->st.leased, b->st.leased);
  assert_int_equal(a->st.gpu_held, b->st.gpu_held);
  assert_int_equal(a->st.gpu_spent, b->st.gpu_spent);
  assert_int_equal(a->st.gpu_available, b->st.gpu_available);
  assert_int_equal(a->log, b->log);
  assert_int_equal(a->results, b->results);
}

/* kb_queue_cycle_batch: K claims in one call, each with its own charge and reservation (the
 * budget counted item by item: a claim stops at the first item it cannot afford); a batch of
 * completions is all or nothing (a lost lease, an unknown charge or one charge twice among
 * them: nothing written, nothing claimed); a resent batch is a duplicate of each item and
 * charges nothing again. */
static void test_batch(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "batch", 160, 60000, 3, &q);
  kbq_enqueue_items(&q, 6, 0); /* costs 0, 10, 100, 0, 10, 100 */
  struct kb_claim c[8], n[8];
  int got = -1;
  /* 100 first (highest tier), the other 100 not affordable (60 left), then 10, 10, 0, 0 */
  assert_int_equal(kb_queue_cycle_batch(&q, NULL, 0, "r1", 0, -1, 8, c, &got, NULL, NULL, &err),
                   KB_OK);
  assert_int_equal(got, 5);
  int64_t costs = 0;
  for (int i = 0; i < got; i++) {
    costs += c[i].cost_ms;
    assert_int_equal(strlen(c[i].token), 32);
    assert_string_equal(c[i].token, c[0].token);
    for (int j = 0; j < i; j++) {
      assert_string_not_equal(c[i].item, c[j].item);
      assert_string_not_equal(c[i].charge_id, c[j].charge_id);
    }
  }
  assert_int_equal(c[0].cost_ms, 100);
  assert_int_equal(costs, 120);
  struct snap before, after;
  take_snap(r, &q, "batch", &before);
  assert_int_equal(before.st.leased, 5);
  assert_int_equal(before.st.gpu_held, 120);
  /* one reserve per item that costs something: 3 moves in one audit stream entry */
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XREVRANGE kb:{batch}:ledger:log + - "
                                     "COUNT 1"), KB_OK);
  assert_int_equal(rep->element[0]->element[1]->elements, 2);
  json_t *batch = json_loads(rep->element[0]->element[1]->element[1]->str, 0, NULL);
  assert_non_null(batch);
  assert_int_equal(json_array_size(json_object_get(batch, "moves")), 3);
  assert_int_equal(json_integer_value(json_object_get(batch, "held")), 120);
  json_decref(batch);
  freeReplyObject(rep);

  /* all or nothing: the third of three has lost its lease, or names an unknown charge, or the
   * first charge comes twice */
  struct kb_claim bad = c[2];
  memset(bad.token, 'f', 32);
  struct kb_queue_done d[5] = {{&c[0], 50, "{\"n\":0}"}, {&c[1], 5, "{\"n\":1}"},
                               {&bad, 1, "{\"n\":2}"}};
  assert_int_equal(kb_queue_cycle_batch(&q, d, 3, "r1", 0, -1, 2, n, &got, NULL, NULL, &err),
                   KB_ELEASE);
  assert_int_equal(got, 0);
  kb_error_clear(&err);
  take_snap(r, &q, "batch", &after);
  assert_snap_same(&before, &after);
  bad = c[2];
  snprintf(bad.charge_id, sizeof bad.charge_id, "%s#99", c[2].item);
  assert_int_equal(kb_queue_cycle_batch(&q, d, 3, "r1", 0, -1, 2, n, &got, NULL, NULL, &err),
                   KB_ENOTFOUND);
  kb_error_clear(&err);
  d[2].claim = &c[0];
  assert_int_equal(kb_queue_cycle_batch(&q, d, 3, "r1", 0, -1, 2, n, &got, NULL, NULL, &err),
                   KB_EINVAL);
  kb_error_clear(&err);
  take_snap(r, &q, "batch", &after);
  assert_snap_same(&before, &after);

  /* four completed and the one affordable item left claimed, in one call */
  for (int i = 0; i < 4; i++)
    d[i] = (struct kb_queue_done){&c[i], c[i].cost_ms / 2, "{}"};
  int dups[5] = {-1, -1, -1, -1, -1};
  assert_int_equal(kb_queue_cycle_batch(&q, d, 4, "r1", 0, -1, 4, n, &got, dups, NULL, &err),
                   KB_OK);
  assert_int_equal(got, 1);
  assert_int_equal(n[0].cost_ms, 100);
  for (int i = 0; i < 4; i++)
    assert_int_equal(dups[i], 0);
  take_snap(r, &q, "batch", &after);
  assert_int_equal(after.st.done, 4);
  assert_int_equal(after.st.leased, 2);
  assert_int_equal(after.st.gpu_spent, 60);
  assert_int_equal(after.st.gpu_held, 100);
  assert_int_equal(after.results, 4);
  /* the same batch again: duplicates all, nothing charged again, nothing left to claim */
  struct kb_claim none[4];
  assert_int_equal(kb_queue_cycle_batch(&q, d, 4, "r1", 0, -1, 4, none, &got, dups, NULL, &err),
                   KB_EEMPTY);
  kb_error_clear(&err);
  for (int i = 0; i < 4; i++)
    assert_int_equal(dups[i], 1);
  struct snap again;
  take_snap(r, &q, "batch", &again);
  assert_int_equal(again.st.gpu_spent, 60);
  assert_int_equal(again.results, 4);
  assert_int_equal(again.st.done, 4);
  /* the last two, `next` aliasing `done`, claiming nothing */
  struct kb_claim last[2] = {c[4], n[0]};
  d[0] = (struct kb_queue_done){&last[0], 0, "{}"};
  d[1] = (struct kb_queue_done){&last[1], 100, "{}"};
  assert_int_equal(kb_queue_cycle_batch(&q, d, 2, "r1", 0, -1, 0, NULL, &got, dups, NULL, &err),
                   KB_OK);
  assert_int_equal(got, 0);
  kbq_assert_final(r, "batch", 6, NULL);
  kb_redis_free(r);
}


/* The batch call in three steps (kb_queue_cycle_prepare, _argv, _parse: kb-bench-queue's event
 * loop sends the command itself): the same claims, completions, duplicates and error codes
 * as kb_queue_cycle_batch, the command sent here with kb_redis_command; and a charge record
 * complete_claim cannot read (no amount) is refused as a lost lease, changing nothing. */
static void test_batch_sent_by_caller(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "split", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 6, 0); /* costs 0, 10, 100, 0, 10, 100 */
  char sha[41];
  assert_int_equal(kb_redis_script_sha(r, "complete_claim", sha, &err), KB_OK);
  assert_int_equal(strlen(sha), 40);
  struct kb_queue_cycle *c = NULL;
  const char **argv = NULL;
  const size_t *lens = NULL;
  redisReply *rep = NULL;
  struct kb_claim held[4], next[4];
  int got = -1, dups[4] = {-1, -1, -1, -1};
  /* claim 4 */
  assert_int_equal(kb_queue_cycle_prepare(&q, NULL, 0, "r1", 0, -1, 4, &c, &err), KB_OK);
  int argc = kb_queue_cycle_argv(c, sha, &argv, &lens);
  assert_string_equal(argv[0], "EVALSHA");
  assert_int_equal(kb_redis_command(r, argc, argv, lens, 1, &rep, &err), KB_OK);
  assert_int_equal(kb_queue_cycle_parse(&q, c, rep, held, &got, NULL, NULL, &err), KB_OK);
  assert_int_equal(got, 4);
  freeReplyObject(rep);
  kb_queue_cycle_free(c);
  /* complete the 4 and claim the last 2 */
  struct kb_queue_done d[4];
  for (int i = 0; i < 4; i++)
    d[i] = (struct kb_queue_done){&held[i], held[i].cost_ms / 2, "{}"};
  assert_int_equal(kb_queue_cycle_prepare(&q, d, 4, "r1", 0, -1, 4, &c, &err), KB_OK);
  argc = kb_queue_cycle_argv(c, sha, &argv, &lens);
  assert_int_equal(kb_redis_command(r, argc, argv, lens, 1, &rep, &err), KB_OK);
  assert_int_equal(kb_queue_cycle_parse(&q, c, rep, next, &got, dups, NULL, &err), KB_OK);
  assert_int_equal(got, 2);
  for (int i = 0; i < 4; i++)
    assert_int_equal(dups[i], 0);
  /* the same reply read again: still 4 completions, none a duplicate */
  assert_int_equal(kb_queue_cycle_parse(&q, c, rep, next, &got, dups, NULL, &err), KB_OK);
  freeReplyObject(rep);
  /* the same command resent (a lost reply): every completion a duplicate, the same 2 leases */
  argc = kb_queue_cycle_argv(c, sha, &argv, &lens);
  assert_int_equal(kb_redis_command(r, argc, argv, lens, 1, &rep, &err), KB_OK);
  struct kb_claim again[4];
  assert_int_equal(kb_queue_cycle_parse(&q, c, rep, again, &got, dups, NULL, &err), KB_OK);
  assert_int_equal(got, 2);
  for (int i = 0; i < 4; i++)
    assert_int_equal(dups[i], 1);
  assert_string_equal(again[0].item, next[0].item);
  assert_string_equal(again[1].item, next[1].item);
  freeReplyObject(rep);
  kb_queue_cycle_free(c);
  /* a lost lease comes back as an error reply, read as KB_ELEASE; nothing changes */
  struct snap before, after;
  take_snap(r, &q, "split", &before);
  struct kb_claim bad = next[1];
  memset(bad.token, 'f', 32);
  d[0] = (struct kb_queue_done){&next[0], 0, "{}"};
  d[1] = (struct kb_queue_done){&bad, 0, "{}"};
  assert_int_equal(kb_queue_cycle_prepare(&q, d, 2, "r1", 0, -1, 0, &c, &err), KB_OK);
  argc = kb_queue_cycle_argv(c, sha, &argv, &lens);
  assert_int_equal(kb_redis_command(r, argc, argv, lens, 1, &rep, &err), KB_OK);
  assert_int_equal(rep->type, REDIS_REPLY_ERROR);
  assert_int_equal(kb_queue_cycle_parse(&q, c, rep, NULL, &got, NULL, NULL, &err), KB_ELEASE);
  assert_int_equal(got, 0);
  kb_error_clear(&err);
  freeReplyObject(rep);
  kb_queue_cycle_free(c);
  take_snap(r, &q, "split", &after);
  assert_snap_same(&before, &after);
  /* a held charge without its amount ("H:"): not a lease complete_claim can settle */
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HSET kb:{split}:charges %s H:",
                                     next[0].charge_id), KB_OK);
  freeReplyObject(rep);
  take_snap(r, &q, "split", &before);
  int dup = -1;
  assert_int_equal(kb_queue_complete(&q, &next[0], 1, "{}", "r1", &dup, &err), KB_ELEASE);
  kb_error_clear(&err);
  take_snap(r, &q, "split", &after);
  assert_snap_same(&before, &after);
  /* too many items is refused before anything is built */
  assert_int_equal(kb_queue_cycle_prepare(&q, NULL, 0, "r1", 0, -1, KB_QUEUE_BATCH_MAX + 1, &c,
                                          &err), KB_EINVAL);
  assert_null(c);
  kb_error_clear(&err);
  kb_redis_free(r);
}

/* Enqueues item `i` of task `task` at tier `tier` (cost 10) with priority `prio`. */
static void enqueue_task_item(struct kb_queue *q, int i, const char *task, int tier, double prio) {
  char id[65];
  struct kb_error err = {0};
  cand_id(i, id);
  assert_int_equal(kb_queue_enqueue(q, id, task, tier, 10, prio, NULL, &err), KB_OK);
}

/* One claim among tiers [tier, tier]; returns its task's first letter ('-' when none). */
static char claim_task(struct kb_queue *q, int tier, int k, struct kb_claim *c, int *got) {
  struct kb_error err = {0};
  int rc = kb_queue_cycle_batch(q, NULL, 0, "r1", tier, tier, k, c, got, NULL, NULL, &err);
  kb_error_clear(&err);
  return rc == KB_OK ? c[0].task[0] : '-';
}

/* Task affinity (kb_queue_set_affinity): a claim takes the preferred task's item among the
 * queue's first K + 16 entries before a better one of another task; one beyond them is not
 * preferred; the compile tier keeps its order; the head, once passed over, is claimed after
 * meta affinity_ms however many preferred items are still there (no task starves); a task
 * another runner holds comes after one nobody holds; no list is the plain order. */
static void test_affinity(void **state) {
  (void)state;
  struct kb_redis *r = connect_or_die();
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "aff", 1000000, 60000, 3, &q);
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HSET kb:{aff}:meta affinity_ms 400"), KB_OK);
  freeReplyObject(rep);
  const char *b[] = {"bb"};
  struct kb_claim c[4];
  int got = 0;
  /* tier 1: a at 1..20, then b at 21 (place 21: beyond the 17 entries one claim looks at) */
  for (int i = 0; i < 20; i++)
    enqueue_task_item(&q, i, "aa", 1, 1 + i);
  enqueue_task_item(&q, 20, "bb", 1, 21);
  assert_int_equal(kb_queue_set_affinity(&q, b, 1), KB_OK);
  assert_int_equal(claim_task(&q, 1, 1, c, &got), 'a'); /* b beyond the bound */
  assert_int_equal(kb_queue_set_affinity(&q, b, 1), KB_OK);
  enqueue_task_item(&q, 21, "bb", 1, 5.5); /* within the bound: taken before 18 better ones */
  assert_int_equal(claim_task(&q, 1, 1, c, &got), 'b');
  assert_int_equal(c[0].tier, 1);
  /* across tiers: a preferred tier-1 item before another task's tier-2 head */
  enqueue_task_item(&q, 30, "aa", 2, 1);
  enqueue_task_item(&q, 31, "bb", 1, 6.5);
  struct kb_error e2 = {0};
  assert_int_equal(kb_queue_cycle_batch(&q, NULL, 0, "r1", 1, 2, 1, c, &got, NULL, NULL, &e2),
                   KB_OK);
  assert_string_equal(c[0].task, "bb");
  assert_int_equal(c[0].tier, 1);
  assert_int_equal(claim_task(&q, 2, 1, c, &got), 'a'); /* the tier-2 one, out of the way */
  /* the compile tier is never reordered */
  enqueue_task_item(&q, 40, "aa", 0, 1);
  enqueue_task_item(&q, 41, "bb", 0, 2);
  assert_int_equal(claim_task(&q, 0, 1, c, &got), 'a');
  /* no starvation: with b items always within the bound, the passed-over head (a, place 1) is
   * claimed once it has waited affinity_ms (400 ms) since it was first passed over */
  for (int i = 0; i < 30; i++)
    enqueue_task_item(&q, 50 + i, "bb", 1, 3.5);
  int64_t t0 = kbq_now_ms(), t_a = -1;
  int n_b = 1; /* the b taken above passed over the same head */
  while (kbq_now_ms() - t0 < 2000) {
    char t = claim_task(&q, 1, 1, c, &got);
    assert_true(t == 'a' || t == 'b');
    if (t == 'a') {
      t_a = kbq_now_ms() - t0;
      break;
    }
    n_b++;
    kbq_sleep_ms(40);
  }
  assert_true(t_a >= 0); /* the head was claimed */
  assert_true(t_a < 400 + 300);
  assert_true(n_b >= 5); /* and b was preferred meanwhile */
  assert_true(n_b < 30); /* with b items still in the queue */
  /* K = 2 with two preferred items in the window takes both; the list cleared: plain order */
  assert_int_equal(claim_task(&q, 1, 2, c, &got), 'b');
  assert_int_equal(got, 2);
  assert_int_equal(c[1].task[0], 'b');
  assert_int_equal(kb_queue_set_affinity(&q, NULL, 0), KB_OK);
  assert_int_equal(claim_task(&q, 1, 1, c, &got), 'a');
  /* with affinity, a task another runner holds comes after one no runner holds */
  const char *none[1];
  assert_int_equal(kb_queue_set_affinity(&q, none, 0), KB_OK);
  enqueue_task_item(&q, 90, "cc", 2, 1);
  enqueue_task_item(&q, 91, "cc", 2, 2);
  enqueue_task_item(&q, 92, "dd", 2, 3);
  assert_int_equal(kb_queue_cycle_batch(&q, NULL, 0, "r2", 2, 2, 1, c, &got, NULL, NULL, &e2),
                   KB_OK);
  assert_string_equal(c[0].task, "cc"); /* r2 holds cc now */
  assert_int_equal(claim_task(&q, 2, 1, c, &got), 'd');
  assert_int_equal(claim_task(&q, 2, 1, c, &got), 'c');
  /* bad ids are refused */
  const char *bad[] = {"a,b"};
  assert_int_equal(kb_queue_set_affinity(&q, bad, 1), KB_EINVAL);
  assert_ledger_exact(&q);
  kb_redis_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_enqueue_claim_complete),
      cmocka_unit_test(test_cost_beyond_reservation_charged),
      cmocka_unit_test(test_budget_distinct_from_empty),
      cmocka_unit_test(test_state_and_missing),
      cmocka_unit_test(test_release_is_not_an_attempt),
      cmocka_unit_test(test_reap_requeues_then_dead_letters),
      cmocka_unit_test(test_infra_retry),
      cmocka_unit_test(test_heartbeat_many_leases),
      cmocka_unit_test(test_scripts_reload_after_restart),
      cmocka_unit_test(test_unreachable_names_address),
      cmocka_unit_test(test_many_processes),
      cmocka_unit_test(test_task_cap),
      cmocka_unit_test(test_cap_lets_one_start),
      cmocka_unit_test(test_llm_charges),
      cmocka_unit_test(test_task_budget_counted_before_caps),
      cmocka_unit_test(test_priority_exact_after_requeue),
      cmocka_unit_test(test_complete_and_claim),
      cmocka_unit_test(test_runner_name_escaped),
      cmocka_unit_test(test_batch),
      cmocka_unit_test(test_batch_sent_by_caller),
      cmocka_unit_test(test_affinity),
  };
  return cmocka_run_group_tests(tests, kbt_redis_group_setup, kbt_redis_group_teardown);
}
