/* The built-in CUDA suite through the runner's compile path (nvcc, no GPU needed): for each task
 * folder named on the command line, one file is built through a 2-worker compile pool with the
 * candidates' flags (-O3 -arch=sm_90 -shared -Xcompiler -fPIC -cudart shared):
 *   --seeds    the tunable seed (seeds/tuned.cu) as a candidate: it must build, pass the import
 *              allow-list, have at least one kernel and spill nothing at its default knobs;
 *   --oracles  the oracle (oracle.cu) as trusted code (no allow-list), which must build;
 *   --naive    the naive seed (the baseline) as a candidate, like --seeds (not registered in
 *              ctest, for the time it takes; run it by hand).
 * Each task's file name comes from its task.json ("seeds" entry "tuned", "oracle.source") read
 * by kb_task_load, so a bundle whose task.json does not load fails here too. The naive seeds are
 * built and run on the GPU by tests/tasks/gpu_check.py. nvcc takes ~2.5 s a file: one file per
 * task keeps a run of 13 tasks well under a minute on 2 cores, and the shared build cache
 * (KB_TEST_NVCC_CACHE) makes a second run instant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compile.h"
#include "compile_pool.h"
#include "compile_util.h"
#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/task.h"

#define ABI_DIR KB_SOURCE_DIR "/common/include"
#define MAX_TASKS 64

static int n_dirs;
static char **dirs;
static int oracles;        /* 1: --oracles */
static const char *seed = "tuned"; /* the seed built without --oracles */

static void test_suite(void **state) {
  (void)state;
  struct kb_error err = {0};
  struct kb__compiler nvcc;
  if (kb__compiler_init_cuda(&nvcc, KB_TEST_NVCC_CACHE, KB_NVCC, ABI_DIR, "sm_90", &err) != KB_OK)
    fail_msg("nvcc: %s", err.msg);
  assert_true(n_dirs >= 1 && n_dirs <= MAX_TASKS);
  static struct kb_task tasks[MAX_TASKS];
  char *sources[MAX_TASKS] = {0};
  const char *files[MAX_TASKS] = {0};
  struct kb__compile_pool *pool = NULL;
  assert_int_equal(kb__compile_pool_new(&nvcc, 2, n_dirs, &pool, &err), KB_OK);
  for (int i = 0; i < n_dirs; i++) {
    if (kb_task_load(dirs[i], &tasks[i], &err) != KB_OK)
      fail_msg("%s", err.msg);
    assert_int_equal(tasks[i].backend, KB_BACKEND_CUDA);
    if (oracles) {
      assert_int_equal(tasks[i].oracle_kind, KB_ORACLE_CUDA);
      files[i] = tasks[i].oracle_path;
    } else {
      for (int s = 0; s < tasks[i].n_seeds; s++)
        if (strcmp(tasks[i].seeds[s].name, seed) == 0)
          files[i] = tasks[i].seeds[s].path;
      if (files[i] == NULL)
        fail_msg("%s: no seed named \"%s\"", tasks[i].json_path, seed);
      /* the baseline is the naive seed */
      assert_true(tasks[i].baseline >= 0);
      assert_string_equal(tasks[i].seeds[tasks[i].baseline].name, "naive");
    }
    sources[i] = tu_slurp(files[i]);
    struct kb__compile_req req = {.source = sources[i], .trusted = oracles};
    assert_int_equal(kb__compile_pool_submit(pool, (uint64_t)i, &req, &err), KB_OK);
  }
  int failed = 0;
  for (int k = 0; k < n_dirs; k++) {
    struct kb__compiled done;
    kb__compiled_init(&done);
    int got = 0;
    assert_int_equal(kb__compile_pool_wait(pool, 600, &done, &got, &err), KB_OK);
    assert_true(got);
    const char *id = tasks[done.tag].id;
    const struct kb__build *b = &done.build;
    if (done.rc != KB_OK) {
      print_error("%s: %s: %s\n", id, files[done.tag], done.err.msg);
      failed++;
    } else if (!b->ok) {
      print_error("%s: %s: %s\n%s\n", id, files[done.tag], b->reason, b->log ? b->log : "");
      failed++;
    } else if (b->kernels < 1 || (!oracles && b->spill_store_bytes > 0)) {
      print_error("%s: %s: %d kernels, %d bytes spilled\n", id, files[done.tag], b->kernels,
                  b->spill_store_bytes);
      failed++;
    } else {
      print_message("%-14s %-8s ok: %d kernels, %d registers, %d B shared%s\n", id,
                    oracles ? "oracle" : seed, b->kernels, b->registers, b->shared_bytes,
                    b->cached ? " (cached)" : "");
    }
    kb__compiled_release(&done);
  }
  kb__compile_pool_free(pool);
  for (int i = 0; i < n_dirs; i++) {
    kb_free(sources[i]);
    kb_task_release(&tasks[i]);
  }
  kb__compiler_release(&nvcc);
  assert_int_equal(failed, 0);
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "--seeds") != 0 && strcmp(argv[1], "--oracles") != 0 &&
                    strcmp(argv[1], "--naive") != 0)) {
    fprintf(stderr, "usage: %s --seeds|--oracles|--naive TASK_DIR...\n", argv[0]);
    return 2;
  }
  oracles = strcmp(argv[1], "--oracles") == 0;
  if (strcmp(argv[1], "--naive") == 0)
    seed = "naive";
  dirs = argv + 2;
  n_dirs = argc - 2;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_suite)};
  return cmocka_run_group_tests_name(oracles ? "suite oracles" : "suite seeds", tests, NULL,
                                     NULL);
}
