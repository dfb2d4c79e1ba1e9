/* Error codes of the scripts and the C layer not covered by test_queue.c, each against a real
 * server, each checking that the refused call changed nothing; and the audit stream's balances
 * entry by entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/error.h"
#include "kb/item.h"
#include "ledger.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "queue_helpers.h"
#include "redis_group.h"


static int64_t redis_int(struct kb_redis *r, const char *fmt, const char *key) {
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(r, &rep, &err, fmt, key))
    fail_msg("%s %s: %s", fmt, key, err.msg);
  assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
  int64_t v = rep->integer;
  freeReplyObject(rep);
  return v;
}

/* complete with a charge id the campaign never issued: KB_ENOTFOUND naming it; nothing moves. */
static void test_complete_unknown_charge(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-charge", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 2, 0); /* tier 0 (cost 0) and tier 1 (cost 10) */
  struct kb_claim c;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  assert_int_equal(c.cost_ms, 10);
  struct kb_claim forged = c;
  snprintf(forged.charge_id, sizeof forged.charge_id, "%s#9", c.item);
  int dup = -1;
  int rc = kb_queue_complete(&q, &forged, 5, "{}", "r1", &dup, &err);
  if (rc != KB_ENOTFOUND)
    fail_msg("complete with charge %s gave %s (\"%s\"), expected NOTFOUND", forged.charge_id,
             kb_err_name(rc), err.msg);
  if (strstr(err.msg, forged.charge_id) == NULL)
    fail_msg("message \"%s\" does not name the charge %s", err.msg, forged.charge_id);
  assert_int_equal(dup, -1); /* not touched on error */
  kb_error_clear(&err);
  snprintf(forged.charge_id, sizeof forged.charge_id, "%s", "no-such-charge");
  assert_int_equal(kb_queue_complete(&q, &forged, 5, "{}", "r1", NULL, &err), KB_ENOTFOUND);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.gpu_held, 10);
  assert_int_equal(st.gpu_spent, 0);
  assert_int_equal(st.leased, 1);
  assert_int_equal(st.done, 0);
  assert_int_equal(redis_int(r, "XLEN %s", "kb:{e-charge}:results"), 0);
  /* The real charge still completes. */
  assert_int_equal(kb_queue_complete(&q, &c, 5, "{}", "r1", &dup, &err), KB_OK);
  assert_int_equal(dup, 0);
  kbq_assert_ledger_invariant(&q);
  kb_redis_free(r);
}

/* set_state and status on a campaign whose meta is gone: KB_ENOTFOUND. */
static void test_set_state_missing_campaign(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-gone", 1000, 60000, 3, &q);
  /* The queue was opened while the campaign existed; then it vanishes (deleted by hand). */
  assert_int_equal(redis_int(r, "DEL %s", "kb:{e-gone}:meta"), 1);
  int rc = kb_queue_set_state(&q, "*", "cancelled", "t", "t", &err);
  if (rc != KB_ENOTFOUND)
    fail_msg("set_state on a missing campaign gave %s (\"%s\"), expected NOTFOUND",
             kb_err_name(rc), err.msg);
  kb_error_clear(&err);
  assert_int_equal(kb_queue_set_state(&q, "running", "done", "t", "t", &err), KB_ENOTFOUND);
  kb_error_clear(&err);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_ENOTFOUND);
  /* set_state created nothing: no meta, no event. */
  assert_int_equal(redis_int(r, "EXISTS %s", "kb:{e-gone}:meta"), 0);
  assert_int_equal(redis_int(r, "XLEN %s", "kb:{e-gone}:events"), 2); /* submitted, running */
  kb_error_clear(&err);
  struct kb_queue q2;
  assert_int_equal(kb_queue_open(&q2, r, "e-gone", &err), KB_ENOTFOUND);
  kb_error_clear(&err);
  /* a runner's and the scheduler's scripts on it: KB_EGONE, and nothing written (a redis
   * restarted without its data must not get fragments of the campaign back) */
  const char id[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  int added = 0, requeued = 0, dead = 0;
  struct kb_claim c;
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 0, 10, 1.0, &added, &err), KB_EGONE);
  assert_non_null(strstr(err.msg, "kb:{e-gone}:meta does not exist: the campaign is gone"));
  kb_error_clear(&err);
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_EGONE);
  kb_error_clear(&err);
  /* the reaper finds no lease to reap there (and would refuse one: reap.lua) */
  assert_int_equal(kb_queue_reap(&q, 10, "t", &requeued, &dead, &err), KB_OK);
  assert_int_equal(requeued + dead, 0);
  assert_int_equal(kb_queue_heartbeat(&q, "r1", NULL, 0, NULL, NULL, &err), KB_EGONE);
  assert_int_equal(kb_exit_code(KB_EGONE), KB_EXIT_REDIS);
  assert_int_equal(redis_int(r, "EXISTS %s", "kb:{e-gone}:meta"), 0);
  assert_int_equal(redis_int(r, "EXISTS %s", "kb:{e-gone}:runners"), 0);
  assert_int_equal(redis_int(r, "HLEN %s", "kb:{e-gone}:items"), 0);
  kb_redis_free(r);
}

