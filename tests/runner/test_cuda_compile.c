/* The CUDA compile path with nvcc (no GPU needed): the catalogue of honest and cheating CUDA
 * candidates in candidates/cuda/ (each file says what it expects in a "// expect:" line), the
 * shared runtime and what the static one would import, nvcc's flag allow-list, compile errors,
 * timeouts, cache hits with their resource usage, and the architecture in the cache key.
 * Builds go to a cache shared by the CUDA tests of this build tree (KB_TEST_NVCC_CACHE), so a
 * second run compiles almost nothing. Registered only when nvcc was found at configure time. */
#include <dirent.h>
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

#include "allowlist.h"
#include "compile.h"
#include "compile_pool.h"
#include "compile_util.h"
#include "elfsym.h"
#include "kb/clock.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "proc.h"
#include "sandbox_client.h"
#include "spawn_tool.h"

#define ABI_DIR KB_SOURCE_DIR "/common/include"
#define CANDIDATES KB_SOURCE_DIR "/tests/runner/candidates/cuda"

static struct kb__compiler nvcc;

static int group_setup(void **state) {
  (void)state;
  struct kb_error err = {0};
  if (kb__compiler_init_cuda(&nvcc, KB_TEST_NVCC_CACHE, KB_NVCC, ABI_DIR, "sm_90", &err) !=
      KB_OK) {
    fprintf(stderr, "nvcc: %s\n", err.msg);
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  kb__compiler_release(&nvcc);
  return 0;
}

static char *candidate_source(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", CANDIDATES, name);
  return tu_slurp(path);
}

/* Every honest candidate builds and passes the allow-list with its resource usage recorded;
 * every cheat is rejected naming what it imports. Built through a 2-worker pool. */
static void test_catalogue(void **state) {
  (void)state;
  int n = 0;
  char **names = tu_list_files(CANDIDATES, ".cu", &n);
  assert_true(n >= 20);
  char **sources = kb_calloc((size_t)n, sizeof *sources);
  char(*flags)[128] = kb_calloc((size_t)n, sizeof *flags);
  assert_non_null(sources);
  assert_non_null(flags);
  struct kb__compile_pool *p = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__compile_pool_new(&nvcc, 2, n, &p, &err), KB_OK);
  double t0 = kb_now_mono();
  for (int i = 0; i < n; i++) {
    sources[i] = candidate_source(names[i]);
    tu_header(sources[i], "flags", flags[i], sizeof flags[i]);
    struct kb__compile_req req = {.source = sources[i], .flags = flags[i]};
    assert_int_equal(kb__compile_pool_submit(p, (uint64_t)i, &req, &err), KB_OK);
  }
  int honest = 0, cheats = 0, compiled = 0;
  for (int k = 0; k < n; k++) {
    struct kb__compiled done;
    kb__compiled_init(&done);
    int got = 0;
    assert_int_equal(kb__compile_pool_wait(p, 300, &done, &got, &err), KB_OK);
    assert_true(got);
    if (done.rc != KB_OK)
      fail_msg("%s: %s", names[done.tag], done.err.msg);
    const char *name = names[done.tag];
    const struct kb__build *b = &done.build;
    char expect[128];
    tu_header(sources[done.tag], "expect", expect, sizeof expect);
    compiled += !b->cached;
    if (strncmp(expect, "ok", 2) == 0) {
      honest++;
      if (!b->ok)
        fail_msg("%s: not ok: %s\n%s", name, b->reason, b->log ? b->log : "");
      assert_true(b->kernels >= 1);
      assert_true(b->registers > 0);
      assert_true(b->shared_bytes >= 0 && b->spill_store_bytes >= 0 && b->stack_bytes >= 0);
      assert_non_null(b->log);
      assert_int_equal(strncmp(b->log, "kernel ", 7), 0);
      if (strstr(expect, "spills") != NULL)
        assert_true(b->spill_store_bytes > 0 && b->spill_load_bytes > 0);
      else
        assert_int_equal(b->spill_store_bytes, 0);
      print_message("%-22s ok: %d kernels, %d registers, %d B shared, %d/%d B spilled, %d B "
                    "stack%s\n", name, b->kernels, b->registers, b->shared_bytes,
                    b->spill_store_bytes, b->spill_load_bytes, b->stack_bytes,
                    b->cached ? " (cached)" : "");
      if (strcmp(name, "honest_softmax.cu") == 0) {
        assert_int_equal(b->kernels, 1);
        assert_int_equal(b->shared_bytes, 1024);
      }
      if (strcmp(name, "honest_constant.cu") == 0)
        assert_int_equal(b->kernels, 3);
      if (strcmp(name, "honest_workspace.cu") == 0)
        assert_int_equal(b->kernels, 2);
    } else {
      assert_int_equal(strncmp(expect, "rejected ", 9), 0);
      cheats++;
      const char *symbol = expect + 9;
      if (b->ok || !b->rejected || b->undefined || strstr(b->reason, symbol) == NULL)
        fail_msg("%s: ok %d, rejected %d, reason \"%s\" (expected \"%s\")\n%s", name, b->ok,
                 b->rejected, b->reason, symbol, b->log ? b->log : "");
      print_message("%-22s rejected: %s\n", name, b->reason);
    }
    kb__compiled_release(&done);
  }
  print_message("%d honest, %d cheats, %d compiled (the rest cached) in %.1f s with 2 workers\n",
                honest, cheats, compiled, kb_now_mono() - t0);
  assert_true(honest >= 9);
  assert_true(cheats >= 14);
  kb__compile_pool_free(p);
  for (int i = 0; i < n; i++)
    kb_free(sources[i]);
  tu_free_names(names, n);
  kb_free(sources);
  kb_free(flags);
}

