/* C side of the queue and ledger scripts (see kb/queue.h and common/lua/). */
#include "kb/queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/hash.h"
#include "kb/task.h"
#include "kb/keys.h"
#include "kb/ladder.h"
#include "kb/redis.h"

#define KEY_MAX 160
#define KB_MAX_QUEUE_TIERS 8
#define MAX_KEYS (KB_MAX_QUEUE_TIERS + 12)
#define RUNNER_JSON_MAX 512 /* a runner name, JSON-escaped */
#define CLAIM_RECORD 7      /* elements of a claimed item's record in complete_claim's reply */

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
  snprintf(suffix, sizeof suffix, KB_KEY_READY_FMT, tier);
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
  kb_queue_key(q, key, sizeof key, KB_KEY_META);
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
    rc = add_keys(
        &ks, &q, err,
        (const char *const[]){KB_KEY_META, KB_KEY_LEDGER, KB_KEY_LEDGER_LOG, KB_KEY_EVENTS, NULL});
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
  int rc = add_keys(&ks, q, err, (const char *const[]){KB_KEY_META, KB_KEY_ITEMS, NULL});
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

/* 32 hex chars from the kernel's random source: the lease token. */
static int random_token(char out[33], struct kb_error *err) {
  unsigned char raw[16];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
    return kb_error_set(err, KB_EIO, "cannot read random bytes for a lease token");
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 15];
  }
  out[32] = '\0';
  return KB_OK;
}

/* `runner` as the inside of a JSON string, with "|" as \u007c too: complete_claim puts it into
 * items (whose fields "|" separates, layout 2, kb/keys.h) and audit entries as is. `*out` is
 * `runner` itself when nothing needs escaping, else `buf`.
 * Errors: KB_EINVAL when the escaped name does not fit `size`. */
static int runner_json(const char *runner, char *buf, size_t size, const char **out,
                       struct kb_error *err) {
  size_t n = 0;
  int plain = 1;
  for (const unsigned char *p = (const unsigned char *)runner; *p; p++) {
    size_t need = *p == '"' || *p == '\\' ? 2 : *p < 0x20 || *p == '|' ? 6 : 1;
    plain = plain && need == 1;
    if (n + need >= size)
      return kb_error_set(err, KB_EINVAL, "runner name too long");
    if (need == 1) {
      buf[n++] = (char)*p;
    } else if (need == 2) {
      buf[n++] = '\\';
      buf[n++] = (char)*p;
    } else {
      snprintf(buf + n, 7, "\\u%04x", *p);
      n += 6;
    }
  }
  buf[n] = '\0';
  *out = plain ? runner : buf;
  return KB_OK;
}

/* The candidate and tier of item id `item` ("<64 hex digits>:<tier>", as enqueue writes it)
 * into `c`. Returns KB_OK or KB_EREDIS for any other form. */
static int claim_item_id(struct kb_claim *c, const char *item) {
  if (strlen(item) <= KB_CAND_ID_LEN + 1 || item[KB_CAND_ID_LEN] != ':')
    return KB_EREDIS;
  const char *digits = item + KB_CAND_ID_LEN + 1;
  char *end = NULL;
  long tier = strtol(digits, &end, 10);
  if (*digits < '0' || *digits > '9' || *end != '\0' || tier < 0 || tier >= KB_MAX_TIERS)
    return KB_EREDIS;
  memcpy(c->candidate, item, KB_CAND_ID_LEN);
  c->candidate[KB_CAND_ID_LEN] = '\0';
  c->tier = (int)tier;
  return KB_OK;
}

/* Decodes a claim reply, the n elements from `e` ("ok" and 6 fields: item, task, attempt,
 * charge, cost, deadline; or "empty", "budget" or "state"), into `c` (whose token the caller
 * set); zeroes `c` unless it is "ok". The candidate and tier are the item id's. */
