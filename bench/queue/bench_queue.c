/* The queue benchmark's coordinator: server, campaign, phases, kills, verification (see
 * bench_queue.h). */
#include "bench_queue.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/ladder.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "server.h"
#include "small_ladder.h"

#define GPU_BUDGET_MS 1000000000000LL /* never the limit: 1e12 ms */
#define N_TASKS 230                   /* task ids the items are spread over */
#define ENQUEUE_THREADS 4
#define READY_TIMEOUT_NS (120LL * 1000000000)
#define DRAIN_STALL_NS (60LL * 1000000000)
#define PROFILE_CALLS 1000                   /* claims, then completes, for the profiles */
#define PROFILE_BATCHES 5

static const char RET1_SCRIPT[] = "return 1";
static const char DEBIT_SCRIPT[] = "return redis.call('HINCRBY', KEYS[1], 'available', -1)";

/* State of the coordinator (main thread, or parent process of the runners). */
struct coord {
  const struct kb_bench_queue_opts *o;
  struct kb_bench_queue_result *res;
  struct kb_bench_ctl *ctl;  /* shared with the runners (owned) */
  struct kb_redis *redis;    /* the coordinator's own connection (owned) */
  struct kb_queue q;         /* the campaign, on `redis` */
  uint64_t epoch;            /* of the current control word */
  int procs;                 /* 1: runners are processes */
  pthread_t *threads;        /* runner threads (owned), when !procs */
  int n_threads;             /* started */
  pid_t *pids;               /* runner processes (owned), 0 = none, when procs */
  int n_live;                /* runner slots started: o->runners, more during a search */
  uint64_t next_item;        /* index of the next item to enqueue */
  uint64_t rng;              /* kill moments and victims */
};

static int stopped(const struct coord *c) { return c->o->stop && *c->o->stop; }

