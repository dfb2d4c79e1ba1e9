/* Output verification and poisoning (verify.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "inputs.h"
#include "verify.h"

static void test_f32_tolerance(void **state) {
  (void)state;
  float ref[4] = {1.0f, -2.0f, 100.0f, 0.0f};
  float got[4] = {1.0f, -2.0f, 100.0f, 0.0f};
  struct kb_verify_report rep;
  assert_true(kb__verify(KB_F32, got, ref, 4, 0, 0, &rep));
  assert_int_equal(rep.checked, 4);
  assert_int_equal(rep.bad, 0);
  assert_int_equal(rep.first_bad, -1);
  assert_true(rep.max_abs_err == 0);
  assert_true(rep.max_tol_use == 0 && rep.sum_sq_tol_use == 0);

  /* atol + rtol * |ref|: 0.01 + 0.001 * 100 = 0.11 at element 2 */
  got[2] = 100.1f;
  got[3] = 0.005f;
  assert_true(kb__verify(KB_F32, got, ref, 4, 0.01, 1e-3, &rep));
  assert_float_equal(rep.max_abs_err, 0.1, 1e-5);
  assert_float_equal(rep.max_rel_err, 1e-3, 1e-6);
  /* the use of the tolerance: element 2 0.1 of 0.11, element 3 0.005 of 0.01 */
  assert_float_equal(rep.max_tol_use, 0.1 / 0.11, 1e-4);
  assert_float_equal(rep.sum_sq_tol_use, (0.1 / 0.11) * (0.1 / 0.11) + 0.25, 1e-4);
  got[2] = 100.2f;
  assert_false(kb__verify(KB_F32, got, ref, 4, 0.01, 1e-3, &rep));
  assert_int_equal(rep.first_bad, 2);
  assert_int_equal(rep.bad, 1);
  assert_float_equal(rep.got, 100.2, 1e-4);
  assert_float_equal(rep.expected, 100.0, 0);
  char text[128];
  kb__verify_describe(&rep, text, sizeof text);
  assert_string_equal(text, "element 2 is 100.199997, expected 100 (1 of 4 bad)");
}

static void test_nan_inf_never_pass(void **state) {
  (void)state;
  float ref[3] = {1.0f, INFINITY, NAN};
  float got[3] = {NAN, INFINITY, NAN};
  struct kb_verify_report rep;
  assert_false(kb__verify(KB_F32, got, ref, 3, 1e30, 1e30, &rep));
  assert_int_equal(rep.bad, 3);
  assert_int_equal(rep.first_bad, 0);
  assert_true(isnan(rep.got));
  got[0] = 1.0f;
  assert_true(kb__verify(KB_F32, got, ref, 1, 0, 0, &rep));
  float inf = INFINITY;
  assert_false(kb__verify(KB_F32, &inf, ref, 1, 1e30, 1e30, &rep));
  char text[128];
  kb__verify_describe(&rep, text, sizeof text);
  assert_string_equal(text, "element 0 is inf, expected 1 (1 of 1 bad)");
}

static void test_half_types(void **state) {
  (void)state;
  uint16_t ref[3], got[3];
  for (int k = 0; k < 3; k++)
    ref[k] = kb__f32_to_f16((float)k * 0.5f);
  memcpy(got, ref, sizeof got);
  struct kb_verify_report rep;
  assert_true(kb__verify(KB_F16, got, ref, 3, 0, 0, &rep));
  got[1] = kb__f32_to_f16(0.5f + 0x1p-11f * 2); /* two f16 ulps above 0.5 */
  assert_false(kb__verify(KB_F16, got, ref, 3, 0, 1e-4, &rep));
  assert_int_equal(rep.first_bad, 1);
  assert_true(kb__verify(KB_F16, got, ref, 3, 1e-2, 1e-2, &rep));
  got[2] = 0x7e00; /* NaN */
  assert_false(kb__verify(KB_F16, got, ref, 3, 1, 1, &rep));
  assert_int_equal(rep.first_bad, 2);

  for (int k = 0; k < 3; k++)
    ref[k] = kb__f32_to_bf16((float)k * 3.0f);
  memcpy(got, ref, sizeof got);
  assert_true(kb__verify(KB_BF16, got, ref, 3, 0, 0, &rep));
  got[0] = kb__f32_to_bf16(0.25f);
  assert_false(kb__verify(KB_BF16, got, ref, 3, 0.1, 0, &rep));
  assert_float_equal(rep.got, 0.25, 0);
}

