/* The host implementation of the sandbox's device interface (see dev.h): memory is the
 * process's own, the clock is CLOCK_MONOTONIC. Errors carry strerror()'s text; none is fatal. */
#include "dev.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "inputs.h"

struct host {
  double t0[KB__TIMER_POOL]; /* kb_now_mono() at timer_start, per interval */
  double t1[KB__TIMER_POOL]; /* kb_now_mono() at timer_stop, per interval */
  double c0[KB__TIMER_POOL]; /* the thread's CPU time (thread_cpu()) at timer_start */
  double c1[KB__TIMER_POOL]; /* and at timer_stop */
};

/* The calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID: user and system time;
 * the host's calls run on the evaluator's own thread, and the filter allows no other). */
static double thread_cpu(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every buffer is its own mapping, fenced: [a page holding the mapping's length][an
 * inaccessible page][the buffer, rounded up to pages][an inaccessible page]. So no buffer is
 * adjacent to another or to the heap (where the evaluator's own state lives): a candidate that
 * reads or writes past either end of its buffers faults instead of finding the evaluator's data. */
static size_t page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

/* errno `e` as an enum kb_err code with strerror()'s text in `err`. */
static int sys_error(int e, struct kb_error *err) {
  return kb_error_set(err, e == ENOMEM ? KB_ENOMEM : e == EINVAL ? KB_EINVAL : KB_EIO, "%s",
                      strerror(e));
}

static int h_alloc(struct kb__dev *d, size_t bytes, void **out, struct kb_error *err) {
  (void)d;
  size_t pg = page_size();
  size_t body = (bytes + pg - 1) / pg * pg;
  if (body == 0)
    body = pg;
  size_t len = body + 3 * pg;
  unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return sys_error(ENOMEM, err);
  if (mprotect(m + pg, pg, PROT_NONE) != 0 || mprotect(m + 2 * pg + body, pg, PROT_NONE) != 0) {
    int e = errno;
    munmap(m, len);
    return sys_error(e, err);
  }
  memcpy(m, &len, sizeof len);
  *out = m + 2 * pg;
  return KB_OK;
}

static void h_free(struct kb__dev *d, void *p) {
  (void)d;
  if (p == NULL)
    return;
  unsigned char *m = (unsigned char *)p - 2 * page_size();
  size_t len = 0;
  memcpy(&len, m, sizeof len);
  munmap(m, len);
}

static int h_fill(struct kb__dev *d, void *p, int dtype, int64_t n,
                  const struct kb_input_set *set, int tensor, struct kb_error *err) {
  (void)d;
  return kb__inputs_fill(set, tensor, dtype, p, n, err);
}

static int h_poison(struct kb__dev *d, void *p, int dtype, int64_t n, struct kb_error *err) {
  (void)err;
  (void)d;
  kb__poison(dtype, p, n);
  return KB_OK;
}

/* FNV-1a over 8-byte words, then the tail: order-sensitive, fast enough for every call. */
static int h_copy(struct kb__dev *d, void *dst, const void *src, size_t bytes,
                  struct kb_error *err) {
  (void)d;
  (void)err;
  memmove(dst, src, bytes);
  return KB_OK;
}

static int h_read(struct kb__dev *d, void *host, const void *p, size_t bytes,
                  struct kb_error *err) {
  (void)d;
  (void)err;
  memcpy(host, p, bytes);
  return KB_OK;
}

static int h_checksum(struct kb__dev *d, const void *p, size_t bytes, uint64_t *sum,
                      struct kb_error *err) {
  (void)err;
  (void)d;
  const unsigned char *s = p;
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    h = (h ^ w) * UINT64_C(0x100000001b3);
    h ^= h >> 29;
  }
  for (; i < bytes; i++)
    h = (h ^ s[i]) * UINT64_C(0x100000001b3);
  *sum = h ^ (uint64_t)bytes;
  return KB_OK;
}

static int h_compare(struct kb__dev *d, const void *got, const void *want, int dtype, int64_t n,
                     double atol, double rtol, struct kb_verify_report *rep, int *pass,
                     struct kb_error *err) {
  (void)err;
  (void)d;
  *pass = kb__verify(dtype, got, want, n, atol, rtol, rep);
  return KB_OK;
}

static int h_mask(struct kb__dev *d, void *p, size_t bytes, uint64_t key, struct kb_error *err) {
  (void)err;
  (void)d;
  unsigned char *b = p;
  size_t words = bytes / 8;
  for (size_t w = 0; w < words; w++) {
    uint64_t v;
    memcpy(&v, b + 8 * w, 8);
    v ^= kb__mask_word(key, w);
    memcpy(b + 8 * w, &v, 8);
  }
  uint64_t m = kb__mask_word(key, words);
  for (size_t i = 0; i < bytes % 8; i++)
    b[8 * words + i] ^= (unsigned char)(m >> (8 * i));
  return KB_OK;
}

static int h_l2_reset(struct kb__dev *d, int full, struct kb_error *err) {
  (void)err;
  (void)d;
  (void)full;
  return KB_OK;
}

/* memcpy's bandwidth, read and write counted, over a buffer beyond the CPU's caches: the best of
 * a few copies. Reported (hello); the host does not flush its caches, so the engine does not
 * judge host timings by it. */
static double host_bandwidth(void) {
  size_t n = (size_t)64 << 20;
  unsigned char *a = kb_malloc(n), *b = kb_malloc(n);
  double best = 0;
  if (a != NULL && b != NULL) {
    memset(a, 1, n);
    memset(b, 2, n);
    for (int k = 0; k < 3; k++) {
      double t0 = kb_now_mono();
      memcpy(b, a, n);
      double t = kb_now_mono() - t0;
      if (t > 0 && 2.0 * (double)n / t > best)
        best = 2.0 * (double)n / t;
      a[k] = b[n - 1 - (size_t)k]; /* keeps the copies */
    }
  }
  kb_free(a);
  kb_free(b);
  return best;
}

static int h_nothing(struct kb__dev *d, struct kb_error *err) {
  (void)err;
  (void)d;
  return KB_OK;
}

static int h_spin(struct kb__dev *d, double us, struct kb_error *err) {
  (void)err;
  (void)d;
  (void)us;
  return KB_OK;
}

static int h_timer_start(struct kb__dev *d, int k, struct kb_error *err) {
  struct host *h = d->impl;
  if (k < 0 || k >= KB__TIMER_POOL)
    return sys_error(EINVAL, err);
  h->c0[k] = thread_cpu();
  h->t0[k] = kb_now_mono();
  return KB_OK;
}

/* The host's calls are synchronous: the interval ends now. */
static int h_timer_stop(struct kb__dev *d, int k, struct kb_error *err) {
  struct host *h = d->impl;
  if (k < 0 || k >= KB__TIMER_POOL)
    return sys_error(EINVAL, err);
  h->t1[k] = kb_now_mono();
  h->c1[k] = thread_cpu();
  return KB_OK;
}

/* The sum of intervals first..first+n-1 of the stamps `from` -> `to`, in microseconds. */
static int interval_sum(const double *from, const double *to, int first, int n, double *us,
                        struct kb_error *err) {
  if (first < 0 || n < 1 || first + n > KB__TIMER_POOL)
    return sys_error(EINVAL, err);
  double sum = 0;
  for (int k = first; k < first + n; k++)
    sum += to[k] - from[k];
  *us = sum * 1e6;
  return KB_OK;
}

static int h_timer_read(struct kb__dev *d, int first, int n, double *us, struct kb_error *err) {
  struct host *h = d->impl;
  return interval_sum(h->t0, h->t1, first, n, us, err);
}

static int h_timer_read_busy(struct kb__dev *d, int first, int n, double *us,
                             struct kb_error *err) {
  struct host *h = d->impl;
  return interval_sum(h->c0, h->c1, first, n, us, err);
}

static void h_close(struct kb__dev *d) {
  kb_free(d->impl);
  d->impl = NULL;
}

/* The CPU's model name from /proc/cpuinfo, or "cpu". */
static void cpu_name(char *out, size_t size) {
  snprintf(out, size, "cpu");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL)
    return;
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "model name", 10) != 0)
      continue;
    const char *c = strchr(line, ':');
    if (c == NULL)
      break;
    c++;
    while (*c == ' ' || *c == '\t')
      c++;
    size_t len = strcspn(c, "\n");
    while (len > 0 && (c[len - 1] == ' ' || c[len - 1] == '\t'))
      len--;
    if (len > 0)
      snprintf(out, size, "%.*s", (int)len, c);
    break;
  }
  fclose(f);
}

int kb__dev_host_open(struct kb__dev *d, struct kb_error *err) {
  memset(d, 0, sizeof *d);
  d->backend = "host";
  cpu_name(d->name, sizeof d->name);
  d->impl = kb_calloc(1, sizeof(struct host));
  if (d->impl == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  d->alloc = h_alloc;
  d->free = h_free;
  d->fill = h_fill;
  d->poison = h_poison;
  d->checksum = h_checksum;
  d->compare = h_compare;
  d->flush_l2 = h_nothing;
  d->mask = h_mask;
  d->l2_reset = h_l2_reset;
  d->spin = h_spin;
  d->timer_start = h_timer_start;
  d->timer_stop = h_timer_stop;
  d->timer_read = h_timer_read;
  d->timer_read_busy = h_timer_read_busy;
  d->copy = h_copy;
  d->read = h_read;
  d->sync = h_nothing;
  d->close = h_close;
  d->bandwidth = host_bandwidth();
  return KB_OK;
}
