/* The compile tier without a GPU toolkit: the host C build path (cache, errors, timeouts, the
 * knob and flag allow-lists, the import check and its trusted bypass, the scrubbed
 * environment), nvcc's resource usage parser on recorded reports, and architecture names. */
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
#include "compile_util.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"

#define ABI_DIR KB_SOURCE_DIR "/common/include"

static char cache[64];
static struct kb__compiler cc;

static const char *const honest_c =
    "#include \"kb_kernel.h\"\n"
    "int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *s) {\n"
    "  (void)n_in; (void)n_out; (void)s;\n"
    "  *(float *)out[0].data = *(const float *)in[0].data;\n"
    "  return 0;\n"
    "}\n";

static int group_setup(void **state) {
  (void)state;
  return tu_compiler_setup(&cc, cache, sizeof cache, "/tmp/kb-test-compile.XXXXXX", NULL, ABI_DIR);
}

static int group_teardown(void **state) {
  (void)state;
  return tu_compiler_teardown(&cc, cache);
}

static void test_host_build_and_cache(void **state) {
  (void)state;
  struct kb__build b;
  char *source = NULL;
  struct kb_buf s;
  kb_buf_init(&s);
  /* a source of its own, so the first build is never a cache hit */
  assert_int_equal(kb_buf_addf(&s, "/* %ld */\n%s", (long)getpid(), honest_c), KB_OK);
  source = kb_buf_detach(&s);
  tu_build(&cc, source, "", "", NULL, &b);
  assert_true(b.ok);
  assert_false(b.rejected);
  assert_false(b.cached);
  assert_true(b.seconds > 0);
  assert_non_null(b.lib_path);
  assert_string_equal(b.reason, "");
  assert_int_equal(b.registers, -1); /* no resource usage for host builds */
  assert_int_equal(b.kernels, -1);
  char key[KB_CAND_ID_LEN + 1];
  memcpy(key, b.key, sizeof key);
  kb__build_release(&b);

  tu_build(&cc, source, "", "", NULL, &b);
  assert_true(b.ok);
  assert_true(b.cached);
  assert_true(b.seconds == 0);
  assert_string_equal(b.key, key);
  kb__build_release(&b);

  /* knobs and flags are part of the key */
  tu_build(&cc, source, "-DUNUSED=1", "", NULL, &b);
  assert_true(b.ok);
  assert_string_not_equal(b.key, key);
  kb__build_release(&b);
  tu_build(&cc, source, "", "-O3", NULL, &b);
  assert_true(b.ok);
  assert_string_not_equal(b.key, key);
  kb__build_release(&b);
  assert_int_equal(tu_build_dirs_in(cache), 0);
  kb_free(source);
}

static void test_compile_error_cached(void **state) {
  (void)state;
  static const char *const bad = "#include \"kb_kernel.h\"\nint kb_forward( {\n";
  struct kb__build b;
  tu_build(&cc, bad, "", "", NULL, &b);
  assert_false(b.ok);
  assert_false(b.rejected);
  assert_non_null(strstr(b.reason, "does not compile: candidate.c:2"));
  assert_non_null(b.log);
  assert_false(b.cached);
  kb__build_release(&b);
  tu_build(&cc, bad, "", "", NULL, &b);
  assert_false(b.ok);
  assert_true(b.cached);
  assert_non_null(strstr(b.reason, "candidate.c:2"));
  kb__build_release(&b);
}

static void test_timeout_not_cached(void **state) {
  (void)state;
  struct kb__build b;
  struct kb_error err = {0};
  struct kb__compile_req req = {.source = honest_c, .flags = "-O1", .timeout_s = 0.001};
  for (int i = 0; i < 2; i++) {
    kb__build_init(&b);
    assert_int_equal(kb__compile_req(&cc, &req, &b, &err), KB_OK);
    assert_false(b.ok);
    assert_false(b.cached);
    assert_non_null(strstr(b.reason, "timed out"));
    kb__build_release(&b);
  }
  assert_int_equal(tu_build_dirs_in(cache), 0);
  assert_int_equal(tu_processes_left(cache, 2), 0);
}