/* A tier outside the ladder is refused before anything reaches redis. */
static void test_enqueue_outside_ladder(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-ladder", 1000, 60000, 3, &q);
  char id[65];
  kbq_cand_id(7, id);
  const int bad[] = {3, 4, 99, -1};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kb_error_clear(&err);
    int added = -1;
    int rc = kb_queue_enqueue(&q, id, "t", bad[i], 10, 1.0, &added, &err);
    if (rc != KB_EINVAL)
      fail_msg("enqueue at tier %d gave %s (\"%s\"), expected INVAL", bad[i], kb_err_name(rc),
               err.msg);
    char tier_s[16];
    snprintf(tier_s, sizeof tier_s, "%d", bad[i]);
    if (strstr(err.msg, tier_s) == NULL)
      fail_msg("message \"%s\" does not name tier %d", err.msg, bad[i]);
    assert_int_equal(added, -1);
  }
  assert_int_equal(redis_int(r, "HLEN %s", "kb:{e-ladder}:items"), 0);
  assert_int_equal(redis_int(r, "EXISTS %s", "kb:{e-ladder}:q:3"), 0);
  struct kb_queue_status st;
  kb_error_clear(&err);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.open, 0);
  /* The last tier is fine. */
  int added = 0;
  assert_int_equal(kb_queue_enqueue(&q, id, "t", 2, 100, 1.0, &added, &err), KB_OK);
  assert_int_equal(added, 1);
  kb_redis_free(r);
}

/* heartbeat reports the campaign's state as it changes; claims stop outside "running". */
static void test_heartbeat_reports_state(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-hb", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 3, 0);
  struct kb_claim c;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
  char st_name[16] = "";
  int extended = -1;
  assert_int_equal(kb_queue_heartbeat(&q, "r1", &c, 1, &extended, st_name, &err), KB_OK);
  assert_string_equal(st_name, "running");
  assert_int_equal(extended, 1);

  assert_int_equal(kb_queue_set_state(&q, "running", "draining", "t", "t", &err), KB_OK);
  assert_int_equal(kb_queue_heartbeat(&q, "r1", &c, 1, &extended, st_name, &err), KB_OK);
  assert_string_equal(st_name, "draining");
  assert_int_equal(extended, 1); /* a draining campaign lets leases end */
  struct kb_claim c2;
  char claim_state[16] = "";
  assert_int_equal(kb_queue_claim(&q, "r2", 0, -1, &c2, claim_state, &err), KB_ESTATE);
  assert_string_equal(claim_state, "draining");
  kb_error_clear(&err);

  assert_int_equal(kb_queue_set_state(&q, "running,draining", "cancelled", "user", "t", &err),
                   KB_OK);
  memset(st_name, 0, sizeof st_name);
  assert_int_equal(kb_queue_heartbeat(&q, "r1", &c, 1, NULL, st_name, &err), KB_OK);
  assert_string_equal(st_name, "cancelled");
  /* without leases too */
  memset(st_name, 0, sizeof st_name);
  assert_int_equal(kb_queue_heartbeat(&q, "r3", NULL, 0, &extended, st_name, &err), KB_OK);
  assert_string_equal(st_name, "cancelled");
  assert_int_equal(extended, 0);
  /* the heartbeat recorded the runners */
  assert_int_equal(redis_int(r, "HLEN %s", "kb:{e-hb}:runners"), 2);

  /* Any number of leases in one heartbeat (test_queue: heartbeat_many_leases); claims it does
   * not hold extend nothing; a negative count is refused. */
  struct kb_claim many[9];
  memset(many, 0, sizeof many);
  int ext = -1;
  assert_int_equal(kb_queue_heartbeat(&q, "r1", many, 9, &ext, NULL, &err), KB_OK);
  assert_int_equal(ext, 0);
  assert_int_equal(kb_queue_heartbeat(&q, "r1", many, -1, NULL, NULL, &err), KB_EINVAL);
  kb_error_clear(&err);

  /* A campaign that vanished (a redis restarted without its data) is KB_EGONE, and the
   * heartbeat writes nothing: no runner recorded, no lease extended. */
  assert_int_equal(redis_int(r, "DEL %s", "kb:{e-hb}:meta"), 1);
  assert_int_equal(kb_queue_heartbeat(&q, "r9", &c, 1, NULL, st_name, &err), KB_EGONE);
  assert_non_null(strstr(err.msg, "kb:{e-hb}:meta does not exist: the campaign is gone"));
  assert_int_equal(redis_int(r, "HLEN %s", "kb:{e-hb}:runners"), 2);
  kb_redis_free(r);
}

