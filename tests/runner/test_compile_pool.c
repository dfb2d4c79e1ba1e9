/* The compile pool with the host compiler (fast): every job comes back once with its tag, in
 * the order jobs finish; the pool holds at most its capacity; compile errors, timeouts, cache
 * hits and rejections come back as such; and freeing the pool mid-build kills the compilers
 * (a fake compiler that sleeps, with a child of its own) and leaves no process or build folder.
 * The CUDA timing test is test_cuda_pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "compile.h"
#include "compile_pool.h"
#include "compile_util.h"
#include "kb/clock.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "proc.h"

#define ABI_DIR KB_SOURCE_DIR "/common/include"

static char cache[64];
static struct kb__compiler cc;

static int group_setup(void **state) {
  (void)state;
  return tu_compiler_setup(&cc, cache, sizeof cache, "/tmp/kb-test-pool.XXXXXX", NULL, ABI_DIR);
}

static int group_teardown(void **state) {
  (void)state;
  return tu_compiler_teardown(&cc, cache);
}

/* A host candidate of its own, never in the cache before: `tag` and this process's id in a
 * comment. New string. */
static char *fresh_source(uint64_t tag) {
  struct kb_buf b;
  kb_buf_init(&b);
  int rc = kb_buf_addf(&b,
                       "/* %ld %llu %.0f */\n#include \"kb_kernel.h\"\n"
                       "int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out,"
                       " void *s) {\n  (void)n_in; (void)n_out; (void)s;\n"
                       "  *(float *)out[0].data = *(const float *)in[0].data + %llu;\n"
                       "  return 0;\n}\n",
                       (long)getpid(), (unsigned long long)tag, kb_now_wall() * 1e6,
                       (unsigned long long)tag);
  assert_int_equal(rc, KB_OK);
  return kb_buf_detach(&b);
}

/* Waits for the next finished job into `out`; fails the test after 60 s. */
static void next_done(struct kb__compile_pool *p, struct kb__compiled *out) {
  struct kb_error err = {0};
  int got = 0;
  assert_int_equal(kb__compile_pool_wait(p, 60, out, &got, &err), KB_OK);
  assert_true(got);
}

static void test_collects_every_job_once(void **state) {
  (void)state;
  struct kb__compile_pool *p = NULL;
  struct kb_error err = {0};
  enum { N = 6 };
  assert_int_equal(kb__compile_pool_new(&cc, 2, N, &p, &err), KB_OK);
  assert_int_equal(kb__compile_pool_workers(p), 2);
  char *sources[N];
  for (int i = 0; i < N; i++) {
    sources[i] = fresh_source(100 + (uint64_t)i);
    struct kb__compile_req req = {.source = sources[i]};
    assert_int_equal(kb__compile_pool_submit(p, 100 + (uint64_t)i, &req, &err), KB_OK);
  }
  /* the strings were copied */
  for (int i = 0; i < N; i++)
    kb_free(sources[i]);
  assert_int_equal(kb__compile_pool_pending(p), N);
  assert_int_equal(kb__compile_pool_space(p), 0);
  struct kb__compiled done;
  kb__compiled_init(&done);
  int got = 1;
  /* nothing can have finished yet: a compiler takes tens of milliseconds to start */
  assert_int_equal(kb__compile_pool_poll(p, &done, &got, &err), KB_OK);
  assert_false(got);
  int seen[N] = {0};
  for (int i = 0; i < N; i++) {
    next_done(p, &done);
    assert_true(done.tag >= 100 && done.tag < 100 + N);
    seen[done.tag - 100]++;
    assert_int_equal(done.rc, KB_OK);
    if (!done.build.ok)
      fail_msg("job %llu: %s", (unsigned long long)done.tag, done.build.reason);
    assert_false(done.build.cached);
    assert_true(done.build_s > 0);
    assert_true(done.wait_s >= 0);
    assert_int_equal(kb__compile_pool_pending(p), N - 1 - i);
  }
  for (int i = 0; i < N; i++)
    assert_int_equal(seen[i], 1);
  kb__compiled_release(&done);
  kb_error_clear(&err);
  assert_int_equal(kb__compile_pool_poll(p, &done, &got, &err), KB_EEMPTY);
  kb_error_clear(&err);
  assert_int_equal(kb__compile_pool_wait(p, 0.01, &done, &got, &err), KB_EEMPTY);
  kb__compile_pool_free(p);
}

static void test_capacity_bounds_submissions(void **state) {
  (void)state;
  struct kb__compile_pool *p = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__compile_pool_new(&cc, 1, 2, &p, &err), KB_OK);
  assert_int_equal(kb__compile_pool_space(p), 2);
  char *src[3] = {fresh_source(1), fresh_source(2), fresh_source(3)};
  struct kb__compile_req req = {.source = src[0]};
  assert_int_equal(kb__compile_pool_submit(p, 1, &req, &err), KB_OK);
  req.source = src[1];
  assert_int_equal(kb__compile_pool_submit(p, 2, &req, &err), KB_OK);
  assert_int_equal(kb__compile_pool_space(p), 0);
  req.source = src[2];
  assert_int_equal(kb__compile_pool_submit(p, 3, &req, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "full"));
  kb_error_clear(&err);
  struct kb__compiled done;
  kb__compiled_init(&done);
  next_done(p, &done);
  /* one worker: jobs finish in the order they were queued */
  assert_int_equal(done.tag, 1);
  assert_int_equal(kb__compile_pool_space(p), 1);
  assert_int_equal(kb__compile_pool_submit(p, 3, &req, &err), KB_OK);
  next_done(p, &done);
  assert_int_equal(done.tag, 2);
  next_done(p, &done);
  assert_int_equal(done.tag, 3);
  kb__compiled_release(&done);
  kb__compile_pool_free(p);
  for (int i = 0; i < 3; i++)
    kb_free(src[i]);
}

