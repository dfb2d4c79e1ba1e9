/* The import allow-list without a GPU toolkit: the lists themselves, the ELF reader on real and
 * damaged libraries, and host C candidates that cheat, one per forbidden family, each of which
 * must be rejected at tier 0 with a reason naming what it imports, while honest ones pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "allowlist.h"
#include "compile.h"
#include "compile_util.h"
#include "elfsym.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"

#define ABI_DIR KB_SOURCE_DIR "/common/include"
#define SEEDS KB_SOURCE_DIR "/tasks/host"

static char cache[64];
static struct kb__compiler cc;

static int group_setup(void **state) {
  (void)state;
  return tu_compiler_setup(&cc, cache, sizeof cache, "/tmp/kb-test-allowlist.XXXXXX", NULL, ABI_DIR);
}

static int group_teardown(void **state) {
  (void)state;
  return tu_compiler_teardown(&cc, cache);
}

static void test_names(void **state) {
  (void)state;
  static const char *const both[] = {
      "memcpy", "memset", "__cxa_finalize", "__gmon_start__", "__cxa_atexit", "expf", "sqrt",
      "tanhl", "_ZGVdN8v_expf", "_ZGVeN16v_logf", "_ZGVbN2vv_pow", "fprintf", "stderr", "exit",
      "__assert_fail", "malloc", "free", "__stack_chk_fail", "__isoc23_strtol", "snprintf"};
  static const char *const cuda_only[] = {
      "__cudaRegisterFatBinary", "__cudaRegisterFunction", "__cudaRegisterVar",
      "__cudaLaunchKernel", "__cudaGetKernel", "__cudaPushCallConfiguration",
      "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
      "cudaGetLastError", "cudaMemcpyAsync", "cudaMemsetAsync", "cudaMallocAsync",
      "cudaFreeAsync", "cudaMemcpyToSymbolAsync", "cudaFuncSetAttribute",
      "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "__gxx_personality_v0",
      "_Unwind_Resume", "__cxa_guard_acquire", "_Znwm", "_ZdlPvm",
      "_ZSt20__throw_length_errorPKc", "_ZTVN10__cxxabiv117__class_type_infoE"};
  static const struct {
    const char *name;
    const char *family; /* a word of the family's phrase, NULL: none */
  } never[] = {
      {"pthread_create", "threads"},   {"GOMP_parallel", "threads"},
      {"_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
       "threads"},
      {"fork", "processes"},           {"execve", "processes"},
      {"system", "processes"},         {"posix_spawnp", "processes"},
      {"dlopen", "loads code"},        {"dlsym", "loads code"},
      {"cudaGetDriverEntryPoint", "loads code"},
      {"open", "files"},               {"fopen64", "files"},
      {"read", "files"},               {"write", "files"},
      {"socket", "network"},           {"connect", "network"},
      {"clock_gettime", "clocks"},     {"gettimeofday", "clocks"},
      {"nanosleep", "clocks"},         {"_ZNSt6chrono3_V212steady_clock3nowEv", "clocks"},
      {"getenv", "environment"},       {"mmap", "memory"},
      {"syscall", "system calls"},     {"sigaction", "signals"},
      {"cudaEventRecord", "events"},   {"cudaEventElapsedTime", "events"},
      {"cuptiActivityEnable", "profiler"},
      {"cudaStreamCreateWithFlags", "streams"},
      {"cudaLaunchHostFunc", "streams"},
      {"cudaDeviceSynchronize", "waits"},
      {"cudaStreamSynchronize", "waits"},
      {"cudaMalloc", "outlives"},      {"cudaFree", "outlives"},
      {"cudaMallocHost", "outlives"},  {"cudaMallocManaged", "managed"},
      {"__cudaRegisterManagedVar", "managed"},
      {"cudaMemcpy", "legacy"},        {"cudaMemset", "legacy"},
      {"cudaGraphLaunch", "graphs"},   {"cudaSetDevice", "device-wide"},
      {"cudaDeviceReset", "device-wide"},
      {"cuLaunchKernel", "driver"},    {"cuMemAlloc_v2", "driver"},
      {"_ZSt4cout", "iostreams"},      {"kb_missing_helper", NULL},
      {"stdin", "files"},
  };
  for (size_t i = 0; i < sizeof both / sizeof *both; i++)
    if (!kb__import_allowed(both[i], KB__LANG_C) || !kb__import_allowed(both[i], KB__LANG_CUDA))
      fail_msg("\"%s\" should be allowed", both[i]);
  for (size_t i = 0; i < sizeof cuda_only / sizeof *cuda_only; i++)
    if (kb__import_allowed(cuda_only[i], KB__LANG_C) ||
        !kb__import_allowed(cuda_only[i], KB__LANG_CUDA))
      fail_msg("\"%s\" should be allowed for CUDA only", cuda_only[i]);
  for (size_t i = 0; i < sizeof never / sizeof *never; i++) {
    const char *name = never[i].name;
    if (kb__import_allowed(name, KB__LANG_C) || kb__import_allowed(name, KB__LANG_CUDA))
      fail_msg("\"%s\" should not be allowed", name);
    const char *family = kb__import_family(name);
    if (never[i].family == NULL ? family != NULL
                                : family == NULL || strstr(family, never[i].family) == NULL)
      fail_msg("\"%s\": family \"%s\", expected one with \"%s\"", name, family ? family : "",
               never[i].family ? never[i].family : "");
  }
  /* not libm, though they start like it */
  assert_false(kb__import_allowed("expx", KB__LANG_C));
  assert_false(kb__import_allowed("_ZGVdN8v_system", KB__LANG_C));
  assert_false(kb__import_allowed("_ZSt20__thrower", KB__LANG_CUDA));

  assert_true(kb__needed_allowed("libc.so.6", KB__LANG_C));
  assert_true(kb__needed_allowed("libmvec.so.1", KB__LANG_C));
  assert_false(kb__needed_allowed("libstdc++.so.6", KB__LANG_C));
  assert_false(kb__needed_allowed("libcudart.so.13", KB__LANG_C));
  assert_true(kb__needed_allowed("libcudart.so.13", KB__LANG_CUDA));
  assert_true(kb__needed_allowed("libcudart.so.12", KB__LANG_CUDA));
  assert_true(kb__needed_allowed("libstdc++.so.6", KB__LANG_CUDA));
  assert_false(kb__needed_allowed("libcudart.so", KB__LANG_CUDA));
  assert_false(kb__needed_allowed("libcudart.so.13.0.88", KB__LANG_CUDA));
  assert_false(kb__needed_allowed("libgomp.so.1", KB__LANG_CUDA));
  assert_false(kb__needed_allowed("libcuda.so.1", KB__LANG_CUDA));
  assert_false(kb__needed_allowed("ld-linux-x86-64.so.2", KB__LANG_CUDA));
}

