/* The sandbox's trusted kernels (runner/sandbox/devkern.h) against the host's rules, on a GPU.
 *
 * Not a ctest test (CI has no GPU): tests/gpu/run.sh runs it on the H200. Checks
 *   - kb__dk_fill == kb__inputs_fill byte for byte: every dtype, every distribution, ranges that
 *     reach f16 overflow and subnormals, integer clamps, 2^61-wide integer ranges, large n;
 *   - kb__dk_poison == kb__poison, at aligned and unaligned starts, nothing written outside;
 *   - kb__dk_compare == kb__verify on crafted cases (NaN, Inf, poison left, tolerance edges, bool,
 *     large i64) and on large perturbed arrays, report field by field;
 *   - kb__dk_checksum changes on any single flipped byte and on swapped words;
 *   - kb__dk_flush_l2 writes its buffer (time) and evicts (a re-read gets slower), kb__dk_spin
 *     lasts what it says;
 * and reports the bandwidth of fill, poison, compare and checksum. Exit 0 when all passed.
 * Usage: test_devkern [--quick]
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devkern.h"
#include "gpu_check.h"
#include "kb/alloc.h"
#include "kb/error.h"
#include "inputs.h"
#include "verify.h"
#include "kb_kernel.h"

/* tests/gpu/readprobe.cu: one read pass over `bytes` at `p` on `stream`. */
int test_read_probe(const void *p, size_t bytes, unsigned *sink, void *stream);

static const char *const dtype_names[] = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8", "bool"};

static cudaStream_t stream;
static cudaEvent_t ev0, ev1;

static void *xmalloc(size_t n) {
  void *p = kb_malloc(n ? n : 1);
  if (p == NULL) {
    printf("FATAL out of host memory\n");
    exit(2);
  }
  return p;
}

static void timer_start(void) { CUDA_OK(cudaEventRecord(ev0, stream)); }