static int parse_claim(const struct kb_queue *q, redisReply **e, size_t n, struct kb_claim *c,
                       char state[16], struct kb_error *err) {
  int rc = KB_EREDIS;
  if (n >= 1 && e[0]->type == REDIS_REPLY_STRING) {
    const char *kind = e[0]->str;
    if (strcmp(kind, "empty") == 0) {
      rc = KB_EEMPTY;
    } else if (strcmp(kind, "budget") == 0) {
      rc = kb_error_set(err, KB_EBUDGET, "budget of campaign \"%s\" cannot cover any ready item",
                        q->cid);
    } else if (strcmp(kind, "state") == 0 && n == 2 && e[1]->type == REDIS_REPLY_STRING) {
      if (state)
        copy_str(state, 16, e[1]);
      rc = kb_error_set(err, KB_ESTATE, "campaign \"%s\" is %s", q->cid, e[1]->str);
    } else if (strcmp(kind, "ok") == 0 && n == CLAIM_RECORD) {
      int64_t attempt = 0;
      rc = copy_str(c->item, sizeof c->item, e[1]);
      if (!rc) rc = claim_item_id(c, c->item);
      if (!rc) rc = copy_str(c->task, sizeof c->task, e[2]);
      if (!rc) rc = parse_i64(e[3], &attempt);
      if (!rc) rc = copy_str(c->charge_id, sizeof c->charge_id, e[4]);
      if (!rc) rc = parse_i64(e[5], &c->cost_ms);
      if (!rc) rc = parse_i64(e[6], &c->deadline_ms);
      c->attempt = (int)attempt;
    }
  }
  if (rc == KB_EREDIS)
    kb_error_set(err, KB_EREDIS, "claim: unexpected reply from redis");
  if (rc != KB_OK)
    memset(c, 0, sizeof *c); /* a claim that failed holds nothing */
  return rc;
}

/* Splits the script's "ok,dup,..." into `dups` (n entries, 1 for "dup"; may be NULL). */
static void parse_dups(const redisReply *r, int *dups, int n) {
  const char *p = r->str;
  for (int i = 0; dups && i < n; i++) {
    dups[i] = p != NULL && strncmp(p, "dup", 3) == 0;
    p = p ? strchr(p, ',') : NULL;
    if (p)
      p++;
  }
}

/* Decodes the claim records of a complete_claim reply, the n elements from `e`: up to `k`
 * {"ok", 6 fields} records into next[0..], then maybe one reason ("empty", "budget", "state").
 * `token` is the lease token the call sent. `*n_next` gets the records decoded. Returns KB_OK
 * when at least one was claimed, else the reason's KB_EEMPTY, KB_EBUDGET or KB_ESTATE. */
static int parse_claims(const struct kb_queue *q, redisReply **e, size_t n, const char *token,
                        int k, struct kb_claim *next, int *n_next, char state[16],
                        struct kb_error *err) {
  size_t i = 0;
  int got = 0, rc = KB_OK;
  while (i < n && got < k && e[i]->type == REDIS_REPLY_STRING && strcmp(e[i]->str, "ok") == 0) {
    rc = parse_claim(q, e + i, n - i >= CLAIM_RECORD ? CLAIM_RECORD : n - i, &next[got], state,
                     err);
    if (rc)
      break;
    memcpy(next[got].token, token, sizeof next[got].token);
    got++;
    i += CLAIM_RECORD;
  }
  *n_next = got;
  if (rc == KB_OK && got == 0)
    rc = parse_claim(q, e + i, n - i, &next[0], state, err);
  return rc;
}

/* A complete_claim call as built (kb_queue_cycle_prepare): its keys and arguments, with the
 * buffers they point into. */
struct kb_queue_cycle {
  struct keyset ks;                           /* KEYS */
  const char *args[9 + 5 * KB_QUEUE_BATCH_MAX]; /* ARGV, pointing into the fields below */
  size_t nargs;
  int n_done, k;                              /* items completed, and claimed at most */
  struct kb_claim d[KB_QUEUE_BATCH_MAX];      /* the claims completed (the caller's `next`
                                                 may be the memory they came from) */
  char cost_s[KB_QUEUE_BATCH_MAX][24], k_s[16];
  char runner_buf[RUNNER_JSON_MAX];
  char token[33];                             /* the lease token of the items claimed */
  const char *argv[3 + MAX_KEYS + 9 + 5 * KB_QUEUE_BATCH_MAX]; /* kb_queue_cycle_argv */
  size_t lens[3 + MAX_KEYS + 9 + 5 * KB_QUEUE_BATCH_MAX];
  char nkeys_s[16];
};