static int imports_name(const struct kb__elf_imports *im, const char *name) {
  for (size_t i = 0; i < im->n; i++)
    if (strcmp(im->syms[i].name, name) == 0)
      return 1;
  return 0;
}

/* Builds use the shared runtime: the library needs libcudart.so.N and imports nothing of the
 * runtime's own machinery. The same source with nvcc's default static runtime imports threads,
 * dlopen and files, and the allow-list would reject every such build. */
static void test_cudart_shared(void **state) {
  (void)state;
  char *source = candidate_source("honest_vadd.cu");
  struct kb__build b;
  tu_build(&nvcc, source, "", "", NULL, &b);
  assert_true(b.ok);
  struct kb__elf_imports im;
  struct kb_error err = {0};
  kb__elf_imports_init(&im);
  assert_int_equal(kb__elf_read_imports(b.lib_path, &im, &err), KB_OK);
  int cudart = 0;
  for (size_t i = 0; i < im.n_needed; i++)
    cudart |= strncmp(im.needed[i], "libcudart.so.", 13) == 0;
  assert_true(cudart);
  assert_false(imports_name(&im, "pthread_create"));
  assert_false(imports_name(&im, "dlopen"));
  kb__elf_imports_release(&im);
  kb__build_release(&b);

  char dir[] = "/tmp/kb-test-static.XXXXXX";
  tu_mkdtemp(dir);
  char src[128], lib[128];
  snprintf(src, sizeof src, "%s/vadd.cu", dir);
  snprintf(lib, sizeof lib, "%s/vadd.so", dir);
  tu_write(src, source);
  char *argv[] = {nvcc.argv[0], "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC",
                  "-I" ABI_DIR, "-o", lib, src, NULL};
  struct kb__proc_result res;
  kb__proc_result_init(&res);
  assert_int_equal(kb__spawn_run(argv, nvcc.envp, dir, 300, 4096, NULL, &res, &err), KB_OK);
  if (!res.exited || res.exit_code != 0)
    fail_msg("static build failed: %s", res.output.data);
  kb__proc_result_release(&res);
  kb__elf_imports_init(&im);
  assert_int_equal(kb__elf_read_imports(lib, &im, &err), KB_OK);
  assert_true(imports_name(&im, "pthread_create"));
  assert_true(imports_name(&im, "dlopen"));
  print_message("the static runtime imports %zu symbols, pthread_create and dlopen among them\n",
                im.n);
  kb__elf_imports_release(&im);
  int allowed = 1;
  char reason[256];
  int undefined = 1;
  assert_int_equal(kb__imports_check(lib, KB__LANG_CUDA, &allowed, &undefined, reason,
                                     sizeof reason, &err),
                   KB_OK);
  assert_false(allowed);
  assert_false(undefined);
  print_message("static runtime: %s\n", reason);
  kb_remove_tree(dir, NULL);
  kb_free(source);
}