/* The charge script refuses a negative amount with KB_INVAL (mapped to KB_EINVAL). */
static void test_charge_bad_amount(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-amount", 1000, 60000, 3, &q);
  int rc = kb__ledger_reserve(&q, KB_LLM_TOKENS, "req-neg", -5, "t", NULL, &err);
  if (rc != KB_EINVAL)
    fail_msg("reserve of -5 gave %s (\"%s\"), expected INVAL", kb_err_name(rc), err.msg);
  kb_error_clear(&err);
  assert_int_equal(kb__ledger_reserve(&q, 7, "req-cur", 5, "t", NULL, &err), KB_EINVAL);
  struct kb_queue_status st;
  kb_error_clear(&err);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.llm_available, st.llm_total);
  assert_int_equal(st.llm_held, 0);
  assert_int_equal(redis_int(r, "HLEN %s", "kb:{e-amount}:charges:llm_tokens"), 0);
  kb_redis_free(r);
}

/* The ledger-entry schema says an entry's balances are "the account's state after the
 * operation", and the ledger-moves schema that a runner's cycle's balances are the state after
 * its last move. Replaying the audit stream move by move must then reproduce each move's
 * balances (a "moves" entry's derived from its last, kbq_ledger_moves), not only the final
 * ones. A settlement below the reservation is one settle move (its post of the actual amount
 * and void of the rest); a move of 0 is not recorded. */
static void test_ledger_log_balances_after_each_entry(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-log", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 3, 0);
  struct kb_claim c;
  for (int i = 0; i < 3; i++) { /* costs 100, 10, 0; settle 30, 10 (exact), 0 */
    assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_OK);
    assert_int_equal(kb_queue_complete(&q, &c, c.cost_ms == 100 ? 30 : c.cost_ms, "{}", "r1",
                                       NULL, &err),
                     KB_OK);
  }
  assert_int_equal(kb__ledger_reserve(&q, KB_LLM_TOKENS, "req-1", 400, "t", NULL, &err), KB_OK);
  assert_int_equal(kb__ledger_post(&q, KB_LLM_TOKENS, "req-1", 150, "t", NULL, &err), KB_OK);
  kbq_assert_final(r, "e-log", 3, NULL);

  size_t n = 0;
  struct kbq_move *mv = kbq_ledger_moves(r, "e-log", &n);
  struct {
    const char *name;
    int64_t total, available, held, spent;
  } acct[2] = {{"gpu_ms", 0, 0, 0, 0}, {"llm_tokens", 0, 0, 0, 0}};
  int mismatches = 0, from_moves = 0;
  char first[3][400] = {"", "", ""};
  char ops[256] = "";
  for (size_t i = 0; i < n; i++) {
    const struct kbq_move *m = &mv[i];
    int k = strcmp(m->currency, "gpu_ms") == 0 ? 0 : 1;
    int64_t amount = m->amount;
    if (k == 0 && strcmp(m->op, "fund") != 0) { /* the runner's moves, in order */
      size_t len = strlen(ops);
      snprintf(ops + len, sizeof ops - len, "%s%s %lld", len ? ", " : "", m->op,
               (long long)amount);
    }
    from_moves += m->from_moves;
    if (strcmp(m->op, "fund") == 0) {
      acct[k].total += amount;
      acct[k].available += amount;
    } else if (strcmp(m->op, "reserve") == 0) {
      acct[k].available -= amount;
      acct[k].held += amount;
    } else if (strcmp(m->op, "post") == 0) {
      acct[k].held -= amount;
      acct[k].spent += amount;
    } else {
      acct[k].held -= amount;
      acct[k].available += amount;
    }
    if (m->available != acct[k].available || m->held != acct[k].held ||
        m->spent != acct[k].spent) {
      if (mismatches < 3)
        snprintf(first[mismatches], sizeof first[0],
                 "%s %s %lld of %s records available/held/spent %lld/%lld/%lld, but the "
                 "replay up to it gives %lld/%lld/%lld",
                 m->currency, m->op, (long long)amount, m->charge, (long long)m->available,
                 (long long)m->held, (long long)m->spent, (long long)acct[k].available,
                 (long long)acct[k].held, (long long)acct[k].spent);
      mismatches++;
    }
  }
  free(mv);
  if (mismatches)
    fail_msg("%d ledger:log entries disagree with the replay: %s; %s; %s", mismatches, first[0],
             first[1], first[2]);
  /* the runner's: reserve 100, settle 100 at 30, reserve 10, settle 10 at 10, nothing for 0 */
  assert_string_equal(ops, "reserve 100, post 30, void 70, reserve 10, post 10");
  assert_int_equal(from_moves, 5);
  kb_redis_free(r);
}