static void test_outcomes_reported(void **state) {
  (void)state;
  enum { ERROR = 1, TIMEOUT, HIT, REJECTED, BAD_FLAG };
  char *hit = fresh_source(77);
  struct kb__build pre;
  tu_build(&cc, hit, "", "", NULL, &pre); /* now in the cache */
  assert_true(pre.ok);
  kb__build_release(&pre);
  char *slow = fresh_source(78);
  struct kb__compile_pool *p = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__compile_pool_new(&cc, 2, 8, &p, &err), KB_OK);
  struct {
    uint64_t tag;
    struct kb__compile_req req;
  } jobs[] = {
      {ERROR, {.source = "#include \"kb_kernel.h\"\nint kb_forward(\n"}},
      {TIMEOUT, {.source = slow, .timeout_s = 0.001}},
      {HIT, {.source = hit}},
      {REJECTED,
       {.source = "#include <stdlib.h>\n#include \"kb_kernel.h\"\n"
                  "int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, "
                  "void *s) {\n  (void)in; (void)n_in; (void)out; (void)n_out; (void)s;\n"
                  "  return system(\"true\");\n}\n"}},
      {BAD_FLAG, {.source = hit, .flags = "-Wl,-rpath,/tmp"}},
  };
  size_t n = sizeof jobs / sizeof *jobs;
  for (size_t i = 0; i < n; i++)
    assert_int_equal(kb__compile_pool_submit(p, jobs[i].tag, &jobs[i].req, &err), KB_OK);
  struct kb__compiled done;
  kb__compiled_init(&done);
  for (size_t i = 0; i < n; i++) {
    next_done(p, &done);
    assert_int_equal(done.rc, KB_OK);
    const struct kb__build *b = &done.build;
    print_message("job %llu: ok %d rejected %d cached %d: %s\n", (unsigned long long)done.tag,
                  b->ok, b->rejected, b->cached, b->reason);
    switch (done.tag) {
    case ERROR:
      assert_false(b->ok);
      assert_false(b->rejected);
      assert_non_null(strstr(b->reason, "does not compile: candidate.c:"));
      break;
    case TIMEOUT:
      assert_false(b->ok);
      assert_false(b->cached);
      assert_non_null(strstr(b->reason, "timed out"));
      break;
    case HIT:
      assert_true(b->ok);
      assert_true(b->cached);
      assert_true(b->seconds == 0);
      break;
    case REJECTED:
      assert_false(b->ok);
      assert_true(b->rejected);
      assert_non_null(strstr(b->reason, "\"system\" (starts processes)"));
      break;
    case BAD_FLAG:
      assert_false(b->ok);
      assert_non_null(strstr(b->reason, "flag \"-Wl,-rpath,/tmp\" is not allowed"));
      break;
    default:
      fail_msg("unexpected tag %llu", (unsigned long long)done.tag);
    }
  }
  kb__compiled_release(&done);
  kb__compile_pool_free(p);
  kb_free(hit);
  kb_free(slow);
  assert_int_equal(tu_build_dirs_in(cache), 0);
}

/* Freeing the pool while compilers run kills them and what they started, at once. */
static void test_free_kills_running_compilers(void **state) {
  (void)state;
  char dir[] = "/tmp/kb-test-pool-kill.XXXXXX";
  tu_mkdtemp(dir);
  char script[128], cache2[128];
  snprintf(script, sizeof script, "%s/slowcc", dir);
  snprintf(cache2, sizeof cache2, "%s/cache", dir);
  tu_write(script, "#!/bin/sh\n"
                   "if [ \"$1\" = --version ]; then echo slowcc 1; exit 0; fi\n"
                   "sleep 60 &\n"
                   "sleep 60\n");
  assert_int_equal(chmod(script, 0755), 0);
  struct kb__compiler slow;
  struct kb_error err = {0};
  if (kb__compiler_init(&slow, cache2, script, ABI_DIR, &err) != KB_OK)
    fail_msg("%s", err.msg);
  struct kb__compile_pool *p = NULL;
  assert_int_equal(kb__compile_pool_new(&slow, 2, 4, &p, &err), KB_OK);
  for (uint64_t t = 1; t <= 3; t++) {
    char *src = fresh_source(t);
    struct kb__compile_req req = {.source = src};
    assert_int_equal(kb__compile_pool_submit(p, t, &req, &err), KB_OK);
    kb_free(src);
  }
  /* two builds running: each a shell and two sleeps, all in a build folder of the cache */
  double t0 = kb_now_mono();
  while (tu_processes_in(cache2) < 6 && kb_now_mono() - t0 < 10)
    usleep(20000);
  tu_expect_free_kills(p, cache2, 6);
  kb__compiler_release(&slow);
  kb_remove_tree(dir, NULL);
}

static void test_default_workers(void **state) {
  (void)state;
  int n = kb__compile_pool_default_workers();
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  assert_true(n >= 1);
  assert_true(n <= (cpus > 1 ? cpus - 1 : 1));
  struct kb__compile_pool *p = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__compile_pool_new(&cc, 0, 0, &p, &err), KB_OK);
  assert_int_equal(kb__compile_pool_workers(p), n);
  assert_int_equal(kb__compile_pool_space(p), 2 * n);
  kb__compile_pool_free(p);
  kb__compile_pool_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collects_every_job_once),
      cmocka_unit_test(test_capacity_bounds_submissions),
      cmocka_unit_test(test_outcomes_reported),
      cmocka_unit_test(test_free_kills_running_compilers),
      cmocka_unit_test(test_default_workers),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