static void test_nvcc_flags(void **state) {
  (void)state;
  char *source = candidate_source("honest_vadd.cu");
  static const struct {
    const char *flags, *named;
  } denied[] = {
      {"-ccbin /tmp/evil", "-ccbin"},
      {"--compiler-bindir=/tmp", "--compiler-bindir=/tmp"},
      {"-cudart static", "-cudart"},
      {"--cudart=static", "--cudart=static"},
      {"-arch=sm_80", "-arch=sm_80"},
      {"-gencode arch=compute_80,code=sm_80", "-gencode"},
      {"--run", "--run"},
      {"-o /tmp/x.so", "-o"},
      {"-lcuda", "-lcuda"},
      {"-L/tmp", "-L/tmp"},
      {"-Xlinker -rpath", "-Xlinker"},
      {"-Xcompiler -wrapper,/bin/sh", "-Xcompiler"},
      {"-Xcompiler=-fplugin=/tmp/x.so", "-Xcompiler=-fplugin=/tmp/x.so"},
      {"-Xcompiler -O3,-B/tmp", "-Xcompiler"},
      {"-Xptxas --output-file=/tmp/x", "-Xptxas"},
      {"-Xptxas", "-Xptxas"},
      {"-rdc=true", "-rdc=true"},
      {"-default-stream per-thread", "-default-stream"},
      {"-I/tmp", "-I/tmp"},
      {"-include /etc/passwd", "-include"},
      {"-keep", "-keep"},
      {"--threads 4", "--threads"},
      {"-maxrregcount abc", "-maxrregcount"},
      {"-Wl,-rpath,/tmp", "-Wl,-rpath,/tmp"},
      {"-O3 -lcuda", "-lcuda"},
  };
  for (size_t i = 0; i < sizeof denied / sizeof *denied; i++) {
    struct kb__build b;
    tu_build(&nvcc, source, "", denied[i].flags, NULL, &b);
    char want[128];
    snprintf(want, sizeof want, "flag \"%s\" is not allowed", denied[i].named);
    if (b.ok || strstr(b.reason, want) == NULL)
      fail_msg("flags \"%s\": ok %d, reason \"%s\"", denied[i].flags, b.ok, b.reason);
    kb__build_release(&b);
  }
  struct kb__build b;
  tu_build(&nvcc, source, "-DUNUSED=1",
           "-use_fast_math -Xptxas -O3,-v,-dlcm=ca -Xcompiler -O3,-march=native "
           "-maxrregcount 64 -lineinfo --expt-relaxed-constexpr -Wno-deprecated-gpu-targets "
           "-std=c++17 -ftz=true --ptxas-options=-warn-spills",
           NULL, &b);
  if (!b.ok)
    fail_msg("allowed flags: %s\n%s", b.reason, b.log ? b.log : "");
  /* -Xptxas -v repeats the report --resource-usage asked for: each kernel counted once */
  assert_int_equal(b.kernels, 1);
  kb__build_release(&b);
  kb_free(source);
}

static void test_errors_and_timeout(void **state) {
  (void)state;
  static const char *const bad =
      "#include \"kb_kernel.h\"\n__global__ void k(float *x) { x[0] = undefined_name; }\n";
  struct kb__build b;
  tu_build(&nvcc, bad, "", "", NULL, &b);
  assert_false(b.ok);
  assert_false(b.rejected);
  print_message("error: %s\n", b.reason);
  assert_non_null(strstr(b.reason, "does not compile: candidate.cu(2): error"));
  assert_non_null(strstr(b.reason, "undefined_name"));
  assert_int_equal(b.registers, -1);
  kb__build_release(&b);
  tu_build(&nvcc, bad, "", "", NULL, &b);
  assert_true(b.cached);
  assert_non_null(strstr(b.reason, "candidate.cu(2)"));
  kb__build_release(&b);

  char *source = candidate_source("honest_coop.cu");
  struct kb_error err = {0};
  struct kb__compile_req req = {.source = source, .flags = "-lineinfo", .timeout_s = 0.3};
  for (int i = 0; i < 2; i++) {
    kb__build_init(&b);
    assert_int_equal(kb__compile_req(&nvcc, &req, &b, &err), KB_OK);
    assert_false(b.ok);
    assert_false(b.cached);
    assert_non_null(strstr(b.reason, "timed out after 0.3 s"));
    assert_true(b.seconds < 1.0);
    kb__build_release(&b);
  }
  assert_int_equal(tu_processes_left(KB_TEST_NVCC_CACHE, 2), 0);
  kb_free(source);
}

static void test_cache_hit_and_arch(void **state) {
  (void)state;
  char *source = candidate_source("honest_softmax.cu");
  struct kb__build a, b, c;
  tu_build(&nvcc, source, "", "", NULL, &a);
  assert_true(a.ok);
  tu_build(&nvcc, source, "", "", "sm_90", &b);
  assert_true(b.ok);
  assert_true(b.cached);
  assert_true(b.seconds == 0);
  assert_string_equal(a.key, b.key);
  /* resource usage and log come back from the cache with the library */
  assert_int_equal(b.kernels, a.kernels);
  assert_int_equal(b.registers, a.registers);
  assert_int_equal(b.shared_bytes, 1024);
  assert_int_equal(b.spill_store_bytes, a.spill_store_bytes);
  assert_int_equal(b.stack_bytes, a.stack_bytes);
  assert_string_equal(b.log, a.log);
  print_message("log: %s", b.log);

  tu_build(&nvcc, source, "", "", "sm_80", &c);
  assert_true(c.ok);
  assert_string_not_equal(c.key, a.key);
  kb__build_release(&a);
  kb__build_release(&b);
  kb__build_release(&c);

  struct kb_error err = {0};
  struct kb__compile_req req = {.source = source, .arch = "sm_9"};
  kb__build_init(&a);
  assert_int_equal(kb__compile_req(&nvcc, &req, &a, &err), KB_EINVAL);
  kb__build_release(&a);
  kb_free(source);
}

