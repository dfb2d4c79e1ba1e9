/* The catalogue's task bundle (tasks/cuda/rowsum_small) loads: a CUDA task with a CUDA oracle,
 * the shapes and input sets the catalogue and bench/gpu/compare.sh assume. No GPU needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kb/error.h"
#include "kb/task.h"

static void test_rowsum_small_loads(void **state) {
  (void)state;
  struct kb_task t;
  memset(&t, 0, sizeof t);
  struct kb_error err = {0};
  int rc = kb_task_load(KB_SOURCE_DIR "/tasks/cuda/rowsum_small", &t, &err);
  if (rc != KB_OK)
    fail_msg("%s", err.msg);
  assert_string_equal(t.id, "rowsum_small");
  assert_int_equal(t.backend, KB_BACKEND_CUDA);
  assert_int_equal(t.oracle_kind, KB_ORACLE_CUDA);
  assert_int_equal(t.n_inputs, 1);
  assert_int_equal(t.inputs[0].dtype, KB_F32);
  assert_int_equal(t.inputs[0].ndim, 2);
  assert_int_equal(t.inputs[0].shape[0], 2048);
  assert_int_equal(t.inputs[0].shape[1], 4096);
  assert_int_equal(t.n_outputs, 1);
  assert_int_equal(t.outputs[0].shape[0], 2048);
  assert_true(t.n_sets >= 3);
  assert_true(t.n_seeds >= 1);
  assert_true(t.baseline >= 0);
  /* a f16 accumulator must fail the tolerance: |error| of a 4096-term f16 sum is ~1e-1 */
  assert_true(t.atol <= 1e-2 && t.rtol <= 1e-4);
  kb_task_release(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_rowsum_small_loads)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
