/* catalogue: expect rejected "timing not confirmed outside its process"
 * catalogue: source kernelbrain (rt3); pygpubench (exploits/submission_got_patch: the harness's
 *            state rewritten from inside its address space, here its data, not its tables)
 * catalogue: tier full
 * Computes honestly (eight accumulators a row), but shortens every timed interval it runs in
 * by writing the evaluator's own timer state: no code, no function table and no protection
 * changes, so nothing the check between candidates reads differs. From its caller's frame it
 * walks up the stack to the sandbox's `struct kb__dev` (its `backend` pointing at "host", a CPU
 * name after it), follows `impl` to the host timer's stamps (runner/sandbox/dev_host.c:
 * t0, t1, c0, c1, 512 each) and, when the latest start stamp is an open interval begun just
 * before its call, moves that start (and the CPU-time start) forward by all but a share of its
 * own call's time. Samples, fresh samples and their controls all shrink alike, so every
 * in-process check agrees with them; the same-run baseline's intervals are left alone, so its
 * same-run speedup grows too. The claim is sized to what the witness lets through: a third of
 * the time it takes, less 100 us (3x + 100 us on the host before 2026-12-07), and at least a
 * fiftieth of it. Only a clock outside its process (the witness) can see it.
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
/* the part of the time it takes that it claims: 1/FORGE, or what passes 3x + SLACK */
#define FORGE 50.0
#define SLACK_US 100.0

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
    const float *row = x + r * cols;
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8)
      for (int j = 0; j < 8; j++)
        a[j] += row[c + j];
    for (; c < cols; c++)
      a[0] += row[c];
    sums[r] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
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
    double took = w1 - w0;
    double claim = (1.2 * took - SLACK_US * 1e-6) / 3.0;
    if (claim < took / FORGE)
      claim = took / FORGE;
    double share = claim / took;
    stamps->t0[k] += took - claim;
    stamps->c0[k] += (c1 - c0) * (1.0 - share);
  }
  return 0;
}