static double timer_stop_ms(void) {
  float ms = 0;
  CUDA_OK(cudaEventRecord(ev1, stream));
  CUDA_OK(cudaEventSynchronize(ev1));
  CUDA_OK(cudaEventElapsedTime(&ms, ev0, ev1));
  return ms;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* --- fill ------------------------------------------------------------------------------------ */

struct set_case {
  const char *what;
  struct kb_input_set set;
};

static void test_fill(int64_t n) {
  const struct set_case cases[] = {
      {"uniform(-3,5)", {1, KB_DIST_UNIFORM, -3, 5}},
      {"normal(0.5,2)", {2, KB_DIST_NORMAL, 0.5, 2}},
      {"integers(-100,100)", {3, KB_DIST_INTEGERS, -100, 100}},
      {"uniform(-1e5,1e5) f16 overflow", {4, KB_DIST_UNIFORM, -1e5, 1e5}},
      {"uniform(-1e-6,1e-6) subnormals", {5, KB_DIST_UNIFORM, -1e-6, 1e-6}},
      {"integers(-2^61,2^61)", {6, KB_DIST_INTEGERS, -0x1p61, 0x1p61}},
      {"uniform(-3e9,3e9) i32 clamp", {7, KB_DIST_UNIFORM, -3e9, 3e9}},
      {"uniform(-50,300) u8 clamp", {8, KB_DIST_UNIFORM, -50.5, 300}},
      {"normal(0,1e30) f32 huge", {9, KB_DIST_NORMAL, 0, 1e30}},
      {"integers(0,2) bool", {10, KB_DIST_INTEGERS, 0, 2}},
  };
  size_t bytes = (size_t)n * 8;
  unsigned char *host = xmalloc(bytes), *back = xmalloc(bytes);
  void *dev = NULL;
  CUDA_OK(cudaMalloc(&dev, bytes));
  int tested = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    for (int dtype = 0; dtype <= KB_BOOL; dtype++) {
      int size = kb_dtype_size(dtype);
      int tensor = (int)(c + (size_t)dtype) % 3;
      struct kb_error err = {0};
      int hrc = kb__inputs_fill(&cases[c].set, tensor, dtype, host, n, &err);
      CHECK(hrc == KB_OK, "host fill %s %s: %s", cases[c].what, dtype_names[dtype], err.msg);
      CUDA_OK(cudaMemsetAsync(dev, 0x5a, (size_t)n * (size_t)size, stream));
      CUDA_OK(kb__dk_fill(dev, dtype, n, cases[c].set.seed, tensor, cases[c].set.dist,
                         cases[c].set.low, cases[c].set.high, stream));
      CUDA_OK(cudaMemcpyAsync(back, dev, (size_t)n * (size_t)size, cudaMemcpyDeviceToHost,
                              stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      int64_t first = -1, diff = 0;
      for (int64_t i = 0; i < n; i++)
        if (memcmp(host + i * size, back + i * size, (size_t)size) != 0) {
          if (first < 0)
            first = i;
          diff++;
        }
      CHECK(diff == 0, "fill %s %s: %lld of %lld elements differ, first %lld: device %.17g host %.17g",
            cases[c].what, dtype_names[dtype], (long long)diff, (long long)n, (long long)first,
            first >= 0 ? kb__dtype_load(dtype, back, first) : 0.0,
            first >= 0 ? kb__dtype_load(dtype, host, first) : 0.0);
      tested++;
    }
  }
  /* invalid arguments are refused as kb__inputs_fill refuses them */
  CHECK(kb__dk_fill(dev, 99, 10, 1, 0, KB_DIST_UNIFORM, 0, 1, stream) != 0, "unknown dtype");
  CHECK(kb__dk_fill(dev, KB_F32, 10, 1, 0, 7, 0, 1, stream) != 0, "unknown distribution");
  CHECK(kb__dk_fill(dev, KB_F32, 10, 1, 0, KB_DIST_INTEGERS, 5, 5, stream) != 0, "empty range");
  CHECK(kb__dk_fill(dev, KB_F32, 10, 1, 0, KB_DIST_UNIFORM, 0, INFINITY, stream) != 0,
        "infinite bound");
  printf("fill: %d dtype x distribution cases of %lld elements compared byte for byte\n", tested,
         (long long)n);
  /* beyond 2^31 elements: 64-bit indices all the way (the last 4096 of 2^31 + 77 u8 elements,
   * computed one by one on the host) */
  {
    const int64_t big = ((int64_t)1 << 31) + 77, tail = 4096;
    struct kb_input_set set = {99, KB_DIST_INTEGERS, 0, 256};
    unsigned char *dbig = NULL, got[4096], want[4096];
    CUDA_OK(cudaMalloc((void **)&dbig, (size_t)big));
    CUDA_OK(kb__dk_fill(dbig, KB_U8, big, set.seed, 2, set.dist, set.low, set.high, stream));
    CUDA_OK(cudaMemcpyAsync(got, dbig + big - tail, (size_t)tail, cudaMemcpyDeviceToHost,
                            stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    uint64_t key = kb__rand_key(set.seed, 2);
    for (int64_t i = 0; i < tail; i++)
      kb__dtype_store(KB_U8, want + i, kb__input_value(&set, key, big - tail + i));
    CHECK(memcmp(got, want, (size_t)tail) == 0, "fill of %lld u8 elements: the tail differs",
          (long long)big);
    CUDA_OK(cudaFree(dbig));
    printf("fill: the last %lld of %lld u8 elements match\n", (long long)tail, (long long)big);
  }
  CUDA_OK(cudaFree(dev));
  kb_free(host);
  kb_free(back);
}

/* --- poison ---------------------------------------------------------------------------------- */

static void test_poison(void) {
  const int64_t counts[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 1000003};
  const int guard = 64;
  int tested = 0;
  for (int dtype = 0; dtype <= KB_BOOL; dtype++) {
    int size = kb_dtype_size(dtype);
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
      for (int offset = 0; offset < 4; offset++) { /* elements from a 256-byte aligned start */
        int64_t n = counts[k];
        size_t bytes = (size_t)n * (size_t)size + 2 * (size_t)guard + 64;
        unsigned char *want = xmalloc(bytes), *got = xmalloc(bytes);
        memset(want, 0x11, bytes);
        size_t at = (size_t)guard + (size_t)offset * (size_t)size;
        kb__poison(dtype, want + at, n);
        unsigned char *dev = NULL;
        CUDA_OK(cudaMalloc((void **)&dev, bytes));
        CUDA_OK(cudaMemsetAsync(dev, 0x11, bytes, stream));
        CUDA_OK(kb__dk_poison(dev + at, dtype, n, stream));
        CUDA_OK(cudaMemcpyAsync(got, dev, bytes, cudaMemcpyDeviceToHost, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        size_t bad = bytes;
        for (size_t i = 0; i < bytes; i++)
          if (got[i] != want[i]) {
            bad = i;
            break;
          }
        CHECK(bad == bytes, "poison %s n=%lld offset=%d: byte %zu is 0x%02x, expected 0x%02x",
              dtype_names[dtype], (long long)n, offset, bad, bad < bytes ? got[bad] : 0,
              bad < bytes ? want[bad] : 0);
        CUDA_OK(cudaFree(dev));
        kb_free(want);
        kb_free(got);
        tested++;
      }
    }
  }
  printf("poison: %d cases (sizes, unaligned starts, guards) identical to kb__poison\n", tested);
}

/* --- compare --------------------------------------------------------------------------------- */

static int same_double(double a, double b) {
  return (isnan(a) && isnan(b)) || a == b;
}

/* Compares got/want (host arrays) on the host and the device; checks the reports agree. */
static void compare_at(struct kb_dk_ctx *ctx, const char *what, int dtype, const void *got,
                       const void *want, int64_t n, double atol, double rtol, int expect,
                       int offset) {
  struct kb_verify_report h, d;
  int hp = kb__verify(dtype, got, want, n, atol, rtol, &h);
  size_t bytes = (size_t)n * (size_t)kb_dtype_size(dtype);
  size_t skip = (size_t)offset * (size_t)kb_dtype_size(dtype);
  unsigned char *gb = NULL, *wb = NULL;
  CUDA_OK(cudaMalloc((void **)&gb, bytes + skip + 1));
  CUDA_OK(cudaMalloc((void **)&wb, bytes + skip + 1));
  void *g = gb + skip, *w = wb + skip; /* offset > 0: not 16-byte aligned, the scalar path */
  CUDA_OK(cudaMemcpy(g, got, bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(w, want, bytes, cudaMemcpyHostToDevice));
  int dp = -1;
  CUDA_OK(kb__dk_compare(ctx, g, w, dtype, n, atol, rtol, &d, &dp, stream));
  CHECK(hp == dp && dp == expect, "compare %s: host pass %d, device pass %d, expected %d", what,
        hp, dp, expect);
  CHECK(h.checked == d.checked && h.bad == d.bad && h.first_bad == d.first_bad &&
            same_double(h.got, d.got) && same_double(h.expected, d.expected) &&
            h.max_abs_err == d.max_abs_err && h.max_rel_err == d.max_rel_err,
        "compare %s: reports differ: host {checked %lld bad %lld first %lld got %.17g exp %.17g "
        "abs %.17g rel %.17g} device {checked %lld bad %lld first %lld got %.17g exp %.17g abs "
        "%.17g rel %.17g}",
        what, (long long)h.checked, (long long)h.bad, (long long)h.first_bad, h.got, h.expected,
        h.max_abs_err, h.max_rel_err, (long long)d.checked, (long long)d.bad,
        (long long)d.first_bad, d.got, d.expected, d.max_abs_err, d.max_rel_err);
  CUDA_OK(cudaFree(gb));
  CUDA_OK(cudaFree(wb));
}

static void compare_case(struct kb_dk_ctx *ctx, const char *what, int dtype, const void *got,
                         const void *want, int64_t n, double atol, double rtol, int expect) {
  compare_at(ctx, what, dtype, got, want, n, atol, rtol, expect, 0);
}

static void test_compare(struct kb_dk_ctx *ctx) {
  /* f32: NaN, Inf, poison, tolerance edges */
  {
    float want[8] = {1, 2, -3, 4, 0, 1e-3f, 100, 5};
    float got[8];
    memcpy(got, want, sizeof got);
    compare_case(ctx, "f32 equal", KB_F32, got, want, 8, 1e-4, 1e-4, 1);
    got[3] = NAN;
    compare_case(ctx, "f32 NaN", KB_F32, got, want, 8, 1e-4, 1e-4, 0);
    memcpy(got, want, sizeof got);
    got[6] = INFINITY;
    compare_case(ctx, "f32 Inf got", KB_F32, got, want, 8, 1e30, 1e30, 0);
    memcpy(got, want, sizeof got);
    float inf_want[8];
    memcpy(inf_want, want, sizeof inf_want);
    inf_want[2] = -INFINITY;
    got[2] = -INFINITY;
    compare_case(ctx, "f32 Inf both", KB_F32, got, inf_want, 8, 1, 1, 0);
    memcpy(got, want, sizeof got);
    kb__poison(KB_F32, got + 5, 3);
    compare_case(ctx, "f32 poison left", KB_F32, got, want, 8, 1e30, 1e30, 0);
    /* exactly at the bound passes, one ulp above fails */
    double atol = 0.25, rtol = 0.5;
    memcpy(got, want, sizeof got);
    got[7] = 5.0f + (float)(atol + rtol * 5.0); /* 7.75, exact */
    compare_case(ctx, "f32 at tolerance", KB_F32, got, want, 8, atol, rtol, 1);
    got[7] = nextafterf(got[7], INFINITY);
    compare_case(ctx, "f32 just past tolerance", KB_F32, got, want, 8, atol, rtol, 0);
    got[7] = 5;
    got[4] = 1e-30f; /* want 0: relative error not counted, absolute passes */
    compare_case(ctx, "f32 vs zero", KB_F32, got, want, 8, 1e-20, 0, 1);
  }
  /* f16, bf16: poison patterns and NaN from the bits */
  {
    uint16_t want[6], got[6];
    for (int i = 0; i < 6; i++)
      want[i] = kb__f32_to_f16((float)i * 0.5f - 1);
    memcpy(got, want, sizeof got);
    compare_case(ctx, "f16 equal", KB_F16, got, want, 6, 1e-2, 1e-2, 1);
    kb__poison(KB_F16, got + 2, 1);
    compare_case(ctx, "f16 poison", KB_F16, got, want, 6, 1e-2, 1e-2, 0);
    memcpy(got, want, sizeof got);
    got[5] = 0x7c00; /* +inf */
    compare_case(ctx, "f16 inf", KB_F16, got, want, 6, 1e9, 1e9, 0);
    memcpy(got, want, sizeof got);
    got[1] = (uint16_t)(got[1] + 1); /* one ulp */
    compare_case(ctx, "f16 one ulp", KB_F16, got, want, 6, 1e-2, 1e-2, 1);
    for (int i = 0; i < 6; i++)
      want[i] = kb__f32_to_bf16((float)i * 3.25f - 2);
    memcpy(got, want, sizeof got);
    compare_case(ctx, "bf16 equal", KB_BF16, got, want, 6, 1e-2, 1e-2, 1);
    kb__poison(KB_BF16, got, 6);
    compare_case(ctx, "bf16 all poison", KB_BF16, got, want, 6, 1e-2, 1e-2, 0);
  }
  /* f64 */
  {
    double want[4] = {1e300, -1e300, 3, 0}, got[4] = {-1e300, 1e300, 3, -0.0};
    compare_case(ctx, "f64 overflowing difference", KB_F64, got, want, 4, 0, 0, 0);
    got[0] = 1e300;
    got[1] = -1e300;
    compare_case(ctx, "f64 equal, signed zero", KB_F64, got, want, 4, 0, 0, 1);
    kb__poison(KB_F64, got + 3, 1);
    compare_case(ctx, "f64 poison", KB_F64, got, want, 4, 1, 1, 0);
  }
  /* integers and bool */
  {
    int32_t want[5] = {1, -2, 3, 2147483647, -2147483647 - 1}, got[5];
    memcpy(got, want, sizeof got);
    compare_case(ctx, "i32 equal", KB_I32, got, want, 5, 0, 0, 1);
    got[3] = -1;
    compare_case(ctx, "i32 off", KB_I32, got, want, 5, 0, 0, 0);
    kb__poison(KB_I32, got, 5);
    compare_case(ctx, "i32 poison", KB_I32, got, want, 5, 0, 0, 0);
    int64_t w64[4] = {INT64_MAX, INT64_MIN, (int64_t)1 << 60, 5}, g64[4];
    memcpy(g64, w64, sizeof g64);
    g64[2] += 1; /* differs by 1, invisible in a double: still an error of 1 */
    compare_case(ctx, "i64 off by one beyond 2^53", KB_I64, g64, w64, 4, 0, 0, 0);
    g64[2] -= 1;
    compare_case(ctx, "i64 equal", KB_I64, g64, w64, 4, 0, 0, 1);
    uint8_t bw[6] = {0, 1, 1, 0, 1, 0}, bg[6];
    memcpy(bg, bw, sizeof bg);
    compare_case(ctx, "bool equal", KB_BOOL, bg, bw, 6, 0, 0, 1);
    bg[4] = 2;
    compare_case(ctx, "bool 2 (tolerance 5)", KB_BOOL, bg, bw, 6, 5, 0, 0);
    bg[4] = 0xa5;
    compare_case(ctx, "bool poison byte", KB_BOOL, bg, bw, 6, 1000, 0, 0);
    uint8_t uw[3] = {0, 128, 255}, ug[3] = {1, 128, 254};
    compare_case(ctx, "u8 within atol 1", KB_U8, ug, uw, 3, 1, 0, 1);
    compare_case(ctx, "u8 atol 0", KB_U8, ug, uw, 3, 0, 0, 0);
  }
  compare_case(ctx, "empty", KB_F32, "", "", 0, 0, 0, 1);
  /* large arrays: every dtype, a fill perturbed at scattered places */
  int64_t n = (1 << 22) + 5;
  for (int dtype = 0; dtype <= KB_BOOL; dtype++) {
    int size = kb_dtype_size(dtype);
    unsigned char *want = xmalloc((size_t)n * (size_t)size), *got = xmalloc((size_t)n * (size_t)size);
    struct kb_input_set s = {11, dtype >= KB_I32 ? KB_DIST_INTEGERS : KB_DIST_NORMAL, 0,
                             dtype == KB_BOOL ? 2 : 100};
    if (dtype == KB_BOOL || dtype == KB_U8)
      s.low = 0;
    kb__inputs_fill(&s, 0, dtype, want, n, NULL);
    struct kb_input_set s2 = s;
    s2.seed = 12;
    kb__inputs_fill(&s2, 0, dtype, got, n, NULL);
    /* got = want except a few elements replaced by another draw (close or far), and a NaN */
    memcpy(got, want, (size_t)n * (size_t)size);
    compare_case(ctx, "large equal", dtype, got, want, n, 1e-3, 1e-3, 1);
    for (int64_t i = 977; i < n; i += n / 7)
    {
      double v = kb__dtype_load(dtype, want, i);
      double nv = dtype == KB_BOOL ? 1 - v : dtype >= KB_I32 ? v + 1 : v * 1.0001 + 0.5;
      kb__dtype_store(dtype, got + i * size, nv);
    }
    char what[64];
    snprintf(what, sizeof what, "large %s perturbed", dtype_names[dtype]);
    compare_case(ctx, what, dtype, got, want, n, 1e-3, 1e-3, 0);
    snprintf(what, sizeof what, "large %s perturbed, unaligned", dtype_names[dtype]);
    compare_at(ctx, what, dtype, got + size, want + size, n - 1, 1e-3, 1e-3, 0, 1);
    if (dtype <= KB_F64) {
      kb__poison(dtype, got + (n - 1) * size, 1);
      snprintf(what, sizeof what, "large %s poisoned last", dtype_names[dtype]);
      compare_case(ctx, what, dtype, got, want, n, 1e9, 1e9, 0);
    }
    kb_free(want);
    kb_free(got);
  }
  struct kb_verify_report r;
  int pass = 1;
  CHECK(kb__dk_compare(ctx, NULL, NULL, 42, 1, 0, 0, &r, &pass, stream) != 0 && pass == 0 &&
            r.first_bad == 0,
        "unknown dtype refused as kb__verify reports it");
  printf("compare: crafted and large cases agree with kb__verify\n");
}

/* --- checksum -------------------------------------------------------------------------------- */

static void test_checksum(struct kb_dk_ctx *ctx) {
  const size_t bytes = (64u << 20) + 5;
  unsigned char *host = xmalloc(bytes);
  struct kb_input_set s = {21, KB_DIST_INTEGERS, 0, 256};
  kb__inputs_fill(&s, 0, KB_U8, host, (int64_t)bytes, NULL);
  unsigned char *dev = NULL;
  CUDA_OK(cudaMalloc((void **)&dev, bytes + 16));
  CUDA_OK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
  uint64_t base = 0, again = 0, x = 0;
  CUDA_OK(kb__dk_checksum(ctx, dev, bytes, &base, stream));
  CUDA_OK(kb__dk_checksum(ctx, dev, bytes, &again, stream));
  CHECK(base == again, "checksum not deterministic: %016llx %016llx", (unsigned long long)base,
        (unsigned long long)again);
  const size_t where[] = {0, 1, 7, 8, 15, 16, 4095, bytes / 2, bytes - 6, bytes - 5, bytes - 1};
  for (size_t k = 0; k < sizeof where / sizeof where[0]; k++) {
    for (int bit = 0; bit < 8; bit += 7) {
      unsigned char b = host[where[k]] ^ (unsigned char)(1u << bit);
      CUDA_OK(cudaMemcpy(dev + where[k], &b, 1, cudaMemcpyHostToDevice));
      CUDA_OK(kb__dk_checksum(ctx, dev, bytes, &x, stream));
      CHECK(x != base, "flipping bit %d of byte %zu left the checksum unchanged", bit, where[k]);
      CUDA_OK(cudaMemcpy(dev + where[k], host + where[k], 1, cudaMemcpyHostToDevice));
    }
  }
  CUDA_OK(kb__dk_checksum(ctx, dev, bytes, &x, stream));
  CHECK(x == base, "restored buffer, checksum %016llx != %016llx", (unsigned long long)x,
        (unsigned long long)base);
  /* two 8-byte words swapped: a sum of position-free terms would not notice */
  CUDA_OK(cudaMemcpy(dev, host + 8, 8, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dev + 8, host, 8, cudaMemcpyHostToDevice));
  CUDA_OK(kb__dk_checksum(ctx, dev, bytes, &x, stream));
  CHECK(x != base || memcmp(host, host + 8, 8) == 0, "swapped words left the checksum unchanged");
  CUDA_OK(cudaMemcpy(dev, host, 16, cudaMemcpyHostToDevice));
  /* an unaligned start (byte path) is deterministic and sees flips too */
  uint64_t u1 = 0, u2 = 0;
  CUDA_OK(kb__dk_checksum(ctx, dev + 3, 1001, &u1, stream));
  unsigned char b = host[500] ^ 0x10;
  CUDA_OK(cudaMemcpy(dev + 500, &b, 1, cudaMemcpyHostToDevice));
  CUDA_OK(kb__dk_checksum(ctx, dev + 3, 1001, &u2, stream));
  CHECK(u1 != u2, "unaligned checksum missed a flipped byte");
  CUDA_OK(cudaMemcpy(dev + 500, host + 500, 1, cudaMemcpyHostToDevice));
  /* the same bytes at an aligned and an unaligned address give the same checksum */
  CUDA_OK(cudaMemcpy(dev + 3, host, 4096, cudaMemcpyHostToDevice));
  CUDA_OK(kb__dk_checksum(ctx, dev + 3, 4096, &u1, stream));
  CUDA_OK(cudaMemcpy(dev, host, 4096, cudaMemcpyHostToDevice));
  CUDA_OK(kb__dk_checksum(ctx, dev, 4096, &u2, stream));
  CHECK(u1 == u2, "aligned and unaligned paths disagree: %016llx %016llx",
        (unsigned long long)u2, (unsigned long long)u1);
  /* a length change alone changes it */
  CUDA_OK(kb__dk_checksum(ctx, dev, 4095, &u1, stream));
  CHECK(u1 != u2 || host[4095] != 0, "length not in the checksum");
  CUDA_OK(cudaFree(dev));
  kb_free(host);
  printf("checksum: single flipped bits, swapped words, alignment paths: ok\n");
}

/* --- flush and spin -------------------------------------------------------------------------- */

static void test_flush_spin(struct kb_dk_ctx *ctx) {
  int dev = 0, l2 = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  double t[21];
  CUDA_OK(kb__dk_flush_l2(ctx, stream));
  for (int i = 0; i < 21; i++) {
    timer_start();
    CUDA_OK(kb__dk_flush_l2(ctx, stream));
    t[i] = timer_stop_ms();
  }
  double flush_ms = median(t, 21);
  double flush_gbs = 2.0 * l2 / (flush_ms * 1e-3) / 1e9;
  printf("flush: L2 %d MiB, flush of %d MiB in %.1f us (%.0f GB/s)\n", l2 >> 20, (2 * l2) >> 20,
         flush_ms * 1e3, flush_gbs);
  /* writing 2x the L2 at more than 10 TB/s would mean the kernel skipped the work */
  CHECK(flush_gbs < 10000 && flush_ms > 0, "flush too fast to have written its buffer: %.0f GB/s",
        flush_gbs);
  /* eviction: re-reading a buffer of half the L2 is slower right after a flush */
  size_t bytes = ((size_t)l2 / 2) & ~(size_t)15;
  void *buf = NULL;
  CUDA_OK(cudaMalloc(&buf, bytes));
  CUDA_OK(cudaMemset(buf, 1, bytes));
  unsigned *sink = NULL;
  CUDA_OK(cudaMalloc((void **)&sink, sizeof *sink));
  double warm[15], cold[15];
  for (int i = 0; i < 15; i++) {
    CUDA_OK(test_read_probe(buf, bytes, sink, stream));
    timer_start();
    CUDA_OK(test_read_probe(buf, bytes, sink, stream));
    warm[i] = timer_stop_ms();
    CUDA_OK(kb__dk_flush_l2(ctx, stream));
    timer_start();
    CUDA_OK(test_read_probe(buf, bytes, sink, stream));
    cold[i] = timer_stop_ms();
  }
  CUDA_OK(cudaFree(sink));
  double w = median(warm, 15), c = median(cold, 15);
  printf("flush: reading %zu MiB: %.1f us warm, %.1f us after a flush (x%.2f)\n", bytes >> 20,
         w * 1e3, c * 1e3, c / w);
  CHECK(c > 1.1 * w, "a flush did not slow the re-read: warm %.1f us, cold %.1f us", w * 1e3,
        c * 1e3);
  CUDA_OK(cudaFree(buf));
  double empty[11];
  for (int i = 0; i < 11; i++) {
    timer_start();
    empty[i] = timer_stop_ms() * 1e3;
  }
  printf("spin: two events with nothing between: %.2f us\n", median(empty, 11));
  const double us[] = {2, 10, 50, 500, 5000};
  for (size_t k = 0; k < sizeof us / sizeof us[0]; k++) {
    double s[11];
    for (int i = 0; i < 11; i++) {
      timer_start();
      CUDA_OK(kb__dk_spin(us[k], stream));
      s[i] = timer_stop_ms() * 1e3;
    }
    double m = median(s, 11);
    printf("spin: asked %.0f us, took %.2f us (median of 11)\n", us[k], m);
    CHECK(m >= 0.95 * us[k] && m <= us[k] * 1.05 + 20, "spin %.0f us took %.2f us", us[k], m);
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  CHECK(kb__dk_spin(-1, stream) != 0, "negative spin refused");
}

/* --- bandwidth ------------------------------------------------------------------------------- */

static void bandwidth(struct kb_dk_ctx *ctx) {
  const int64_t n = (int64_t)1 << 28; /* 1 GiB of f32 */
  void *a = NULL, *b = NULL;
  CUDA_OK(cudaMalloc(&a, (size_t)n * 4));
  CUDA_OK(cudaMalloc(&b, (size_t)n * 4));
  double t[7];
  struct {
    const char *what;
    double bytes;
  } rows[8];
  double ms[8];
  int r = 0;
  const int dists[] = {KB_DIST_UNIFORM, KB_DIST_NORMAL, KB_DIST_INTEGERS};
  for (int d = 0; d < 3; d++) {
    for (int i = 0; i < 7; i++) {
      timer_start();
      CUDA_OK(kb__dk_fill(a, KB_F32, n, 1, 0, dists[d], -1, 1, stream));
      t[i] = timer_stop_ms();
    }
    rows[r].what = d == 0 ? "fill f32 uniform (write)" : d == 1 ? "fill f32 normal (write)"
                                                                : "fill f32 integers (write)";
    rows[r].bytes = (double)n * 4;
    ms[r++] = median(t, 7);
  }
  for (int i = 0; i < 7; i++) {
    timer_start();
    CUDA_OK(kb__dk_fill(a, KB_BF16, n, 1, 0, KB_DIST_UNIFORM, -1, 1, stream));
    t[i] = timer_stop_ms();
  }
  rows[r].what = "fill bf16 uniform (write)";
  rows[r].bytes = (double)n * 2;
  ms[r++] = median(t, 7);
  for (int i = 0; i < 7; i++) {
    timer_start();
    CUDA_OK(kb__dk_poison(a, KB_F32, n, stream));
    t[i] = timer_stop_ms();
  }
  rows[r].what = "poison f32 (write)";
  rows[r].bytes = (double)n * 4;
  ms[r++] = median(t, 7);
  CUDA_OK(kb__dk_fill(a, KB_F32, n, 1, 0, KB_DIST_UNIFORM, -1, 1, stream));
  CUDA_OK(kb__dk_fill(b, KB_F32, n, 1, 0, KB_DIST_UNIFORM, -1, 1, stream));
  struct kb_verify_report rep;
  int pass = 0;
  for (int i = 0; i < 7; i++) {
    timer_start();
    CUDA_OK(kb__dk_compare(ctx, a, b, KB_F32, n, 1e-4, 1e-4, &rep, &pass, stream));
    t[i] = timer_stop_ms();
  }
  CHECK(pass == 1, "compare of equal 1 GiB arrays failed");
  rows[r].what = "compare f32 (read 2 arrays)";
  rows[r].bytes = (double)n * 8;
  ms[r++] = median(t, 7);
  uint64_t sum;
  for (int i = 0; i < 7; i++) {
    timer_start();
    CUDA_OK(kb__dk_checksum(ctx, a, (size_t)n * 4, &sum, stream));
    t[i] = timer_stop_ms();
  }
  rows[r].what = "checksum (read)";
  rows[r].bytes = (double)n * 4;
  ms[r++] = median(t, 7);
  for (int i = 0; i < 7; i++) {
    timer_start();
    CUDA_OK(cudaMemcpyAsync(b, a, (size_t)n * 4, cudaMemcpyDeviceToDevice, stream));
    t[i] = timer_stop_ms();
  }
  rows[r].what = "cudaMemcpy d2d (read+write)";
  rows[r].bytes = (double)n * 8;
  ms[r++] = median(t, 7);
  printf("bandwidth (1 GiB buffers, median of 7, CUDA events):\n");
  for (int i = 0; i < r; i++)
    printf("  %-30s %8.3f ms %7.0f GB/s\n", rows[i].what, ms[i], rows[i].bytes / (ms[i] * 1e-3) / 1e9);
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
}

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  struct cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, %d SMs, L2 %d MiB\n", prop.name, prop.multiProcessorCount,
         prop.l2CacheSize >> 20);
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_OK(cudaEventCreate(&ev0));
  CUDA_OK(cudaEventCreate(&ev1));
  struct kb_dk_ctx *ctx = NULL;
  CUDA_OK(kb__dk_ctx_new(0, &ctx));
  test_fill(quick ? 100003 : (1 << 22) + 13);
  test_poison();
  test_compare(ctx);
  test_checksum(ctx);
  test_flush_spin(ctx);
  if (!quick)
    bandwidth(ctx);
  kb__dk_ctx_free(ctx);
  CUDA_OK(cudaGetLastError());
  printf("%s: %d checks, %d failed\n", failures ? "FAIL" : "PASS", checks, failures);
  return failures ? 1 : 0;
}