/* Host flags: what a tuner may pass, and what would let a candidate choose files or programs. */
static void test_host_flags(void **state) {
  (void)state;
  static const char *const denied[] = {
      "-o", "-ofile", "-I/etc", "-L/tmp", "-lpthread", "-Wl,-rpath,/tmp", "-Wa,-o,x",
      "-Wp,-MD,/tmp/x", "-B/tmp", "-fplugin=/tmp/x.so", "-fprofile-generate", "-specs=/tmp/s",
      "-wrapper", "-include", "-xc", "-shared", "-pthread", "@/tmp/args", "/tmp/x.c",
      "-fuse-ld=gold", "-save-temps", "-nostdlib", "-m", "-f", "-W"};
  for (size_t i = 0; i < sizeof denied / sizeof *denied; i++) {
    struct kb__build b;
    tu_build(&cc, honest_c, "", denied[i], NULL, &b);
    assert_false(b.ok);
    char want[128];
    snprintf(want, sizeof want, "flag \"%s\" is not allowed", denied[i]);
    if (strstr(b.reason, want) == NULL)
      fail_msg("flag \"%s\": reason \"%s\"", denied[i], b.reason);
    kb__build_release(&b);
  }
  struct kb__build b;
  tu_build(&cc, honest_c, "", "-O3 -march=native -ffast-math -funroll-loops -std=c17 -Wall -g "
           "-DX=1 -UY -w -pipe -fopenmp-simd", NULL, &b);
  if (!b.ok)
    fail_msg("allowed flags: %s", b.reason);
  kb__build_release(&b);
  tu_build(&cc, honest_c, "-O3", "", NULL, &b);
  assert_false(b.ok);
  assert_non_null(strstr(b.reason, "knob \"-O3\" is not allowed"));
  kb__build_release(&b);
}

static void test_imports_rejected_unless_trusted(void **state) {
  (void)state;
  static const char *const threads =
      "#include <pthread.h>\n#include \"kb_kernel.h\"\n"
      "static void *work(void *p) { return p; }\n"
      "int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *s) {\n"
      "  (void)in; (void)n_in; (void)out; (void)n_out; (void)s;\n"
      "  pthread_t t; return pthread_create(&t, 0, work, 0);\n}\n";
  struct kb__build b;
  tu_build(&cc, threads, "", "", NULL, &b);
  assert_false(b.ok);
  assert_true(b.rejected);
  assert_null(b.lib_path);
  assert_non_null(strstr(b.reason, "\"pthread_create\" (starts threads)"));
  kb__build_release(&b);
  /* a cache hit is checked again */
  tu_build(&cc, threads, "", "", NULL, &b);
  assert_true(b.cached);
  assert_true(b.rejected);
  kb__build_release(&b);

  struct kb_error err = {0};
  struct kb__compile_req req = {.source = threads, .trusted = 1};
  kb__build_init(&b);
  assert_int_equal(kb__compile_req(&cc, &req, &b, &err), KB_OK);
  assert_true(b.ok);
  assert_false(b.rejected);
  kb__build_release(&b);
}

/* The compiler sees neither the runner's secrets nor build-changing variables; it writes its
 * temporary files into the build folder. A fake compiler prints its environment. */
