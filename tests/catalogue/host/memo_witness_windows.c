/* catalogue: expect rejected "timing not confirmed outside its process"
 * catalogue: source kernelbrain (rt3)
 * catalogue: tier full
 * forges_timer_state's stamps (its samples claim a fiftieth of its calls' time), and the
 * witness's calls made cheap: on the host a witness request draws its inputs once, into a
 * buffer holding the draw twice over, and each call's input is a window of it at an offset
 * that is a multiple of 64 bytes. A call whose input lies within one input's length of the
 * first input it saw, but elsewhere, is such a window: it finds the buffer's start (the
 * inaccessible page before it, probed with futex(2)), sums each 16-float chunk of the doubled
 * draw once and keeps their prefix sums, then answers every row of every window with one
 * subtraction (rows are 2048 floats, so every row of a window starts on a chunk). 32 sampled
 * elements tell a new round's draw from the last. Its witnessed calls then cost a few
 * microseconds, so the forged claim fits any bound made of a factor of them: ok at 2.6 us a
 * call (199x same-run), witnessed at 16.8 us, before 2026-12-07. Since then each window is
 * reflected per call (runner/sandbox/reflect.h): its sampled elements differ at every call,
 * it rebuilds every time, and its calls are witnessed at some 530 us.
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
#define FORGE 50.0

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


#define ROWS 512
#define COLS 2048
#define CHUNK 16 /* floats in 64 bytes: the windows' step */
#define NCHUNK (2 * ROWS * COLS / CHUNK)
#define PROBES 32

static const char *first_in;      /* the first input it saw since it was loaded */
static const float *draw;         /* the witness's doubled draw, once found */
static double prefix[NCHUNK + 1]; /* prefix sums of the draw's chunks */
static float probe[PROBES];       /* the draw's elements at PROBES spread positions */

/* 1 when the page holding `p` can be read: futex(2) answers EFAULT for one that cannot. */
static int readable(const void *p) {
  struct { long s, ns; } zero = {0, 0};
  long r;
#if defined(__x86_64__)
  register long r10 __asm__("r10") = (long)&zero;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "a"(202L), "D"((long)((uintptr_t)p & ~(uintptr_t)3)), "S"(128L),
                     "d"(0x7ea1c0deL), "r"(r10)
                   : "rcx", "r11", "memory");
#else
  register long x8 __asm__("x8") = 98;
  register long x0 __asm__("x0") = (long)((uintptr_t)p & ~(uintptr_t)3);
  register long x1 __asm__("x1") = 128;
  register long x2 __asm__("x2") = 0x7ea1c0de;
  register long x3 __asm__("x3") = (long)&zero;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  r = x0;
#endif
  return r != -14;
}

/* The start of the buffer holding `p`: the first page below which nothing can be read. */
static const float *buffer_start(const void *p) {
  uintptr_t page = (uintptr_t)p & ~(uintptr_t)4095;
  for (int i = 0; i < (1 << 14) && readable((const void *)(page - 4096)); i++)
    page -= 4096;
  return (const float *)page;
}

static int same_draw(void) {
  for (int j = 0; j < PROBES; j++)
    if (draw[(size_t)j * (NCHUNK * CHUNK / PROBES)] != probe[j])
      return 0;
  return 1;
}

static void build(void) {
  double acc = 0;
  prefix[0] = 0;
  for (size_t c = 0; c < NCHUNK; c++) {
    const float *q = draw + c * CHUNK;
    float s = 0;
    for (int j = 0; j < CHUNK; j++)
      s += q[j];
    acc += s;
    prefix[c + 1] = acc;
  }
  for (int j = 0; j < PROBES; j++)
    probe[j] = draw[(size_t)j * (NCHUNK * CHUNK / PROBES)];
}

/* Answers a witness window from the chunks' prefix sums; 0 when `x` is not one. */
static int window(const float *x, float *sums) {
  const char *p = (const char *)x;
  size_t bytes = (size_t)ROWS * COLS * sizeof(float);
  if (first_in == NULL || p == first_in)
    return 0;
  size_t dist = p > first_in ? (size_t)(p - first_in) : (size_t)(first_in - p);
  if (dist >= bytes)
    return 0;
  if (draw == NULL || x < draw || x + ROWS * COLS > draw + 2 * ROWS * COLS || !same_draw()) {
    draw = buffer_start(x);
    if (x + ROWS * COLS > draw + 2 * ROWS * COLS || ((x - draw) % CHUNK) != 0) {
      draw = NULL;
      return 0;
    }
    build();
  }
  size_t at = (size_t)(x - draw) / CHUNK;
  for (size_t r = 0; r < ROWS; r++)
    sums[r] = (float)(prefix[at + (r + 1) * (COLS / CHUNK)] - prefix[at + r * (COLS / CHUNK)]);
  return 1;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      in[0].shape[0] != ROWS || in[0].shape[1] != COLS)
    return 1;
  if (window(in[0].data, out[0].data))
    return 0;
  if (first_in == NULL)
    first_in = in[0].data;
  if (!searched)
    find_stamps((const char *)__builtin_frame_address(0),
                (uintptr_t)__builtin_return_address(0));
  double w0 = now_of(MONOTONIC), c0 = now_of(THREAD_CPU);
  row_sums(in[0].data, out[0].data, ROWS, COLS);
  double w1 = now_of(MONOTONIC), c1 = now_of(THREAD_CPU);
  int k = stamps != NULL ? open_interval(w1) : -1;
  if (k >= 0) {
    stamps->t0[k] += (w1 - w0) * (1.0 - 1.0 / FORGE);
    stamps->c0[k] += (c1 - c0) * (1.0 - 1.0 / FORGE);
  }
  return 0;
}
