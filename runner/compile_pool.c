/* The compile pool (see compile_pool.h). One mutex guards the two lists; workers sleep on
 * `work`, the owner on `done`. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "compile_pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kb/clock.h"
#include "kb/alloc.h"
#include "kb/error.h"
#include "proc.h"

struct job {
  struct job *next;
  char *source, *knobs, *flags, *arch; /* owned copies; arch may be NULL */
  char *oracle;                        /* owned copy; NULL unless kernelbench or reference */
  double timeout_s;
  int trusted;
  int format;                          /* enum kb_cand_format */
  int reference;                       /* torch.compile of a task's module, compiled ahead */
  double submitted; /* monotonic seconds */
  struct kb__compiled result;
};

struct kb__compile_pool {
  const struct kb__compiler *cc; /* borrowed */
  pthread_mutex_t mu;
  pthread_cond_t work;           /* a job was queued, or the pool stops */
  pthread_cond_t done;           /* a job finished */
  struct job *queued, *queued_tail; /* FIFO, waiting for a worker */
  struct job *finished, *finished_tail; /* FIFO, in the order they finished */
  int capacity;
  int in_pool;                   /* queued + building + finished */
  atomic_int stop;               /* set once by kb__compile_pool_free; polled by builds */
  int n_threads;                 /* started */
  pthread_t *threads;            /* owned */
};

void kb__compiled_init(struct kb__compiled *c) {
  memset(c, 0, sizeof *c);
  kb__build_init(&c->build);
}

void kb__compiled_release(struct kb__compiled *c) {
  if (c == NULL)
    return;
  kb__build_release(&c->build);
  kb__compiled_init(c);
}

static void job_free(struct job *j) {
  if (j == NULL)
    return;
  kb_free(j->source);
  kb_free(j->knobs);
  kb_free(j->flags);
  kb_free(j->arch);
  kb_free(j->oracle);
  kb__compiled_release(&j->result);
  kb_free(j);
}

int kb__compile_pool_default_workers(void) {
  long cpus = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    cpus = CPU_COUNT(&set);
  if (cpus <= 0)
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 1 ? (int)(cpus - 1) : 1;
}

static void *worker_main(void *arg) {
  struct kb__compile_pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (!atomic_load(&p->stop) && p->queued == NULL)
      pthread_cond_wait(&p->work, &p->mu);
    if (atomic_load(&p->stop)) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    struct job *j = p->queued;
    p->queued = j->next;
    if (p->queued == NULL)
      p->queued_tail = NULL;
    j->next = NULL;
    pthread_mutex_unlock(&p->mu);

    double start = kb_now_mono();
    j->result.wait_s = start - j->submitted;
    struct kb__compile_req req = {.source = j->source,
                                  .knobs = j->knobs,
                                  .flags = j->flags,
                                  .arch = j->arch,
                                  .timeout_s = j->timeout_s,
                                  .trusted = j->trusted,
                                  .format = j->format,
                                  .oracle = j->oracle,
                                  .reference = j->reference};
    j->result.rc =
        kb__compile_cancellable(p->cc, &req, &p->stop, &j->result.build, &j->result.err);
    j->result.build_s = kb_now_mono() - start;

    pthread_mutex_lock(&p->mu);
    if (p->finished_tail != NULL)
      p->finished_tail->next = j;
    else
      p->finished = j;
    p->finished_tail = j;
    pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
  }
}

int kb__compile_pool_new(const struct kb__compiler *cc, int workers, int capacity,
                         struct kb__compile_pool **out, struct kb_error *err) {
  *out = NULL;
  if (workers <= 0)
    workers = kb__compile_pool_default_workers();
  if (capacity <= 0)
    capacity = 2 * workers;
  struct kb__compile_pool *p = kb_calloc(1, sizeof *p);
  pthread_t *threads = kb_calloc((size_t)workers, sizeof *threads);
  if (p == NULL || threads == NULL) {
    kb_free(p);
    kb_free(threads);
    return kb_error_set(err, KB_ENOMEM, "cannot start the compile pool: out of memory");
  }
  p->cc = cc;
  p->capacity = capacity;
  p->threads = threads;
  atomic_init(&p->stop, 0);
  pthread_condattr_t ca;
  int e = pthread_mutex_init(&p->mu, NULL);
  if (e == 0 && (e = pthread_condattr_init(&ca)) == 0) {
    /* waits are measured on the monotonic clock: a wall clock step cannot stretch them */
    e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (e == 0 && (e = pthread_cond_init(&p->work, &ca)) == 0 &&
        (e = pthread_cond_init(&p->done, &ca)) != 0)
      pthread_cond_destroy(&p->work);
    pthread_condattr_destroy(&ca);
    if (e != 0)
      pthread_mutex_destroy(&p->mu);
  }
  if (e != 0) {
    kb_free(threads);
    kb_free(p);
    return kb_error_set(err, KB_EINTERNAL, "cannot start the compile pool: %s", strerror(e));
  }
  /* workers start with every signal blocked: signals go to the runner's thread */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (int i = 0; i < workers; i++) {
    e = pthread_create(&p->threads[i], NULL, worker_main, p);
    if (e != 0)
      break;
    p->n_threads++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e != 0) {
    kb__compile_pool_free(p);
    return kb_error_set(err, KB_EINTERNAL, "cannot start a compile worker: %s", strerror(e));
  }
  *out = p;
  return KB_OK;
}

