/* Simulated runners of the queue benchmark (see worker.h). */
#include "worker.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/async.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/redis.h"

int64_t kb__bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void kb__bench_sleep_ns(int64_t ns) {
  if (ns <= 0)
    return;
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

struct kb_bench_ctl *kb__bench_ctl_new(int nslots) {
  if (nslots < 1)
    return NULL;
  size_t size = sizeof(struct kb_bench_ctl) + (size_t)nslots * sizeof(struct kb_bench_slot);
  /* Not kb_malloc: forked runners must share this memory with the coordinator. Anonymous
   * pages are zeroed and only backed once touched. */
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  struct kb_bench_ctl *ctl = p;
  ctl->nslots = nslots;
  ctl->active = nslots;
  for (int i = 0; i < nslots; i++)
    ctl->slots[i].rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
  return ctl;
}

void kb__bench_ctl_free(struct kb_bench_ctl *ctl) {
  if (ctl == NULL)
    return;
  munmap(ctl, sizeof(struct kb_bench_ctl) +
                  (size_t)ctl->nslots * sizeof(struct kb_bench_slot));
}

void kb__bench_ctl_publish(struct kb_bench_ctl *ctl, uint64_t word) {
  atomic_store(&ctl->word, word);
  atomic_fetch_add(&ctl->seq, 1);
  /* a shared (not private) futex: runner processes wait on the same mapping */
  syscall(SYS_futex, (uint32_t *)&ctl->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Waits until the control word is no longer `word`, at most `ns`. */
static void wait_word(struct kb_bench_ctl *ctl, uint64_t word, int64_t ns) {
  uint32_t seq = atomic_load(&ctl->seq);
  if (atomic_load(&ctl->word) != word)
    return;
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  syscall(SYS_futex, (uint32_t *)&ctl->seq, FUTEX_WAIT, seq, &ts, NULL, 0);
}

static uint64_t next_rand(uint64_t *state) {
  /* xorshift64* */
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dULL;
}

static uint32_t clamp_ns(int64_t ns) {
  if (ns < 0)
    return 0;
  return ns > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* Keeps a uniform sample of at most KB_BENCH_LAT_CAP (claim, complete) pairs (algorithm R). */
static void record(struct kb_bench_slot *s, int64_t claim_ns, int64_t complete_ns) {
  uint64_t seen = atomic_load_explicit(&s->lat_seen, memory_order_relaxed);
  uint64_t at = seen;
  if (seen >= KB_BENCH_LAT_CAP) {
    at = next_rand(&s->rng) % (seen + 1);
    if (at >= KB_BENCH_LAT_CAP)
      at = UINT64_MAX;
  }
  if (at != UINT64_MAX) {
    s->claim_ns[at] = clamp_ns(claim_ns);
    s->complete_ns[at] = clamp_ns(complete_ns);
  }
  atomic_store_explicit(&s->lat_seen, seen + 1, memory_order_release);
}

static void fail(struct kb_bench_slot *s, const struct kb_error *err) {
  if (atomic_load(&s->failed))
    return;
  snprintf(s->error, sizeof s->error, "%.*s", (int)sizeof s->error - 1,
           err->msg[0] ? err->msg : kb_strerror(err->code));
  atomic_store(&s->failed, 1);
}

static void count(struct kb_bench_slot *s, int phase) {
  atomic_fetch_add_explicit(&s->ops[phase], 1, memory_order_relaxed);
}

/* A result of the size and shape a host runner publishes (the scheduler never reads it here). */
static void result_json(char *out, size_t size, const struct kb_bench_ctl *ctl,
                        const struct kb_claim *c, const char *runner, int64_t cost) {
  int n = snprintf(out, size,
                   "{\"schema\":\"kernelbrain.result/1\",\"campaign\":\"%s\",\"task\":\"%s\","
                   "\"candidate\":\"%s\",\"tier\":%d,\"tier_name\":\"tier%d\",\"attempt\":%d,"
                   "\"charge_id\":\"%s\",\"runner\":\"%s\",\"backend\":\"host\",\"device\":\"\","
                   "\"status\":\"ok\",\"reason\":\"\",\"check\":{\"sets\":3,\"max_abs_err\":"
                   "1.1920929e-07,\"max_rel_err\":2.3841858e-07},\"timing\":{\"median_us\":"
                   "41.25,\"p10_us\":40.875,\"p90_us\":43.5,\"mean_us\":41.9,\"min_us\":40.5,"
                   "\"noise\":0.0125,\"samples\":50,\"warmup\":3},\"cost_ms\":%lld}",
                   ctl->cid, c->task, c->candidate, c->tier, c->tier, c->attempt, c->charge_id,
                   runner, (long long)cost);
  if (n < 0 || (size_t)n >= size)
    snprintf(out, size, "{}");
}

/* Cycles until the control word moves on: claim -> simulated evaluation -> complete, as a
 * runner does. With ctl->two_call each cycle is kb_queue_claim then kb_queue_complete; by
 * default the runner claims once and then each cycle is one kb_queue_complete_and_claim (its
 * latency is recorded as the claim's and the complete's). The item held when the phase ends is
 * completed alone, so no lease outlives the phase. */
static int run_cycles(struct kb_bench_ctl *ctl, struct kb_bench_slot *s, struct kb_queue *q,
                      const char *name, uint64_t word, struct kb_error *err) {
  int phase = (int)(word & 0xff);
  char json[1024];
  struct kb_claim c;
  int holding = 0, rc = KB_OK;
  /* Real evaluations take varied times, so runners do not claim in step: start at a random
   * offset and draw each evaluation uniformly from 0.5 to 1.5 times eval_ns. */
  if (ctl->eval_ns > 0)
    kb__bench_sleep_ns((int64_t)(next_rand(&s->rng) % (uint64_t)ctl->eval_ns));
  while (atomic_load_explicit(&ctl->word, memory_order_acquire) == word) {
    int64_t claim_ns = 0;
    if (!holding) {
      int64_t t0 = kb__bench_now_ns();
      rc = kb_queue_claim(q, name, 0, -1, &c, NULL, err);
      claim_ns = kb__bench_now_ns() - t0;
      if (rc == KB_EEMPTY) {
        kb_error_clear(err);
        atomic_fetch_add_explicit(&s->empty[phase], 1, memory_order_relaxed);
        kb__bench_sleep_ns(phase == KB_BENCH_DRAIN ? 5000000 : 500000);
        continue;
      }
      if (rc)
        return rc;
      holding = 1;
    }
    if (ctl->eval_ns > 0)
      kb__bench_sleep_ns(ctl->eval_ns / 2 +
                        (int64_t)(next_rand(&s->rng) % (uint64_t)ctl->eval_ns));
    int64_t cost = c.cost_ms / 2; /* under the reservation: the rest is voided */
    result_json(json, sizeof json, ctl, &c, name, cost);
    int dup = 0;
    int64_t t2 = kb__bench_now_ns();
    if (ctl->two_call) {
      rc = kb_queue_complete(q, &c, cost, json, name, &dup, err);
      holding = 0;
    } else {
      rc = kb_queue_complete_and_claim(q, &c, cost, json, name, 0, -1, &dup, &c, NULL, err);
      holding = rc == KB_OK;
      if (rc == KB_EEMPTY) {
        /* completed; nothing left to claim */
        kb_error_clear(err);
        atomic_fetch_add_explicit(&s->empty[phase], 1, memory_order_relaxed);
        rc = KB_OK;
      }
    }
    int64_t t3 = kb__bench_now_ns();
    if (rc == KB_ELEASE) {
      /* the lease expired and was reaped: the item is someone else's now */
      kb_error_clear(err);
      atomic_fetch_add_explicit(&s->lease_lost, 1, memory_order_relaxed);
      continue;
    }
    if (rc)
      return rc;
    count(s, phase);
    atomic_fetch_add_explicit(&s->calls[phase], ctl->two_call ? 2 : 1, memory_order_relaxed);
    if (phase == KB_BENCH_CYCLES)
      record(s, ctl->two_call ? claim_ns : t3 - t2, t3 - t2);
  }
  rc = KB_OK; /* what a `continue` above left in rc was handled there */
  if (holding) {
    result_json(json, sizeof json, ctl, &c, name, c.cost_ms / 2);
    rc = kb_queue_complete(q, &c, c.cost_ms / 2, json, name, NULL, err);
    if (rc == KB_ELEASE) {
      kb_error_clear(err);
      atomic_fetch_add_explicit(&s->lease_lost, 1, memory_order_relaxed);
      rc = KB_OK;
    } else if (rc == KB_OK) {
      count(s, phase);
    }
  }
  return rc;
}

/* Completes held[0..n-1] (each at half its reservation) and claims up to `k` into `next`
 * with one kb_queue_cycle_batch call; `*got` gets the items claimed. When a lease among them
 * was lost (all or nothing: the call changed nothing) each is completed alone, the lost ones
 * counted, and nothing is claimed. `*posted` gets the completions that posted. */
static int batch_call(struct kb_bench_ctl *ctl, struct kb_bench_slot *s, struct kb_queue *q,
                      const char *name, struct kb_claim *held, int n, int k,
                      struct kb_claim *next, int *got, int *posted, struct kb_error *err) {
  static _Thread_local char json[KB_QUEUE_BATCH_MAX][1024];
  struct kb_queue_done done[KB_QUEUE_BATCH_MAX];
  int dups[KB_QUEUE_BATCH_MAX];
  for (int i = 0; i < n; i++) {
    result_json(json[i], sizeof json[i], ctl, &held[i], name, held[i].cost_ms / 2);
    done[i] = (struct kb_queue_done){&held[i], held[i].cost_ms / 2, json[i]};
  }
  struct kb_claim nx[KB_QUEUE_BATCH_MAX]; /* not `next`: it may be `held`, needed below */
  *got = 0;
  *posted = 0;
  int rc = kb_queue_cycle_batch(q, done, n, name, 0, -1, k, nx, got, dups, NULL, err);
  if (rc == KB_OK && *got > 0)
    memcpy(next, nx, (size_t)*got * sizeof *nx);
  if (rc == KB_EEMPTY || rc == KB_EBUDGET) {
    kb_error_clear(err);
    rc = KB_OK;
  }
  if (rc == KB_OK) {
    for (int i = 0; i < n; i++)
      *posted += !dups[i];
    return KB_OK;
  }
  if (rc != KB_ELEASE)
    return rc;
  kb_error_clear(err);
  for (int i = 0; i < n; i++) {
    int dup = 0;
    rc = kb_queue_complete(q, &held[i], held[i].cost_ms / 2, json[i], name, &dup, err);
    if (rc == KB_ELEASE) {
      kb_error_clear(err);
      atomic_fetch_add_explicit(&s->lease_lost, 1, memory_order_relaxed);
      rc = KB_OK;
    } else if (rc == KB_OK) {
      *posted += !dup;
    } else {
      return rc;
    }
  }
  return KB_OK;
}

/* Cycles with --batch K until the control word moves on: a runner holds up to K items; it
 * "evaluates" them one after another (eval_ns each, drawn as in run_cycles), then completes
 * them all and claims K more in one kb_queue_cycle_batch call, whose latency is recorded as
 * the claim's (the first call claims only). The items held when the phase ends are completed
 * with one call that claims nothing. */
static int run_batch(struct kb_bench_ctl *ctl, struct kb_bench_slot *s, struct kb_queue *q,
                     const char *name, uint64_t word, struct kb_error *err) {
  int phase = (int)(word & 0xff), k = ctl->batch, n = 0, got = 0, posted = 0, rc = KB_OK;
  struct kb_claim held[KB_QUEUE_BATCH_MAX];
  if (ctl->eval_ns > 0)
    kb__bench_sleep_ns((int64_t)(next_rand(&s->rng) % ((uint64_t)ctl->eval_ns * (uint64_t)k)));
  while (atomic_load_explicit(&ctl->word, memory_order_acquire) == word) {
    for (int i = 0; i < n && ctl->eval_ns > 0; i++)
      kb__bench_sleep_ns(ctl->eval_ns / 2 +
                         (int64_t)(next_rand(&s->rng) % (uint64_t)ctl->eval_ns));
    int64_t t0 = kb__bench_now_ns();
    rc = batch_call(ctl, s, q, name, held, n, k, held, &got, &posted, err);
    int64_t t1 = kb__bench_now_ns();
    if (rc)
      return rc;
    atomic_fetch_add_explicit(&s->ops[phase], (uint64_t)posted, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->calls[phase], 1, memory_order_relaxed);
    if (phase == KB_BENCH_CYCLES && t0 >= atomic_load_explicit(&ctl->record_from_ns,
                                                               memory_order_relaxed))
      record(s, t1 - t0, t1 - t0);
    n = got;
    if (n == 0) {
      atomic_fetch_add_explicit(&s->empty[phase], 1, memory_order_relaxed);
      kb__bench_sleep_ns(phase == KB_BENCH_DRAIN ? 5000000 : 500000);
    }
  }
  if (n > 0) {
    rc = batch_call(ctl, s, q, name, held, n, 0, NULL, &got, &posted, err);
    if (rc == KB_OK)
      atomic_fetch_add_explicit(&s->ops[phase], (uint64_t)posted, memory_order_relaxed);
  }
  return rc;
}

/* EVALSHA of one of the reference scripts until the control word moves on. */
static int run_raw(struct kb_bench_ctl *ctl, struct kb_bench_slot *s, struct kb_redis *r,
                   uint64_t word, struct kb_error *err) {
  int phase = (int)(word & 0xff);
  const char *argv[4] = {"EVALSHA", phase == KB_BENCH_RET1 ? ctl->sha_ret1 : ctl->sha_debit,
                         phase == KB_BENCH_RET1 ? "0" : "1", ctl->debit_key};
  int argc = phase == KB_BENCH_RET1 ? 3 : 4;
  while (atomic_load_explicit(&ctl->word, memory_order_acquire) == word) {
    redisReply *rep = NULL;
    int rc = kb_redis_command(r, argc, argv, NULL, 0, &rep, err);
    if (rc)
      return rc;
    freeReplyObject(rep);
    count(s, phase);
  }
  return KB_OK;
}

int kb__bench_worker_run(struct kb_bench_ctl *ctl, int slot) {
  struct kb_bench_slot *s = &ctl->slots[slot];
  struct kb_error err = {0};
  struct kb_redis *r = NULL;
  struct kb_queue q;
  char name[32];
  snprintf(name, sizeof name, "bench-r%d", slot);
  struct kb_redis_opts ro = {.addr = ctl->addr, .retry_ms = 10000};
  int rc = kb_redis_connect(&ro, &r, &err);
  if (rc == KB_OK)
    rc = kb_queue_open(&q, r, ctl->cid, &err);
  if (rc)
    fail(s, &err);
  for (;;) {
    uint64_t word = atomic_load_explicit(&ctl->word, memory_order_acquire);
    atomic_store_explicit(&s->ack, word, memory_order_release);
    int phase = (int)(word & 0xff);
    if (phase == KB_BENCH_EXIT)
      break;
    if (phase == KB_BENCH_IDLE || atomic_load(&s->failed) || slot >= atomic_load(&ctl->active)) {
      /* until the next control word (a futex: thousands of idle runners cost nothing); the
       * timeout only guards against a missed wake-up */
      wait_word(ctl, word, 100000000);
      continue;
    }
    kb_error_clear(&err);
    if (phase == KB_BENCH_RET1 || phase == KB_BENCH_DEBIT)
      rc = run_raw(ctl, s, r, word, &err);
    else if (ctl->batch > 1)
      rc = run_batch(ctl, s, &q, name, word, &err);
    else
      rc = run_cycles(ctl, s, &q, name, word, &err);
    if (rc)
      fail(s, &err);
  }
  kb_redis_free(r);
  return atomic_load(&s->failed) ? 1 : 0;
}

/* ---- --event-loop: every runner slot in one thread ---------------------------------------- */

/* One simulated runner of the event loop. */
struct lrunner {
  struct loop *l;
  int slot;
  redisAsyncContext *ac;   /* its connection (hiredis async), NULL until it first takes part */
  uint32_t events;         /* its epoll interest */
  uint64_t word;           /* the control word it works in (acknowledged once idle in it) */
  int in_flight;           /* a call sent, its reply not yet read */
  int phase_sent;          /* the phase the call in flight was sent in */
  int64_t sent_ns;         /* when it was sent (monotonic clock) */
  int64_t due_ns;          /* when the next call is due: its evaluations end */
  int n_held;              /* items it holds */
  struct kb_claim *held;   /* ctl->batch of them */
  char (*json)[1024];      /* their results, one per held item, kept while a call is in flight */
  struct kb_queue_done *done;
  struct kb_queue_cycle *call; /* the complete_claim call in flight */
  char name[32];
};

/* The event loop: one epoll set, one kb_queue for building and reading calls. */
struct loop {
  struct kb_bench_ctl *ctl;
  struct kb_redis *r;      /* a blocking connection: the queue's meta and the script's SHA */
  struct kb_queue q;
  char sha[41];            /* complete_claim's */
  int ep;                  /* epoll descriptor */
  struct lrunner *run;     /* ctl->nslots of them */
  int n_used;              /* runners [0, n_used) have taken part (the most ever active): the
                              others only acknowledge each word, once */
  uint64_t acked;          /* the last word the unused runners acknowledged */
};

/* hiredis's event hooks (as its adapters for libev and the others): each connection's epoll
 * interest, kept as hiredis asks. */
static void ev_update(struct lrunner *lr, uint32_t events) {
  if (events == lr->events || lr->ac == NULL)
    return;
  struct epoll_event ev = {.events = events, .data.ptr = lr};
  epoll_ctl(lr->l->ep, EPOLL_CTL_MOD, lr->ac->c.fd, &ev);
  lr->events = events;
}
static void ev_add_read(void *p) { ev_update(p, ((struct lrunner *)p)->events | EPOLLIN); }
static void ev_del_read(void *p) { ev_update(p, ((struct lrunner *)p)->events & ~EPOLLIN); }
static void ev_add_write(void *p) { ev_update(p, ((struct lrunner *)p)->events | EPOLLOUT); }
static void ev_del_write(void *p) { ev_update(p, ((struct lrunner *)p)->events & ~EPOLLOUT); }
static void ev_cleanup(void *p) {
  struct lrunner *lr = p;
  if (lr->ac != NULL)
    epoll_ctl(lr->l->ep, EPOLL_CTL_DEL, lr->ac->c.fd, NULL);
  lr->events = 0;
}

static void fail_msg(struct kb_bench_slot *s, const char *msg) {
  struct kb_error e = {.code = KB_EIO};
  snprintf(e.msg, sizeof e.msg, "%s", msg);
  fail(s, &e);
}

/* hiredis frees a context it saw fail (after calling the callbacks waiting on it with no
 * reply): the runner forgets it and, unless the loop freed it itself, fails. */
static void on_disconnect(const redisAsyncContext *ac, int status) {
  struct lrunner *lr = ac->ev.data;
  lr->ac = NULL;
  lr->in_flight = 0;
  if (status != REDIS_OK)
    fail_msg(&lr->l->ctl->slots[lr->slot], "connection to redis lost");
}

/* Connects runner `lr` (once): a non-blocking connection to ctl->addr ("unix:PATH" or
 * HOST:PORT) driven by the loop's epoll set, and the room for the items it will hold. */
static int lr_connect(struct lrunner *lr, struct kb_error *err) {
  const char *addr = lr->l->ctl->addr;
  int k = lr->l->ctl->batch;
  lr->held = kb_calloc((size_t)k, sizeof *lr->held);
  lr->json = kb_calloc((size_t)k, sizeof *lr->json);
  lr->done = kb_calloc((size_t)k, sizeof *lr->done);
  if (lr->held == NULL || lr->json == NULL || lr->done == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  if (strncmp(addr, "unix:", 5) == 0) {
    lr->ac = redisAsyncConnectUnix(addr + 5);
  } else {
    char host[256];
    const char *colon = strrchr(addr, ':');
    long port = colon ? strtol(colon + 1, NULL, 10) : 0;
    if (colon == NULL || colon - addr >= (long)sizeof host || port <= 0 || port > 65535)
      return kb_error_set(err, KB_EINVAL, "redis address \"%s\" is not HOST:PORT", addr);
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    lr->ac = redisAsyncConnect(host, (int)port);
  }
  if (lr->ac == NULL || lr->ac->err) {
    kb_error_set(err, KB_ECONN, "cannot connect to redis at %s: %s", addr,
                 lr->ac ? lr->ac->errstr : "out of memory");
    if (lr->ac)
      redisAsyncFree(lr->ac);
    lr->ac = NULL;
    return err->code;
  }
  struct epoll_event ev = {.events = 0, .data.ptr = lr};
  if (epoll_ctl(lr->l->ep, EPOLL_CTL_ADD, lr->ac->c.fd, &ev) != 0)
    return kb_error_set(err, KB_EIO, "epoll_ctl: %s", strerror(errno));
  lr->ac->ev.data = lr;
  lr->ac->ev.addRead = ev_add_read;
  lr->ac->ev.delRead = ev_del_read;
  lr->ac->ev.addWrite = ev_add_write;
  lr->ac->ev.delWrite = ev_del_write;
  lr->ac->ev.cleanup = ev_cleanup;
  redisAsyncSetDisconnectCallback(lr->ac, on_disconnect);
  return KB_OK;
}

/* The evaluations of the items `lr` holds: each drawn from 0.5 to 1.5 times eval_ns, one after
 * another, as run_batch sleeps them. */
static int64_t lr_evals_ns(struct lrunner *lr) {
  struct kb_bench_ctl *ctl = lr->l->ctl;
  struct kb_bench_slot *s = &ctl->slots[lr->slot];
  int64_t t = 0;
  for (int i = 0; i < lr->n_held && ctl->eval_ns > 0; i++)
    t += ctl->eval_ns / 2 + (int64_t)(next_rand(&s->rng) % (uint64_t)ctl->eval_ns);
  return t;
}

/* The reply of a complete_claim call: counts, the latency (from the moment the call was
 * written), the items now held and when the next call is due. A lost lease fails the slot:
 * the loop does not complete a refused batch item by item as run_batch does (no --kills here,
 * and the bench's leases outlast its phases). */
static void on_cycle(redisAsyncContext *ac, void *reply, void *priv) {
  (void)ac;
  struct lrunner *lr = priv;
  struct kb_bench_ctl *ctl = lr->l->ctl;
  struct kb_bench_slot *s = &ctl->slots[lr->slot];
  int64_t now = kb__bench_now_ns();
  int phase = lr->phase_sent, got = 0, dups[KB_QUEUE_BATCH_MAX] = {0}, n_done = lr->n_held;
  struct kb_error err = {0};
  lr->in_flight = 0;
  int rc = reply ? kb_queue_cycle_parse(&lr->l->q, lr->call, reply, lr->held, &got, dups, NULL,
                                        &err)
                 : kb_error_set(&err, KB_ECONN, "connection to redis lost: %s", ac->errstr);
  kb_queue_cycle_free(lr->call);
  lr->call = NULL;
  if (rc == KB_EEMPTY || rc == KB_EBUDGET)
    rc = KB_OK;
  if (rc) {
    fail(s, &err);
    lr->n_held = 0;
    return;
  }
  int posted = 0;
  for (int i = 0; i < n_done; i++)
    posted += !dups[i];
  atomic_fetch_add_explicit(&s->ops[phase], (uint64_t)posted, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->calls[phase], 1, memory_order_relaxed);
  if (phase == KB_BENCH_CYCLES && lr->word == atomic_load(&ctl->word) &&
      lr->sent_ns >= atomic_load_explicit(&ctl->record_from_ns, memory_order_relaxed))
    record(s, now - lr->sent_ns, now - lr->sent_ns);
  lr->n_held = got;
  if (got == 0 && lr->word == atomic_load(&ctl->word)) {
    atomic_fetch_add_explicit(&s->empty[phase], 1, memory_order_relaxed);
    lr->due_ns = now + (phase == KB_BENCH_DRAIN ? 5000000 : 500000);
  } else {
    lr->due_ns = now + lr_evals_ns(lr);
  }
}

static void on_raw(redisAsyncContext *ac, void *reply, void *priv) {
  struct lrunner *lr = priv;
  struct kb_bench_slot *s = &lr->l->ctl->slots[lr->slot];
  lr->in_flight = 0;
  const redisReply *rep = reply;
  if (rep == NULL || rep->type == REDIS_REPLY_ERROR) {
    char msg[256];
    snprintf(msg, sizeof msg, "raw script: %s", rep ? rep->str : ac->errstr);
    fail_msg(s, msg);
    return;
  }
  count(s, lr->phase_sent);
}

/* Sends `lr`'s next call in `phase`: a raw script, or complete_claim completing what it holds
 * and claiming `k` (0: the phase ended, complete only). */
static int lr_send(struct lrunner *lr, int phase, int k, struct kb_error *err) {
  struct loop *l = lr->l;
  const struct kb_bench_ctl *ctl = l->ctl;
  int rc = lr->ac == NULL ? lr_connect(lr, err) : KB_OK;
  if (rc)
    return rc;
  lr->phase_sent = phase;
  if (phase == KB_BENCH_RET1 || phase == KB_BENCH_DEBIT) {
    const char *argv[4] = {"EVALSHA", phase == KB_BENCH_RET1 ? ctl->sha_ret1 : ctl->sha_debit,
                           phase == KB_BENCH_RET1 ? "0" : "1", ctl->debit_key};
    rc = redisAsyncCommandArgv(lr->ac, on_raw, lr, phase == KB_BENCH_RET1 ? 3 : 4, argv, NULL);
  } else {
    for (int i = 0; i < lr->n_held; i++) {
      const struct kb_claim *h = &lr->held[i];
      result_json(lr->json[i], sizeof lr->json[i], ctl, h, lr->name, h->cost_ms / 2);
      lr->done[i] = (struct kb_queue_done){h, h->cost_ms / 2, lr->json[i]};
    }
    rc = kb_queue_cycle_prepare(&l->q, lr->done, lr->n_held, lr->name, 0, -1, k, &lr->call,
                                err);
    if (rc)
      return rc;
    const char **argv;
    const size_t *lens;
    int argc = kb_queue_cycle_argv(lr->call, l->sha, &argv, &lens);
    rc = redisAsyncCommandArgv(lr->ac, on_cycle, lr, argc, argv, lens);
  }
  if (rc != REDIS_OK)
    return kb_error_set(err, KB_ECONN, "cannot send to redis: %s", lr->ac->errstr);
  lr->in_flight = 1;
  lr->sent_ns = kb__bench_now_ns();
  redisAsyncHandleWrite(lr->ac); /* now, not at the next epoll_wait */
  return KB_OK;
}

/* One pass over the runners that have taken part: each finishes its last word's work (a call
 * in flight, the items it holds) before it acknowledges the current one, then calls when due;
 * the others acknowledge a new word (a pass over all of a search's 8,192 runners after every
 * reply would cost the loop a CPU's third at 1,000 runners). Returns the runners still
 * finishing; `*wait_ns` gets how long the loop may sleep. */
static int loop_pass(struct loop *l, uint64_t word, int64_t *wait_ns) {
  struct kb_bench_ctl *ctl = l->ctl;
  int phase = (int)(word & 0xff), active = atomic_load(&ctl->active), busy = 0;
  int cycling = phase == KB_BENCH_WARMUP || phase == KB_BENCH_CYCLES || phase == KB_BENCH_DRAIN;
  int64_t now = kb__bench_now_ns(), next = now + 2000000; /* a new word within 2 ms */
  if (phase != KB_BENCH_IDLE && phase != KB_BENCH_EXIT && active > l->n_used)
    l->n_used = active < ctl->nslots ? active : ctl->nslots;
  if (word != l->acked) {
    for (int i = l->n_used; i < ctl->nslots; i++) {
      l->run[i].word = word;
      atomic_store_explicit(&ctl->slots[i].ack, word, memory_order_release);
    }
    l->acked = word;
  }
  for (int i = 0; i < l->n_used; i++) {
    struct lrunner *lr = &l->run[i];
    struct kb_bench_slot *s = &ctl->slots[i];
    struct kb_error err = {0};
    int failed = (int)atomic_load(&s->failed);
    if (lr->word != word) {
      if (lr->in_flight) {
        busy++;
        continue;
      }
      if (lr->n_held > 0 && !failed) {
        if (lr_send(lr, lr->phase_sent, 0, &err))
          fail(s, &err);
        busy++;
        continue;
      }
      lr->word = word;
      atomic_store_explicit(&s->ack, word, memory_order_release);
      lr->due_ns = now;
      if (cycling && ctl->eval_ns > 0) /* runners start at random offsets, as run_batch */
        lr->due_ns += (int64_t)(next_rand(&s->rng) %
                                ((uint64_t)ctl->eval_ns * (uint64_t)ctl->batch));
    }
    if (failed || lr->in_flight || i >= active || phase == KB_BENCH_IDLE ||
        phase == KB_BENCH_EXIT)
      continue;
    if (lr->due_ns > now) {
      if (lr->due_ns < next)
        next = lr->due_ns;
      continue;
    }
    if (lr_send(lr, phase, cycling ? ctl->batch : 0, &err))
      fail(s, &err);
  }
  *wait_ns = next - kb__bench_now_ns();
  return busy;
}

int kb__bench_loop_run(struct kb_bench_ctl *ctl) {
  struct loop l = {.ctl = ctl, .ep = -1};
  struct kb_error err = {0};
  struct kb_redis_opts ro = {.addr = ctl->addr, .retry_ms = 10000};
  l.run = kb_calloc((size_t)ctl->nslots, sizeof *l.run);
  int rc = l.run == NULL ? kb_error_set(&err, KB_ENOMEM, "out of memory") : KB_OK;
  if (rc == KB_OK)
    rc = kb_redis_connect(&ro, &l.r, &err);
  if (rc == KB_OK)
    rc = kb_queue_open(&l.q, l.r, ctl->cid, &err);
  if (rc == KB_OK)
    rc = kb_redis_script_sha(l.r, "complete_claim", l.sha, &err);
  if (rc == KB_OK) {
    l.ep = epoll_create1(EPOLL_CLOEXEC);
    if (l.ep < 0)
      rc = kb_error_set(&err, KB_EIO, "epoll_create1: %s", strerror(errno));
  }
  for (int i = 0; l.run != NULL && i < ctl->nslots; i++) {
    l.run[i] = (struct lrunner){.l = &l, .slot = i};
    snprintf(l.run[i].name, sizeof l.run[i].name, "bench-r%d", i);
    if (rc)
      fail(&ctl->slots[i], &err);
  }
  for (;;) {
    uint64_t word = atomic_load_explicit(&ctl->word, memory_order_acquire);
    int64_t wait_ns = 0;
    int busy = l.run != NULL ? loop_pass(&l, word, &wait_ns) : 0;
    if ((word & 0xff) == KB_BENCH_EXIT && busy == 0)
      break;
    if (l.ep < 0) {
      kb__bench_sleep_ns(1000000);
      continue;
    }
    struct epoll_event evs[256];
    int ms = wait_ns <= 0 ? 0 : (int)((wait_ns + 999999) / 1000000);
    int n = epoll_wait(l.ep, evs, 256, ms);
    for (int i = 0; i < n; i++) {
      struct lrunner *lr = evs[i].data.ptr;
      if (lr->ac && (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        redisAsyncHandleRead(lr->ac);
      if (lr->ac && (evs[i].events & EPOLLOUT))
        redisAsyncHandleWrite(lr->ac);
    }
  }
  int failed = 0;
  for (int i = 0; l.run != NULL && i < ctl->nslots; i++) {
    struct lrunner *lr = &l.run[i];
    if (lr->ac)
      redisAsyncFree(lr->ac);
    lr->ac = NULL;
    kb_queue_cycle_free(lr->call);
    kb_free(lr->held);
    kb_free(lr->json);
    kb_free(lr->done);
    failed |= (int)atomic_load(&ctl->slots[i].failed);
  }
  if (l.ep >= 0)
    close(l.ep);
  kb_free(l.run);
  kb_redis_free(l.r);
  return failed;
}