/* The dead-letter reason of `id` in campaign `cid`, which must contain `want` (and the items
 * key: the reason names key and field). */
static void assert_dead(struct kb_redis *r, const char *cid, const char *id, const char *want) {
  redisReply *rep = NULL;
  struct kb_error err = {0};
  char key[128], items[128];
  snprintf(key, sizeof key, "kb:{%s}:dead", cid);
  snprintf(items, sizeof items, "kb:{%s}:items field \"%s\"", cid, id);
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET %s %s", key, id), KB_OK);
  if (rep->type != REDIS_REPLY_STRING)
    fail_msg("%s is not in %s", id, key);
  if (strstr(rep->str, items) == NULL || strstr(rep->str, want) == NULL)
    fail_msg("%s: dead-letter reason \"%s\" does not name \"%s\" and \"%s\"", id, rep->str,
             items, want);
  freeReplyObject(rep);
}

static void cmd(struct kb_redis *r, const char *fmt, const char *a, const char *b) {
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(r, &rep, &err, fmt, a, b))
    fail_msg("%s: %s", fmt, err.msg);
  freeReplyObject(rep);
}

/* Bad state in Redis (issue 16, item 1): a queued item under an id that is not
 * "<64 hex>:<tier>", an item that is not a layout 2 line, a queue entry with no item, a lease
 * with no item. Each goes to the dead-letter hash with a reason naming key and field; status,
 * claim and reap go on, and the good items still complete. */
static void test_bad_state_dead_lettered(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-bad", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 2, 0); /* tier 0 (cost 0) and tier 1 (cost 10) */
  cmd(r, "HSET kb:{e-bad}:items bad:1 %s%s", "queued|0|0|10|-100|t|||||", "");
  cmd(r, "ZADD kb:{e-bad}:q:1 -100 %s%s", "bad:1", "");
  cmd(r, "HSET kb:{e-bad}:items junk:0 %s%s", "not an item {", "");
  cmd(r, "ZADD kb:{e-bad}:q:0 -100 %s%s", "junk:0", "");
  cmd(r, "ZADD kb:{e-bad}:q:0 -99 %s%s", "ghost:0", "");
  cmd(r, "ZADD kb:{e-bad}:lease 0 %s%s", "ghost:lease", "");
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  struct kb_claim c[2];
  for (int i = 0; i < 2; i++) {
    int rc = kb_queue_claim(&q, "r1", 0, -1, &c[i], NULL, &err);
    if (rc != KB_OK)
      fail_msg("claim %d: %s (%s)", i, kb_err_name(rc), err.msg);
    assert_int_equal(strlen(c[i].candidate), 64);
  }
  struct kb_claim none;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &none, NULL, &err), KB_EEMPTY);
  int requeued = -1, dead = -1;
  assert_int_equal(kb_queue_reap(&q, 100, "test", &requeued, &dead, &err), KB_OK);
  assert_int_equal(requeued, 0);
  assert_dead(r, "e-bad", "bad:1", "the id is not \"<candidate, 64 hex digits>:<tier>\"");
  assert_dead(r, "e-bad", "junk:0", "not an item of layout 2");
  assert_dead(r, "e-bad", "ghost:0", "no such item");
  assert_dead(r, "e-bad", "ghost:lease", "no such item");
  assert_int_equal(redis_int(r, "ZCARD %s", "kb:{e-bad}:q:0"), 0);
  assert_int_equal(redis_int(r, "ZCARD %s", "kb:{e-bad}:q:1"), 0);
  assert_int_equal(redis_int(r, "ZCARD %s", "kb:{e-bad}:lease"), 2);
  for (int i = 0; i < 2; i++)
    assert_int_equal(kb_queue_complete(&q, &c[i], 5, "{}", "r1", NULL, &err), KB_OK);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.done, 2);
  assert_int_equal(st.open, 0);
  kbq_assert_ledger_invariant(&q);
  kb_redis_free(r);
}