int kb_queue_cycle_prepare(struct kb_queue *q, const struct kb_queue_done *done, int n_done,
                           const char *runner, int min_tier, int max_tier, int k,
                           struct kb_queue_cycle **out, struct kb_error *err) {
  *out = NULL;
  if (n_done < 0 || n_done > KB_QUEUE_BATCH_MAX || k < 0 || k > KB_QUEUE_BATCH_MAX)
    return kb_error_set(err, KB_EINVAL, "a batch completes and claims 0..%d items, not %d and %d",
                        KB_QUEUE_BATCH_MAX, n_done, k);
  struct kb_queue_cycle *c = kb_calloc(1, sizeof *c);
  if (c == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  c->n_done = n_done;
  c->k = k;
  for (int i = 0; i < n_done; i++)
    c->d[i] = *done[i].claim;
  int rc = add_keys(&c->ks, q, err,
                    (const char *const[]){KB_KEY_META, KB_KEY_LEDGER, KB_KEY_LEDGER_LOG,
                                          KB_KEY_LEASE, KB_KEY_ITEMS, KB_KEY_CHARGES,
                                          KB_KEY_RESULTS, KB_KEY_TASKBUDGET, KB_KEY_DEAD, NULL});
  if (min_tier < 0)
    min_tier = 0;
  if (max_tier >= q->n_tiers || max_tier < 0)
    max_tier = q->n_tiers - 1;
  for (int t = max_tier; k > 0 && rc == KB_OK && t >= min_tier; t--)
    rc = add_queue_key(&c->ks, q, t, err);
  const char *who = NULL;
  if (rc == KB_OK)
    rc = runner_json(runner, c->runner_buf, sizeof c->runner_buf, &who, err);
  if (rc == KB_OK && k > 0)
    rc = random_token(c->token, err);
  if (rc) {
    kb_free(c);
    return rc;
  }
  int prefer = k > 0 && q->affinity;
  size_t nargs = 0;
  c->args[nargs++] = who;
  c->args[nargs++] = c->token;
  for (int i = 0; i < (n_done > 0 ? n_done : 1); i++) {
    if (i == 1) /* ARGV 8: K; the items after the first follow it */
      c->args[nargs++] = c->k_s;
    snprintf(c->cost_s[i], sizeof c->cost_s[i], "%lld", n_done ? (long long)done[i].cost_ms : 0LL);
    c->args[nargs++] = n_done ? c->d[i].item : "";
    c->args[nargs++] = n_done ? c->d[i].token : "";
    c->args[nargs++] = n_done ? c->d[i].charge_id : "";
    c->args[nargs++] = c->cost_s[i];
    c->args[nargs++] = n_done ? done[i].result_json : "";
  }
  snprintf(c->k_s, sizeof c->k_s, "%d", k);
  if (n_done <= 1 && (k > 1 || prefer))
    c->args[nargs++] = c->k_s;
  if (prefer) /* the last argument, after every item's five */
    c->args[nargs++] = q->prefer;
  c->nargs = nargs;
  *out = c;
  return KB_OK;
}

int kb_queue_cycle_argv(struct kb_queue_cycle *c, const char *sha, const char ***argv,
                        const size_t **lens) {
  int argc = 0;
  snprintf(c->nkeys_s, sizeof c->nkeys_s, "%d", c->ks.n);
  c->argv[argc++] = "EVALSHA";
  c->argv[argc++] = sha;
  c->argv[argc++] = c->nkeys_s;
  for (int i = 0; i < c->ks.n; i++)
    c->argv[argc++] = c->ks.ptr[i];
  for (size_t i = 0; i < c->nargs; i++)
    c->argv[argc++] = c->args[i];
  for (int i = 0; i < argc; i++)
    c->lens[i] = strlen(c->argv[i]);
  *argv = c->argv;
  *lens = c->lens;
  return argc;
}

int kb_queue_cycle_parse(const struct kb_queue *q, const struct kb_queue_cycle *c,
                         const redisReply *rep, struct kb_claim *next, int *n_next, int *dups,
                         char state[16], struct kb_error *err) {
  if (n_next)
    *n_next = 0;
  if (c->k > 0 && next == NULL)
    return kb_error_set(err, KB_EINVAL, "claiming %d items needs room for them", c->k);
  if (rep->type == REDIS_REPLY_ERROR)
    return kb_redis_script_error("complete_claim", rep->str, err);
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2 ||
      rep->element[0]->type != REDIS_REPLY_STRING)
    return kb_error_set(err, KB_EREDIS, "complete_claim: unexpected reply from redis");
  if (next && c->k > 0)
    memset(next, 0, (size_t)c->k * sizeof *next);
  parse_dups(rep->element[0], dups, c->n_done);
  int got = 0, rc = KB_OK;
  if (c->k > 0)
    rc = parse_claims(q, rep->element + 2, rep->elements - 2, c->token, c->k, next, &got, state,
                      err);
  if (n_next)
    *n_next = got;
  return rc;
}

