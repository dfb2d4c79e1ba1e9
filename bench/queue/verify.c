/* Exactly-once and ledger checks of the queue benchmark (see verify.h). */
#include "verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kb/item.h"
#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/redis.h"

enum { ST_QUEUED, ST_LEASED, ST_DONE, ST_DEAD, ST_OTHER };

struct item {
  char *id;      /* "<candidate>:<tier>" (owned) */
  int state;     /* ST_* */
  int results;   /* entries in the results stream */
  int posted;    /* posted charges */
  int in_queue;  /* memberships of tier queues */
  int in_lease;  /* membership of the lease set */
};

struct items {
  struct item *v; /* owned */
  size_t n, cap;
};

static void items_release(struct items *it) {
  for (size_t i = 0; i < it->n; i++)
    kb_free(it->v[i].id);
  kb_free(it->v);
  memset(it, 0, sizeof *it);
}

static int cmp_item(const void *a, const void *b) {
  return strcmp(((const struct item *)a)->id, ((const struct item *)b)->id);
}

static struct item *find(struct items *it, const char *id, size_t len) {
  char key[KB_ITEM_ID_MAX + 1];
  if (len >= sizeof key)
    return NULL;
  memcpy(key, id, len);
  key[len] = '\0';
  struct item probe = {.id = key};
  return bsearch(&probe, it->v, it->n, sizeof *it->v, cmp_item);
}

/* The state of item `id` from its line (`len` bytes at `line`, kb/item.h). */
static int state_of(const char *id, const char *line, size_t len) {
  char *text = kb_strndup(line, len);
  struct kb_item it;
  int ok = text && kb_item_parse(id, text, &it, NULL) == KB_OK;
  kb_free(text);
  const char *s = ok ? it.state : "";
  return strcmp(s, "queued") == 0   ? ST_QUEUED
         : strcmp(s, "leased") == 0 ? ST_LEASED
         : strcmp(s, "done") == 0   ? ST_DONE
         : strcmp(s, "dead") == 0   ? ST_DEAD
                                    : ST_OTHER;
}

/* HSCAN of `key`; calls `fn` for each field and value. */
static int hscan(struct kb_redis *r, const char *key,
                 int (*fn)(void *ctx, const redisReply *field, const redisReply *value),
                 void *ctx, struct kb_error *err) {
  char cursor[32] = "0";
  do {
    const char *argv[] = {"HSCAN", key, cursor, "COUNT", "2000"};
    redisReply *rep = NULL;
    int rc = kb_redis_command(r, 5, argv, NULL, 0, &rep, err);
    if (rc)
      return rc;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_ARRAY ||
        rep->element[0]->len >= sizeof cursor) {
      freeReplyObject(rep);
      return kb_error_set(err, KB_EREDIS, "HSCAN %s: unexpected reply", key);
    }
    memcpy(cursor, rep->element[0]->str, rep->element[0]->len);
    cursor[rep->element[0]->len] = '\0';
    const redisReply *kv = rep->element[1];
    for (size_t i = 0; rc == KB_OK && i + 1 < kv->elements; i += 2)
      rc = fn(ctx, kv->element[i], kv->element[i + 1]);
    freeReplyObject(rep);
    if (rc)
      return rc;
  } while (strcmp(cursor, "0") != 0);
  return KB_OK;
}

static int add_item(void *ctx, const redisReply *field, const redisReply *value) {
  struct items *it = ctx;
  if (it->n == it->cap) {
    size_t cap = it->cap ? it->cap * 2 : 4096;
    struct item *v = kb_reallocarray(it->v, cap, sizeof *v);
    if (v == NULL)
      return KB_ENOMEM;
    it->v = v;
    it->cap = cap;
  }
  struct item *x = &it->v[it->n];
  memset(x, 0, sizeof *x);
  x->id = kb_strndup(field->str, field->len);
  if (x->id == NULL)
    return KB_ENOMEM;
  x->state = value->type == REDIS_REPLY_STRING ? state_of(x->id, value->str, value->len) : ST_OTHER;
  it->n++;
  return KB_OK;
}

struct charge_ctx {
  struct items *it;
  struct kb__bench_verify *v;
};

static int add_charge(void *ctx, const redisReply *field, const redisReply *value) {
  struct charge_ctx *cc = ctx;
  if (field->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING || value->len < 3)
    return KB_OK;
  char *end = NULL;
  long long amount = strtoll(value->str + 2, &end, 10);
  const char *hash = memchr(field->str, '#', field->len);
  struct item *x = hash ? find(cc->it, field->str, (size_t)(hash - field->str)) : NULL;
  if (value->str[0] == 'P') {
    cc->v->charges_posted++;
    cc->v->posted_sum += amount;
    if (x)
      x->posted++;
    else
      cc->v->double_charged++; /* a settled charge of an item that was never enqueued */
  } else if (value->str[0] == 'H') {
    cc->v->held_sum += amount;
  }
  return KB_OK;
}

