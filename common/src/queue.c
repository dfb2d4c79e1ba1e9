/* C side of the queue and ledger scripts (see kb/queue.h and common/lua/). */
#include "kb/queue.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb/clock.h"
#include "kb/error.h"
#include "kb/alloc.h"
#include "kb/hash.h"
#include "kb/ladder.h"

#define KEY_MAX 160
#define KB_MAX_QUEUE_TIERS 8
#define MAX_KEYS (KB_MAX_QUEUE_TIERS + 12)

int kb_queue_key(const struct kb_queue *q, char *out, size_t size, const char *suffix) {
  return kb_key(out, size, q->cid, "%s", suffix);
}

/* A small set of key buffers for one script call. */
struct keyset {
  char buf[MAX_KEYS][KEY_MAX];
  const char *ptr[MAX_KEYS];
  int n;
};

static int add_key(struct keyset *ks, const struct kb_queue *q, const char *suffix,
                   struct kb_error *err) {
  if (ks->n >= MAX_KEYS || kb_queue_key(q, ks->buf[ks->n], KEY_MAX, suffix))
    return kb_error_set(err, KB_EINVAL, "campaign key \"%s\" too long", suffix);
  ks->ptr[ks->n] = ks->buf[ks->n];
  ks->n++;
  return KB_OK;
}

static int add_keys(struct keyset *ks, const struct kb_queue *q, struct kb_error *err,
                    const char *const *suffixes) {
  for (int i = 0; suffixes[i]; i++) {
    int rc = add_key(ks, q, suffixes[i], err);
    if (rc)
      return rc;
  }
  return KB_OK;
}

static int add_queue_key(struct keyset *ks, const struct kb_queue *q, int tier,
                         struct kb_error *err) {
  char suffix[32];
  snprintf(suffix, sizeof suffix, "q:%d", tier);
  return add_key(ks, q, suffix, err);
}

static int copy_str(char *dst, size_t size, const redisReply *r) {
  if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)
    return KB_EREDIS;
  if (r->len >= size)
    return KB_EREDIS;
  memcpy(dst, r->str, r->len);
  dst[r->len] = '\0';
  return KB_OK;
}

static int parse_i64(const redisReply *r, int64_t *out) {
  if (r->type == REDIS_REPLY_INTEGER) {
    *out = r->integer;
    return KB_OK;
  }
  if (r->type != REDIS_REPLY_STRING)
    return KB_EREDIS;
  char *end = NULL;
  long long v = strtoll(r->str, &end, 10);
  if (end == r->str || *end != '\0')
    return KB_EREDIS;
  *out = v;
  return KB_OK;
}

int kb_queue_open(struct kb_queue *q, struct kb_redis *redis, const char *cid,
                  struct kb_error *err) {
  memset(q, 0, sizeof *q);
  q->redis = redis;
  if (snprintf(q->cid, sizeof q->cid, "%s", cid) >= (int)sizeof q->cid)
    return kb_error_set(err, KB_EINVAL, "campaign id \"%s\" too long", cid);
  char key[KEY_MAX];
  kb_queue_key(q, key, sizeof key, "meta");
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(redis, &rep, err, "HMGET %s tiers backend", key);
  if (rc)
    return rc;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
      rep->element[0]->type != REDIS_REPLY_STRING) {
    freeReplyObject(rep);
    return kb_error_set(err, KB_ENOTFOUND, "no campaign \"%s\" in redis at %s", cid,
                        kb_redis_addr(redis));
  }
  rc = kb_ladder_from_json(rep->element[0]->str, key, q->tiers, &q->n_tiers, err);
  if (rc == KB_OK && q->n_tiers > KB_MAX_QUEUE_TIERS)
    rc = kb_error_set(err, KB_EREDIS, "%s: ladder too long", key);
  q->backend = rep->element[1]->type == REDIS_REPLY_STRING
                   ? kb_backend_from_name(rep->element[1]->str)
                   : -1;
  if (rc == KB_OK && q->backend < 0)
    rc = kb_error_set(err, KB_EREDIS, "%s: bad backend", key);
  freeReplyObject(rep);
  return rc;
}

