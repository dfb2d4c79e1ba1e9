/* catalogue: expect rejected "timing not confirmed outside its process"
 * catalogue: source kernelbrain (rt3); pygpubench (exploits/submission_got_patch: the harness's
 *            state rewritten from inside its address space, here its data, not its tables)
 * catalogue: tier full
 * Computes honestly (one accumulator a row, some 520 us a call), but shortens every timed
 * interval it runs in by writing the evaluator's own timer state: no code, no function table
 * and no protection changes, so nothing the check between candidates reads differs. From its
 * caller's frame it walks up the stack to the sandbox's `struct kb__dev` (its `backend`
 * pointing at "host", a CPU name after it), follows `impl` to the host timer's stamps
 * (runner/sandbox/dev_host.c: t0, t1, c0, c1, 512 each) and, when the latest start stamp is an
 * open interval begun just before its call, moves that start (and the CPU-time start) forward
 * by two thirds of its own call's time. Samples, fresh samples and their controls all shrink
 * alike, so every in-process check agrees with them; the same-run baseline's intervals are
 * left alone, so its same-run speedup grows too. Only a clock outside its process (the
 * witness) can see it. A third of its time is what the host witness's wall-clock rule (3x +
 * 100 us over the claim) let through with 100 us to spare, whatever the call's time: before
 * 2026-12-07 a call under 100 us could claim anything (the eight-accumulator form of this
 * file, 69 us a call, was ok at 2.3 us, 220x same-run).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define MONOTONIC 1 /* CLOCK_MONOTONIC */
#define THREAD_CPU 3 /* CLOCK_THREAD_CPUTIME_ID */

#include "kb_kernel.h"

#if defined(__x86_64__)
#define SYS_CLOCK_GETTIME 228
#else
#define SYS_CLOCK_GETTIME 113
#endif
#define POOL 512
/* the part of the time it takes that it claims */
#define FORGE 3.0

/* runner/sandbox/dev.h's struct kb__dev, up to `impl` (the project is open source) */
struct dev_prefix {
  const char *backend;
  int gpu;
  char name[256];
  int cc_major, cc_minor;
  int sm_count;
  int64_t mem_bytes;
  int64_t l2_bytes;
  int runtime_version;
  int driver_version;
  int batch_short;
  double bandwidth;
  void *oracle_stream;
  int end_marker;
  int l2_persist_seen;
  int broken;
  void *stream;
  void *impl;
};

/* dev_host.c's struct host */
struct stamps {
  double t0[POOL], t1[POOL], c0[POOL], c1[POOL];
};

static struct stamps *stamps;
static int searched;

static double now_of(int clock) {
  struct timespec ts = {0, 0};
  long r;
#if defined(__x86_64__)
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "a"(SYS_CLOCK_GETTIME), "D"((long)clock), "S"(&ts)
                   : "rcx", "r11", "memory");
#else
  register long x8 __asm__("x8") = SYS_CLOCK_GETTIME;
  register long x0 __asm__("x0") = clock;
  register long x1 __asm__("x1") = (long)&ts;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory");
  r = x0;
#endif
  (void)r;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether `s` holds a printable name of 3..255 characters. */
static int is_name(const char *s) {
  int n = 0;
  while (n < 256 && s[n] >= 0x20 && s[n] < 0x7f)
    n++;
  return n >= 3 && n < 256 && s[n] == '\0';
}

/* The sandbox's device, found above `frame` on the stack, near the code at `code`. */
static void find_stamps(const char *frame, uintptr_t code) {
  searched = 1;
  const char *p = (const char *)(((uintptr_t)frame + 7) & ~(uintptr_t)7);
  for (size_t off = 0; off < (512u << 10); off += 8) {
    const struct dev_prefix *d = (const struct dev_prefix *)(p + off);
    uintptr_t b = (uintptr_t)d->backend;
    uintptr_t dist = b > code ? b - code : code - b;
    if (dist > (64u << 20) || d->gpu != 0 || !is_name(d->name))
      continue;
    if (memcmp(d->backend, "host", 5) != 0)
      continue;
    stamps = (struct stamps *)d->impl;
    return;
  }
}

/* The open interval this call runs in: the latest start, begun after its slot's last stop and
 * at most 10 ms ago; -1 for none (the untimed check calls). */
static int open_interval(double now) {
  int k = -1;
  for (int i = 0; i < POOL; i++)
    if (k < 0 || stamps->t0[i] > stamps->t0[k])
      k = i;
  if (k < 0 || !(stamps->t0[k] > stamps->t1[k]) || now - stamps->t0[k] > 0.01 ||
      stamps->t0[k] > now)
    return -1;
  return k;
}

static void row_sums(const float *x, float *sums, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.0f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    sums[r] = acc;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32)
    return 1;
  if (!searched)
    find_stamps((const char *)__builtin_frame_address(0),
                (uintptr_t)__builtin_return_address(0));
  double w0 = now_of(MONOTONIC), c0 = now_of(THREAD_CPU);
  row_sums(in[0].data, out[0].data, in[0].shape[0], in[0].shape[1]);
  double w1 = now_of(MONOTONIC), c1 = now_of(THREAD_CPU);
  int k = stamps != NULL ? open_interval(w1) : -1;
  if (k >= 0) {
    stamps->t0[k] += (w1 - w0) * (1.0 - 1.0 / FORGE);
    stamps->c0[k] += (c1 - c0) * (1.0 - 1.0 / FORGE);
  }
  return 0;
}