/* Counts the results stream entries per item, reading it in chunks. */
static int scan_results(struct kb_redis *r, const char *key, struct items *it,
                        struct kb__bench_verify *v, struct kb_error *err) {
  char start[64] = "-";
  for (;;) {
    const char *argv[] = {"XRANGE", key, start, "+", "COUNT", "5000"};
    redisReply *rep = NULL;
    int rc = kb_redis_command(r, 6, argv, NULL, 0, &rep, err);
    if (rc)
      return rc;
    if (rep->type != REDIS_REPLY_ARRAY) {
      freeReplyObject(rep);
      return kb_error_set(err, KB_EREDIS, "XRANGE %s: unexpected reply", key);
    }
    size_t n = rep->elements;
    for (size_t i = 0; i < n; i++) {
      const redisReply *e = rep->element[i];
      if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
          e->element[1]->type != REDIS_REPLY_ARRAY)
        continue;
      v->results++;
      const redisReply *f = e->element[1];
      struct item *x = NULL;
      for (size_t j = 0; j + 1 < f->elements; j += 2)
        if (f->element[j]->type == REDIS_REPLY_STRING && strcmp(f->element[j]->str, "item") == 0)
          x = find(it, f->element[j + 1]->str, f->element[j + 1]->len);
      if (x == NULL) {
        v->double_charged++; /* a result for an item that was never enqueued */
        continue;
      }
      if (x->results == 0)
        v->results_distinct++;
      x->results++;
    }
    if (n > 0) {
      const redisReply *last = rep->element[n - 1];
      if (last->type == REDIS_REPLY_ARRAY && last->elements >= 1 &&
          last->element[0]->type == REDIS_REPLY_STRING)
        snprintf(start, sizeof start, "(%s", last->element[0]->str);
    }
    freeReplyObject(rep);
    if (n < 5000)
      return KB_OK;
  }
}

/* Marks the members of sorted set `key` as in a queue (`lease` 0) or leased (`lease` 1). */
static int scan_zset(struct kb_redis *r, const char *key, int lease, struct items *it,
                     long *members, struct kb_error *err) {
  const char *argv[] = {"ZRANGE", key, "0", "-1"};
  redisReply *rep = NULL;
  int rc = kb_redis_command(r, 4, argv, NULL, 0, &rep, err);
  if (rc)
    return rc;
  for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
    const redisReply *m = rep->element[i];
    struct item *x = find(it, m->str, m->len);
    (*members)++;
    if (x && lease)
      x->in_lease++;
    else if (x)
      x->in_queue++;
  }
  freeReplyObject(rep);
  return KB_OK;
}

/* Classifies one item; see the field comments of struct kb__bench_verify. */
static void judge(const struct item *x, struct kb__bench_verify *v) {
  int lost = 0, twice = x->results > 1 || x->posted > 1;
  switch (x->state) {
  case ST_QUEUED:
    v->queued++;
    lost = x->in_queue != 1;
    twice = twice || x->results > 0 || x->posted > 0;
    break;
  case ST_LEASED:
    v->leased++;
    lost = x->in_lease != 1;
    twice = twice || x->results > 0 || x->posted > 0;
    break;
  case ST_DONE:
    v->done++;
    lost = x->results == 0;
    break;
  case ST_DEAD:
    v->dead++; /* dead-lettered: one infra_error result, nothing charged */
    twice = twice || x->posted > 0;
    break;
  default:
    v->other++;
    lost = 1;
    break;
  }
  v->lost += lost;
  v->double_charged += twice;
}

int kb__bench_verify(struct kb_queue *q, long enqueued, struct kb__bench_verify *v,
                    struct kb_error *err) {
  memset(v, 0, sizeof *v);
  struct items it = {0};
  char key[160];
  int rc = kb_queue_key(q, key, sizeof key, KB_KEY_ITEMS);
  if (rc == KB_OK)
    rc = hscan(q->redis, key, add_item, &it, err);
  if (rc == KB_ENOMEM)
    kb_error_set(err, rc, "verify: out of memory");
  if (rc)
    goto out;
  qsort(it.v, it.n, sizeof *it.v, cmp_item);
  v->items = (long)it.n;
  kb_queue_key(q, key, sizeof key, KB_KEY_RESULTS);
  rc = scan_results(q->redis, key, &it, v, err);
  if (rc)
    goto out;
  struct charge_ctx cc = {&it, v};
  kb_queue_key(q, key, sizeof key, KB_KEY_CHARGES);
  rc = hscan(q->redis, key, add_charge, &cc, err);
  if (rc)
    goto out;
  for (int t = 0; t < q->n_tiers; t++) {
    char suffix[16];
    snprintf(suffix, sizeof suffix, KB_KEY_READY_FMT, t);
    kb_queue_key(q, key, sizeof key, suffix);
    rc = scan_zset(q->redis, key, 0, &it, &v->in_queues, err);
    if (rc)
      goto out;
  }
  kb_queue_key(q, key, sizeof key, KB_KEY_LEASE);
  rc = scan_zset(q->redis, key, 1, &it, &v->in_leases, err);
  if (rc)
    goto out;
  for (size_t i = 0; i < it.n; i++)
    judge(&it.v[i], v);
  if (enqueued > v->items)
    v->lost += enqueued - v->items; /* enqueued, yet not in the items hash */
  struct kb_queue_status st;
  rc = kb_queue_status(q, &st, err);
  if (rc)
    goto out;
  v->total = st.gpu_total;
  v->available = st.gpu_available;
  v->held = st.gpu_held;
  v->spent = st.gpu_spent;
  v->ledger_exact = v->available + v->held + v->spent == v->total && v->spent == v->posted_sum &&
                    v->held == v->held_sum && v->held == 0 && v->available >= 0;
out:
  items_release(&it);
  return rc;
}