int kb_queue_register(struct kb_redis *redis, const struct kb_campaign_reg *reg, const char *who,
                      int *resumed, struct kb_error *err) {
  char sha[65], n_tiers[16], max_attempts[16], lease_ms[32], gpu[32], llm[32];
  int rc = kb_sha256_hex(reg->spec_json, strlen(reg->spec_json), sha, err);
  char *tiers = NULL;
  if (rc == KB_OK)
    rc = kb_ladder_to_json(reg->tiers, reg->n_tiers, &tiers, err);
  struct kb_queue q = {.redis = redis};
  if (rc == KB_OK && snprintf(q.cid, sizeof q.cid, "%s", reg->cid) >= (int)sizeof q.cid)
    rc = kb_error_set(err, KB_EINVAL, "campaign id \"%s\" too long", reg->cid);
  struct keyset ks = {.n = 0};
  if (rc == KB_OK)
    rc = add_keys(&ks, &q, err, (const char *const[]){"meta", "ledger", "ledger:log", "events",
                                                       NULL});
  if (rc) {
    kb_free(tiers);
    return rc;
  }
  snprintf(n_tiers, sizeof n_tiers, "%d", reg->n_tiers);
  snprintf(max_attempts, sizeof max_attempts, "%d", reg->max_attempts);
  snprintf(lease_ms, sizeof lease_ms, "%lld", (long long)reg->lease_ms);
  snprintf(gpu, sizeof gpu, "%lld", (long long)reg->gpu_ms);
  snprintf(llm, sizeof llm, "%lld", (long long)reg->llm_tokens);
  const char *args[] = {reg->cid, reg->spec_json, sha, n_tiers, tiers, max_attempts, lease_ms,
                        kb_backend_name(reg->backend), gpu, llm, who};
  redisReply *rep = NULL;
  rc = kb_redis_script(redis, "register", ks.n, ks.ptr, 11, args, NULL, &rep, err);
  if (rc == KB_OK) {
    if (resumed)
      *resumed = rep->type == REDIS_REPLY_STRING && strcmp(rep->str, "resume") == 0;
    freeReplyObject(rep);
  }
  kb_free(tiers);
  return rc;
}

int kb_queue_open_wait(struct kb_queue *q, struct kb_redis *redis, const char *cid, int wait_s,
                       volatile sig_atomic_t *stop, struct kb_error *err) {
  double give_up = kb_now_mono() + wait_s;
  for (;;) {
    struct kb_error e = {0};
    int rc = kb_queue_open(q, redis, cid, &e);
    if (rc == KB_OK)
      return KB_OK;
    if (rc != KB_ENOTFOUND || kb_now_mono() >= give_up || (stop && *stop))
      return kb_error_set(err, rc, "%s", e.msg);
    kb_sleep_ms(500);
  }
}

int kb_queue_enqueue(struct kb_queue *q, const char *candidate, const char *task, int tier,
                     int64_t cost_ms, double priority, int *added, struct kb_error *err) {
  if (tier < 0 || tier >= q->n_tiers)
    return kb_error_set(err, KB_EINVAL, "tier %d outside the ladder (0..%d)", tier,
                        q->n_tiers - 1);
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err, (const char *const[]){"meta", "items", NULL});
  if (rc == KB_OK)
    rc = add_queue_key(&ks, q, tier, err);
  if (rc)
    return rc;
  char item[KB_ITEM_ID_MAX], tier_s[16], cost_s[32], prio_s[40];
  snprintf(item, sizeof item, "%s:%d", candidate, tier);
  snprintf(tier_s, sizeof tier_s, "%d", tier);
  snprintf(cost_s, sizeof cost_s, "%lld", (long long)cost_ms);
  snprintf(prio_s, sizeof prio_s, "%.17g", priority);
  const char *args[] = {item, candidate, task, tier_s, cost_s, prio_s};
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "enqueue", ks.n, ks.ptr, 6, args, NULL, &rep, err);
  if (rc)
    return rc;
  if (added)
    *added = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
  freeReplyObject(rep);
  return KB_OK;
}

/* 32 hex chars from /dev/urandom: the lease token. */
static int random_token(char out[33], struct kb_error *err) {
  unsigned char raw[16];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, raw, sizeof raw) != (ssize_t)sizeof raw) {
    if (fd >= 0)
      close(fd);
    return kb_error_set(err, KB_EIO, "cannot read /dev/urandom");
  }
  close(fd);
  for (int i = 0; i < 16; i++)
    snprintf(out + 2 * i, 3, "%02x", raw[i]);
  return KB_OK;
}