/* A host candidate whose body is `body`, with `includes` before kb_kernel.h (with all of
 * glibc's declarations: candidates are built as strict C11). */
static char *candidate(const char *includes, const char *body) {
  struct kb_buf b;
  kb_buf_init(&b);
  int rc = kb_buf_addf(&b,
                       "#define _GNU_SOURCE\n%s\n#include \"kb_kernel.h\"\n"
                       "int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, "
                       "int n_out, void *stream) {\n"
                       "  (void)in; (void)n_in; (void)out; (void)n_out; (void)stream;\n"
                       "%s\n}\n",
                       includes, body);
  assert_int_equal(rc, KB_OK);
  return kb_buf_detach(&b);
}

static const struct cheat {
  const char *what;
  const char *includes;
  const char *body;
  const char *flags;
  const char *symbol; /* the reason must name it */
} cheats[] = {
    {"a thread", "#include <pthread.h>\nstatic void *w(void *p) { return p; }",
     "  pthread_t t; return pthread_create(&t, 0, w, 0);", "", "pthread_create"},
    {"openmp", "",
     "  float *y = out[0].data;\n#pragma omp parallel for\n"
     "  for (int i = 0; i < 1024; i++) y[i] = i;\n  return 0;",
     "-fopenmp", "GOMP_parallel"},
    {"a child process", "#include <unistd.h>",
     "  char *argv[] = {\"/bin/true\", 0};\n  if (fork() == 0) execv(argv[0], argv);\n  return 0;",
     "", "fork"},
    {"system()", "#include <stdlib.h>", "  return system(\"true\");", "", "system"},
    {"popen", "#include <stdio.h>", "  return popen(\"true\", \"r\") == 0;", "", "popen"},
    {"dlopen", "#include <dlfcn.h>",
     "  void *h = dlopen(\"libcuda.so.1\", RTLD_NOW);\n  return dlsym(h, \"cuInit\") == 0;", "",
     "dlopen"},
    {"a file", "#include <stdio.h>",
     "  FILE *f = fopen(\"/tmp/answers\", \"rb\");\n  if (!f) return 1;\n"
     "  return (int)fread(out[0].data, 4, 1, f) - 1;",
     "", "fopen"},
    {"a descriptor", "#include <fcntl.h>\n#include <unistd.h>",
     "  int fd = open(\"/tmp/answers\", O_RDONLY);\n  return (int)read(fd, out[0].data, 4);", "",
     "open"},
    {"a socket", "#include <sys/socket.h>\n#include <netinet/in.h>",
     "  int s = socket(AF_INET, SOCK_STREAM, 0);\n  struct sockaddr_in a = {0};\n"
     "  return connect(s, (struct sockaddr *)&a, sizeof a);",
     "", "socket"},
    {"clock_gettime", "#include <time.h>",
     "  struct timespec ts;\n  clock_gettime(CLOCK_MONOTONIC, &ts);\n  return ts.tv_sec < 0;",
     "", "clock_gettime"},
    {"gettimeofday", "#include <sys/time.h>",
     "  struct timeval tv;\n  gettimeofday(&tv, 0);\n  return tv.tv_sec < 0;", "",
     "gettimeofday"},
    {"sleep", "#include <unistd.h>", "  return usleep(10);", "", "usleep"},
    {"the environment", "#include <stdlib.h>", "  return getenv(\"REDIS_PASSWORD\") != 0;", "",
     "getenv"},
    {"mprotect", "#include <sys/mman.h>",
     "  return mprotect((void *)((long)in & ~4095L), 4096, PROT_READ | PROT_WRITE);", "",
     "mprotect"},
    {"a raw system call", "#include <unistd.h>\n#include <sys/syscall.h>",
     "  return (int)syscall(SYS_getpid) < 0;", "", "syscall"},
    {"a signal handler", "#include <signal.h>", "  signal(SIGSEGV, SIG_IGN);\n  return 0;", "",
     "signal"},
};