static void test_compiler_environment(void **state) {
  (void)state;
  char dir[] = "/tmp/kb-test-env.XXXXXX";
  tu_mkdtemp(dir);
  char script[128], cache2[128], command[160];
  snprintf(script, sizeof script, "%s/envcc", dir);
  snprintf(cache2, sizeof cache2, "%s/cache", dir);
  tu_write(script, "#!/bin/sh\n"
                   "if [ \"$1\" = --version ]; then echo envcc 1; exit 0; fi\n"
                   "env\n"
                   "echo cwd=$(pwd)\n"
                   "exit 1\n");
  assert_int_equal(chmod(script, 0755), 0);
  snprintf(command, sizeof command, "%s", script);
  setenv("KB_TEST_SECRET", "hunter2", 1);
  setenv("NVCC_APPEND_FLAGS", "-lcuda", 1);
  struct kb__compiler fake;
  struct kb_error err = {0};
  if (kb__compiler_init(&fake, cache2, command, ABI_DIR, &err) != KB_OK)
    fail_msg("%s", err.msg);
  struct kb__build b;
  tu_build(&fake, honest_c, "", "", NULL, &b);
  assert_false(b.ok);
  assert_non_null(b.log);
  assert_null(strstr(b.log, "hunter2"));
  assert_null(strstr(b.log, "NVCC_APPEND_FLAGS"));
  assert_non_null(strstr(b.log, "LC_ALL=C"));
  assert_non_null(strstr(b.log, "PATH="));
  assert_non_null(strstr(b.log, "TMPDIR="));
  assert_non_null(strstr(b.log, "/cache/tmp."));
  kb__build_release(&b);
  kb__compiler_release(&fake);
  unsetenv("KB_TEST_SECRET");
  unsetenv("NVCC_APPEND_FLAGS");
  kb_remove_tree(dir, NULL);
}

static void test_compiler_not_found(void **state) {
  (void)state;
  struct kb__compiler none;
  struct kb_error err = {0};
  assert_int_equal(kb__compiler_init(&none, cache, "kb-no-such-compiler -O2", ABI_DIR, &err),
                   KB_ECOMPILE);
  assert_non_null(strstr(err.msg, "kb-no-such-compiler"));
  kb_error_clear(&err);
  assert_int_equal(kb__compiler_init(&none, cache, "   ", ABI_DIR, &err), KB_EINVAL);
  kb_error_clear(&err);
  assert_int_equal(kb__compiler_init_cuda(&none, cache, "cc", ABI_DIR, "sm90", &err), KB_EINVAL);
}