void kb_queue_cycle_free(struct kb_queue_cycle *c) { kb_free(c); }

/* Runs complete_claim, the script of a runner's cycle: complete the `n_done` items of `done`
 * (0: none) and claim up to `k` items among tiers [min_tier, max_tier] into `next` (k = 0:
 * claim nothing). `next` may overlap `done` (read first). The one-item forms (n_done <= 1,
 * k <= 1) send the fused form's seven arguments. Returns what kb_queue_cycle_batch()
 * documents. */
static int cycle(struct kb_queue *q, const struct kb_queue_done *done, int n_done,
                 const char *runner, int min_tier, int max_tier, int k, struct kb_claim *next,
                 int *n_next, int *dups, char state[16], struct kb_error *err) {
  if (n_next)
    *n_next = 0;
  if (k > 0 && next == NULL)
    return kb_error_set(err, KB_EINVAL, "claiming %d items needs room for them", k);
  struct kb_queue_cycle *c = NULL;
  int rc = kb_queue_cycle_prepare(q, done, n_done, runner, min_tier, max_tier, k, &c, err);
  if (rc)
    return rc;
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "complete_claim", c->ks.n, c->ks.ptr, (int)c->nargs, c->args,
                       NULL, &rep, err);
  if (rc == KB_OK)
    rc = kb_queue_cycle_parse(q, c, rep, next, n_next, dups, state, err);
  if (rep)
    freeReplyObject(rep);
  kb_queue_cycle_free(c);
  return rc;
}

int kb_queue_set_affinity(struct kb_queue *q, const char *const *tasks, int n) {
  size_t used = 0;
  q->prefer[0] = '\0';
  q->affinity = tasks != NULL;
  for (int i = 0; i < n && i < KB_AFFINITY_MAX; i++) {
    size_t len = strlen(tasks[i]);
    if (!kb_id_valid(tasks[i]) || used + len + 2 > sizeof q->prefer) {
      q->prefer[0] = '\0';
      q->affinity = 0;
      return KB_EINVAL;
    }
    if (used > 0)
      q->prefer[used++] = ',';
    memcpy(q->prefer + used, tasks[i], len + 1);
    used += len;
  }
  return KB_OK;
}

int kb_queue_cycle_batch(struct kb_queue *q, const struct kb_queue_done *done, int n_done,
                         const char *runner, int min_tier, int max_tier, int k,
                         struct kb_claim *next, int *n_next, int *dups, char state[16],
                         struct kb_error *err) {
  return cycle(q, done, n_done, runner, min_tier, max_tier, k, next, n_next, dups, state, err);
}

int kb_queue_claim(struct kb_queue *q, const char *runner, int min_tier, int max_tier,
                   struct kb_claim *c, char state[16], struct kb_error *err) {
  return cycle(q, NULL, 0, runner, min_tier, max_tier, 1, c, NULL, NULL, state, err);
}

int kb_queue_complete_and_claim(struct kb_queue *q, const struct kb_claim *done, int64_t cost_ms,
                                const char *result_json, const char *runner, int min_tier,
                                int max_tier, int *duplicate, struct kb_claim *next,
                                char state[16], struct kb_error *err) {
  struct kb_queue_done one = {.claim = done, .cost_ms = cost_ms, .result_json = result_json};
  return cycle(q, &one, 1, runner, min_tier, max_tier, 1, next, NULL, duplicate, state, err);
}

int kb_queue_heartbeat(struct kb_queue *q, const char *runner, const struct kb_claim *claims,
                       int n, int *extended, char state[16], struct kb_error *err) {
  struct keyset ks = {.n = 0};
  int rc = add_keys(
      &ks, q, err,
      (const char *const[]){KB_KEY_META, KB_KEY_LEASE, KB_KEY_ITEMS, KB_KEY_RUNNERS, NULL});
  if (rc)
    return rc;
  if (n < 0)
    return kb_error_set(err, KB_EINVAL, "heartbeat: negative number of leases");
  /* one call for every lease a runner holds (a compile-ahead runner holds one per CPU and
   * more: measured on the H200, 16; a fixed bound here once left them all unextended) */
  const char **args = kb_calloc(1 + 2 * (size_t)n, sizeof *args);
  if (args == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  args[0] = runner;
  for (int i = 0; i < n; i++) {
    args[1 + 2 * i] = claims[i].item;
    args[2 + 2 * i] = claims[i].token;
  }
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "heartbeat", ks.n, ks.ptr, 1 + 2 * n, args, NULL, &rep, err);
  kb_free(args);
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
  struct kb_queue_done one = {.claim = c, .cost_ms = cost_ms, .result_json = result_json};
  return cycle(q, &one, 1, runner, 0, -1, 0, NULL, NULL, duplicate, NULL, err);
}

