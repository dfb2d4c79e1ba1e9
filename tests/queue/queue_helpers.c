/* Helpers shared by the queue fault tests (see queue_helpers.h). */
#define _GNU_SOURCE /* MAP_ANONYMOUS */
#include "queue_helpers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb/item.h"
#include "kb/campaign.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/ladder.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "redis_group.h"
#include "small_ladder.h"

struct kb_redis *kbq_connect(const char *addr, int retry_ms) {
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  struct kb_redis_opts ro = {.addr = addr, .retry_ms = retry_ms};
  if (kb_redis_connect(&ro, &r, &err))
    fail_msg("connect to %s: %s", addr, err.msg);
  return r;
}

void kbq_make_campaign(struct kb_redis *r, const char *cid, long gpu_ms, long lease_ms,
                       int max_attempts, struct kb_queue *q) {
  struct kb_tier tiers[KBT_SMALL_LADDER_TIERS];
  kbt_small_ladder(tiers);
  struct kb_error err = {0};
  struct kb_campaign_reg reg = {.cid = cid, .spec_json = "{}", .tiers = tiers, .n_tiers = 3,
                                .max_attempts = max_attempts, .lease_ms = lease_ms,
                                .backend = KB_BACKEND_HOST, .gpu_ms = gpu_ms,
                                .llm_tokens = 1000};
  int resumed = -1;
  if (kb_queue_register(r, &reg, "test", &resumed, &err))
    fail_msg("register %s: %s", cid, err.msg);
  assert_int_equal(resumed, 0);
  if (kb_queue_open(q, r, cid, &err))
    fail_msg("open %s: %s", cid, err.msg);
  if (kb_queue_set_state(q, "submitting", "running", "test", "test", &err))
    fail_msg("set_state %s: %s", cid, err.msg);
}

void kbq_cand_id(int i, char out[65]) { snprintf(out, 65, "%064x", i + 1); }

void kbq_enqueue_items(struct kb_queue *q, int n, int first_cand) {
  struct kb_error err = {0};
  for (int i = 0; i < n; i++) {
    char id[65];
    kbq_cand_id(first_cand + i, id);
    int added = 0;
    if (kb_queue_enqueue(q, id, "t", i % 3, q->tiers[i % 3].cost_ms, i, &added, &err))
      fail_msg("enqueue %d: %s", i, err.msg);
    assert_int_equal(added, 1);
  }
}

int64_t kbq_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kbq_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

unsigned kbq_seed(const char *what) {
  const char *env = getenv("KB_TEST_SEED");
  unsigned seed;
  if (env && *env) {
    char *end = NULL;
    unsigned long v = strtoul(env, &end, 10);
    if (end == env || *end != '\0')
      fail_msg("KB_TEST_SEED=\"%s\" is not a number", env);
    seed = (unsigned)v;
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = (unsigned)(ts.tv_sec ^ ts.tv_nsec ^ ((long)getpid() << 16));
  }
  printf("%s: seed %u (KB_TEST_SEED=%u replays the same schedule)\n", what, seed, seed);
  fflush(stdout);
  return seed;
}

/* ---- Runner processes ---------------------------------------------------------------------- */