static void test_arch_names(void **state) {
  (void)state;
  char arch[KB__ARCH_MAX];
  assert_int_equal(kb__cuda_arch(9, 0, arch, sizeof arch), KB_OK);
  assert_string_equal(arch, "sm_90");
  assert_int_equal(kb__cuda_arch(10, 0, arch, sizeof arch), KB_OK);
  assert_string_equal(arch, "sm_100");
  assert_int_equal(kb__cuda_arch(0, 0, arch, sizeof arch), KB_EINVAL);
  assert_int_equal(kb__cuda_arch(9, 0, arch, 3), KB_EINVAL);
  static const char *const good[] = {"sm_90", "sm_90a", "sm_80", "sm_100", "sm_100f", "sm_120a"};
  static const char *const bad[] = {"", "sm_", "sm_9", "sm_90ab", "compute_90", "sm_90 -x",
                                    "SM_90", "sm_1000", "sm_9a"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    assert_true(kb__cuda_arch_valid(good[i]));
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (kb__cuda_arch_valid(bad[i]))
      fail_msg("\"%s\" accepted", bad[i]);
}

/* ---- nvcc's resource usage, as CUDA 13 and CUDA 12 print it ---------------------------- */

static const char *const report_13 =
    "ptxas info    : 8 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z1kPKfPfl' for 'sm_90'\n"
    "ptxas info    : Function properties for _Z1kPKfPfl\n"
    "    384 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 64 registers, used 0 barriers, 384 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 65.407 ms\n"
    "ptxas info    : Function properties for _Z5heavyPKfl\n"
    "    0 bytes stack frame, 140 bytes spill stores, 152 bytes spill loads\n"
    "ptxas info    : Compiling entry function '_Z12softmax_rowsILi256EEvPKfPfl' for 'sm_90'\n"
    "ptxas info    : Function properties for _Z12softmax_rowsILi256EEvPKfPfl\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem\n"
    "ptxas info    : Compile time = 5.086 ms\n";

static const char *const report_12 =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z4vaddPKfS0_Pfl' for 'sm_80'\n"
    "ptxas info    : Function properties for _Z4vaddPKfS0_Pfl\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 12 registers, 380 bytes cmem[0]\n"
    "ptxas info    : Compiling entry function '_Z3redPKfPf' for 'sm_80'\n"
    "ptxas info    : Function properties for _Z3redPKfPf\n"
    "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
    "ptxas info    : Used 255 registers, 49152 bytes smem, 368 bytes cmem[0]\n";

static void test_ptxas_parse(void **state) {
  (void)state;
  struct kb__build b;
  struct kb_buf summary;
  kb__build_init(&b);
  kb_buf_init(&summary);
  assert_int_equal(kb__ptxas_parse(report_13, &b, &summary), KB_OK);
  assert_int_equal(b.kernels, 2);
  assert_int_equal(b.registers, 64);
  assert_int_equal(b.shared_bytes, 1024);
  assert_int_equal(b.spill_store_bytes, 140); /* in a device function the kernel calls */
  assert_int_equal(b.spill_load_bytes, 152);
  assert_int_equal(b.stack_bytes, 384);
  assert_non_null(strstr(summary.data, "kernel _Z12softmax_rowsILi256EEvPKfPfl: 40 registers, "
                                       "1024 bytes shared, 0 bytes stack, 0 bytes spill stores"));
  assert_non_null(strstr(summary.data, "kernel _Z1kPKfPfl: 64 registers, 0 bytes shared, "
                                       "384 bytes stack"));
  assert_non_null(strstr(summary.data, "function _Z5heavyPKfl: 0 bytes stack, 140 bytes spill "
                                       "stores, 152 bytes spill loads"));
  kb_buf_reset(&summary);

  assert_int_equal(kb__ptxas_parse(report_12, &b, &summary), KB_OK);
  assert_int_equal(b.kernels, 2);
  assert_int_equal(b.registers, 255);
  assert_int_equal(b.shared_bytes, 49152);
  assert_int_equal(b.spill_store_bytes, 8);
  assert_int_equal(b.spill_load_bytes, 12);
  assert_int_equal(b.stack_bytes, 16);
  kb_buf_reset(&summary);

  /* the same report twice (-Xptxas -v next to --resource-usage) counts each kernel once */
  struct kb_buf twice;
  kb_buf_init(&twice);
  assert_int_equal(kb_buf_addf(&twice, "%s%s", report_12, report_12), KB_OK);
  assert_int_equal(kb__ptxas_parse(twice.data, &b, NULL), KB_OK);
  assert_int_equal(b.kernels, 2);
  assert_int_equal(b.registers, 255);
  kb_buf_release(&twice);

  /* no kernels, and text that is no report at all: zero kernels, not garbage */
  assert_int_equal(kb__ptxas_parse("", &b, &summary), KB_OK);
  assert_int_equal(b.kernels, 0);
  assert_int_equal(b.registers, 0);
  assert_int_equal(kb__ptxas_parse("Used 12 registers\nrandom 5 bytes smem\n'\n", &b, NULL),
                   KB_OK);
  assert_int_equal(b.kernels, 0);
  assert_int_equal(kb__ptxas_parse("ptxas info : Compiling entry function '", &b, NULL), KB_OK);
  kb_buf_release(&summary);
  kb__build_release(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_build_and_cache),
      cmocka_unit_test(test_compile_error_cached),
      cmocka_unit_test(test_timeout_not_cached),
      cmocka_unit_test(test_host_flags),
      cmocka_unit_test(test_imports_rejected_unless_trusted),
      cmocka_unit_test(test_compiler_environment),
      cmocka_unit_test(test_compiler_not_found),
      cmocka_unit_test(test_arch_names),
      cmocka_unit_test(test_ptxas_parse),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