int kb_queue_claim(struct kb_queue *q, const char *runner, int min_tier, int max_tier,
                   struct kb_claim *c, char state[16], struct kb_error *err) {
  memset(c, 0, sizeof *c);
  if (min_tier < 0)
    min_tier = 0;
  if (max_tier >= q->n_tiers || max_tier < 0)
    max_tier = q->n_tiers - 1;
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err,
                    (const char *const[]){"meta", "ledger", "ledger:log", "lease", "items",
                                          "charges", "taskbudget", NULL});
  for (int t = max_tier; rc == KB_OK && t >= min_tier; t--)
    rc = add_queue_key(&ks, q, t, err);
  if (rc == KB_OK)
    rc = random_token(c->token, err);
  if (rc)
    return rc;
  const char *args[] = {runner, c->token};
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "claim", ks.n, ks.ptr, 2, args, NULL, &rep, err);
  if (rc)
    return rc;
  rc = KB_EREDIS;
  if (rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
      rep->element[0]->type == REDIS_REPLY_STRING) {
    const char *kind = rep->element[0]->str;
    if (strcmp(kind, "empty") == 0) {
      rc = KB_EEMPTY;
    } else if (strcmp(kind, "budget") == 0) {
      rc = kb_error_set(err, KB_EBUDGET, "budget of campaign \"%s\" cannot cover any ready item",
                        q->cid);
    } else if (strcmp(kind, "state") == 0 && rep->elements == 2) {
      if (state)
        copy_str(state, 16, rep->element[1]);
      rc = kb_error_set(err, KB_ESTATE, "campaign \"%s\" is %s", q->cid, rep->element[1]->str);
    } else if (strcmp(kind, "ok") == 0 && rep->elements == 9) {
      int64_t tier = 0, attempt = 0;
      redisReply **e = rep->element;
      rc = copy_str(c->item, sizeof c->item, e[1]);
      if (!rc) rc = copy_str(c->candidate, sizeof c->candidate, e[2]);
      if (!rc) rc = copy_str(c->task, sizeof c->task, e[3]);
      if (!rc) rc = parse_i64(e[4], &tier);
      if (!rc) rc = parse_i64(e[5], &attempt);
      if (!rc) rc = copy_str(c->charge_id, sizeof c->charge_id, e[6]);
      if (!rc) rc = parse_i64(e[7], &c->cost_ms);
      if (!rc) rc = parse_i64(e[8], &c->deadline_ms);
      c->tier = (int)tier;
      c->attempt = (int)attempt;
    }
  }
  if (rc == KB_EREDIS)
    kb_error_set(err, KB_EREDIS, "claim: unexpected reply from redis");
  freeReplyObject(rep);
  return rc;
}

int kb_queue_heartbeat(struct kb_queue *q, const char *runner, const struct kb_claim *claims,
                       int n, int *extended, char state[16], struct kb_error *err) {
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err, (const char *const[]){"meta", "lease", "items", "runners", NULL});
  if (rc)
    return rc;
  const char *stack_args[17];
  if (n > 8)
    return kb_error_set(err, KB_EINVAL, "heartbeat for more than 8 leases at once");
  stack_args[0] = runner;
  for (int i = 0; i < n; i++) {
    stack_args[1 + 2 * i] = claims[i].item;
    stack_args[2 + 2 * i] = claims[i].token;
  }
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "heartbeat", ks.n, ks.ptr, 1 + 2 * n, stack_args, NULL, &rep,
                       err);
  if (rc)
    return rc;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
    freeReplyObject(rep);
    return kb_error_set(err, KB_EREDIS, "heartbeat: unexpected reply from redis");
  }
  if (extended)
    *extended = (int)rep->element[0]->integer;
  if (state)
    copy_str(state, 16, rep->element[1]);
  freeReplyObject(rep);
  return KB_OK;
}

int kb_queue_complete(struct kb_queue *q, const struct kb_claim *c, int64_t cost_ms,
                      const char *result_json, const char *runner, int *duplicate,
                      struct kb_error *err) {
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err,
                    (const char *const[]){"meta", "ledger", "ledger:log", "lease", "items",
                                          "charges", "results", "taskbudget", NULL});
  if (rc)
    return rc;
  char cost_s[32];
  snprintf(cost_s, sizeof cost_s, "%lld", (long long)cost_ms);
  const char *args[] = {c->item, c->token, c->charge_id, cost_s, result_json, runner};
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "complete", ks.n, ks.ptr, 6, args, NULL, &rep, err);
  if (rc)
    return rc;
  int dup = rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
            rep->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(rep->element[0]->str, "dup") == 0;
  if (duplicate)
    *duplicate = dup;
  freeReplyObject(rep);
  return KB_OK;
}

int kb_queue_release(struct kb_queue *q, const struct kb_claim *c, const char *runner,
                     int *released, struct kb_error *err) {
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err,
                    (const char *const[]){"meta", "ledger", "ledger:log", "lease", "items",
                                          "charges", NULL});
  if (rc == KB_OK)
    rc = add_queue_key(&ks, q, c->tier, err);
  if (rc == KB_OK)
    rc = add_key(&ks, q, "taskbudget", err);
  if (rc)
    return rc;
  const char *args[] = {c->item, c->token, c->charge_id, runner};
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "release", ks.n, ks.ptr, 4, args, NULL, &rep, err);
  if (rc)
    return rc;
  if (released)
    *released = rep->type == REDIS_REPLY_STRING && strcmp(rep->str, "released") == 0;
  freeReplyObject(rep);
  return KB_OK;
}