struct kbq_slot *kbq_alloc_slots(int n) {
  void *p = mmap(NULL, sizeof(struct kbq_slot) * (size_t)n, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(p != MAP_FAILED);
  memset(p, 0, sizeof(struct kbq_slot) * (size_t)n);
  return p;
}

void kbq_free_slots(struct kbq_slot *s, int n) {
  if (s)
    munmap(s, sizeof(struct kbq_slot) * (size_t)n);
}

static void set_phase(struct kbq_slot *s, int phase) {
  __atomic_store_n(&s->phase, phase, __ATOMIC_SEQ_CST);
}

/* The body of a runner process. Never returns. */
static void runner_main(const struct kbq_runner_cfg *cfg, struct kbq_slot *slot,
                        const char *name, unsigned seed) {
  set_phase(slot, KBQ_IDLE);
  struct kb_error err = {0};
  struct kb_redis *r = NULL;
  struct kb_redis_opts ro = {.addr = cfg->addr, .retry_ms = cfg->retry_ms};
  if (kb_redis_connect(&ro, &r, &err)) {
    fprintf(stderr, "runner %s: connect: %s\n", name, err.msg);
    _exit(2);
  }
  struct kb_queue q;
  if (kb_queue_open(&q, r, cfg->cid, &err)) {
    fprintf(stderr, "runner %s: open: %s\n", name, err.msg);
    _exit(2);
  }
  struct kb_claim c;
  int holding = 0; /* cfg->fused: the complete+claim call leased the next item */
  for (;;) {
    int rc;
    kb_error_clear(&err);
    if (!holding) {
      set_phase(slot, KBQ_IN_CLAIM);
      rc = kb_queue_claim(&q, name, 0, -1, &c, NULL, &err);
      if (rc == KB_OK) {
        set_phase(slot, KBQ_WORKING);
        slot->claims++;
      } else {
        set_phase(slot, KBQ_IDLE);
      }
      if (rc == KB_EEMPTY) {
        struct kb_queue_status st;
        kb_error_clear(&err);
        if (kb_queue_status(&q, &st, &err)) {
          fprintf(stderr, "runner %s: status: %s\n", name, err.msg);
          _exit(3);
        }
        if (st.open == 0)
          _exit(0);
        kbq_sleep_ms(10 + (long)(rand_r(&seed) % 20)); /* lost runners' leases await the reaper */
        continue;
      }
      if (rc) {
        fprintf(stderr, "runner %s: claim: %s (%s)\n", name, err.msg, kb_err_name(rc));
        _exit(4);
      }
    }
    kbq_sleep_ms((long)(rand_r(&seed) % (unsigned)(cfg->work_max_ms + 1)));
    int64_t cost = (int64_t)(rand_r(&seed) % (unsigned)(c.cost_ms + 1));
    char result[256], charge[KB_CHARGE_ID_MAX];
    snprintf(result, sizeof result, "{\"item\":\"%s\",\"charge\":\"%s\",\"runner\":\"%s\"}",
             c.item, c.charge_id, name);
    snprintf(charge, sizeof charge, "%s", c.charge_id);
    int dup = -1;
    set_phase(slot, KBQ_IN_COMPLETE);
    if (cfg->fused) {
      /* completes c and leases the next item into c */
      rc = kb_queue_complete_and_claim(&q, &c, cost, result, name, 0, -1, &dup, &c, NULL, &err);
      holding = rc == KB_OK;
      if (rc == KB_EEMPTY) {
        rc = KB_OK; /* completed; nothing left to claim now */
        kb_error_clear(&err);
      }
    } else {
      rc = kb_queue_complete(&q, &c, cost, result, name, &dup, &err);
    }
    if (rc == KB_OK && dup == 0)
      slot->ok++;
    else if (rc == KB_OK && dup == 1)
      slot->dup++;
    else if (rc == KB_ELEASE)
      slot->lease_lost++;
    else if (rc == KB_ENOTFOUND && cfg->allow_missing)
      slot->charge_missing++;
    if (holding) {
      slot->claims++;
      set_phase(slot, KBQ_WORKING);
    } else {
      set_phase(slot, KBQ_IDLE);
    }
    if (rc != KB_OK && rc != KB_ELEASE && !(rc == KB_ENOTFOUND && cfg->allow_missing)) {
      fprintf(stderr, "runner %s: complete %s: %s (%s)\n", name, charge, err.msg,
              kb_err_name(rc));
      _exit(5);
    }
    if (rc == KB_OK && dup != 0 && dup != 1) {
      fprintf(stderr, "runner %s: complete %s: duplicate %d\n", name, charge, dup);
      _exit(6);
    }
  }
}

static pid_t spawned[4096]; /* every runner forked, for kbq_kill_runners */
static int n_spawned;

void kbq_kill_runners(void) {
  for (int i = 0; i < n_spawned; i++) {
    /* Only a child not yet reaped is certainly still ours: ECHILD means it was reaped. */
    if (waitpid(spawned[i], NULL, WNOHANG) == 0) {
      kill(spawned[i], SIGKILL);
      waitpid(spawned[i], NULL, 0);
    }
  }
  n_spawned = 0;
}

int kbq_group_teardown(void **state) {
  kbq_kill_runners();
  return kbt_redis_group_teardown(state);
}

pid_t kbq_spawn_runner(const struct kbq_runner_cfg *cfg, struct kbq_slot *slot,
                       const char *name, unsigned seed) {
  fflush(stdout);
  fflush(stderr);
  set_phase(slot, KBQ_IDLE);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    runner_main(cfg, slot, name, seed);
    _exit(99);
  }
  slot->pid = pid;
  if (n_spawned < (int)(sizeof spawned / sizeof spawned[0]))
    spawned[n_spawned++] = pid;
  return pid;
}