/* Real items gone bad (issue 16, item 1): of a small campaign's three items, each counted in
 * "open" by enqueue, the queued item 1 is overwritten with text that is not an item line, and
 * the leased item 2 (its reservation of 100 ms held) with a line whose state is none of the
 * four, its lease then past its deadline. The claim and the reaper set both aside; each moves
 * from "open" to "dead" once (a second queue entry of item 1 counts nothing), item 2's
 * reservation is voided, and the campaign's open items reach 0 when item 0 completes, the
 * ledger exact. */
static void test_bad_real_item_leaves_open(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-real", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 3, 0); /* item i: candidate i at tier i, tier 2 first */
  char cand[65], id1[80], id2[80];
  kbq_cand_id(1, cand);
  snprintf(id1, sizeof id1, "%s:1", cand);
  kbq_cand_id(2, cand);
  snprintf(id2, sizeof id2, "%s:2", cand);
  cmd(r, "HSET kb:{e-real}:items %s %s", id1, "not an item {");
  struct kb_claim c[2]; /* item 2, then item 0 (item 1 set aside on the way) */
  for (int i = 0; i < 2; i++) {
    int rc = kb_queue_claim(&q, "r1", 0, -1, &c[i], NULL, &err);
    if (rc != KB_OK)
      fail_msg("claim %d: %s (%s)", i, kb_err_name(rc), err.msg);
  }
  assert_string_equal(c[0].item, id2);
  cmd(r, "ZADD kb:{e-real}:q:0 -100 %s%s", id1, ""); /* the same bad item queued twice */
  struct kb_claim none;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &none, NULL, &err), KB_EEMPTY);
  assert_dead(r, "e-real", id1, "not an item of layout 2");
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.open, 2);
  assert_int_equal(st.dead, 1);
  assert_int_equal(st.gpu_held, 100);
  cmd(r, "HSET kb:{e-real}:items %s %s", id2, "lost|1|1|100|2|t|x|r1|||");
  cmd(r, "ZADD kb:{e-real}:lease 0 %s%s", id2, "");
  assert_int_equal(kb_queue_reap(&q, 100, "test", NULL, NULL, &err), KB_OK);
  assert_dead(r, "e-real", id2, "\"lost\" is not an item state");
  assert_int_equal(kb_queue_complete(&q, &c[1], 0, "{}", "r1", NULL, &err), KB_OK);
  assert_int_equal(kb_queue_complete(&q, &c[0], 5, "{}", "r1", NULL, &err), KB_ELEASE);
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.open, 0);
  assert_int_equal(st.done, 1);
  assert_int_equal(st.dead, 2);
  assert_int_equal(st.leased, 0);
  assert_int_equal(st.gpu_held, 0);
  assert_int_equal(redis_int(r, "HINCRBY %s t:held 0", "kb:{e-real}:taskbudget"), 0);
  kbq_assert_ledger_invariant(&q);
  kb_redis_free(r);
}

/* Items of layout 2 in the forms a claim takes (issue 17, item 3): a task id with a quote and a
 * priority with a fraction are read by the claim's one pattern (kb_item_queued) as any other;
 * an item whose id has no ":" at 65 (not "<64 hex>:<tier>") takes the full check and is set
 * aside with the reason. A batch claims both good items, completes them in one call, and the
 * task's budget, the done item and the ledger come out as for any item. */