int kb_queue_reap(struct kb_queue *q, int max, const char *who, int *requeued, int *dead,
                  struct kb_error *err) {
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err,
                    (const char *const[]){"meta", "ledger", "ledger:log", "lease", "items",
                                          "charges", "dead", "results", "taskbudget", NULL});
  for (int t = 0; rc == KB_OK && t < q->n_tiers; t++)
    rc = add_queue_key(&ks, q, t, err);
  if (rc)
    return rc;
  char max_s[16];
  snprintf(max_s, sizeof max_s, "%d", max);
  const char *args[] = {q->cid, max_s, who};
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "reap", ks.n, ks.ptr, 3, args, NULL, &rep, err);
  if (rc)
    return rc;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
    freeReplyObject(rep);
    return kb_error_set(err, KB_EREDIS, "reap: unexpected reply from redis");
  }
  if (requeued)
    *requeued = (int)rep->element[0]->integer;
  if (dead)
    *dead = (int)rep->element[1]->integer;
  freeReplyObject(rep);
  return KB_OK;
}

int kb_queue_set_state(struct kb_queue *q, const char *from, const char *to, const char *reason,
                       const char *who, struct kb_error *err) {
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err, (const char *const[]){"meta", "events", NULL});
  if (rc)
    return rc;
  const char *args[] = {from, to, reason, who};
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "set_state", ks.n, ks.ptr, 4, args, NULL, &rep, err);
  if (rc)
    return rc;
  freeReplyObject(rep);
  return KB_OK;
}

int kb_queue_status(struct kb_queue *q, struct kb_queue_status *st, struct kb_error *err) {
  memset(st, 0, sizeof *st);
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err, (const char *const[]){"meta", "ledger", "lease", "items", NULL});
  for (int t = 0; rc == KB_OK && t < q->n_tiers; t++)
    rc = add_queue_key(&ks, q, t, err);
  if (rc)
    return rc;
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "status", ks.n, ks.ptr, 0, NULL, NULL, &rep, err);
  if (rc)
    return rc;
  size_t want = 14 + (size_t)q->n_tiers;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != want) {
    freeReplyObject(rep);
    return kb_error_set(err, KB_EREDIS, "status: unexpected reply from redis");
  }
  redisReply **e = rep->element;
  copy_str(st->state, sizeof st->state, e[0]);
  int64_t *fields[] = {&st->open, &st->done, &st->dead, &st->leased,
                       &st->gpu_total, &st->gpu_available, &st->gpu_held, &st->gpu_spent,
                       &st->llm_total, &st->llm_available, &st->llm_held, &st->llm_spent,
                       &st->cheapest_ready};
  for (size_t i = 0; i < 13; i++)
    parse_i64(e[1 + i], fields[i]);
  st->n_tiers = q->n_tiers;
  for (int t = 0; t < q->n_tiers; t++)
    parse_i64(e[14 + t], &st->ready[t]);
  freeReplyObject(rep);
  return KB_OK;
}

int kb_queue_set_task_cap(struct kb_queue *q, const char *task, int64_t cap_ms,
                          struct kb_error *err) {
  char key[KEY_MAX], field[KB_ID_MAX + 8];
  kb_queue_key(q, key, sizeof key, "taskbudget");
  snprintf(field, sizeof field, "%s:cap", task);
  redisReply *rep = NULL;
  int rc = cap_ms < 0 ? kb_redis_commandf(q->redis, &rep, err, "HDEL %s %s", key, field)
                      : kb_redis_commandf(q->redis, &rep, err, "HSET %s %s %lld", key, field,
                                          (long long)cap_ms);
  if (rep)
    freeReplyObject(rep);
  return rc;
}

int kb_queue_task_budget(struct kb_queue *q, const char *task, int64_t *cap_ms, int64_t *held_ms,
                         int64_t *spent_ms, struct kb_error *err) {
  char key[KEY_MAX], f_cap[KB_ID_MAX + 8], f_held[KB_ID_MAX + 8], f_spent[KB_ID_MAX + 8];
  kb_queue_key(q, key, sizeof key, "taskbudget");
  snprintf(f_cap, sizeof f_cap, "%s:cap", task);
  snprintf(f_held, sizeof f_held, "%s:held", task);
  snprintf(f_spent, sizeof f_spent, "%s:spent", task);
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(q->redis, &rep, err, "HMGET %s %s %s %s", key, f_cap, f_held,
                             f_spent);
  if (rc)
    return rc;
  int64_t *out[3] = {cap_ms, held_ms, spent_ms};
  for (size_t i = 0; i < 3; i++) {
    *out[i] = i == 0 ? -1 : 0;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
        rep->element[i]->type == REDIS_REPLY_STRING)
      parse_i64(rep->element[i], out[i]);
  }
  freeReplyObject(rep);
  return KB_OK;
}