/* torch.compile of a task's module compiled ahead (kb__compile_reference): the builder runs
 * trusted on the module, never a verdict; done once per key, recorded by <key>.ref, which a
 * later run finds without running anything; the key follows the module's text. Here (no GPU,
 * or a torch without torch.compile) the builder says why it compiled nothing, and nothing is
 * recorded; on a GPU machine with torch 2 it compiles and records. A trusted PyTorch worker
 * takes the reference caches; a confined one may not. */
static void test_reference_ahead(void **state) {
  (void)state;
  char dir[] = "/tmp/kb-test-reference.XXXXXX";
  assert_non_null(mkdtemp(dir));
  struct kb__compiler cc;
  struct kb_error err = {0};
  if (kb__compiler_init_cuda(&cc, dir, KB_NVCC, ABI_DIR, "sm_90", &err) != KB_OK)
    fail_msg("nvcc: %s", err.msg);
  const char *module = KB_SOURCE_DIR "/tasks/cuda/softmax/torch_reference.py";
  struct kb__compile_req req = {.oracle = module, .reference = 1, .trusted = 1};
  struct kb__build b;
  kb__build_init(&b);
  assert_int_equal(kb__compile_req(&cc, &req, &b, &err), KB_OK);
  print_message("reference: ok %d, cached %d, %.1f s, \"%s\"\n", b.ok, b.cached, b.seconds,
                b.reason);
  assert_true(b.ok);
  assert_false(b.cached);
  assert_string_equal(b.label, "reference");
  char marker[512], jit[512];
  snprintf(marker, sizeof marker, "%s/%s.ref", dir, b.key);
  /* recorded exactly when the builder compiled something */
  assert_int_equal(access(marker, F_OK) == 0, b.reason[0] == '\0');
  assert_int_equal(kb__reference_jit_dir(&cc, jit, sizeof jit), KB_OK);
  assert_true(strcmp(jit + strlen(dir), "/reference.jit") == 0);
  char key[KB_CAND_ID_LEN + 1];
  snprintf(key, sizeof key, "%s", b.key);
  /* a record of an earlier run: found, nothing runs */
  FILE *f = fopen(marker, "w");
  assert_non_null(f);
  fclose(f);
  kb__build_release(&b);
  assert_int_equal(kb__compile_req(&cc, &req, &b, &err), KB_OK);
  assert_true(b.ok && b.cached);
  assert_string_equal(b.key, key);
  kb__build_release(&b);
  /* another module's text, another key */
  char other[512], cmd[1200];
  snprintf(other, sizeof other, "%s/module.py", dir);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s' && echo '# changed' >> '%s'", module, other, other);
  assert_int_equal(system(cmd), 0);
  req.oracle = other;
  assert_int_equal(kb__compile_req(&cc, &req, &b, &err), KB_OK);
  assert_string_not_equal(b.key, key);
  kb__build_release(&b);
  /* a missing module is the runner's error, not a verdict */
  req.oracle = "/nonexistent/module.py";
  struct kb_error missing = {0};
  assert_int_not_equal(kb__compile_req(&cc, &req, &b, &missing), KB_OK);
  assert_non_null(strstr(missing.msg, "/nonexistent/module.py"));
  kb__build_release(&b);
  /* the reference caches go to a trusted PyTorch worker only */
  struct kb__sandbox *sb = NULL;
  struct kb__sandbox_opts so = {.worker = KB__SANDBOX_TORCH, .backend = "cuda", .jit_dir = jit};
  err = (struct kb_error){0};
  assert_int_equal(kb__sandbox_new(&so, &sb, &err), KB_EINVAL);
  assert_null(sb);
  print_message("confined worker with the reference caches: %s\n", err.msg);
  /* a trusted one: the folder made (the worker is not started here) */
  kb_remove_tree(jit, NULL);
  so.trusted = 1;
  err = (struct kb_error){0};
  if (kb__sandbox_new(&so, &sb, &err) != KB_OK)
    fail_msg("trusted worker with the reference caches: %s", err.msg);
  struct stat st;
  assert_int_equal(stat(jit, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  kb__sandbox_free(sb);
  kb__compiler_release(&cc);
  kb_remove_tree(dir, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_catalogue),
      cmocka_unit_test(test_cudart_shared),
      cmocka_unit_test(test_nvcc_flags),
      cmocka_unit_test(test_errors_and_timeout),
      cmocka_unit_test(test_cache_hit_and_arch),
      cmocka_unit_test(test_reference_ahead),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