/* ---- The audit ----------------------------------------------------------------------------- */

enum { ST_OTHER = 0, ST_DONE, ST_DEAD };

struct item_rec {
  char id[KB_ITEM_ID_MAX];
  int state;                          /* ST_* */
  char state_name[16];
  char task[64];
  int results;                        /* entries in the results stream */
  int posted;                         /* P charges */
  char posted_charge[KB_CHARGE_ID_MAX];
  char result_charge[KB_CHARGE_ID_MAX]; /* "charge" of a runner's result */
  int result_infra;                   /* the result is an infra_error */
};

struct charge_rec {
  char id[KB_CHARGE_ID_MAX];
  char kind;                          /* 'P', 'V', 'H' */
  int64_t amount;                     /* from the charges hash */
  int64_t overrun;                    /* from the charges hash ("P:<n>:O:<overrun>") */
  int reserves, posts, voids, overruns; /* log entries */
  int64_t reserved, posted_amt, voided_amt, overrun_amt;
};

struct balance {
  int64_t total, available, held, spent;
};

static int cmp_item(const void *a, const void *b) {
  return strcmp(((const struct item_rec *)a)->id, ((const struct item_rec *)b)->id);
}

static int cmp_charge(const void *a, const void *b) {
  return strcmp(((const struct charge_rec *)a)->id, ((const struct charge_rec *)b)->id);
}

static struct item_rec *find_item(struct item_rec *items, size_t n, const char *id) {
  struct item_rec key;
  snprintf(key.id, sizeof key.id, "%s", id);
  return bsearch(&key, items, n, sizeof *items, cmp_item);
}

static struct charge_rec *find_charge(struct charge_rec *ch, size_t n, const char *id) {
  struct charge_rec key;
  snprintf(key.id, sizeof key.id, "%s", id);
  return bsearch(&key, ch, n, sizeof *ch, cmp_charge);
}

static redisReply *command(struct kb_redis *r, const char *fmt, const char *key) {
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(r, &rep, &err, fmt, key))
    fail_msg("%s %s: %s", fmt, key, err.msg);
  return rep;
}

static int64_t json_i64(json_t *o, const char *key, const char *what) {
  json_t *v = json_object_get(o, key);
  if (!json_is_integer(v))
    fail_msg("%s: \"%s\" is not an integer", what, key);
  return (int64_t)json_integer_value(v);
}

static const char *json_str(json_t *o, const char *key, const char *what) {
  json_t *v = json_object_get(o, key);
  if (!json_is_string(v))
    fail_msg("%s: \"%s\" is not a string", what, key);
  return json_string_value(v);
}

/* Field `name` of a stream entry's field list, or NULL. */
static const redisReply *stream_field(const redisReply *fields, const char *name) {
  for (size_t i = 0; i + 1 < fields->elements; i += 2)
    if (strcmp(fields->element[i]->str, name) == 0)
      return fields->element[i + 1];
  return NULL;
}

static void check_balance(const char *what, const struct balance *got,
                          const struct balance *want) {
  if (got->total != want->total || got->available != want->available ||
      got->held != want->held || got->spent != want->spent)
    fail_msg("%s: total/available/held/spent %lld/%lld/%lld/%lld, expected %lld/%lld/%lld/%lld",
             what, (long long)got->total, (long long)got->available, (long long)got->held,
             (long long)got->spent, (long long)want->total, (long long)want->available,
             (long long)want->held, (long long)want->spent);
}

/* Appends a move to `*v` (`*n` of `*cap`), growing it. */
static struct kbq_move *push_move(struct kbq_move **v, size_t *n, size_t *cap) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 64;
    *v = realloc(*v, *cap * sizeof **v);
    if (*v == NULL)
      fail_msg("out of memory");
  }
  struct kbq_move *m = &(*v)[(*n)++];
  memset(m, 0, sizeof *m);
  return m;
}