void kb__compile_pool_free(struct kb__compile_pool *p) {
  if (p == NULL)
    return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->work);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n_threads; i++)
    pthread_join(p->threads[i], NULL);
  for (struct job *j = p->queued, *next; j != NULL; j = next) {
    next = j->next;
    job_free(j);
  }
  for (struct job *j = p->finished, *next; j != NULL; j = next) {
    next = j->next;
    job_free(j);
  }
  pthread_cond_destroy(&p->work);
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->mu);
  kb_free(p->threads);
  kb_free(p);
}

int kb__compile_pool_workers(const struct kb__compile_pool *p) { return p->n_threads; }

int kb__compile_pool_space(struct kb__compile_pool *p) {
  pthread_mutex_lock(&p->mu);
  int space = p->capacity - p->in_pool;
  pthread_mutex_unlock(&p->mu);
  return space > 0 ? space : 0;
}

int kb__compile_pool_pending(struct kb__compile_pool *p) {
  pthread_mutex_lock(&p->mu);
  int n = p->in_pool;
  pthread_mutex_unlock(&p->mu);
  return n;
}

/* `*dst` = new copy of `s`, NULL stays NULL. Returns 0 on ENOMEM. */
static int dup_opt(char **dst, const char *s) {
  *dst = s ? kb_strdup(s) : NULL;
  return s == NULL || *dst != NULL;
}

int kb__compile_pool_submit(struct kb__compile_pool *p, uint64_t tag,
                            const struct kb__compile_req *req, struct kb_error *err) {
  struct job *j = kb_calloc(1, sizeof *j);
  if (j == NULL)
    return kb_error_set(err, KB_ENOMEM, "cannot queue a build: out of memory");
  kb__compiled_init(&j->result);
  j->result.tag = tag;
  j->timeout_s = req->timeout_s;
  j->trusted = req->trusted;
  j->format = req->format;
  j->reference = req->reference;
  if (!dup_opt(&j->source, req->source ? req->source : "") || !dup_opt(&j->knobs, req->knobs) ||
      !dup_opt(&j->flags, req->flags) || !dup_opt(&j->arch, req->arch) ||
      !dup_opt(&j->oracle, req->oracle)) {
    job_free(j);
    return kb_error_set(err, KB_ENOMEM, "cannot queue a build: out of memory");
  }
  pthread_mutex_lock(&p->mu);
  if (p->in_pool >= p->capacity) {
    pthread_mutex_unlock(&p->mu);
    job_free(j);
    return kb_error_set(err, KB_EINVAL, "cannot queue a build: the compile pool is full (%d "
                        "jobs)", p->capacity);
  }
  j->submitted = kb_now_mono();
  if (p->queued_tail != NULL)
    p->queued_tail->next = j;
  else
    p->queued = j;
  p->queued_tail = j;
  p->in_pool++;
  pthread_cond_signal(&p->work);
  pthread_mutex_unlock(&p->mu);
  return KB_OK;
}

/* With the lock held: moves the first finished job into `out`. */
static void take_finished(struct kb__compile_pool *p, struct kb__compiled *out) {
  struct job *j = p->finished;
  p->finished = j->next;
  if (p->finished == NULL)
    p->finished_tail = NULL;
  p->in_pool--;
  kb__compiled_release(out);
  *out = j->result;
  kb__compiled_init(&j->result);
  job_free(j);
}

int kb__compile_pool_wait(struct kb__compile_pool *p, double timeout_s, struct kb__compiled *out,
                          int *got, struct kb_error *err) {
  *got = 0;
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  if (timeout_s > 0) {
    double whole = (double)(time_t)timeout_s;
    deadline.tv_sec += (time_t)timeout_s;
    deadline.tv_nsec += (long)((timeout_s - whole) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec++;
      deadline.tv_nsec -= 1000000000L;
    }
  }
  pthread_mutex_lock(&p->mu);
  if (p->in_pool == 0) {
    pthread_mutex_unlock(&p->mu);
    return kb_error_set(err, KB_EEMPTY, "no build pending in the compile pool");
  }
  while (p->finished == NULL && timeout_s > 0) {
    int e = pthread_cond_timedwait(&p->done, &p->mu, &deadline);
    if (e == ETIMEDOUT)
      break;
  }
  if (p->finished != NULL) {
    take_finished(p, out);
    *got = 1;
  }
  pthread_mutex_unlock(&p->mu);
  return KB_OK;
}

int kb__compile_pool_poll(struct kb__compile_pool *p, struct kb__compiled *out, int *got,
                          struct kb_error *err) {
  return kb__compile_pool_wait(p, 0, out, got, err);
}