static void test_integers(void **state) {
  (void)state;
  struct kb_verify_report rep;
  int32_t ri[3] = {1, -5, 70000}, gi[3] = {1, -5, 70000};
  assert_true(kb__verify(KB_I32, gi, ri, 3, 0, 0, &rep));
  gi[1] = -4;
  assert_false(kb__verify(KB_I32, gi, ri, 3, 0, 0, &rep));
  assert_int_equal(rep.first_bad, 1);
  assert_true(rep.max_abs_err == 1);
  assert_true(isinf(rep.max_tol_use)); /* off at all under a tolerance of 0 */
  assert_true(kb__verify(KB_I32, gi, ri, 3, 1, 0, &rep));

  /* values beyond 2^53 that differ by one still differ */
  int64_t rl[2] = {INT64_C(1) << 60, 7}, gl[2] = {(INT64_C(1) << 60) + 1, 7};
  assert_false(kb__verify(KB_I64, gl, rl, 2, 0, 0, &rep));
  assert_int_equal(rep.first_bad, 0);

  uint8_t ru[2] = {200, 3}, gu[2] = {200, 3};
  assert_true(kb__verify(KB_U8, gu, ru, 2, 0, 0, &rep));
  gu[0] = 201;
  assert_false(kb__verify(KB_U8, gu, ru, 2, 0, 0, &rep));

  uint8_t rb[2] = {1, 0}, gb[2] = {1, 0};
  assert_true(kb__verify(KB_BOOL, gb, rb, 2, 0, 0, &rep));
  gb[0] = 2; /* truthy, but not a bool */
  assert_false(kb__verify(KB_BOOL, gb, rb, 2, 5, 5, &rep));
}

static void test_poison(void **state) {
  (void)state;
  struct kb_verify_report rep;
  float f[8];
  float ref[8] = {0};
  kb__poison(KB_F32, f, 8);
  for (int i = 0; i < 8; i++)
    assert_true(isnan(f[i]));
  assert_false(kb__verify(KB_F32, f, ref, 8, 1e30, 1e30, &rep));
  assert_int_equal(rep.bad, 8);

  double d[2];
  kb__poison(KB_F64, d, 2);
  assert_true(isnan(d[0]) && isnan(d[1]));
  uint16_t h[2];
  kb__poison(KB_F16, h, 2);
  assert_true(isnan(kb__f16_to_f32(h[0])));
  kb__poison(KB_BF16, h, 2);
  assert_true(isnan(kb__bf16_to_f32(h[1])));

  int32_t i[2];
  kb__poison(KB_I32, i, 2);
  assert_int_equal((uint32_t)i[0], 0xa5a5a5a5u);
  uint8_t b[2] = {0, 0};
  uint8_t rb[2] = {1, 1};
  kb__poison(KB_BOOL, b, 2);
  assert_false(kb__verify(KB_BOOL, b, rb, 2, 0, 0, &rep));

  uint8_t untouched[4] = {1, 2, 3, 4};
  kb__poison(99, untouched, 4);
  assert_int_equal(untouched[3], 4);
  assert_false(kb__verify(99, untouched, untouched, 4, 0, 0, &rep));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f32_tolerance), cmocka_unit_test(test_nan_inf_never_pass),
      cmocka_unit_test(test_half_types),    cmocka_unit_test(test_integers),
      cmocka_unit_test(test_poison),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
