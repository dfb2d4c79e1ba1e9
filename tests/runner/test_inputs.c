/* Deterministic input generation (inputs.h): the generator's exact output is pinned, so a
 * change to the PRNG, the distributions or the conversions fails here before it silently changes
 * every task's inputs (and every stored reference). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "inputs.h"
#include "reflect.h"

static uint32_t bits32(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static void test_splitmix_reference(void **state) {
  (void)state;
  /* the first output of the published splitmix64 seeded with 0 */
  assert_int_equal(kb__rand_mix(UINT64_C(0x9e3779b97f4a7c15)), UINT64_C(0xe220a8397b1dcdaf));
  assert_int_equal(kb__rand_u64(0, 0), UINT64_C(0xe220a8397b1dcdaf));
}

static void test_known_values(void **state) {
  (void)state;
  struct kb_input_set u = {42, KB_DIST_UNIFORM, -1, 1};
  struct kb_input_set n = {42, KB_DIST_NORMAL, 0, 1};
  struct kb_input_set ints = {42, KB_DIST_INTEGERS, -5, 5};
  float f[4];
  double d[4];
  int32_t i[4];
  uint16_t h[4];
  assert_int_equal(kb__inputs_fill(&u, 0, KB_F32, f, 4, NULL), KB_OK);
  static const uint32_t want_f32[4] = {0xbea07815, 0x3f6957a3, 0xbcdfa632, 0xbf5d8344};
  for (int k = 0; k < 4; k++)
    assert_int_equal(bits32(f[k]), want_f32[k]);
  assert_int_equal(kb__inputs_fill(&n, 1, KB_F64, d, 4, NULL), KB_OK);
  static const double want_f64[4] = {0x1.79f356405f81p-2, 0x1.82019b35c016p-2,
                                     -0x1.33802d954eb08p+0, -0x1.2a44f90d7bf48p-1};
  for (int k = 0; k < 4; k++)
    assert_true(d[k] == want_f64[k]);
  assert_int_equal(kb__inputs_fill(&ints, 0, KB_I32, i, 4, NULL), KB_OK);
  static const int32_t want_i32[4] = {3, 2, -3, 1};
  for (int k = 0; k < 4; k++)
    assert_int_equal(i[k], want_i32[k]);
  assert_int_equal(kb__inputs_fill(&u, 0, KB_F16, h, 4, NULL), KB_OK);
  static const uint16_t want_f16[4] = {0xb504, 0x3b4b, 0xa6fd, 0xbaec};
  for (int k = 0; k < 4; k++)
    assert_int_equal(h[k], want_f16[k]);
  assert_int_equal(kb__inputs_fill(&u, 0, KB_BF16, h, 4, NULL), KB_OK);
  static const uint16_t want_bf16[4] = {0xbea0, 0x3f69, 0xbce0, 0xbf5e};
  for (int k = 0; k < 4; k++)
    assert_int_equal(h[k], want_bf16[k]);
}

static void test_deterministic(void **state) {
  (void)state;
  enum { N = 4096 };
  static float a[N], b[N], c[N], e[N];
  struct kb_input_set s = {7, KB_DIST_NORMAL, 1, 2};
  assert_int_equal(kb__inputs_fill(&s, 0, KB_F32, a, N, NULL), KB_OK);
  assert_int_equal(kb__inputs_fill(&s, 0, KB_F32, b, N, NULL), KB_OK);
  assert_memory_equal(a, b, sizeof a);
  /* element i does not depend on how many come before or after it */
  assert_int_equal(kb__inputs_fill(&s, 0, KB_F32, e, 10, NULL), KB_OK);
  assert_memory_equal(a, e, 10 * sizeof a[0]);
  struct kb_input_set other = s;
  other.seed = 8;
  assert_int_equal(kb__inputs_fill(&other, 0, KB_F32, c, N, NULL), KB_OK);
  assert_memory_not_equal(a, c, sizeof a);
  assert_int_equal(kb__inputs_fill(&s, 1, KB_F32, c, N, NULL), KB_OK);
  assert_memory_not_equal(a, c, sizeof a);
}

static void test_distributions(void **state) {
  (void)state;
  enum { N = 200000 };
  double *v = kb_malloc(N * sizeof *v);
  assert_non_null(v);
  struct kb_input_set u = {1, KB_DIST_UNIFORM, 2, 4};
  assert_int_equal(kb__inputs_fill(&u, 0, KB_F64, v, N, NULL), KB_OK);
  double sum = 0, lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < N; i++) {
    sum += v[i];
    lo = fmin(lo, v[i]);
    hi = fmax(hi, v[i]);
  }
  assert_true(lo >= 2 && hi < 4);
  assert_float_equal(sum / N, 3.0, 0.01);

  struct kb_input_set n = {2, KB_DIST_NORMAL, 5, 3};
  assert_int_equal(kb__inputs_fill(&n, 0, KB_F64, v, N, NULL), KB_OK);
  double s1 = 0, s2 = 0;
  for (int i = 0; i < N; i++) {
    s1 += v[i];
    s2 += v[i] * v[i];
    assert_true(fabs(v[i] - 5) <= 18); /* Irwin-Hall tails stop at 6 standard deviations */
  }
  double mean = s1 / N;
  assert_float_equal(mean, 5.0, 0.03);
  assert_float_equal(sqrt(s2 / N - mean * mean), 3.0, 0.03);

  struct kb_input_set ints = {3, KB_DIST_INTEGERS, -2, 3};
  int counts[5] = {0};
  int64_t i64[1000];
  assert_int_equal(kb__inputs_fill(&ints, 0, KB_I64, i64, 1000, NULL), KB_OK);
  for (int i = 0; i < 1000; i++) {
    assert_in_range(i64[i] + 2, 0, 4);
    counts[i64[i] + 2]++;
  }
  for (int k = 0; k < 5; k++)
    assert_true(counts[k] > 150);
  kb_free(v);
}