static void test_host_cheats_rejected(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cheats / sizeof *cheats; i++) {
    const struct cheat *c = &cheats[i];
    char *source = candidate(c->includes, c->body);
    struct kb__build b;
    tu_build(&cc, source, "", c->flags, NULL, &b);
    char quoted[96];
    snprintf(quoted, sizeof quoted, "\"%s\"", c->symbol);
    if (!b.rejected || b.ok || b.undefined || strstr(b.reason, quoted) == NULL)
      fail_msg("%s: ok %d, rejected %d, reason \"%s\"; log: %s", c->what, b.ok, b.rejected,
               b.reason, b.log ? b.log : "");
    print_message("%-18s rejected: %s\n", c->what, b.reason);
    kb__build_release(&b);
    kb_free(source);
  }
}

/* Honest host code, including what -O3 -ffast-math makes of libm (libmvec), diagnostics on
 * stderr, heap scratch, and the built-in tasks' seeds. */
static void test_host_honest_allowed(void **state) {
  (void)state;
  static const struct {
    const char *includes, *body, *flags;
  } honest[] = {
      {"#include <math.h>",
       "  const float *x = in[0].data; float *y = out[0].data;\n"
       "  for (int i = 0; i < 1024; i++)\n"
       "    y[i] = expf(x[i]) + tanhf(x[i]) + logf(1 + fabsf(x[i])) + powf(x[i], 2.5f);\n"
       "  return 0;",
       "-O3 -ffast-math -march=x86-64-v3"},
      {"#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>",
       "  float *tmp = malloc(4096);\n  if (!tmp) { fprintf(stderr, \"no memory\\n\"); exit(1); }\n"
       "  memcpy(tmp, in[0].data, 4096);\n  memcpy(out[0].data, tmp, 4096);\n  free(tmp);\n"
       "  return 0;",
       ""},
  };
  for (size_t i = 0; i < sizeof honest / sizeof *honest; i++) {
    char *source = candidate(honest[i].includes, honest[i].body);
    struct kb__build b;
    tu_build(&cc, source, "", honest[i].flags, NULL, &b);
    if (!b.ok)
      fail_msg("honest %zu: %s", i, b.reason);
    kb__build_release(&b);
    kb_free(source);
  }
  static const char *const seeds[] = {SEEDS "/sum/seeds/naive.c", SEEDS "/sum/seeds/unrolled.c",
                                      SEEDS "/matmul/seeds/naive.c", SEEDS "/matmul/seeds/ikj.c",
                                      SEEDS "/sum/oracle.c", SEEDS "/matmul/oracle.c"};
  for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
    char *source = tu_slurp(seeds[i]);
    struct kb__build b;
    tu_build(&cc, source, "", "", NULL, &b);
    if (!b.ok)
      fail_msg("%s: %s", seeds[i], b.reason);
    kb__build_release(&b);
    kb_free(source);
  }
}