static void test_item_forms(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-form", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 2, 0); /* item i: candidate i at tier i */
  char cand[65], id1[80], bad[80];
  kbq_cand_id(1, cand);
  snprintf(id1, sizeof id1, "%s:1", cand);
  cmd(r, "HSET kb:{e-form}:items %s %s", id1, "queued|0|0|10|1.5|t\"x|||||");
  snprintf(bad, sizeof bad, "%.63s:1", cand);
  cmd(r, "HSET kb:{e-form}:items %s %s", bad, "queued|0|0|10|0|t|||||");
  cmd(r, "ZADD kb:{e-form}:q:1 -100 %s%s", bad, "");
  struct kb_claim c[3];
  int n = 0;
  int rc = kb_queue_cycle_batch(&q, NULL, 0, "r1", 0, -1, 3, c, &n, NULL, NULL, &err);
  if (rc != KB_OK)
    fail_msg("claim: %s (%s)", kb_err_name(rc), err.msg);
  assert_int_equal(n, 2);
  assert_string_equal(c[0].item, id1);
  assert_string_equal(c[0].task, "t\"x");
  assert_int_equal(c[0].cost_ms, 10);
  assert_int_equal(c[1].tier, 0);
  assert_dead(r, "e-form", bad, "the id is not \"<candidate, 64 hex digits>:<tier>\"");
  struct kb_queue_done d[2] = {{&c[0], 7, "{\"a\":1}"}, {&c[1], 0, "{\"b\":2}"}};
  rc = kb_queue_cycle_batch(&q, d, 2, "r1", 0, -1, 0, NULL, NULL, NULL, NULL, &err);
  if (rc != KB_OK)
    fail_msg("complete: %s (%s)", kb_err_name(rc), err.msg);
  assert_int_equal(redis_int(r, "HINCRBY %s t\"x:spent 0", "kb:{e-form}:taskbudget"), 7);
  assert_int_equal(redis_int(r, "HINCRBY %s t\"x:held 0", "kb:{e-form}:taskbudget"), 0);
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET kb:{e-form}:items %s", id1), KB_OK);
  assert_int_equal(rep->type, REDIS_REPLY_STRING);
  struct kb_item it;
  if (kb_item_parse(id1, rep->str, &it, &err) || strcmp(it.state, "done") ||
      strcmp(it.task, "t\"x") || it.priority != 1.5 || strcmp(it.runner, "r1") ||
      strcmp(it.charge, c[0].charge_id))
    fail_msg("done item %s (%s)", rep->str, err.msg);
  freeReplyObject(rep);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.done, 2);
  assert_int_equal(st.open, 0);
  assert_int_equal(st.gpu_held, 0);
  kbq_assert_ledger_invariant(&q);
  kb_redis_free(r);
}

/* A completion reads its leased item as the claim wrote it with one pattern (kb_item_leased in
 * common/lua/lib/prelude.lua); a leased line in any other form (here its "next" field set)
 * takes the full check (kb_item_check) and completes as before; one whose token no longer
 * matches, or that does not decode, is a lost lease (KB_LEASE), and that batch changes
 * nothing. */
static void test_completion_item_forms(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-done", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 3, 0); /* tiers 0, 1, 2 */
  struct kb_claim c[3];
  int n = 0;
  assert_int_equal(kb_queue_cycle_batch(&q, NULL, 0, "r1", 0, -1, 3, c, &n, NULL, NULL, &err),
                   KB_OK);
  assert_int_equal(n, 3);
  /* c[0]: its "next" field set: not the form the claim writes */
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET kb:{e-done}:items %s", c[0].item),
                   KB_OK);
  char other[512];
  snprintf(other, sizeof other, "%sx", rep->str);
  freeReplyObject(rep);
  cmd(r, "HSET kb:{e-done}:items %s %s", c[0].item, other);
  /* c[1]: its token changed in the item (another lease), c[2]: cut short (does not decode) */
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET kb:{e-done}:items %s", c[1].item),
                   KB_OK);
  snprintf(other, sizeof other, "%s", rep->str);
  freeReplyObject(rep);
  char *tok = strstr(other, c[1].token);
  assert_non_null(tok);
  tok[0] = tok[0] == 'a' ? 'b' : 'a';
  cmd(r, "HSET kb:{e-done}:items %s %s", c[1].item, other);
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET kb:{e-done}:items %s", c[2].item),
                   KB_OK);
  char cut[512];
  snprintf(cut, sizeof cut, "%.*s", (int)strlen(rep->str) - 2, rep->str);
  freeReplyObject(rep);
  struct kb_queue_status before, after;
  assert_int_equal(kb_queue_status(&q, &before, &err), KB_OK);
  long long log0 = redis_int(r, "XLEN %s", "kb:{e-done}:ledger:log");
  struct kb_queue_done d[3] = {{&c[0], 5, "{}"}, {&c[1], 5, "{}"}, {&c[2], 5, "{}"}};
  assert_int_equal(kb_queue_cycle_batch(&q, d, 2, "r1", 0, -1, 0, NULL, NULL, NULL, NULL, &err),
                   KB_ELEASE);
  if (!strstr(err.msg, c[1].item))
    fail_msg("the lost lease named is not %s's: %s", c[1].item, err.msg);
  kb_error_clear(&err);
  cmd(r, "HSET kb:{e-done}:items %s %s", c[2].item, cut);
  d[1] = d[2];
  assert_int_equal(kb_queue_cycle_batch(&q, d, 2, "r1", 0, -1, 0, NULL, NULL, NULL, NULL, &err),
                   KB_ELEASE);
  kb_error_clear(&err);
  assert_int_equal(kb_queue_status(&q, &after, &err), KB_OK);
  assert_int_equal(after.done, before.done);
  assert_int_equal(after.gpu_held, before.gpu_held);
  assert_int_equal(redis_int(r, "XLEN %s", "kb:{e-done}:ledger:log"), log0);
  /* alone, the item in the other form completes: done, charged, in the audit stream */
  assert_int_equal(kb_queue_cycle_batch(&q, d, 1, "r1", 0, -1, 0, NULL, NULL, NULL, NULL, &err),
                   KB_OK);
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET kb:{e-done}:items %s", c[0].item),
                   KB_OK);
  struct kb_item it;
  if (kb_item_parse(c[0].item, rep->str, &it, &err) || strcmp(it.state, "done") ||
      strcmp(it.runner, "r1") || strcmp(it.charge, c[0].charge_id))
    fail_msg("done item %s (%s)", rep->str, err.msg);
  freeReplyObject(rep);
  assert_int_equal(kb_queue_status(&q, &after, &err), KB_OK);
  assert_int_equal(after.done, before.done + 1);
  kbq_assert_ledger_invariant(&q);
  kb_redis_free(r);
}