/* The keys of a script that gives one leased item of tier `tier` back to its queue (release,
 * retry): meta, ledger, ledger:log, lease, items, charges, the tier's queue, taskbudget. */
static int item_back_keys(struct keyset *ks, const struct kb_queue *q, int tier,
                          struct kb_error *err) {
  int rc = add_keys(ks, q, err,
                    (const char *const[]){KB_KEY_META, KB_KEY_LEDGER, KB_KEY_LEDGER_LOG,
                                          KB_KEY_LEASE, KB_KEY_ITEMS, KB_KEY_CHARGES, NULL});
  if (rc == KB_OK)
    rc = add_queue_key(ks, q, tier, err);
  if (rc == KB_OK)
    rc = add_key(ks, q, "taskbudget", err);
  return rc;
}

int kb_queue_release(struct kb_queue *q, const struct kb_claim *c, const char *runner,
                     int *released, struct kb_error *err) {
  struct keyset ks = {.n = 0};
  int rc = item_back_keys(&ks, q, c->tier, err);
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

int kb_queue_retry(struct kb_queue *q, const struct kb_claim *c, int64_t cost_ms,
                   const char *runner, const char *reason, enum kb_retry *out,
                   struct kb_error *err) {
  struct keyset ks = {.n = 0};
  int rc = item_back_keys(&ks, q, c->tier, err);
  if (rc)
    return rc;
  char cost[32];
  snprintf(cost, sizeof cost, "%lld", (long long)(cost_ms > 0 ? cost_ms : 0));
  const char *args[] = {c->item, c->token, c->charge_id, cost, runner, reason ? reason : ""};
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "retry", ks.n, ks.ptr, 6, args, NULL, &rep, err);
  if (rc)
    return rc;
  if (rep->type != REDIS_REPLY_STRING) {
    freeReplyObject(rep);
    return kb_error_set(err, KB_EREDIS, "retry: unexpected reply from redis");
  }
  *out = strcmp(rep->str, "requeued") == 0 ? KB_RETRY_REQUEUED
         : strcmp(rep->str, "final") == 0  ? KB_RETRY_FINAL
                                           : KB_RETRY_LOST;
  freeReplyObject(rep);
  return KB_OK;
}

int kb_queue_reap(struct kb_queue *q, int max, const char *who, int *requeued, int *dead,
                  struct kb_error *err) {
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err,
                    (const char *const[]){KB_KEY_META, KB_KEY_LEDGER, KB_KEY_LEDGER_LOG,
                                          KB_KEY_LEASE, KB_KEY_ITEMS, KB_KEY_CHARGES, KB_KEY_DEAD,
                                          KB_KEY_RESULTS, KB_KEY_TASKBUDGET, NULL});
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
  /* {requeued, dead[, bad]}: bad leases went to the dead-letter hash (reap.lua) */
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2) {
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
  int rc = add_keys(&ks, q, err, (const char *const[]){KB_KEY_META, KB_KEY_EVENTS, NULL});
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
  int rc =
      add_keys(&ks, q, err,
               (const char *const[]){KB_KEY_META, KB_KEY_LEDGER, KB_KEY_LEASE, KB_KEY_ITEMS, NULL});
  for (int t = 0; rc == KB_OK && t < q->n_tiers; t++)
    rc = add_queue_key(&ks, q, t, err);
  if (rc)
    return rc;
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "status", ks.n, ks.ptr, 0, NULL, NULL, &rep, err);
  if (rc)
    return rc;
  size_t want = 14 + (size_t)q->n_tiers + 6;
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
  int64_t *tail[] = {&st->stray, &st->gpu_overruns, &st->gpu_overrun_ms, &st->llm_overruns,
                     &st->llm_overrun, &st->infra_retries};
  for (size_t i = 0; i < 6; i++)
    parse_i64(e[14 + (size_t)q->n_tiers + i], tail[i]);
  freeReplyObject(rep);
  return KB_OK;
}

