/* Simulated runners of the queue benchmark (see worker.h). */
#include "worker.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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