/* The reason names the first symbol of a known family, then the others as far as they fit. */
static void test_reason_lists_more(void **state) {
  (void)state;
  char *source = candidate("#include <stdlib.h>\n#include <time.h>\n#include <unistd.h>\n"
                           "int kb_helper_a(void);\nint kb_helper_b(void);",
                           "  return kb_helper_a() + kb_helper_b() + (int)time(0) + "
                           "(getenv(\"X\") != 0) + fork();");
  struct kb__build b;
  tu_build(&cc, source, "", "", NULL, &b);
  assert_true(b.rejected);
  assert_false(b.undefined); /* time, getenv and fork are no build defect */
  print_message("reason: %s\n", b.reason);
  assert_int_equal(strncmp(b.reason, "imports \"", 9), 0);
  assert_non_null(strstr(b.reason, "4 more not allowed"));
  assert_non_null(strstr(b.reason, "\"kb_helper_a\""));
  assert_non_null(strstr(b.reason, "\"kb_helper_b\""));
  kb__build_release(&b);
  kb_free(source);

  /* a missing function alone: said so */
  source = candidate("int kb_missing_helper(void);", "  return kb_missing_helper();");
  tu_build(&cc, source, "", "", NULL, &b);
  assert_true(b.rejected);
  assert_true(b.undefined);
  assert_non_null(strstr(b.reason, "\"kb_missing_helper\", which is not on the allow-list (and "
                                   "no library it links defines it)"));
  kb__build_release(&b);
  kb_free(source);
}

/* The ELF reader on a real library, and on files that are not one or are damaged. */
static void test_elf_reader(void **state) {
  (void)state;
  char *source = candidate("#include <string.h>\n#include <math.h>",
                           "  memcpy(out[0].data, in[0].data, (size_t)n_in * 4096);\n"
                           "  *(double *)out[0].data = cbrt(*(double *)in[0].data);\n"
                           "  return 0;");
  struct kb_error err = {0};
  struct kb__compile_req req = {.source = source, .trusted = 1};
  struct kb__build b;
  kb__build_init(&b);
  assert_int_equal(kb__compile_req(&cc, &req, &b, &err), KB_OK);
  assert_true(b.ok);
  struct kb__elf_imports im;
  kb__elf_imports_init(&im);
  assert_int_equal(kb__elf_read_imports(b.lib_path, &im, &err), KB_OK);
  int saw_memcpy = 0, saw_libc = 0;
  for (size_t i = 0; i < im.n; i++)
    if (strcmp(im.syms[i].name, "memcpy") == 0) {
      saw_memcpy = 1;
      assert_non_null(im.syms[i].version);
      assert_int_equal(strncmp(im.syms[i].version, "GLIBC_", 6), 0);
      assert_string_equal(im.syms[i].library, "libc.so.6");
      assert_false(im.syms[i].weak);
    }
  for (size_t i = 0; i < im.n_needed; i++)
    saw_libc |= strcmp(im.needed[i], "libc.so.6") == 0;
  assert_true(saw_memcpy);
  assert_true(saw_libc);
  kb__elf_imports_release(&im);
  int found = 0;
  assert_int_equal(kb__elf_defines(b.lib_path, "kb_forward", &found, &err), KB_OK);
  assert_true(found);

  /* damaged copies: each is read or refused as malformed, never more */
  char *image = NULL;
  struct kb_buf file;
  kb_buf_init(&file);
  assert_int_equal(kb_buf_read_file(&file, b.lib_path, &err), KB_OK);
  char path[128];
  snprintf(path, sizeof path, "%s/damaged.so", cache);
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  int parsed = 0, refused = 0;
  for (int round = 0; round < 300; round++) {
    image = kb_malloc(file.len);
    assert_non_null(image);
    memcpy(image, file.data, file.len);
    size_t len = file.len;
    if (round % 10 == 0)
      len = (size_t)(seed % file.len); /* truncated */
    for (int k = 0; k < 8; k++) {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      /* mostly in the headers and tables, where offsets live */
      size_t at = (size_t)(seed % (k < 4 ? 4096 : file.len));
      if (at < len)
        image[at] = (char)(seed >> 32);
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(image, 1, len, f), len);
    fclose(f);
    kb_free(image);
    kb__elf_imports_init(&im);
    struct kb_error e2 = {0};
    int rc = kb__elf_read_imports(path, &im, &e2);
    if (rc != KB_OK && rc != KB_EPARSE)
      fail_msg("round %d: %s", round, e2.msg);
    parsed += rc == KB_OK;
    refused += rc == KB_EPARSE;
    kb__elf_imports_release(&im);
    int allowed;
    char reason[256];
    rc = kb__imports_check(path, KB__LANG_C, &allowed, NULL, reason, sizeof reason, &e2);
    assert_true(rc == KB_OK || rc == KB_EPARSE);
  }
  print_message("damaged libraries: %d read, %d refused\n", parsed, refused);
  kb_buf_release(&file);
  unlink(path);

  assert_int_equal(kb__elf_read_imports("/no/such/lib.so", &im, &err), KB_EIO);
  kb_error_clear(&err);
  assert_int_equal(kb__elf_read_imports(KB_SOURCE_DIR "/CMakeLists.txt", &im, &err), KB_EPARSE);
  kb__build_release(&b);
  kb_free(source);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_host_cheats_rejected),
      cmocka_unit_test(test_host_honest_allowed),
      cmocka_unit_test(test_reason_lists_more),
      cmocka_unit_test(test_elf_reader),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
