/* --fill: store a target-sized campaign's candidates and queue items (see fill.h). */
#include "fill.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/candidate.h"
#include "kb/catalog.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "worker.h"

#define SAMPLE_EVERY 97 /* read back the stored size of every n-th candidate, for the ratio */

struct fill_shared {
  const struct kb_bench_fill_opts *o;
  atomic_long stored;        /* candidates stored so far, all threads */
  atomic_int failed;         /* set by the first thread that fails */
};

struct fill_thread {
  pthread_t tid;
  struct fill_shared *sh;
  int index;                 /* 0..threads-1: takes tasks index, index+threads, ... */
  long candidates, items;
  double source_bytes, json_bytes, zstd_bytes;
  long sampled;
  struct kb_error err;       /* first error of this thread */
};

/* The candidate's JSON and the value stored for it (HSTRLEN of its "json" field: a plain zstd
 * frame, or one made with the task's dictionary), for the statistics. */
static int sample_ratio(struct fill_thread *t, struct kb_queue *q, const struct kb_candidate *c) {
  char *json = NULL;
  char key[200], suffix[100];
  snprintf(suffix, sizeof suffix, KB_KEY_CAND_FMT, c->id);
  int rc = kb_queue_key(q, key, sizeof key, suffix)
               ? kb_error_set(&t->err, KB_EINVAL, "candidate key too long")
               : kb_candidate_to_json(c, &json, &t->err);
  redisReply *rep = NULL;
  if (rc == KB_OK)
    rc = kb_redis_commandf(q->redis, &rep, &t->err, "HSTRLEN %s json", key);
  if (rc == KB_OK && (rep->type != REDIS_REPLY_INTEGER || rep->integer <= 0))
    rc = kb_error_set(&t->err, KB_EREDIS, "HSTRLEN %s json: no stored value", key);
  if (rc == KB_OK) {
    t->json_bytes += (double)strlen(json);
    t->zstd_bytes += (double)rep->integer;
    t->sampled++;
  }
  if (rep)
    freeReplyObject(rep);
  kb_free(json);
  return rc;
}

/* One task's candidates: a seed first, then LLM mutations, tuner variants and crossovers whose
 * parents are earlier candidates of the same task, as a real search produces them. */
static int fill_task(struct fill_thread *t, struct kb_queue *q, int task_index) {
  const struct kb_bench_fill_opts *o = t->sh->o;
  char task[KB_ID_MAX];
  static const char *const fam[] = {"matmul", "softmax", "layernorm", "conv2d",
                                    "reduce-sum", "gelu", "attention", "transpose"};
  snprintf(task, sizeof task, "l%d-%03d-%s", 1 + task_index % 3, task_index,
           fam[task_index % 8]);
  char prev[2][KB_CAND_ID_LEN + 1] = {"", ""};
  struct kb_buf src;
  kb_buf_init(&src);
  int rc = KB_OK;
  for (int i = 0; i < o->per_task && rc == KB_OK; i++) {
    if ((o->stop && *o->stop) || atomic_load(&t->sh->failed))
      return KB_EINTERRUPTED;
    uint64_t seed = ((uint64_t)task_index << 32) ^ (uint64_t)i ^ 0x5eedULL;
    kb_buf_reset(&src);
    rc = kb__bench_cuda_source(seed, task, task_index, &src);
    if (rc) {
      kb_error_set(&t->err, rc, "cannot generate a source: out of memory");
      break;
    }
    const char *gen = i == 0 ? "seed" : i % 10 < 6 ? "llm" : i % 10 < 9 ? "tune" : "crossover";
    char name[32], knobs[96];
    snprintf(name, sizeof name, "%s-%05d", gen, i);
    snprintf(knobs, sizeof knobs, "-DBLOCK_X=%d -DTILE_K=%d -DUNROLL=%d", 16 << (i % 3),
             8 << (i % 4), 1 << (i % 3));
    struct kb_candidate c;
    rc = kb_candidate_init(&c, task, name, gen, src.data,
                           strcmp(gen, "tune") == 0 ? knobs : "",
                           i % 7 == 0 ? "--use_fast_math" : "", &t->err);
    if (rc)
      break;
    if (i > 0)
      snprintf(c.parents[0], sizeof c.parents[0], "%s", prev[0]);
    if (strcmp(gen, "crossover") == 0 && prev[1][0])
      snprintf(c.parents[1], sizeof c.parents[1], "%s", prev[1]);
    rc = kb_catalog_put_candidate(q, &c, &t->err);
    /* Most candidates wait at the cheap tiers; few reach "full" (the ladder saves the budget). */
    int tier = i % 10 < 6 ? 0 : i % 10 < 9 ? 1 : 2;
    int added = 0;
    if (rc == KB_OK)
      rc = kb_queue_enqueue(q, c.id, c.task, tier, q->tiers[tier].cost_ms,
                            (double)(i % 1000) + (double)task_index / 1000.0, &added,
                            &t->err);
    if (rc == KB_OK && (t->candidates % SAMPLE_EVERY) == 0)
      rc = sample_ratio(t, q, &c);
    if (rc == KB_OK) {
      t->candidates++;
      t->items += added;
      t->source_bytes += (double)strlen(c.source);
      atomic_fetch_add(&t->sh->stored, 1);
      snprintf(prev[1], sizeof prev[1], "%s", prev[0]);
      snprintf(prev[0], sizeof prev[0], "%s", c.id);
    }
    kb_candidate_release(&c);
  }
  kb_buf_release(&src);
  return rc;
}