static void test_integer_conversions(void **state) {
  (void)state;
  uint8_t u8[64], b8[64];
  int32_t i32[64];
  struct kb_input_set wide = {4, KB_DIST_UNIFORM, -1000, 1000};
  assert_int_equal(kb__inputs_fill(&wide, 0, KB_U8, u8, 64, NULL), KB_OK);
  assert_int_equal(kb__inputs_fill(&wide, 0, KB_BOOL, b8, 64, NULL), KB_OK);
  assert_int_equal(kb__inputs_fill(&wide, 0, KB_I32, i32, 64, NULL), KB_OK);
  for (int i = 0; i < 64; i++) {
    assert_true(b8[i] == 0 || b8[i] == 1);
    /* floor, then clamp to the dtype's range */
    if (i32[i] < 0)
      assert_int_equal(u8[i], 0);
    else if (i32[i] > 255)
      assert_int_equal(u8[i], 255);
    else
      assert_int_equal(u8[i], i32[i]);
    assert_int_equal(b8[i], i32[i] >= 1 ? 1 : 0);
  }
  uint8_t x;
  assert_int_equal(kb__dtype_store(KB_I32, i32, -2.5), KB_OK);
  assert_int_equal(i32[0], -3);
  assert_int_equal(kb__dtype_store(KB_I32, i32, 1e12), KB_OK);
  assert_int_equal(i32[0], INT32_MAX);
  assert_int_equal(kb__dtype_store(KB_U8, &x, NAN), KB_OK);
  assert_int_equal(x, 0);
  int64_t big;
  assert_int_equal(kb__dtype_store(KB_I64, &big, 1e30), KB_OK);
  assert_true(big == INT64_MAX);
  assert_int_equal(kb__dtype_store(99, &x, 1), KB_EINVAL);
}

static void test_bad_sets(void **state) {
  (void)state;
  float f[4];
  struct kb_error err = {0};
  struct kb_input_set empty = {1, KB_DIST_INTEGERS, 3, 3};
  assert_int_equal(kb__inputs_fill(&empty, 0, KB_F32, f, 4, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "empty"));
  struct kb_input_set bad = {1, 17, 0, 1};
  assert_int_equal(kb__inputs_fill(&bad, 0, KB_F32, f, 4, NULL), KB_EINVAL);
  struct kb_input_set inf = {1, KB_DIST_UNIFORM, 0, INFINITY};
  assert_int_equal(kb__inputs_fill(&inf, 0, KB_F32, f, 4, NULL), KB_EINVAL);
  struct kb_input_set ok = {1, KB_DIST_UNIFORM, 0, 1};
  assert_int_equal(kb__inputs_fill(&ok, 0, 42, f, 4, NULL), KB_EINVAL);
}