int kb_queue_set_task_cap(struct kb_queue *q, const char *task, int64_t cap_ms,
                          struct kb_error *err) {
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err, (const char *const[]){KB_KEY_META, KB_KEY_TASKBUDGET, NULL});
  if (rc)
    return rc;
  char cap[32] = "";
  if (cap_ms >= 0)
    snprintf(cap, sizeof cap, "%lld", (long long)cap_ms);
  const char *args[] = {task, cap};
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "task_cap", ks.n, ks.ptr, 2, args, NULL, &rep, err);
  if (rep)
    freeReplyObject(rep);
  return rc;
}

int kb_queue_task_budget(struct kb_queue *q, const char *task, int64_t *cap_ms, int64_t *held_ms,
                         int64_t *spent_ms, struct kb_error *err) {
  char key[KEY_MAX], f_cap[KB_ID_MAX + 8], f_held[KB_ID_MAX + 8], f_spent[KB_ID_MAX + 8];
  kb_queue_key(q, key, sizeof key, KB_KEY_TASKBUDGET);
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

int kb_queue_drop_stray(struct kb_queue *q, const char *const *ids, const char *const *why, int n,
                        int *counted, struct kb_error *err) {
  if (counted)
    *counted = 0;
  if (n <= 0)
    return KB_OK;
  struct keyset ks = {.n = 0};
  int rc =
      add_keys(&ks, q, err, (const char *const[]){KB_KEY_META, KB_KEY_RESULTS, KB_KEY_STRAY, NULL});
  const char **args = rc == KB_OK ? kb_calloc(1 + 2 * (size_t)n, sizeof *args) : NULL;
  if (rc == KB_OK && args == NULL)
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  if (rc)
    return rc;
  args[0] = "scheduler";
  for (int i = 0; i < n; i++) {
    args[1 + 2 * i] = ids[i];
    args[2 + 2 * i] = why[i];
  }
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "stray", ks.n, ks.ptr, 1 + 2 * n, args, NULL, &rep, err);
  kb_free(args);
  if (rc)
    return rc;
  if (counted && rep->type == REDIS_REPLY_INTEGER)
    *counted = (int)rep->integer;
  freeReplyObject(rep);
  return KB_OK;
}

int kb_queue_stale_leases(struct kb_queue *q, struct kb_stale_lease *out, int max, int *n,
                          int64_t *now_ms, int64_t *last_ms, struct kb_error *err) {
  *n = 0;
  *now_ms = 0;
  *last_ms = 0;
  struct keyset ks = {.n = 0};
  int rc = add_keys(&ks, q, err,
                    (const char *const[]){KB_KEY_LEASE, KB_KEY_ITEMS, KB_KEY_RUNNERS,
                                          KB_KEY_META, NULL});
  if (rc)
    return rc;
  char max_s[16], silent_s[16];
  snprintf(max_s, sizeof max_s, "%d", max);
  snprintf(silent_s, sizeof silent_s, "%d", KB_RUNNER_SILENT_MS);
  const char *args[] = {max_s, silent_s};
  redisReply *rep = NULL;
  rc = kb_redis_script(q->redis, "leases", ks.n, ks.ptr, 2, args, NULL, &rep, err);
  if (rc)
    return rc;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 3 || (rep->elements - 3) % 4 != 0) {
    freeReplyObject(rep);
    return kb_error_set(err, KB_EREDIS, "leases: unexpected reply from redis");
  }
  int64_t stale = 0;
  parse_i64(rep->element[0], now_ms);
  parse_i64(rep->element[1], &stale);
  parse_i64(rep->element[2], last_ms);
  *n = (int)stale;
  for (size_t i = 3, k = 0; i + 3 < rep->elements && (int)k < max; i += 4, k++) {
    struct kb_stale_lease *l = &out[k];
    copy_str(l->item, sizeof l->item, rep->element[i]);
    copy_str(l->runner, sizeof l->runner, rep->element[i + 1]);
    parse_i64(rep->element[i + 2], &l->deadline_ms);
    l->seen_ms = -1;
    if (rep->element[i + 3]->type == REDIS_REPLY_STRING && rep->element[i + 3]->len > 0)
      parse_i64(rep->element[i + 3], &l->seen_ms);
  }
  freeReplyObject(rep);
  return KB_OK;
}