static void *fill_main(void *arg) {
  struct fill_thread *t = arg;
  const struct kb_bench_fill_opts *o = t->sh->o;
  struct kb_redis *r = NULL;
  struct kb_queue q;
  struct kb_redis_opts ro = {.addr = o->addr, .retry_ms = 10000};
  int rc = kb_redis_connect(&ro, &r, &t->err);
  if (rc == KB_OK)
    rc = kb_queue_open(&q, r, o->cid, &t->err);
  for (int task = t->index; rc == KB_OK && task < o->tasks; task += o->threads)
    rc = fill_task(t, &q, task);
  if (rc) {
    kb_error_set(&t->err, rc, "%s", kb_strerror(rc));
    atomic_store(&t->sh->failed, 1);
  }
  kb_redis_free(r);
  return NULL;
}

int kb__bench_fill(const struct kb_bench_fill_opts *o, struct kb_bench_fill_stats *st,
                  struct kb_error *err) {
  memset(st, 0, sizeof *st);
  if (o->threads < 1 || o->tasks < 1 || o->per_task < 1)
    return kb_error_set(err, KB_EINVAL, "fill: tasks, candidates per task and threads must be "
                        "positive");
  struct fill_shared sh = {.o = o};
  atomic_init(&sh.stored, 0);
  atomic_init(&sh.failed, 0);
  struct fill_thread *th = kb_calloc((size_t)o->threads, sizeof *th);
  if (th == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  int64_t t0 = kb__bench_now_ns();
  int started = 0, rc = KB_OK;
  for (int i = 0; i < o->threads; i++) {
    th[i].sh = &sh;
    th[i].index = i;
    if (pthread_create(&th[i].tid, NULL, fill_main, &th[i]) != 0) {
      rc = kb_error_set(err, KB_EINTERNAL, "cannot start fill thread %d", i);
      atomic_store(&sh.failed, 1);
      break;
    }
    started++;
  }
  long want = (long)o->tasks * o->per_task;
  int64_t last = 0;
  while (rc == KB_OK && o->progress) {
    long done = atomic_load(&sh.stored);
    if (done >= want || atomic_load(&sh.failed))
      break;
    int64_t now = kb__bench_now_ns();
    if (now - last >= 1000000000) {
      double s = (double)(now - t0) / 1e9;
      fprintf(stderr, "\rfill: %ld/%ld candidates, %.0f/s, %.0f s  ", done, want,
              s > 0 ? (double)done / s : 0.0, s);
      last = now;
    }
    kb__bench_sleep_ns(100000000);
  }
  for (int i = 0; i < started; i++)
    pthread_join(th[i].tid, NULL);
  if (o->progress)
    fprintf(stderr, "\r%60s\r", "");
  for (int i = 0; i < started; i++) {
    st->candidates += th[i].candidates;
    st->items += th[i].items;
    st->source_bytes += th[i].source_bytes;
    st->json_bytes += th[i].json_bytes;
    st->zstd_bytes += th[i].zstd_bytes;
    st->sampled += th[i].sampled;
    if (rc == KB_OK && th[i].err.code && th[i].err.code != KB_EINTERRUPTED)
      rc = kb_error_set(err, th[i].err.code, "fill: %s", th[i].err.msg);
  }
  if (rc == KB_OK && o->stop && *o->stop)
    rc = kb_error_set(err, KB_EINTERRUPTED, "fill interrupted");
  if (rc == KB_OK && st->candidates != want)
    rc = kb_error_set(err, KB_EINTERNAL, "fill stored %ld candidates, not %ld", st->candidates,
                      want);
  st->seconds = (double)(kb__bench_now_ns() - t0) / 1e9;
  kb_free(th);
  return rc;
}