static void test_f16(void **state) {
  (void)state;
  assert_int_equal(kb__f32_to_f16(1.0f), 0x3c00);
  assert_int_equal(kb__f32_to_f16(-2.0f), 0xc000);
  assert_int_equal(kb__f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(kb__f32_to_f16(65520.0f), 0x7c00);    /* rounds up to infinity */
  assert_int_equal(kb__f32_to_f16(65519.0f), 0x7bff);
  assert_int_equal(kb__f32_to_f16(0x1p-24f), 0x0001);    /* smallest subnormal */
  assert_int_equal(kb__f32_to_f16(0x1p-25f), 0x0000);    /* halfway: to even, zero */
  assert_int_equal(kb__f32_to_f16(0x1.8p-25f), 0x0001);
  assert_int_equal(kb__f32_to_f16(0x1p-14f), 0x0400);    /* smallest normal */
  assert_int_equal(kb__f32_to_f16(1.0f + 0x1p-11f), 0x3c00); /* tie to even */
  assert_int_equal(kb__f32_to_f16(1.0f + 0x1.8p-10f), 0x3c02);
  assert_int_equal(kb__f32_to_f16(-0.0f), 0x8000);
  assert_int_equal(kb__f32_to_f16(INFINITY), 0x7c00);
  uint16_t nan = kb__f32_to_f16(NAN);
  assert_true((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0);
  /* every half survives the round trip through f32 */
  for (uint32_t v = 0; v < 0x10000; v++) {
    uint16_t h = (uint16_t)v;
    float f = kb__f16_to_f32(h);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) {
      assert_true(isnan(f));
      continue;
    }
    assert_int_equal(kb__f32_to_f16(f), h);
  }
  assert_true(kb__f16_to_f32(0x0001) == 0x1p-24f);
  assert_true(kb__f16_to_f32(0x3555) == 0x1.554p-2f);
}

static void test_bf16(void **state) {
  (void)state;
  assert_int_equal(kb__f32_to_bf16(1.0f), 0x3f80);
  assert_int_equal(kb__f32_to_bf16(-2.0f), 0xc000);
  assert_int_equal(kb__f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);   /* tie to even */
  assert_int_equal(kb__f32_to_bf16(1.0f + 0x1.8p-7f), 0x3f82); /* tie to even, up */
  assert_int_equal(kb__f32_to_bf16(0x1.fffffep127f), 0x7f80);  /* rounds to infinity */
  uint16_t nan = kb__f32_to_bf16(NAN);
  assert_true((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0);
  for (uint32_t v = 0; v < 0x10000; v++) {
    uint16_t h = (uint16_t)v;
    float f = kb__bf16_to_f32(h);
    if (isnan(f))
      continue;
    assert_int_equal(kb__f32_to_bf16(f), h);
  }
}

static void test_load_store(void **state) {
  (void)state;
  const int dtypes[] = {KB_F32, KB_F16, KB_BF16, KB_F64, KB_I32, KB_I64, KB_U8, KB_BOOL};
  unsigned char buf[8 * 4];
  for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
    int size = kb_dtype_size(dtypes[k]);
    assert_int_equal(kb__dtype_store(dtypes[k], buf + size, 1.0), KB_OK);
    assert_true(kb__dtype_load(dtypes[k], buf, 1) == 1.0);
  }
  assert_true(isnan(kb__dtype_load(99, buf, 0)));
}

/* kb__inputs_reflect: about half the elements reflected about the distribution's centre, the
 * rest untouched, every one still in the distribution's range; the same key the same
 * elements; integer dtypes outside the integers distribution left alone. */
static void test_reflect(void **state) {
  (void)state;
  enum { N = 1000 }; /* not a multiple of 64: the last word's bits too */
  const struct {
    struct kb_input_set set;
    int dtype;
    double sum, lo, hi; /* the reflection; lo > hi: none */
  } cases[] = {
      {{7, KB_DIST_UNIFORM, -1, 1}, KB_F32, 0, -1, 1},
      {{7, KB_DIST_UNIFORM, 0, 100}, KB_F32, 100, 0, 100},
      {{7, KB_DIST_NORMAL, 3, 2}, KB_F32, 6, -INFINITY, INFINITY},
      {{7, KB_DIST_INTEGERS, -1000, 1000}, KB_F32, -1, -1000, 999},
      {{7, KB_DIST_UNIFORM, -1, 1}, KB_F64, 0, -1, 1},
      {{7, KB_DIST_UNIFORM, 0, 4}, KB_F16, 4, 0, 4},
      {{7, KB_DIST_NORMAL, 0, 1}, KB_BF16, 0, -INFINITY, INFINITY},
      {{7, KB_DIST_INTEGERS, 0, 10}, KB_I64, 9, 0, 9},
      {{7, KB_DIST_INTEGERS, 0, 2}, KB_BOOL, 1, 0, 1},
      {{7, KB_DIST_UNIFORM, 0, 10}, KB_I32, 0, 1, 0},
  };
  static unsigned char a[N * 8], b[N * 8], c[N * 8];
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int dt = cases[k].dtype;
    assert_int_equal(kb__inputs_fill(&cases[k].set, 0, dt, a, N, NULL), KB_OK);
    memcpy(b, a, sizeof a);
    memcpy(c, a, sizeof a);
    assert_int_equal(kb__inputs_reflect(&cases[k].set, 99, dt, b, N, NULL), KB_OK);
    assert_int_equal(kb__inputs_reflect(&cases[k].set, 99, dt, c, N, NULL), KB_OK);
    assert_memory_equal(b, c, (size_t)N * (size_t)kb_dtype_size(dt));
    int changed = 0;
    for (int64_t i = 0; i < N; i++) {
      double v = kb__dtype_load(dt, a, i), r = kb__dtype_load(dt, b, i);
      if (r == v)
        continue;
      changed++;
      assert_true(cases[k].lo <= cases[k].hi);
      assert_true(r >= cases[k].lo && r <= cases[k].hi);
      assert_true(fabs(r - kb__dtype_round(dt, cases[k].sum - v)) <= 1e-12);
    }
    if (cases[k].lo > cases[k].hi)
      assert_int_equal(changed, 0);
    else
      assert_in_range(changed, N * 35 / 100, N * 65 / 100);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_splitmix_reference), cmocka_unit_test(test_known_values),
      cmocka_unit_test(test_deterministic),      cmocka_unit_test(test_distributions),
      cmocka_unit_test(test_integer_conversions), cmocka_unit_test(test_bad_sets),
      cmocka_unit_test(test_f16),                cmocka_unit_test(test_bf16),
      cmocka_unit_test(test_load_store),          cmocka_unit_test(test_reflect),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