/* kb_item_leased's own reading, and the done line built from the leased one: the done item
 * keeps the leased line's attempt, claims, cost, priority, task, token and runner byte for byte
 * and adds its charge and results entry; a line whose lease fields are intact but whose state
 * is no longer "leased" is a lost lease. */
static void test_completion_reads_lease_tail(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-tail", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 3, 0);
  struct kb_claim c[2];
  int n = 0;
  assert_int_equal(kb_queue_cycle_batch(&q, NULL, 0, "r1", 0, -1, 2, c, &n, NULL, NULL, &err),
                   KB_OK);
  assert_int_equal(n, 2);
  redisReply *rep = NULL;
  char leased[512], moved[512];
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET kb:{e-tail}:items %s", c[0].item),
                   KB_OK);
  snprintf(leased, sizeof leased, "%s", rep->str);
  freeReplyObject(rep);
  size_t len = strlen(leased);
  assert_int_equal(strncmp(leased, "leased|", 7), 0);
  assert_string_equal(leased + len - 3, "|||");
  /* c[1]: the lease's token and runner still there, the state not "leased" */
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET kb:{e-tail}:items %s", c[1].item),
                   KB_OK);
  snprintf(moved, sizeof moved, "queued%s", rep->str + 6);
  freeReplyObject(rep);
  cmd(r, "HSET kb:{e-tail}:items %s %s", c[1].item, moved);
  struct kb_queue_done d[2] = {{&c[0], 5, "{}"}, {&c[1], 5, "{}"}};
  assert_int_equal(kb_queue_cycle_batch(&q, &d[1], 1, "r1", 0, -1, 0, NULL, NULL, NULL, NULL,
                                        &err),
                   KB_ELEASE);
  kb_error_clear(&err);
  assert_int_equal(kb_queue_cycle_batch(&q, d, 1, "r1", 0, -1, 0, NULL, NULL, NULL, NULL, &err),
                   KB_OK);
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HGET kb:{e-tail}:items %s", c[0].item),
                   KB_OK);
  /* "leased" + the fields through the runner's "|" == "done" + the same */
  if (strncmp(rep->str, "done|", 5) != 0 || strncmp(rep->str + 4, leased + 6, len - 8) != 0)
    fail_msg("done item %s does not keep the leased item's fields %s", rep->str, leased);
  struct kb_item it;
  if (kb_item_parse(c[0].item, rep->str, &it, &err) || strcmp(it.state, "done") ||
      strcmp(it.charge, c[0].charge_id) || it.result[0] == '\0')
    fail_msg("done item %s does not decode as done (%s)", rep->str, err.msg);
  freeReplyObject(rep);
  kbq_assert_ledger_invariant(&q);
  kb_redis_free(r);
}

/* A campaign whose items are in layout 1 (meta "layout" absent: registered before 2026-12-07)
 * is refused by the scripts that write items, with an error naming the layout, and nothing is
 * changed: a claim, a reap, an enqueue. An item line's separator in a task id is refused by
 * enqueue. */