static void progress(const struct coord *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void progress(const struct coord *c, const char *fmt, ...) {
  if (!c->o->progress)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("kb-bench-queue: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* ---- server information --------------------------------------------------------------- */

/* INFO `section` into `out` (caller-owned). */
static int info(struct kb_redis *r, const char *section, struct kb_buf *out,
                struct kb_error *err) {
  const char *argv[] = {"INFO", section};
  redisReply *rep = NULL;
  int rc = kb_redis_command(r, 2, argv, NULL, 0, &rep, err);
  if (rc)
    return rc;
  kb_buf_reset(out);
  if (rep->type == REDIS_REPLY_STRING)
    rc = kb_buf_add(out, rep->str, rep->len);
  else
    rc = kb_error_set(err, KB_EREDIS, "INFO %s: unexpected reply", section);
  freeReplyObject(rep);
  return rc == KB_ENOMEM ? kb_error_set(err, rc, "out of memory") : rc;
}

/* The number after "name:" on its own line of an INFO text; -1 when absent. */
static double info_num(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    if (strncmp(p, name, n) == 0 && p[n] == ':') {
      char *end = NULL;
      double v = strtod(p + n + 1, &end);
      return end == p + n + 1 ? -1 : v;
    }
  }
  return -1;
}

/* Forks redis made so far (AOF rewrites here), or -1; `*stall_ms` (may be NULL) gets how long
 * the latest one stopped the server, in milliseconds. */
static long redis_forks(struct kb_redis *r, double *stall_ms) {
  struct kb_buf b;
  kb_buf_init(&b);
  double v = -1, us = -1;
  if (info(r, "stats", &b, NULL) == KB_OK) {
    v = info_num(b.data, "total_forks");
    us = info_num(b.data, "latest_fork_usec");
  }
  kb_buf_release(&b);
  if (stall_ms)
    *stall_ms = us >= 0 ? us / 1000 : -1;
  return (long)v;
}

/* CPU seconds of the redis main thread (all threads on servers that do not tell). */
static double redis_cpu(struct kb_redis *r) {
  struct kb_buf b;
  kb_buf_init(&b);
  double v = -1;
  if (info(r, "cpu", &b, NULL) == KB_OK) {
    double s = info_num(b.data, "used_cpu_sys_main_thread");
    double u = info_num(b.data, "used_cpu_user_main_thread");
    if (s < 0 || u < 0) {
      s = info_num(b.data, "used_cpu_sys");
      u = info_num(b.data, "used_cpu_user");
    }
    v = s >= 0 && u >= 0 ? s + u : -1;
  }
  kb_buf_release(&b);
  return v;
}

/* Busy and total jiffies of all CPUs of this machine; 0 when /proc/stat is unreadable. */
static int cpu_jiffies(unsigned long long *busy, unsigned long long *total) {
  FILE *f = fopen("/proc/stat", "r");
  if (f == NULL)
    return 0;
  unsigned long long v[8] = {0};
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                 &v[4], &v[5], &v[6], &v[7]);
  fclose(f);
  if (n < 4)
    return 0;
  *busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  *total = *busy + v[3] + v[4];
  return 1;
}

struct cmdstat {
  char name[48];
  double calls, usec;
};

/* Parses INFO commandstats into `out` (up to `max`); returns the count. */
static int commandstats(struct kb_redis *r, struct cmdstat *out, int max) {
  struct kb_buf b;
  kb_buf_init(&b);
  int n = 0;
  if (info(r, "commandstats", &b, NULL) == KB_OK) {
    for (const char *p = strstr(b.data, "cmdstat_"); p && n < max;
         p = strstr(p + 1, "cmdstat_")) {
      const char *colon = strchr(p, ':');
      const char *calls = colon ? strstr(colon, "calls=") : NULL;
      const char *usec = colon ? strstr(colon, "usec=") : NULL;
      size_t len = colon ? (size_t)(colon - p - 8) : 0;
      if (!colon || !calls || !usec || len == 0 || len >= sizeof out[n].name)
        continue;
      memcpy(out[n].name, p + 8, len);
      out[n].name[len] = '\0';
      out[n].calls = strtod(calls + 6, NULL);
      out[n].usec = strtod(usec + 5, NULL);
      n++;
    }
  }
  kb_buf_release(&b);
  return n;
}

static int cmp_cmd(const void *a, const void *b) {
  double x = ((const struct kb_bench_cmd *)a)->usec_per_op;
  double y = ((const struct kb_bench_cmd *)b)->usec_per_op;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Calls and server time of each command between two snapshots, per op, into `out`
 * (KB_BENCH_MAX_CMDS entries, most expensive first). Returns how many. */
static int profile_delta(struct kb_bench_cmd *out, const struct cmdstat *a, int na,
                         const struct cmdstat *b, int nb, double ops) {
  struct kb_bench_cmd all[128];
  int n = 0;
  for (int i = 0; i < nb && n < 128 && ops > 0; i++) {
    double calls = b[i].calls, usec = b[i].usec;
    for (int j = 0; j < na; j++)
      if (strcmp(a[j].name, b[i].name) == 0) {
        calls -= a[j].calls;
        usec -= a[j].usec;
      }
    if (calls <= 0)
      continue;
    memcpy(all[n].name, b[i].name, sizeof all[n].name);
    all[n].calls_per_op = calls / ops;
    all[n].usec_per_op = usec / ops;
    n++;
  }
  qsort(all, (size_t)n, sizeof *all, cmp_cmd);
  int kept = n < KB_BENCH_MAX_CMDS ? n : KB_BENCH_MAX_CMDS;
  memcpy(out, all, (size_t)kept * sizeof *out);
  return kept;
}

/* ---- campaign and items ---------------------------------------------------------------- */

/* Registers campaign `cid` with the queue tests' 3-tier ladder (tests/lib/small_ladder.h: 0, 10,
 * 100 ms), as their kbq_make_campaign() does, and opens it. */
static int make_campaign(struct kb_redis *r, const char *cid, long long gpu_ms, long lease_ms,
                         int max_attempts, struct kb_error *err) {
  struct kb_tier tiers[KBT_SMALL_LADDER_TIERS];
  kbt_small_ladder(tiers);
  struct kb_campaign_reg reg = {.cid = cid, .spec_json = "{}", .tiers = tiers, .n_tiers = 3,
                                .max_attempts = max_attempts, .lease_ms = lease_ms,
                                .backend = KB_BACKEND_HOST, .gpu_ms = gpu_ms, .llm_tokens = 0};
  int rc = kb_queue_register(r, &reg, "kb-bench-queue", NULL, err);
  if (rc)
    return rc;
  struct kb_queue q;
  rc = kb_queue_open(&q, r, cid, err);
  if (rc == KB_OK)
    rc = kb_queue_set_state(&q, "submitting", "running", "benchmark", "kb-bench-queue", err);
  return rc;
}

/* SCRIPT LOAD of `text` into `sha` (41 bytes). */
static int load_raw(struct kb_redis *r, const char *text, char sha[41], struct kb_error *err) {
  const char *argv[] = {"SCRIPT", "LOAD", text};
  redisReply *rep = NULL;
  int rc = kb_redis_command(r, 3, argv, NULL, 0, &rep, err);
  if (rc)
    return rc;
  if (rep->type != REDIS_REPLY_STRING || rep->len != 40)
    rc = kb_error_set(err, KB_EREDIS, "SCRIPT LOAD: unexpected reply");
  else
    snprintf(sha, 41, "%s", rep->str);
  freeReplyObject(rep);
  return rc;
}

/* Item `i`: a random-looking candidate id, one of N_TASKS tasks, tiers in turn. */
static int enqueue_item(struct kb_queue *q, uint64_t i, int *added, struct kb_error *err) {
  uint64_t s = i * 0x2545f4914f6cdd1dULL + 1;
  char cand[KB_CAND_ID_LEN + 1], task[32];
  snprintf(cand, sizeof cand, "%016llx%016llx%016llx%016llx",
           (unsigned long long)splitmix(&s), (unsigned long long)splitmix(&s),
           (unsigned long long)splitmix(&s), (unsigned long long)splitmix(&s));
  snprintf(task, sizeof task, "task-%03d", (int)(i % N_TASKS));
  int tier = (int)(i % 3);
  return kb_queue_enqueue(q, cand, task, tier, q->tiers[tier].cost_ms, (double)i, added, err);
}

struct enqueue_job {
  pthread_t tid;
  const char *addr, *cid;
  uint64_t first;   /* this job enqueues first, first + stride, ... below end */
  uint64_t end;
  uint64_t stride;
  long added;
  struct kb_error err;
};

static void *enqueue_main(void *arg) {
  struct enqueue_job *j = arg;
  struct kb_redis *r = NULL;
  struct kb_queue q;
  struct kb_redis_opts ro = {.addr = j->addr, .retry_ms = 10000};
  int rc = kb_redis_connect(&ro, &r, &j->err);
  if (rc == KB_OK)
    rc = kb_queue_open(&q, r, j->cid, &j->err);
  for (uint64_t i = j->first; rc == KB_OK && i < j->end; i += j->stride) {
    int added = 0;
    rc = enqueue_item(&q, i, &added, &j->err);
    j->added += added;
  }
  kb_redis_free(r);
  return NULL;
}

/* Enqueues `count` more items from ENQUEUE_THREADS connections at once. */
static int enqueue_bulk(struct coord *c, long count, struct kb_error *err) {
  if (count <= 0)
    return KB_OK;
  struct enqueue_job jobs[ENQUEUE_THREADS];
  memset(jobs, 0, sizeof jobs);
  int started = 0, rc = KB_OK;
  uint64_t end = c->next_item + (uint64_t)count;
  for (int t = 0; t < ENQUEUE_THREADS; t++) {
    jobs[t] = (struct enqueue_job){.addr = c->ctl->addr, .cid = c->ctl->cid,
                                   .first = c->next_item + (uint64_t)t, .end = end,
                                   .stride = ENQUEUE_THREADS};
    if (pthread_create(&jobs[t].tid, NULL, enqueue_main, &jobs[t]) != 0) {
      rc = kb_error_set(err, KB_EINTERNAL, "cannot start an enqueue thread");
      break;
    }
    started++;
  }
  for (int t = 0; t < started; t++) {
    pthread_join(jobs[t].tid, NULL);
    c->res->enqueued += jobs[t].added;
    if (rc == KB_OK && jobs[t].err.code)
      rc = kb_error_set(err, jobs[t].err.code, "enqueue: %s", jobs[t].err.msg);
  }
  c->next_item = end;
  return rc;
}

static long ready_items(const struct kb_queue_status *st) {
  long n = 0;
  for (int t = 0; t < st->n_tiers; t++)
    n += (long)st->ready[t];
  return n;
}

/* Safety net while measuring: a few items at a time when the queue runs low. The warm-up sizes
 * the queue so that this normally does nothing (from one connection it could not keep up with
 * saturated runners anyway); empty claims in the table say when it was not enough. */
static int refill(struct coord *c, long low_water, struct kb_error *err) {
  struct kb_queue_status st;
  int rc = kb_queue_status(&c->q, &st, err);
  if (rc || ready_items(&st) >= low_water)
    return rc;
  for (int k = 0; k < 50 && rc == KB_OK; k++) {
    int added = 0;
    rc = enqueue_item(&c->q, c->next_item++, &added, err);
    c->res->enqueued += added;
  }
  return rc;
}

/* ---- runners --------------------------------------------------------------------------- */

struct thread_arg {
  struct kb_bench_ctl *ctl;
  int slot;
};

static void *runner_thread(void *arg) {
  struct thread_arg *a = arg;
  kb__bench_worker_run(a->ctl, a->slot);
  return NULL;
}

/* --event-loop: the one thread that runs every slot. */
static void *loop_thread(void *arg) {
  struct thread_arg *a = arg;
  kb__bench_loop_run(a->ctl);
  return NULL;
}

/* Forks runner process `slot`; it connects by itself and inherits no usable descriptor. */
static int spawn_runner(struct coord *c, int slot, struct kb_error *err) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    return kb_error_set(err, KB_EIO, "cannot fork runner %d: %s", slot, strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    closefrom(3); /* the coordinator's connection is not ours to use */
    signal(SIGINT, SIG_IGN); /* Ctrl-C reaches the coordinator, which ends the runners */
    signal(SIGTERM, SIG_DFL);
    _exit(kb__bench_worker_run(c->ctl, slot));
  }
  c->pids[slot] = pid;
  return KB_OK;
}

/* Notices runner processes that died without being killed by us: their slot fails. */
static void check_children(struct coord *c) {
  int status = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (int i = 0; i < c->n_live; i++) {
      if (c->pids[i] != pid)
        continue;
      c->pids[i] = 0;
      struct kb_bench_slot *s = &c->ctl->slots[i];
      if (!atomic_load(&s->failed)) {
        snprintf(s->error, sizeof s->error, "runner process %d ended unexpectedly (%s %d)",
                 (int)pid, WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        atomic_store(&s->failed, 1);
      }
    }
  }
}

/* Starts runner slots [c->n_live, n): processes (o->runners of them, once), or threads, which
 * a search adds to as it grows. `args` has a place per slot. */
static int start_runners(struct coord *c, struct thread_arg *args, int n, struct kb_error *err) {
  if (c->procs) {
    c->pids = kb_calloc((size_t)n, sizeof *c->pids);
    if (c->pids == NULL)
      return kb_error_set(err, KB_ENOMEM, "out of memory");
    c->n_live = n;
    for (int i = 0; i < n; i++) {
      int rc = spawn_runner(c, i, err);
      if (rc)
        return rc;
    }
    return KB_OK;
  }
  if (c->threads == NULL)
    c->threads = kb_calloc((size_t)c->ctl->nslots, sizeof *c->threads);
  if (c->threads == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  if (c->ctl->event_loop) { /* one thread for every slot, the first time */
    if (c->n_threads == 0) {
      args[0] = (struct thread_arg){c->ctl, 0};
      if (pthread_create(&c->threads[0], NULL, loop_thread, &args[0]) != 0)
        return kb_error_set(err, KB_EIO, "cannot start the event loop's thread");
      c->n_threads = 1;
    }
    if (n > c->n_live)
      c->n_live = n;
    return KB_OK;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  int rc = KB_OK;
  for (int i = c->n_threads; i < n && rc == KB_OK; i++) {
    args[i] = (struct thread_arg){c->ctl, i};
    if (pthread_create(&c->threads[i], &attr, runner_thread, &args[i]) != 0)
      rc = kb_error_set(err, KB_EIO, "cannot start runner thread %d of %d", i + 1, n);
    else
      c->n_live = ++c->n_threads;
  }
  pthread_attr_destroy(&attr);
  return rc;
}

/* Ends every runner: EXIT for all, then joins the threads, or waits for the processes (killing
 * any that do not leave within 10 s). */
static void stop_runners(struct coord *c) {
  if (c->ctl == NULL)
    return;
  c->epoch++;
  kb__bench_ctl_publish(c->ctl, kb_bench_word(c->epoch, KB_BENCH_EXIT));
  for (int i = 0; i < c->n_threads; i++)
    pthread_join(c->threads[i], NULL);
  c->n_threads = 0;
  if (c->pids == NULL)
    return;
  int64_t deadline = kb__bench_now_ns() + 10LL * 1000000000;
  for (int i = 0; i < c->n_live; i++) {
    while (c->pids[i] > 0) {
      if (waitpid(c->pids[i], NULL, WNOHANG) == c->pids[i]) {
        c->pids[i] = 0;
      } else if (kb__bench_now_ns() > deadline) {
        kill(c->pids[i], SIGKILL);
        waitpid(c->pids[i], NULL, 0);
        c->pids[i] = 0;
      } else {
        kb__bench_sleep_ns(1000000);
      }
    }
  }
}

/* First error of any runner slot, as this function's error. */
static int runner_error(struct coord *c, struct kb_error *err) {
  for (int i = 0; i < c->n_live; i++)
    if (atomic_load(&c->ctl->slots[i].failed))
      return kb_error_set(err, KB_EIO, "runner %d: %s", i, c->ctl->slots[i].error);
  return KB_OK;
}

/* Moves every runner to `phase` and waits until each acknowledged it, i.e. finished whatever it
 * was doing in the previous phase. */
static int transition(struct coord *c, int phase, struct kb_error *err) {
  c->epoch++;
  uint64_t word = kb_bench_word(c->epoch, phase);
  kb__bench_ctl_publish(c->ctl, word);
  int64_t deadline = kb__bench_now_ns() + READY_TIMEOUT_NS;
  for (;;) {
    int pending = 0;
    if (c->procs)
      check_children(c);
    for (int i = 0; i < c->n_live; i++) {
      if (c->procs && c->pids[i] == 0)
        continue;
      if (atomic_load(&c->ctl->slots[i].ack) != word)
        pending++;
    }
    if (pending == 0)
      return KB_OK;
    if (kb__bench_now_ns() > deadline)
      return kb_error_set(err, KB_ETIMEOUT, "%d runners did not reach the next phase within "
                          "120 s", pending);
    kb__bench_sleep_ns(200000);
  }
}

static uint64_t phase_ops(const struct coord *c, int phase) {
  uint64_t n = 0;
  for (int i = 0; i < c->n_live; i++)
    n += atomic_load(&c->ctl->slots[i].ops[phase]);
  return n;
}

static double self_cpu(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return -1;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

struct phase_clock {
  int64_t t0;
  double cpu0;
  double self0;
  long forks0;
  unsigned long long busy0, total0;
  int have_jiffies;
};

static void phase_begin(struct coord *c, struct phase_clock *pc) {
  pc->cpu0 = redis_cpu(c->redis);
  pc->have_jiffies = cpu_jiffies(&pc->busy0, &pc->total0);
  pc->self0 = c->procs ? -1 : self_cpu();
  pc->forks0 = redis_forks(c->redis, NULL);
  pc->t0 = kb__bench_now_ns();
}

static void phase_end(struct coord *c, const struct phase_clock *pc, int phase,
                      struct kb_bench_phase_stats *ps) {
  ps->wall_s = (double)(kb__bench_now_ns() - pc->t0) / 1e9;
  ps->ops = phase_ops(c, phase);
  ps->per_s = ps->wall_s > 0 ? (double)ps->ops / ps->wall_s : 0;
  double cpu1 = redis_cpu(c->redis);
  ps->redis_cpu_s = pc->cpu0 >= 0 && cpu1 >= 0 ? cpu1 - pc->cpu0 : -1;
  double self1 = pc->self0 >= 0 ? self_cpu() : -1;
  ps->client_cpu_s = self1 >= 0 ? self1 - pc->self0 : -1;
  double stall = -1;
  long forks1 = pc->forks0 >= 0 ? redis_forks(c->redis, &stall) : -1;
  ps->forks = forks1 >= 0 ? forks1 - pc->forks0 : -1;
  ps->fork_ms = ps->forks > 0 ? stall : 0;
  unsigned long long busy1, total1;
  ps->machine_busy = -1;
  if (pc->have_jiffies && cpu_jiffies(&busy1, &total1) && total1 > pc->total0)
    ps->machine_busy = (double)(busy1 - pc->busy0) / (double)(total1 - pc->total0);
}

/* Waits `seconds`, watching for a stop request and dead runners. */
static int hold(struct coord *c, double seconds, struct kb_error *err) {
  int64_t end = kb__bench_now_ns() + (int64_t)(seconds * 1e9);
  while (kb__bench_now_ns() < end) {
    if (stopped(c))
      return kb_error_set(err, KB_EINTERRUPTED, "interrupted");
    if (c->procs)
      check_children(c);
    kb__bench_sleep_ns(5000000);
  }
  return KB_OK;
}

/* A raw-script phase: every runner calls the script for o->seconds. */
static int raw_phase(struct coord *c, int phase, struct kb_bench_phase_stats *ps,
                     struct kb_error *err) {
  struct phase_clock pc;
  phase_begin(c, &pc);
  int rc = transition(c, phase, err);
  if (rc == KB_OK)
    rc = hold(c, c->o->seconds, err);
  if (rc == KB_OK)
    rc = transition(c, KB_BENCH_IDLE, err);
  phase_end(c, &pc, phase, ps);
  return rc;
}

/* Warm-up: cycles for about a second (less when the queue runs low), to size the queue. */
static int warmup(struct coord *c, long initial, struct kb_error *err) {
  double warm_s = c->o->seconds / 4 < 1.0 ? c->o->seconds / 4 : 1.0;
  if (warm_s < 0.2)
    warm_s = 0.2;
  struct phase_clock pc;
  phase_begin(c, &pc);
  int rc = transition(c, KB_BENCH_WARMUP, err);
  int64_t end = pc.t0 + (int64_t)(warm_s * 1e9);
  while (rc == KB_OK && kb__bench_now_ns() < end) {
    struct kb_queue_status st;
    rc = kb_queue_status(&c->q, &st, err);
    if (rc == KB_OK && ready_items(&st) < initial / 4)
      break;
    if (rc == KB_OK && stopped(c))
      rc = kb_error_set(err, KB_EINTERRUPTED, "interrupted");
    if (c->procs)
      check_children(c);
    kb__bench_sleep_ns(20000000);
  }
  if (rc == KB_OK)
    rc = transition(c, KB_BENCH_IDLE, err);
  phase_end(c, &pc, KB_BENCH_WARMUP, &c->res->warmup);
  return rc;
}

/* Kills runner `slot` with SIGKILL and starts a new process in its place. */
static int kill_and_respawn(struct coord *c, int slot, struct kb_error *err) {
  if (c->pids[slot] <= 0)
    return KB_OK;
  kill(c->pids[slot], SIGKILL);
  waitpid(c->pids[slot], NULL, 0);
  c->pids[slot] = 0;
  c->res->kills++;
  return spawn_runner(c, slot, err);
}

static int reap(struct coord *c, struct kb_error *err) {
  int requeued = 0, dead = 0;
  int rc = kb_queue_reap(&c->q, 1000, "kb-bench-queue", &requeued, &dead, err);
  c->res->reaped += requeued;
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* The measured phase: cycles for o->seconds; with kills, kill -9 runners at random moments. */
static int cycles_phase(struct coord *c, struct kb_error *err) {
  const struct kb_bench_queue_opts *o = c->o;
  double *kill_at = NULL;
  if (o->kills > 0) {
    kill_at = kb_calloc((size_t)o->kills, sizeof *kill_at);
    if (kill_at == NULL)
      return kb_error_set(err, KB_ENOMEM, "out of memory");
    for (int k = 0; k < o->kills; k++)
      kill_at[k] = (double)(splitmix(&c->rng) % 1000000) / 1e6 * o->seconds;
    qsort(kill_at, (size_t)o->kills, sizeof *kill_at, cmp_double);
  }
  struct cmdstat before[128], after[128];
  int nb = commandstats(c->redis, before, 128);
  struct phase_clock pc;
  phase_begin(c, &pc);
  int rc = transition(c, KB_BENCH_CYCLES, err);
  long low_water = (8L + c->ctl->batch) * o->runners;
  if (low_water < 2000)
    low_water = 2000;
  int next_kill = 0;
  int64_t last_reap = pc.t0, last_refill = pc.t0;
  int64_t end = pc.t0 + (int64_t)(o->seconds * 1e9);
  while (rc == KB_OK) {
    int64_t now = kb__bench_now_ns();
    if (now >= end)
      break;
    if (stopped(c)) {
      rc = kb_error_set(err, KB_EINTERRUPTED, "interrupted");
      break;
    }
    if (c->procs)
      check_children(c);
    while (rc == KB_OK && next_kill < o->kills &&
           (double)(now - pc.t0) / 1e9 >= kill_at[next_kill]) {
      int victim = (int)(splitmix(&c->rng) % (uint64_t)o->runners);
      rc = kill_and_respawn(c, victim, err);
      next_kill++;
    }
    if (rc == KB_OK && o->kills > 0 && now - last_reap >= 200000000) {
      rc = reap(c, err);
      last_reap = now;
    }
    if (rc == KB_OK && now - last_refill >= 100000000) {
      rc = refill(c, low_water, err);
      last_refill = now;
    }
    kb__bench_sleep_ns(2000000);
  }
  /* the rate counts what the runners did while killed and respawned, not the drain */
  if (rc == KB_OK)
    rc = transition(c, o->kills > 0 ? KB_BENCH_DRAIN : KB_BENCH_IDLE, err);
  phase_end(c, &pc, KB_BENCH_CYCLES, &c->res->cycles);
  int na = commandstats(c->redis, after, 128);
  c->res->n_cmds = profile_delta(c->res->cmds, before, nb, after, na, (double)c->res->cycles.ops);
  kb_free(kill_at);
  return rc;
}

/* --kills: the survivors finish every item; the reaper returns the lost leases. */
static int drain(struct coord *c, struct kb_error *err) {
  int64_t t0 = kb__bench_now_ns(), last_progress = t0;
  int64_t last_done = -1;
  int rc = KB_OK;
  for (;;) {
    if (stopped(c))
      return kb_error_set(err, KB_EINTERRUPTED, "interrupted");
    check_children(c);
    rc = reap(c, err);
    struct kb_queue_status st;
    if (rc == KB_OK)
      rc = kb_queue_status(&c->q, &st, err);
    if (rc)
      return rc;
    if (st.open == 0 && st.leased == 0)
      break;
    int64_t now = kb__bench_now_ns();
    if (st.done != last_done) {
      last_done = st.done;
      last_progress = now;
    } else if (now - last_progress > DRAIN_STALL_NS) {
      return kb_error_set(err, KB_ETIMEOUT, "drain stalled: %lld items open, %lld leased, "
                          "none finished for 60 s", (long long)st.open, (long long)st.leased);
    }
    kb__bench_sleep_ns(100000000);
  }
  c->res->drain_s = (double)(kb__bench_now_ns() - t0) / 1e9;
  return transition(c, KB_BENCH_IDLE, err);
}

/* ---- each script alone ------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* Keeps in `p` the commands of the batch of `calls` calls since `before` when its server time
 * per call is the lowest so far: the batch least disturbed by anything else on the machine. */
static void keep_batch(struct coord *c, struct kb_bench_script_profile *p,
                       const struct cmdstat *before, int nb, int calls) {
  struct cmdstat after[128];
  int na = commandstats(c->redis, after, 128);
  struct kb_bench_cmd cmds[KB_BENCH_MAX_CMDS];
  int n = profile_delta(cmds, before, nb, after, na, (double)calls);
  double usec = -1;
  for (int i = 0; i < n; i++)
    if (strcmp(cmds[i].name, "evalsha") == 0)
      usec = cmds[i].usec_per_op;
  if (usec >= 0 && (p->n_cmds == 0 || usec < p->usec)) {
    memcpy(p->cmds, cmds, (size_t)n * sizeof *cmds);
    p->n_cmds = n;
    p->usec = usec;
  }
}

/* Caller-side latency percentiles of all `n` calls. */
static void profile_latency(struct kb_bench_script_profile *p, int64_t *lat, int n) {
  p->n = n;
  qsort(lat, (size_t)n, sizeof *lat, cmp_i64);
  if (n > 0) {
    p->p50_ms = (double)lat[(n - 1) / 2] / 1e6;
    p->p99_ms = (double)lat[(size_t)((double)n * 0.99 + 0.999999) - 1] / 1e6;
  }
}

/* Waits (up to 60 s) until redis is not rewriting its AOF: the rewrite child competes for the
 * CPUs and would inflate the profiles. */
static void wait_rewrite(struct coord *c) {
  for (int i = 0; i < 600; i++) {
    struct kb_buf b;
    kb_buf_init(&b);
    double busy = -1;
    if (info(c->redis, "persistence", &b, NULL) == KB_OK)
      busy = info_num(b.data, "aof_rewrite_in_progress");
    kb_buf_release(&b);
    if (busy != 1)
      return;
    kb__bench_sleep_ns(100000000);
  }
}

/* One profiled call, the `i`-th (see profile_batches). */
typedef int (*profiled_call)(struct coord *c, int i, void *ctx, struct kb_error *err);

/* Makes calls i = 0 .. n-1 of `call` in batches of `batch`, the latency of each in lat[i], the
 * server's commands of the least disturbed batch in `p` (keep_batch), then the latencies
 * (profile_latency). Stops at the first error, or with `keep_going` makes every call and
 * returns the first error. `*made` gets the number of calls made (the failed one included). */
static int profile_batches(struct coord *c, struct kb_bench_script_profile *p, int n, int batch,
                           int64_t *lat, int keep_going, profiled_call call, void *ctx,
                           int *made, struct kb_error *err) {
  struct cmdstat before[128];
  int rc = KB_OK, i = 0;
  while ((rc == KB_OK || keep_going) && i < n) {
    int nb = commandstats(c->redis, before, 128), from = i;
    for (; (rc == KB_OK || keep_going) && i < n && i - from < batch; i++) {
      int64_t t0 = kb__bench_now_ns();
      int crc = call(c, i, ctx, err);
      lat[i] = kb__bench_now_ns() - t0;
      if (rc == KB_OK)
        rc = crc;
    }
    if (rc == KB_OK)
      keep_batch(c, p, before, nb, i - from);
  }
  if (rc == KB_OK)
    profile_latency(p, lat, i);
  *made = i;
  return rc;
}

static int call_fused(struct coord *c, int i, void *ctx, struct kb_error *err) {
  struct kb_claim *cl = ctx;
  char json[64];
  snprintf(json, sizeof json, "{\"profile\":%d}", i);
  return kb_queue_complete_and_claim(&c->q, cl, cl->cost_ms / 2, json, "bench-profile", 0, -1,
                                     NULL, cl, NULL, err);
}

static int call_claim(struct coord *c, int i, void *ctx, struct kb_error *err) {
  struct kb_claim *claims = ctx;
  return kb_queue_claim(&c->q, "bench-profile", 0, -1, &claims[i], NULL, err);
}

static int call_complete(struct coord *c, int i, void *ctx, struct kb_error *err) {
  struct kb_claim *claims = ctx;
  char json[64];
  snprintf(json, sizeof json, "{\"profile\":%d}", i);
  return kb_queue_complete(&c->q, &claims[i], claims[i].cost_ms / 2, json, "bench-profile", NULL,
                           err);
}

/* `n` calls of kb_queue_complete_and_claim in a row from the coordinator's connection (after
 * one claim; the last item is completed alone): what a runner's one call per item costs the
 * server with no queueing. `lat` has room for `n` latencies. */
static int fused_profile(struct coord *c, int n, int64_t *lat, struct kb_error *err) {
  struct kb_queue_status st;
  int rc = kb_queue_status(&c->q, &st, err);
  if (rc == KB_OK && ready_items(&st) < n + 1)
    rc = enqueue_bulk(c, n + 1 - ready_items(&st), err);
  struct kb_claim cl;
  if (rc == KB_OK)
    rc = kb_queue_claim(&c->q, "bench-profile", 0, -1, &cl, NULL, err);
  if (rc)
    return rc;
  wait_rewrite(c);
  int batch = n / PROFILE_BATCHES > 0 ? n / PROFILE_BATCHES : 1, made = 0;
  rc = profile_batches(c, &c->res->fused, n, batch, lat, 0, call_fused, &cl, &made, err);
  if (rc == KB_OK)
    rc = kb_queue_complete(&c->q, &cl, cl.cost_ms / 2, "{}", "bench-profile", NULL, err);
  return rc;
}

/* What call_batch holds between calls. */
struct batch_ctx {
  struct kb_claim held[KB_QUEUE_BATCH_MAX];
  int n, k;
};

static int call_batch(struct coord *c, int i, void *ctx, struct kb_error *err) {
  struct batch_ctx *b = ctx;
  char json[KB_QUEUE_BATCH_MAX][64];
  struct kb_queue_done d[KB_QUEUE_BATCH_MAX];
  for (int j = 0; j < b->n; j++) {
    snprintf(json[j], sizeof json[j], "{\"profile\":%d}", i * b->k + j);
    d[j] = (struct kb_queue_done){&b->held[j], b->held[j].cost_ms / 2, json[j]};
  }
  int rc = kb_queue_cycle_batch(&c->q, d, b->n, "bench-profile", 0, -1, b->k, b->held, &b->n,
                                NULL, NULL, err);
  return rc == KB_OK && b->n < b->k ? kb_error_set(err, KB_EEMPTY, "batch profile: queue ran dry")
                                    : rc;
}

/* `n` items through kb_queue_cycle_batch with K = o->batch from the coordinator's connection
 * (n / K calls after one claim of K; the last K are completed alone): what one batch call costs
 * the server with no queueing, per call (the table divides by K). */
static int batch_profile(struct coord *c, int n, int64_t *lat, struct kb_error *err) {
  struct batch_ctx b = {.k = c->ctl->batch};
  int calls = n / b.k > PROFILE_BATCHES ? n / b.k : PROFILE_BATCHES;
  struct kb_queue_status st;
  int rc = kb_queue_status(&c->q, &st, err);
  long want = (long)(calls + 1) * b.k;
  if (rc == KB_OK && ready_items(&st) < want)
    rc = enqueue_bulk(c, want - ready_items(&st), err);
  if (rc == KB_OK)
    rc = kb_queue_cycle_batch(&c->q, NULL, 0, "bench-profile", 0, -1, b.k, b.held, &b.n, NULL,
                              NULL, err);
  if (rc)
    return rc;
  wait_rewrite(c);
  int made = 0;
  rc = profile_batches(c, &c->res->batched, calls, calls / PROFILE_BATCHES, lat, 0, call_batch,
                       &b, &made, err);
  struct kb_queue_done d[KB_QUEUE_BATCH_MAX];
  for (int j = 0; j < b.n; j++)
    d[j] = (struct kb_queue_done){&b.held[j], b.held[j].cost_ms / 2, "{}"};
  int r2 = kb_queue_cycle_batch(&c->q, d, b.n, "bench-profile", 0, -1, 0, NULL, NULL, NULL, NULL,
                                err);
  return rc ? rc : r2;
}

/* Claims `n` items one after another from the coordinator's connection after the runners left,
 * then completes them: what each script costs the server on its own, with no queueing. Server
 * time is taken from the fastest of PROFILE_BATCHES batches, latencies from all calls. The
 * items are enqueued first when too few are ready; all of them end done. */
static int script_profiles(struct coord *c, int n, struct kb_error *err) {
  struct kb_queue_status st;
  int rc = kb_queue_status(&c->q, &st, err);
  if (rc == KB_OK && ready_items(&st) < n)
    rc = enqueue_bulk(c, n - ready_items(&st), err);
  if (rc)
    return rc;
  struct kb_claim *claims = kb_calloc((size_t)n, sizeof *claims);
  int64_t *lat = kb_calloc((size_t)n, sizeof *lat);
  if (claims == NULL || lat == NULL) {
    kb_free(claims);
    kb_free(lat);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  wait_rewrite(c);
  int batch = n / PROFILE_BATCHES > 0 ? n / PROFILE_BATCHES : 1, got = 0, done = 0;
  rc = profile_batches(c, &c->res->claim, n, batch, lat, 0, call_claim, claims, &got, err);
  if (rc)
    got--; /* the claim that failed holds nothing */
  /* complete whatever was claimed, even after an error, so nothing stays held */
  int crc = profile_batches(c, &c->res->complete, got, batch, lat, 1, call_complete, claims,
                            &done, err);
  if (rc == KB_OK)
    rc = crc;
  if (rc == KB_OK)
    rc = fused_profile(c, n, lat, err);
  if (rc == KB_OK && c->ctl->batch > 1)
    rc = batch_profile(c, n, lat, err);
  kb_free(claims);
  kb_free(lat);
  return rc;
}

/* ---- latencies ------------------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* Nearest-rank percentile `p` (0..1) of sorted `v`, in milliseconds. */
static double pct_ms(const uint32_t *v, size_t n, double p) {
  if (n == 0)
    return 0;
  size_t rank = (size_t)(p * (double)n + 0.999999);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return (double)v[rank - 1] / 1e6;
}

/* Latency percentiles over the samples of slots [0, n). */
struct lat {
  double claim[4];     /* p50, p90, p99, max, milliseconds */
  double complete[2];  /* p50, p99 */
  uint64_t samples;    /* calls offered to the reservoirs */
  uint64_t kept;       /* samples kept */
};

static int slot_latencies(struct coord *c, int n_slots, struct lat *out, struct kb_error *err) {
  memset(out, 0, sizeof *out);
  size_t n = 0;
  for (int i = 0; i < n_slots; i++) {
    uint64_t seen = atomic_load(&c->ctl->slots[i].lat_seen);
    out->samples += seen;
    n += seen < KB_BENCH_LAT_CAP ? seen : KB_BENCH_LAT_CAP;
  }
  out->kept = n;
  if (n == 0)
    return KB_OK;
  uint32_t *claim = kb_calloc(n, sizeof *claim);
  uint32_t *complete = kb_calloc(n, sizeof *complete);
  if (claim == NULL || complete == NULL) {
    kb_free(claim);
    kb_free(complete);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  size_t k = 0;
  for (int i = 0; i < n_slots; i++) {
    const struct kb_bench_slot *s = &c->ctl->slots[i];
    uint64_t seen = atomic_load(&s->lat_seen);
    size_t m = seen < KB_BENCH_LAT_CAP ? (size_t)seen : KB_BENCH_LAT_CAP;
    memcpy(claim + k, s->claim_ns, m * sizeof *claim);
    memcpy(complete + k, s->complete_ns, m * sizeof *complete);
    k += m;
  }
  qsort(claim, n, sizeof *claim, cmp_u32);
  qsort(complete, n, sizeof *complete, cmp_u32);
  static const double P[4] = {0.50, 0.90, 0.99, 1.0};
  for (int i = 0; i < 4; i++)
    out->claim[i] = pct_ms(claim, n, P[i]);
  out->complete[0] = pct_ms(complete, n, 0.50);
  out->complete[1] = pct_ms(complete, n, 0.99);
  kb_free(claim);
  kb_free(complete);
  return KB_OK;
}

/* The cycles phase's latencies into the result. */
static int latencies(struct coord *c, struct kb_error *err) {
  struct lat l;
  int rc = slot_latencies(c, c->n_live, &l, err);
  struct kb_bench_queue_result *r = c->res;
  r->samples = l.samples;
  r->kept = l.kept;
  r->claim_p50_ms = l.claim[0];
  r->claim_p90_ms = l.claim[1];
  r->claim_p99_ms = l.claim[2];
  r->claim_max_ms = l.claim[3];
  r->complete_p50_ms = l.complete[0];
  r->complete_p99_ms = l.complete[1];
  return rc;
}

/* ---- fill ------------------------------------------------------------------------------ */

static long long used_memory(struct kb_redis *r) {
  struct kb_buf b;
  kb_buf_init(&b);
  double v = -1;
  if (info(r, "memory", &b, NULL) == KB_OK)
    v = info_num(b.data, "used_memory");
  kb_buf_release(&b);
  return (long long)v;
}

static long long memory_usage(struct kb_redis *r, const char *key) {
  const char *argv[] = {"MEMORY", "USAGE", key, "SAMPLES", "0"};
  redisReply *rep = NULL;
  long long v = 0;
  if (kb_redis_command(r, 5, argv, NULL, 0, &rep, NULL) == KB_OK) {
    if (rep->type == REDIS_REPLY_INTEGER)
      v = rep->integer;
    freeReplyObject(rep);
  }
  return v;
}

/* Where the fill's memory went: a sample of candidate keys, the items hash, the queues. */
static void memory_breakdown(struct coord *c) {
  char pattern[160], key[160];
  kb_queue_key(&c->q, pattern, sizeof pattern, KB_KEY_CAND_ANY);
  const char *argv[] = {"SCAN", "0", "MATCH", pattern, "COUNT", "20000"};
  redisReply *rep = NULL;
  if (kb_redis_command(c->redis, 6, argv, NULL, 0, &rep, NULL) == KB_OK) {
    double sum = 0;
    long n = 0;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[1]->type == REDIS_REPLY_ARRAY) {
      const redisReply *keys = rep->element[1];
      for (size_t i = 0; i < keys->elements && n < 500; i++, n++)
        sum += (double)memory_usage(c->redis, keys->element[i]->str);
    }
    c->res->cand_key_bytes = n ? sum / (double)n : 0;
    freeReplyObject(rep);
  }
  kb_queue_key(&c->q, key, sizeof key, KB_KEY_ITEMS);
  c->res->items_hash_bytes = memory_usage(c->redis, key);
  for (int t = 0; t < c->q.n_tiers; t++) {
    char suffix[16];
    snprintf(suffix, sizeof suffix, KB_KEY_READY_FMT, t);
    kb_queue_key(&c->q, key, sizeof key, suffix);
    c->res->queues_bytes += memory_usage(c->redis, key);
  }
}

static int run_fill(struct coord *c, struct kb_error *err) {
  const struct kb_bench_queue_opts *o = c->o;
  c->res->used_memory_before = used_memory(c->redis);
  progress(c, "fill: %d tasks x %d candidates", o->tasks, o->per_task);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  struct kb_bench_fill_opts fo = {.addr = c->ctl->addr, .cid = c->ctl->cid, .tasks = o->tasks,
                                  .per_task = o->per_task,
                                  .threads = cpus > 1 ? (int)cpus + 1 : 2,
                                  .progress = o->progress, .stop = o->stop};
  int rc = kb__bench_fill(&fo, &c->res->fill, err);
  if (rc)
    return rc;
  c->res->enqueued += c->res->fill.items;
  c->res->used_memory = used_memory(c->redis);
  c->res->bytes_per_candidate =
      c->res->fill.candidates ? (double)c->res->used_memory / (double)c->res->fill.candidates
                              : 0;
  memory_breakdown(c);
  progress(c, "fill: %ld candidates in %.0f s, used_memory %lld bytes", c->res->fill.candidates,
           c->res->fill.seconds, c->res->used_memory);
  return KB_OK;
}

/* ---- the run --------------------------------------------------------------------------- */

static int check_opts(const struct kb_bench_queue_opts *o, struct kb_error *err) {
  if (o->runners < 1 || o->runners > KB_BENCH_MAX_RUNNERS)
    return kb_error_set(err, KB_EINVAL, "runners must be 1..%d", KB_BENCH_MAX_RUNNERS);
  if (!(o->seconds >= 0.2 && o->seconds <= 3600))
    return kb_error_set(err, KB_EINVAL, "seconds must be 0.2..3600");
  if (o->batch < 0 || o->batch > KB_QUEUE_BATCH_MAX)
    return kb_error_set(err, KB_EINVAL, "batch must be 1..%d", KB_QUEUE_BATCH_MAX);
  if (o->batch > 1 && o->two_call)
    return kb_error_set(err, KB_EINVAL, "--batch and --two-call do not go together");
  if (o->search && (o->kills > 0 || !(o->p99_ms > 0)))
    return kb_error_set(err, KB_EINVAL, "--search needs runner threads (no --kills) and a "
                        "positive p99 bound");
  if (o->event_loop && (o->kills > 0 || o->two_call || o->fill))
    return kb_error_set(err, KB_EINVAL, "--event-loop runs runner threads' cycles: not with "
                        "--kills, --two-call or --fill");
  if (o->items < 0 || o->kills < 0 || o->eval_ms < 0)
    return kb_error_set(err, KB_EINVAL, "items, kills and eval-ms must not be negative");
  if (o->fill && (o->tasks < 1 || o->per_task < 1))
    return kb_error_set(err, KB_EINVAL, "tasks and per-task must be positive");
  return KB_OK;
}

/* Phase 1: the campaign in Redis (the bench's own server unless o->redis), the shared control
 * block, the raw scripts, the first items. `*initial` gets the number of items enqueued. */
static int set_up(struct coord *c, struct kb_bench_server *server, long *initial,
                  struct kb_error *err) {
  const struct kb_bench_queue_opts *o = c->o;
  struct kb_bench_queue_result *res = c->res;
  const char *addr = o->redis;
  int rc;
  if (addr == NULL) {
    progress(c, "starting redis-server");
    rc = kb__bench_server_start(server, err);
    if (rc)
      return rc;
    addr = server->addr;
  }
  c->ctl = kb__bench_ctl_new(o->search ? KB_BENCH_MAX_RUNNERS : o->runners);
  if (c->ctl == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  snprintf(c->ctl->addr, sizeof c->ctl->addr, "%s", addr);
  snprintf(res->cid, sizeof res->cid, "bench-%ld-%lld", (long)getpid(),
           (long long)(kb__bench_now_ns() / 1000000) % 100000000);
  snprintf(c->ctl->cid, sizeof c->ctl->cid, "%s", res->cid);
  kb_key(c->ctl->debit_key, sizeof c->ctl->debit_key, res->cid, KB_KEY_BENCH_DEBIT);
  c->ctl->eval_ns = (long)(o->eval_ms * 1e6);
  c->ctl->two_call = o->two_call;
  c->ctl->batch = o->batch > 1 ? o->batch : 1;
  c->ctl->event_loop = o->event_loop;
  atomic_store(&c->ctl->active, o->runners);
  struct kb_redis_opts ro = {.addr = addr, .retry_ms = 10000};
  rc = kb_redis_connect(&ro, &c->redis, err);
  if (rc == KB_OK)
    rc = make_campaign(c->redis, res->cid, GPU_BUDGET_MS, o->kills > 0 ? 2000 : 60000,
                       o->kills > 0 ? 1000 : 3, err);
  if (rc == KB_OK)
    rc = kb_queue_open(&c->q, c->redis, res->cid, err);
  if (rc == KB_OK)
    rc = load_raw(c->redis, RET1_SCRIPT, c->ctl->sha_ret1, err);
  if (rc == KB_OK)
    rc = load_raw(c->redis, DEBIT_SCRIPT, c->ctl->sha_debit, err);
  if (rc == KB_OK && o->fill)
    rc = run_fill(c, err);
  *initial = o->items ? o->items : 20000L + 50L * o->runners;
  if (rc == KB_OK && !o->fill) {
    progress(c, "enqueueing %ld items", *initial);
    rc = enqueue_bulk(c, *initial, err);
  }
  return rc;
}

/* ---- the runner-count search ------------------------------------------------------------ */

/* One search step: `n` runners cycle for a ramp (their first batch, drawn offsets: not
 * measured) and then o->seconds; fills `st`. Items enough for the step are enqueued first. */
static int search_step(struct coord *c, struct thread_arg *args, int n,
                       struct kb_bench_search_step *st, struct kb_error *err) {
  const struct kb_bench_queue_opts *o = c->o;
  int k = c->ctl->batch;
  double cycle_s = o->eval_ms / 1000.0 * k * 1.5; /* a runner's longest round */
  double ramp_s = cycle_s + 0.5;
  memset(st, 0, sizeof *st);
  st->runners = n;
  int rc = start_runners(c, args, n, err);
  struct kb_queue_status qs;
  if (rc == KB_OK)
    rc = kb_queue_status(&c->q, &qs, err);
  if (rc == KB_OK) {
    double rate = o->eval_ms > 0 ? n * 1000.0 / o->eval_ms : c->res->cycles.per_s;
    double need = rate * (ramp_s + o->seconds + cycle_s) * 1.3 + 2.0 * k * n -
                  (double)ready_items(&qs);
    if (need > 0) {
      progress(c, "search: enqueueing %.0f items for %d runners", need, n);
      rc = enqueue_bulk(c, (long)need, err);
    }
  }
  if (rc)
    return rc;
  for (int i = 0; i < n; i++)
    atomic_store(&c->ctl->slots[i].lat_seen, 0);
  uint64_t calls1 = 0;
  atomic_store(&c->ctl->active, n);
  int64_t t_meas = kb__bench_now_ns() + (int64_t)(ramp_s * 1e9);
  atomic_store(&c->ctl->record_from_ns, t_meas);
  progress(c, "search: %d runners for %.1f s after a %.1f s ramp", n, o->seconds, ramp_s);
  rc = transition(c, KB_BENCH_CYCLES, err);
  if (rc == KB_OK)
    rc = hold(c, ramp_s, err);
  uint64_t ops_m = phase_ops(c, KB_BENCH_CYCLES);
  for (int i = 0; i < c->n_live; i++)
    calls1 += atomic_load(&c->ctl->slots[i].calls[KB_BENCH_CYCLES]);
  int64_t t0 = kb__bench_now_ns();
  int64_t end = t0 + (int64_t)(o->seconds * 1e9);
  while (rc == KB_OK && kb__bench_now_ns() < end) {
    rc = hold(c, 0.1, err);
    if (rc == KB_OK)
      rc = refill(c, 2L * k * n, err);
  }
  double wall = (double)(kb__bench_now_ns() - t0) / 1e9;
  uint64_t ops1 = phase_ops(c, KB_BENCH_CYCLES), calls2 = 0;
  for (int i = 0; i < c->n_live; i++)
    calls2 += atomic_load(&c->ctl->slots[i].calls[KB_BENCH_CYCLES]);
  if (rc == KB_OK)
    rc = transition(c, KB_BENCH_IDLE, err);
  atomic_store(&c->ctl->record_from_ns, 0);
  st->items_per_s = wall > 0 ? (double)(ops1 - ops_m) / wall : 0;
  st->calls_per_s = wall > 0 ? (double)(calls2 - calls1) / wall : 0;
  struct lat l;
  if (rc == KB_OK)
    rc = slot_latencies(c, n, &l, err);
  if (rc == KB_OK) {
    st->p50_ms = l.claim[0];
    st->p99_ms = l.claim[2];
    st->samples = l.samples;
    st->pass = l.samples > 0 && st->p99_ms <= o->p99_ms;
  }
  progress(c, "search: %d runners: p99 %.3f ms, %.0f items/s: %s", n, st->p99_ms,
           st->items_per_s, st->pass ? "pass" : "over");
  return rc;
}

/* The largest runner count whose claim p99 stays within o->p99_ms: from o->runners doubling
 * until one fails (or KB_BENCH_MAX_RUNNERS passes), then halving the interval between the
 * largest pass and the smallest failure until it is within an eighth of the pass (at most
 * KB_BENCH_MAX_STEPS steps in all). */
static int search(struct coord *c, struct thread_arg *args, struct kb_error *err) {
  struct kb_bench_queue_result *res = c->res;
  int lo = 0, hi = 0, n = c->o->runners, rc = KB_OK;
  while (rc == KB_OK && res->n_steps < KB_BENCH_MAX_STEPS) {
    struct kb_bench_search_step *st = &res->steps[res->n_steps];
    rc = search_step(c, args, n, st, err);
    if (rc)
      break;
    res->n_steps++;
    if (st->pass)
      lo = n;
    else
      hi = n;
    if (hi == 0) {
      if (n == KB_BENCH_MAX_RUNNERS)
        break;
      n = 2 * n > KB_BENCH_MAX_RUNNERS ? KB_BENCH_MAX_RUNNERS : 2 * n;
      continue;
    }
    int gap = lo / 8 > 16 ? lo / 8 : 16;
    if (hi - lo <= gap)
      break;
    n = lo + (hi - lo) / 2;
  }
  res->max_runners = lo;
  res->max_capped = lo == KB_BENCH_MAX_RUNNERS;
  atomic_store(&c->ctl->active, c->o->runners);
  return rc;
}

/* Phase 2: the runners start, warm up, run the measured claim -> complete cycles (killed and
 * drained with --kills), then the two raw scripts for the ratio. */
static int measure(struct coord *c, struct thread_arg *args, long initial,
                   struct kb_error *err) {
  const struct kb_bench_queue_opts *o = c->o;
  struct kb_bench_queue_result *res = c->res;
  progress(c, "starting %d runner %s", o->runners, c->procs ? "processes" : "threads");
  int rc = start_runners(c, args, o->runners, err);
  if (rc == KB_OK)
    rc = transition(c, KB_BENCH_IDLE, err); /* every runner connected */
  if (rc == KB_OK)
    rc = warmup(c, o->fill ? res->enqueued : initial, err);
  if (rc == KB_OK && o->items == 0) {
    /* enough for the measured phase at the warm-up's rate, with a margin */
    struct kb_queue_status st;
    rc = kb_queue_status(&c->q, &st, err);
    double rate = res->warmup.per_s; /* items per second */
    if (o->eval_ms > 0 && o->runners * 1000.0 / o->eval_ms > rate)
      rate = o->runners * 1000.0 / o->eval_ms; /* a warm-up of evaluations is too short */
    double need = rate * o->seconds * 1.4 + (16.0 + c->ctl->batch) * o->runners -
                  (double)ready_items(&st);
    if (need > 5e6)
      need = 5e6;
    if (rc == KB_OK && need > 0) {
      progress(c, "enqueueing %.0f more items for %.0f cycles/s", need, res->warmup.per_s);
      rc = enqueue_bulk(c, (long)need, err);
    }
  }
  /* the measured cycles come first, so they do not inherit the AOF the raw phases write */
  if (rc == KB_OK) {
    progress(c, "claim -> complete cycles for %.1f s%s", o->seconds,
             o->kills ? ", killing runners" : "");
    rc = cycles_phase(c, err);
  }
  if (rc == KB_OK && o->kills > 0) {
    progress(c, "draining");
    rc = drain(c, err);
  }
  if (rc == KB_OK) {
    uint64_t calls = 0;
    for (int i = 0; i < c->n_live; i++)
      calls += atomic_load(&c->ctl->slots[i].calls[KB_BENCH_CYCLES]);
    res->calls_per_s = res->cycles.wall_s > 0 ? (double)calls / res->cycles.wall_s : 0;
    rc = latencies(c, err); /* before a search reuses the samples */
  }
  if (rc == KB_OK) {
    progress(c, "raw \"return 1\" for %.1f s", o->seconds);
    rc = raw_phase(c, KB_BENCH_RET1, &res->ret1, err);
  }
  if (rc == KB_OK) {
    progress(c, "raw HINCRBY debit for %.1f s", o->seconds);
    rc = raw_phase(c, KB_BENCH_DEBIT, &res->debit, err);
  }
  if (rc == KB_OK && o->search)
    rc = search(c, args, err);
  return rc;
}

/* Phase 3, with the runners gone (so nothing else runs while each script is profiled alone):
 * their errors and counts, the script profiles, the exactly-once check, the latencies. */
static int gather(struct coord *c, struct kb_error *err) {
  struct kb_bench_queue_result *res = c->res;
  stop_runners(c);
  int rc = runner_error(c, err);
  for (int i = 0; rc == KB_OK && i < c->n_live; i++) {
    res->empty += atomic_load(&c->ctl->slots[i].empty[KB_BENCH_CYCLES]);
    res->lease_lost += atomic_load(&c->ctl->slots[i].lease_lost);
  }
  if (rc == KB_OK) {
    progress(c, "profiling claim and complete alone");
    rc = script_profiles(c, PROFILE_CALLS, err);
  }
  if (rc == KB_OK) {
    progress(c, "verifying");
    rc = kb__bench_verify(&c->q, res->enqueued, &res->verify, err);
  }
  res->ratio = res->debit.per_s > 0 ? res->cycles.per_s / res->debit.per_s : 0;
  res->lost = res->verify.lost;
  res->double_charged = res->verify.double_charged;
  return rc;
}

int kb__bench_queue_run(const struct kb_bench_queue_opts *o, struct kb_bench_queue_result *res,
                        struct kb_error *err) {
  memset(res, 0, sizeof *res);
  res->runners = o->runners;
  res->seconds = o->seconds;
  int rc = check_opts(o, err);
  if (rc)
    return rc;
  struct coord c = {.o = o, .res = res, .procs = o->kills > 0,
                    .rng = o->seed ? o->seed : (uint64_t)kb__bench_now_ns()};
  struct kb_bench_server server = {0};
  long initial = 0;
  struct thread_arg *args =
      kb_calloc((size_t)(o->search ? KB_BENCH_MAX_RUNNERS : o->runners), sizeof *args);
  rc = args == NULL ? kb_error_set(err, KB_ENOMEM, "out of memory")
                    : set_up(&c, &server, &initial, err);
  if (rc == KB_OK)
    rc = measure(&c, args, initial, err);
  if (rc == KB_OK)
    rc = gather(&c, err);
  stop_runners(&c);
  kb_free(c.threads);
  kb_free(c.pids);
  kb_free(args);
  kb_redis_free(c.redis);
  kb__bench_ctl_free(c.ctl);
  kb__bench_server_destroy(&server);
  return rc;
}

int kb__bench_queue_passed(const struct kb_bench_queue_result *res) {
  return res->lost == 0 && res->double_charged == 0 && res->verify.ledger_exact;
}