/* Appends the moves of one "moves" document `o` of stream entry `eid` (see kbq_ledger_moves). */
static void expand_moves(json_t *o, const char *eid, struct kbq_move **v, size_t *n,
                         size_t *cap) {
  json_t *arr = json_object_get(o, "moves");
  if (!json_is_array(arr) || json_array_size(arr) == 0)
    fail_msg("ledger:log %s: \"moves\" is not a non-empty array", eid);
  size_t first = *n;
  size_t i;
  json_t *mv;
  json_array_foreach(arr, i, mv) {
    const char *op = json_string_value(json_array_get(mv, 0));
    const char *charge = json_string_value(json_array_get(mv, 1));
    json_t *a = json_array_get(mv, 2), *x = json_array_get(mv, 3);
    if (op == NULL || charge == NULL || !json_is_integer(a))
      fail_msg("ledger:log %s: move %zu is not [op, charge, amount...]", eid, i);
    int64_t r = (int64_t)json_integer_value(a);
    struct {
      const char *op;
      int64_t amount;
    } part[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
    if (strcmp(op, "reserve") == 0 && json_array_size(mv) == 3 && r > 0) {
      part[0].op = "reserve";
      part[0].amount = r;
    } else if (strcmp(op, "settle") == 0 && json_array_size(mv) == 4 && json_is_integer(x) &&
               r >= 0 && json_integer_value(x) >= 0 && r + json_integer_value(x) > 0) {
      int64_t actual = (int64_t)json_integer_value(x);
      int64_t posted = actual < r ? actual : r;
      part[0].op = posted > 0 ? "post" : NULL;
      part[0].amount = posted;
      part[1].op = actual > r ? "overrun" : NULL;
      part[1].amount = actual - r;
      part[2].op = r > actual ? "void" : NULL;
      part[2].amount = r - actual;
    } else {
      fail_msg("ledger:log %s: move %zu (\"%s\") is neither [\"reserve\", charge, amount > 0] "
               "nor [\"settle\", charge, reserved, actual] with reserved + actual > 0",
               eid, i, op);
    }
    for (int k = 0; k < 3; k++) {
      if (part[k].op == NULL)
        continue;
      struct kbq_move *m = push_move(v, n, cap);
      snprintf(m->eid, sizeof m->eid, "%s", eid);
      snprintf(m->op, sizeof m->op, "%s", part[k].op);
      snprintf(m->currency, sizeof m->currency, "%s", json_str(o, "currency", eid));
      snprintf(m->charge, sizeof m->charge, "%s", charge);
      snprintf(m->who, sizeof m->who, "%s", json_str(o, "who", eid));
      m->ts_ms = json_i64(o, "ts_ms", eid);
      m->amount = part[k].amount;
      m->total = json_i64(o, "total", eid);
      m->from_moves = 1;
    }
  }
  /* the balances after the last move are the entry's; each earlier one's, the next one's
   * less the next move */
  struct balance b = {json_i64(o, "total", eid), json_i64(o, "available", eid),
                      json_i64(o, "held", eid), json_i64(o, "spent", eid)};
  if (b.available + b.held + b.spent != b.total)
    fail_msg("ledger:log %s: available %lld + held %lld + spent %lld != total %lld", eid,
             (long long)b.available, (long long)b.held, (long long)b.spent,
             (long long)b.total);
  for (size_t k = *n; k-- > first;) {
    struct kbq_move *m = &(*v)[k];
    m->available = b.available;
    m->held = b.held;
    m->spent = b.spent;
    int64_t a = m->amount;
    if (strcmp(m->op, "reserve") == 0) {
      b.available += a;
      b.held -= a;
    } else if (strcmp(m->op, "post") == 0) {
      b.held += a;
      b.spent -= a;
    } else if (strcmp(m->op, "overrun") == 0) {
      b.available += a;
      b.spent -= a;
    } else { /* void */
      b.held += a;
      b.available -= a;
    }
  }
}

struct kbq_move *kbq_ledger_moves(struct kb_redis *r, const char *cid, size_t *n) {
  char key[256];
  kb_key(key, sizeof key, cid, KB_KEY_LEDGER_LOG);
  redisReply *rep = command(r, "XRANGE %s - +", key);
  struct kbq_move *v = NULL;
  size_t cap = 0;
  *n = 0;
  for (size_t i = 0; i < rep->elements; i++) {
    const char *eid = rep->element[i]->element[0]->str;
    const redisReply *fields = rep->element[i]->element[1];
    size_t before = *n;
    for (size_t j = 0; j + 1 < fields->elements; j += 2) {
      const char *name = fields->element[j]->str;
      int entry = strcmp(name, "entry") == 0;
      if (!entry && strcmp(name, "moves") != 0)
        fail_msg("ledger:log %s has a field \"%s\"", eid, name);
      json_error_t je;
      json_t *o = json_loads(fields->element[j + 1]->str, 0, &je);
      if (o == NULL)
        fail_msg("ledger:log %s: bad JSON: %s", eid, je.text);
      if (entry) {
        struct kbq_move *m = push_move(&v, n, &cap);
        snprintf(m->eid, sizeof m->eid, "%s", eid);
        snprintf(m->op, sizeof m->op, "%s", json_str(o, "op", eid));
        snprintf(m->currency, sizeof m->currency, "%s", json_str(o, "currency", eid));
        snprintf(m->charge, sizeof m->charge, "%s", json_str(o, "charge_id", eid));
        snprintf(m->who, sizeof m->who, "%s", json_str(o, "who", eid));
        m->ts_ms = json_i64(o, "ts_ms", eid);
        m->amount = json_i64(o, "amount", eid);
        m->available = json_i64(o, "available", eid);
        m->held = json_i64(o, "held", eid);
        m->spent = json_i64(o, "spent", eid);
        m->total = json_i64(o, "total", eid);
      } else {
        expand_moves(o, eid, &v, n, &cap);
      }
      json_decref(o);
    }
    if (*n == before)
      fail_msg("ledger:log %s has no move", eid);
  }
  freeReplyObject(rep);
  return v;
}

void kbq_assert_ledger_invariant(struct kb_queue *q) {
  struct kb_queue_status st;
  struct kb_error err = {0};
  if (kb_queue_status(q, &st, &err))
    fail_msg("status: %s", err.msg);
  assert_int_equal(st.gpu_available + st.gpu_held + st.gpu_spent, st.gpu_total);
  assert_true(st.gpu_available >= -st.gpu_overrun_ms); /* overruns may take it below 0 */
  assert_true(st.gpu_held >= 0);
  assert_true(st.gpu_spent >= 0);
}

void kbq_assert_final(struct kb_redis *r, const char *cid, int n_items, struct kbq_audit *out) {
  struct kb_error err = {0};
  struct kb_queue q;
  if (kb_queue_open(&q, r, cid, &err))
    fail_msg("open %s: %s", cid, err.msg);
  struct kb_queue_status st;
  if (kb_queue_status(&q, &st, &err))
    fail_msg("status %s: %s", cid, err.msg);
  assert_int_equal(st.open, 0);
  assert_int_equal(st.done + st.dead, n_items);
  assert_int_equal(st.leased, 0);
  assert_int_equal(st.gpu_held, 0);
  assert_int_equal(st.gpu_available + st.gpu_held + st.gpu_spent, st.gpu_total);
  assert_true(st.gpu_available >= -st.gpu_overrun_ms);

  char key[160];
  /* Items. */
  kb_key(key, sizeof key, cid, KB_KEY_ITEMS);
  redisReply *rep = command(r, "HGETALL %s", key);
  assert_int_equal(rep->elements, 2 * (size_t)n_items);
  struct item_rec *items = calloc((size_t)n_items, sizeof *items);
  assert_non_null(items);
  int64_t done = 0, dead = 0;
  for (int i = 0; i < n_items; i++) {
    struct item_rec *it = &items[i];
    snprintf(it->id, sizeof it->id, "%s", rep->element[2 * i]->str);
    struct kb_item o;
    if (kb_item_parse(it->id, rep->element[2 * i + 1]->str, &o, &err))
      fail_msg("%s", err.msg);
    snprintf(it->state_name, sizeof it->state_name, "%s", o.state);
    snprintf(it->task, sizeof it->task, "%s", o.task);
    it->state = strcmp(it->state_name, "done") == 0   ? ST_DONE
                : strcmp(it->state_name, "dead") == 0 ? ST_DEAD
                                                      : ST_OTHER;
    if (it->state == ST_OTHER)
      fail_msg("item %s is \"%s\", expected done or dead", it->id, it->state_name);
    done += it->state == ST_DONE;
    dead += it->state == ST_DEAD;
  }
  freeReplyObject(rep);
  qsort(items, (size_t)n_items, sizeof *items, cmp_item);
  assert_int_equal(done, st.done);
  assert_int_equal(dead, st.dead);

  /* Results stream: each item exactly once. */
  kb_key(key, sizeof key, cid, KB_KEY_RESULTS);
  rep = command(r, "XRANGE %s - +", key);
  int64_t n_results = (int64_t)rep->elements;
  for (size_t i = 0; i < rep->elements; i++) {
    const redisReply *fields = rep->element[i]->element[1];
    const redisReply *item = stream_field(fields, "item");
    const redisReply *result = stream_field(fields, "result");
    if (item == NULL || result == NULL)
      fail_msg("results entry %s lacks \"item\" or \"result\"", rep->element[i]->element[0]->str);
    struct item_rec *it = find_item(items, (size_t)n_items, item->str);
    if (it == NULL)
      fail_msg("results name unknown item \"%s\"", item->str);
    it->results++;
    json_error_t je;
    json_t *o = json_loads(result->str, 0, &je);
    if (o == NULL)
      fail_msg("result of %s: bad JSON: %s", it->id, je.text);
    json_t *status = json_object_get(o, "status");
    if (json_is_string(status) && strcmp(json_string_value(status), "infra_error") == 0)
      it->result_infra = 1;
    json_t *charge = json_object_get(o, "charge");
    if (json_is_string(charge))
      snprintf(it->result_charge, sizeof it->result_charge, "%s", json_string_value(charge));
    json_decref(o);
  }
  freeReplyObject(rep);
  assert_int_equal(n_results, n_items);
  for (int i = 0; i < n_items; i++)
    if (items[i].results != 1)
      fail_msg("item %s (%s) has %d results, expected exactly 1", items[i].id,
               items[i].state_name, items[i].results);

  /* Charges hash. */
  kb_key(key, sizeof key, cid, KB_KEY_CHARGES);
  rep = command(r, "HGETALL %s", key);
  size_t n_charges = rep->elements / 2;
  struct charge_rec *charges = calloc(n_charges ? n_charges : 1, sizeof *charges);
  assert_non_null(charges);
  size_t nc = 0;
  for (size_t i = 0; i < n_charges; i++) {
    const char *id = rep->element[2 * i]->str;
    const char *val = rep->element[2 * i + 1]->str;
    char item_id[KB_ITEM_ID_MAX];
    size_t hash = strcspn(id, "#");
    if (id[hash] != '#' || hash >= sizeof item_id)
      continue; /* not an item's charge (another script's); the replay still covers it */
    memcpy(item_id, id, hash);
    item_id[hash] = '\0';
    struct item_rec *it = find_item(items, (size_t)n_items, item_id);
    if (it == NULL)
      continue;
    struct charge_rec *c = &charges[nc++];
    snprintf(c->id, sizeof c->id, "%s", id);
    c->kind = val[0];
    char *end = NULL;
    c->amount = strtoll(val + 2, &end, 10);
    if (c->kind == 'P' && end != val + 2 && strncmp(end, ":O:", 3) == 0) {
      const char *o = end + 3;
      c->overrun = strtoll(o, &end, 10);
      if (end == o || c->overrun <= 0 || c->overrun > c->amount)
        fail_msg("charge %s has a malformed overrun \"%s\"", id, val);
    }
    if (val[1] != ':' || end == val + 2 || *end != '\0')
      fail_msg("charge %s has a malformed value \"%s\"", id, val);
    if (c->kind == 'P') {
      it->posted++;
      snprintf(it->posted_charge, sizeof it->posted_charge, "%s", id);
    } else if (c->kind != 'V') {
      fail_msg("charge %s is \"%s\" at the end, expected posted (P) or voided (V)", id, val);
    }
  }
  freeReplyObject(rep);
  qsort(charges, nc, sizeof *charges, cmp_charge);
  int64_t posted = 0, voided = 0, posted_sum = 0;
  for (size_t i = 0; i < nc; i++) {
    posted += charges[i].kind == 'P';
    voided += charges[i].kind == 'V';
    if (charges[i].kind == 'P')
      posted_sum += charges[i].amount;
  }
  assert_int_equal(posted, done);
  assert_int_equal(posted_sum, st.gpu_spent);
  int64_t overruns = 0, overrun_sum = 0;
  for (size_t i = 0; i < nc; i++) {
    overruns += charges[i].overrun > 0;
    overrun_sum += charges[i].overrun;
  }
  assert_int_equal(overruns, st.gpu_overruns); /* meta counts every overrun, once */
  assert_int_equal(overrun_sum, st.gpu_overrun_ms);
  for (int i = 0; i < n_items; i++) {
    struct item_rec *it = &items[i];
    int want = it->state == ST_DONE ? 1 : 0;
    if (it->posted != want)
      fail_msg("item %s (%s) has %d posted charges, expected %d", it->id, it->state_name,
               it->posted, want);
    if (it->state == ST_DEAD && !it->result_infra)
      fail_msg("dead item %s: its result is not an infra_error", it->id);
    if (it->state == ST_DONE && it->result_charge[0] &&
        strcmp(it->result_charge, it->posted_charge) != 0)
      fail_msg("item %s: the recorded result came with charge %s, but %s was posted", it->id,
               it->result_charge, it->posted_charge);
  }

  /* Ledger audit stream: per-charge history and a replay from scratch, move by move (a
   * runner's cycle's "moves" entry expanded: kbq_ledger_moves). */
  size_t n_moves = 0;
  struct kbq_move *mv = kbq_ledger_moves(r, cid, &n_moves);
  int64_t n_log = (int64_t)n_moves;
  struct balance gpu = {0}, llm = {0};
  for (size_t i = 0; i < n_moves; i++) {
    const struct kbq_move *m = &mv[i];
    const char *eid = m->eid, *op = m->op, *cur = m->currency, *charge = m->charge;
    int64_t amount = m->amount;
    if (amount < 0)
      fail_msg("ledger:log %s: negative amount %lld", eid, (long long)amount);
    struct balance *b = strcmp(cur, "gpu_ms") == 0       ? &gpu
                        : strcmp(cur, "llm_tokens") == 0 ? &llm
                                                         : NULL;
    if (b == NULL)
      fail_msg("ledger:log %s: unknown currency \"%s\"", eid, cur);
    if (strcmp(op, "fund") == 0) {
      b->total += amount;
      b->available += amount;
    } else if (strcmp(op, "reserve") == 0) {
      b->available -= amount;
      b->held += amount;
    } else if (strcmp(op, "post") == 0) {
      b->held -= amount;
      b->spent += amount;
    } else if (strcmp(op, "void") == 0) {
      b->held -= amount;
      b->available += amount;
    } else if (strcmp(op, "overrun") == 0) {
      /* charged beyond the reservation: from available, which may go below 0 */
      b->available -= amount;
      b->spent += amount;
    } else {
      fail_msg("ledger:log %s: unknown op \"%s\"", eid, op);
    }
    struct balance rec = {m->total, m->available, m->held, m->spent};
    if (rec.available + rec.held + rec.spent != rec.total)
      fail_msg("ledger:log %s (%s %s): available %lld + held %lld + spent %lld != total %lld",
               eid, op, charge, (long long)rec.available, (long long)rec.held,
               (long long)rec.spent, (long long)rec.total);
    /* each move's balances are the replay's up to it (a "moves" entry's follow from its
     * last: they agree when that one does) */
    if (rec.available != b->available || rec.held != b->held || rec.spent != b->spent ||
        rec.total != b->total)
      fail_msg("ledger:log %s (%s %s): balances %lld/%lld/%lld of %lld, the replay gives "
               "%lld/%lld/%lld of %lld", eid, op, charge, (long long)rec.available,
               (long long)rec.held, (long long)rec.spent, (long long)rec.total,
               (long long)b->available, (long long)b->held, (long long)b->spent,
               (long long)b->total);
    if (b == &gpu && strcmp(op, "fund") != 0) {
      struct charge_rec *c = find_charge(charges, nc, charge);
      if (c == NULL) {
        /* A charge of an item must be in the charges hash; other charge ids (another
         * script's) are only replayed. */
        char item_id[KB_ITEM_ID_MAX];
        size_t hash = strcspn(charge, "#");
        if (charge[hash] == '#' && hash < sizeof item_id) {
          memcpy(item_id, charge, hash);
          item_id[hash] = '\0';
          if (find_item(items, (size_t)n_items, item_id))
            fail_msg("ledger:log %s: %s of charge %s, which the charges hash lacks", eid, op,
                     charge);
        }
      } else if (strcmp(op, "reserve") == 0) {
        c->reserves++;
        c->reserved += amount;
      } else if (strcmp(op, "post") == 0) {
        c->posts++;
        c->posted_amt += amount;
      } else if (strcmp(op, "overrun") == 0) {
        c->overruns++;
        c->overrun_amt += amount;
      } else {
        c->voids++;
        c->voided_amt += amount;
      }
    }
  }
  free(mv);
  for (size_t i = 0; i < nc; i++) {
    struct charge_rec *c = &charges[i];
    /* Moves of amount 0 are not logged: a charge of 0 (tier 0) has no entry at all. */
    if (c->reserves != 1 && !(c->reserves == 0 && c->posts == 0 && c->voids == 0 &&
                              c->amount == c->overrun))
      fail_msg("charge %s: %d reserve entries, expected 1", c->id, c->reserves);
    if (c->posts > 1 || c->voids > 1 || c->overruns > 1)
      fail_msg("charge %s posted %d, voided %d and overran %d times", c->id, c->posts, c->voids,
               c->overruns);
    if (c->overrun_amt != c->overrun || (c->overrun > 0 && c->voids != 0))
      fail_msg("charge %s: overrun %lld in the charges hash, %lld in the log (and %d voids)",
               c->id, (long long)c->overrun, (long long)c->overrun_amt, c->voids);
    if (c->kind == 'P' && (c->posts != (c->amount > c->overrun) ||
                           c->posted_amt + c->overrun_amt != c->amount))
      fail_msg("charge %s is P:%lld but the log posted %lld + overran %lld in %d entries", c->id,
               (long long)c->amount, (long long)c->posted_amt, (long long)c->overrun_amt,
               c->posts);
    if (c->kind == 'V' && (c->posts != 0 || c->voids != (c->reserved > 0) ||
                           c->voided_amt != c->reserved || c->amount != c->reserved))
      fail_msg("charge %s is V:%lld; the log reserved %lld, posted %d times, voided %lld in %d "
               "entries", c->id, (long long)c->amount, (long long)c->reserved, c->posts,
               (long long)c->voided_amt, c->voids);
    if (c->reserved != c->posted_amt + c->voided_amt)
      fail_msg("charge %s: reserved %lld != posted %lld + voided %lld", c->id,
               (long long)c->reserved, (long long)c->posted_amt, (long long)c->voided_amt);
  }
  struct balance want_gpu = {st.gpu_total, st.gpu_available, st.gpu_held, st.gpu_spent};
  struct balance want_llm = {st.llm_total, st.llm_available, st.llm_held, st.llm_spent};
  check_balance("gpu_ms replayed from ledger:log vs the ledger hash", &gpu, &want_gpu);
  check_balance("llm_tokens replayed from ledger:log vs the ledger hash", &llm, &want_llm);

  /* Per-task budget: nothing held, and each task's spent is what its items' posts add to. */
  kb_key(key, sizeof key, cid, KB_KEY_TASKBUDGET);
  rep = command(r, "HGETALL %s", key);
  for (size_t i = 0; i + 1 < rep->elements; i += 2) {
    const char *field = rep->element[i]->str;
    const char *val = rep->element[i + 1]->str;
    size_t flen = strlen(field);
    if (flen > 5 && strcmp(field + flen - 5, ":held") == 0 && strcmp(val, "0") != 0)
      fail_msg("taskbudget %s is %s at the end, expected 0", field, val);
    if (flen > 6 && strcmp(field + flen - 6, ":spent") == 0) {
      int64_t want = 0;
      for (int k = 0; k < n_items; k++) {
        if (items[k].posted != 1 || strlen(items[k].task) != flen - 6 ||
            strncmp(items[k].task, field, flen - 6) != 0)
          continue;
        struct charge_rec *c = find_charge(charges, nc, items[k].posted_charge);
        want += c ? c->amount : 0;
      }
      if (strtoll(val, NULL, 10) != want)
        fail_msg("taskbudget %s is %s, but the task's items posted %lld", field, val,
                 (long long)want);
    }
  }
  freeReplyObject(rep);

  if (out) {
    out->done = done;
    out->dead = dead;
    out->posted = posted;
    out->voided = voided;
    out->spent = st.gpu_spent;
    out->total = st.gpu_total;
    out->log_entries = n_log;
    out->results = n_results;
  }
  free(items);
  free(charges);
}
