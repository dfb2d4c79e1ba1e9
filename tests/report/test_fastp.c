/* fast_p and the geometric mean on a known table (submitter/report/fastp.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "report/fastp.h"

/* Eight tasks: level 1 has four (one not correct, one exactly 1.0x), level 2 three (one with
 * an unknown baseline, left out), one task of no level. */
static const double speedup[] = {0.5, 1.0, 2.5, 0.0, 1.5, NAN, 4.0, 1.2};
static const int levels[] = {1, 1, 1, 1, 2, 2, 2, 0};
#define N (int)(sizeof speedup / sizeof speedup[0])

static void level_one(void **state) {
  (void)state;
  struct kb_fastp_row r;
  kb__fastp_row(speedup, levels, N, 1, &r);
  assert_int_equal(r.tasks, 4);
  assert_int_equal(r.correct, 3);
  assert_float_equal(r.fast[0], 0.75, 1e-12); /* correct: 3 of 4 */
  assert_float_equal(r.fast[1], 0.25, 1e-12); /* > 1: only 2.5 (1.0 is not faster) */
  assert_float_equal(r.fast[2], 0.25, 1e-12);
  assert_float_equal(r.fast[3], 0.25, 1e-12);
  assert_float_equal(r.geomean, cbrt(0.5 * 1.0 * 2.5), 1e-12);
}

static void table(void **state) {
  (void)state;
  struct kb_fastp_row rows[8];
  int n = kb__fastp_table(speedup, levels, N, rows, 8);
  assert_int_equal(n, 4); /* levels 1, 2, no level, all */
  assert_int_equal(rows[0].level, 1);
  assert_int_equal(rows[1].level, 2);
  assert_int_equal(rows[1].tasks, 2); /* the unknown baseline is not counted */
  assert_float_equal(rows[1].fast[2], 0.5, 1e-12); /* 1.5 is not > 1.5; 4.0 is */
  assert_float_equal(rows[1].fast[3], 0.5, 1e-12);
  assert_float_equal(rows[1].geomean, sqrt(1.5 * 4.0), 1e-12);
  assert_int_equal(rows[2].level, 0);
  assert_float_equal(rows[2].fast[1], 1.0, 1e-12);
  assert_int_equal(rows[3].level, -1);
  assert_int_equal(rows[3].tasks, 7);
  assert_int_equal(rows[3].correct, 6);
  assert_float_equal(rows[3].fast[0], 6.0 / 7, 1e-12);
  assert_float_equal(rows[3].fast[1], 4.0 / 7, 1e-12); /* 2.5 1.5 4.0 1.2 */
  assert_float_equal(rows[3].fast[3], 2.0 / 7, 1e-12); /* 2.5 4.0 */
  assert_float_equal(rows[3].geomean, pow(0.5 * 1.0 * 2.5 * 1.5 * 4.0 * 1.2, 1.0 / 6), 1e-12);
  assert_int_equal(kb__fastp_table(speedup, levels, N, rows, 2), 2); /* cut at max */
}

static void nothing_known(void **state) {
  (void)state;
  const double none[] = {NAN, NAN};
  const int lv[] = {1, 1};
  struct kb_fastp_row rows[4];
  int n = kb__fastp_table(none, lv, 2, rows, 4);
  assert_int_equal(n, 1); /* only "all", empty */
  assert_int_equal(rows[0].tasks, 0);
  assert_true(isnan(rows[0].fast[0]));
  assert_true(isnan(rows[0].geomean));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(level_one), cmocka_unit_test(table),
                                     cmocka_unit_test(nothing_known)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