static void test_layout_1_refused(void **state) {
  (void)state;
  struct kb_redis *r = kbq_connect(kbt_group_redis.addr, 5000);
  struct kb_queue q;
  struct kb_error err = {0};
  kbq_make_campaign(r, "e-lay", 1000, 60000, 3, &q);
  kbq_enqueue_items(&q, 2, 0);
  char cand[65];
  kbq_cand_id(9, cand);
  assert_int_equal(kb_queue_enqueue(&q, cand, "a|b", 1, 10, 0, NULL, &err), KB_EINVAL);
  kb_error_clear(&err);
  cmd(r, "HDEL kb:{e-lay}:meta %s%s", "layout", "");
  struct kb_claim c;
  assert_int_equal(kb_queue_claim(&q, "r1", 0, -1, &c, NULL, &err), KB_ESTATE);
  if (!strstr(err.msg, "layout 1"))
    fail_msg("claim refused without naming the layout: %s", err.msg);
  kb_error_clear(&err);
  assert_int_equal(kb_queue_reap(&q, 100, "test", NULL, NULL, &err), KB_OK); /* nothing due */
  cmd(r, "ZADD kb:{e-lay}:lease 0 %s%s", "x:1", "");
  assert_int_equal(kb_queue_reap(&q, 100, "test", NULL, NULL, &err), KB_ESTATE);
  kb_error_clear(&err);
  assert_int_equal(redis_int(r, "ZCARD %s", "kb:{e-lay}:lease"), 1);
  assert_int_equal(kb_queue_enqueue(&q, cand, "t", 1, 10, 0, NULL, &err), KB_ESTATE);
  kb_error_clear(&err);
  assert_int_equal(redis_int(r, "HLEN %s", "kb:{e-lay}:dead"), 0);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK);
  assert_int_equal(st.open, 2);
  kb_redis_free(r);
}

/* kb_item_parse, the C readers' one decoder of an item line: each field, the runner unescaped,
 * and the reasons for a line of layout 1, a short line and a bad id. */
static void test_item_parse(void **state) {
  (void)state;
  char cand[65], id[80];
  kbq_cand_id(3, cand);
  snprintf(id, sizeof id, "%s:2", cand);
  struct kb_item it;
  struct kb_error err = {0};
  assert_int_equal(kb_item_parse(id, "done|2|3|100|-1.5|t1|tok|a\\\"b\\u007cc|c#3|1-2|x,y", &it,
                                 &err),
                   KB_OK);
  assert_string_equal(it.cand, cand);
  assert_int_equal(it.tier, 2);
  assert_string_equal(it.state, "done");
  assert_int_equal(it.attempt, 2);
  assert_int_equal(it.claims, 3);
  assert_int_equal(it.cost_ms, 100);
  assert_true(it.priority == -1.5);
  assert_string_equal(it.task, "t1");
  assert_string_equal(it.token, "tok");
  assert_string_equal(it.runner, "a\"b|c");
  assert_string_equal(it.charge, "c#3");
  assert_string_equal(it.result, "1-2");
  assert_int_equal(kb_item_parse(id, "{\"cand\":\"x\"}", &it, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "layout 1"));
  kb_error_clear(&err);
  assert_int_equal(kb_item_parse(id, "queued|0|0|10|0|t||||", &it, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "not an item of layout 2"));
  kb_error_clear(&err);
  assert_int_equal(kb_item_parse(id, "queued|0|0|10|0|t||||||", &it, &err), KB_EINVAL);
  kb_error_clear(&err);
  assert_int_equal(kb_item_parse("zz:1", "queued|0|0|10|0|t|||||", &it, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "64 hex digits"));
  kb_error_clear(&err);
  assert_int_equal(kb_item_parse(id, "gone|0|0|10|0|t|||||", &it, &err), KB_EINVAL);
  kb_error_clear(&err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_complete_unknown_charge),
      cmocka_unit_test(test_set_state_missing_campaign),
      cmocka_unit_test(test_enqueue_outside_ladder),
      cmocka_unit_test(test_heartbeat_reports_state),
      cmocka_unit_test(test_charge_bad_amount),
      cmocka_unit_test(test_ledger_log_balances_after_each_entry),
      cmocka_unit_test(test_bad_state_dead_lettered),
      cmocka_unit_test(test_bad_real_item_leaves_open),
      cmocka_unit_test(test_item_forms),
      cmocka_unit_test(test_completion_item_forms),
      cmocka_unit_test(test_layout_1_refused),
      cmocka_unit_test(test_item_parse),
      cmocka_unit_test(test_completion_reads_lease_tail),
  };
  return cmocka_run_group_tests(tests, kbt_redis_group_setup, kbt_redis_group_teardown);
}
