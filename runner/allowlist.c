/* The import allow-list (see allowlist.h). The lists were found by building honest candidates
 * (vector add, shared-memory reductions, templates over f16/bf16, cooperative groups and warp
 * shuffles, __constant__ tables, occupancy queries, workspaces, cluster and cooperative
 * launches, host code with std::vector and libm) with `cc -shared` and `nvcc -shared -cudart
 * shared` and reading their undefined symbols; docs/candidate-abi.md explains each entry. */
#include "allowlist.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "elfsym.h"
#include "kb/error.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Any candidate, C or CUDA. */
static const char *const common_exact[] = {
    /* put into every shared library by the C runtime's start files (weak references) */
    "__gmon_start__", "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable",
    "__cxa_finalize",
    /* destructors of static objects, and CUDA's module unregistration, run at unload */
    "__cxa_atexit",
    /* stack protector and _FORTIFY_SOURCE checks, added by some distributions' compilers */
    "__stack_chk_fail", "__memcpy_chk", "__memmove_chk", "__memset_chk", "__strcpy_chk",
    "__strncpy_chk", "__strcat_chk", "__strncat_chk", "__snprintf_chk", "__vsnprintf_chk",
    "__sprintf_chk", "__vsprintf_chk", "__printf_chk", "__fprintf_chk", "__vprintf_chk",
    "__vfprintf_chk",
    /* memory and strings: pure functions the compiler also emits for struct copies */
    "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp",
    "strchr", "strrchr", "strstr", "strcpy", "strncpy", "strcat", "strncat",
    /* formatting into memory, numbers from strings */
    "snprintf", "vsnprintf", "sprintf", "vsprintf", "strtol", "strtoul", "strtoll", "strtoull",
    "strtof", "strtod", "abs", "labs", "llabs", "qsort", "bsearch",
    /* heap memory for host-side scratch */
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
    /* diagnostics on the stdout and stderr the sandbox gave: no way to open anything else */
    "printf", "fprintf", "vprintf", "vfprintf", "puts", "fputs", "fputc", "putc", "putchar",
    "fwrite", "fflush", "stdout", "stderr",
    /* ending the call badly: the sandbox reports a crash */
    "abort", "exit", "_exit", "__assert_fail",
    /* errno, which libm and strtol set */
    "__errno_location",
};

/* Prefixes any candidate may import: C23 names glibc 2.38+ gives the strto* family. */
static const char *const common_prefix[] = {"__isoc23_strto"};

/* libm: each name also in its float ("f") and long double ("l") form. */
static const char *const libm_names[] = {
    "acos",     "asin",   "atan",      "atan2",   "cos",    "sin",     "tan",   "acosh",
    "asinh",    "atanh",  "cosh",      "sinh",    "tanh",   "exp",     "exp2",  "exp10",
    "expm1",    "log",    "log2",      "log10",   "log1p",  "logb",    "ilogb", "frexp",
    "ldexp",    "scalbn", "scalbln",   "modf",    "pow",    "sqrt",    "cbrt",  "hypot",
    "fabs",     "ceil",   "floor",     "trunc",   "round",  "lround",  "llround", "rint",
    "lrint",    "llrint", "nearbyint", "fmod",    "remainder", "remquo", "copysign", "nan",
    "nextafter", "nexttoward", "fdim", "fmax",    "fmin",   "fma",     "erf",   "erfc",
    "tgamma",   "lgamma", "sincos",    "__finite", "__isnan", "__isinf", "__fpclassify",
    "__signbit",
};

/* CUDA candidates (nvcc -cudart shared) besides the common ones. */
static const char *const cuda_exact[] = {
    /* module and kernel registration nvcc generates, run when the library loads */
    "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaUnregisterFatBinary",
    "__cudaRegisterFunction", "__cudaRegisterVar",
    /* the <<<...>>> launch as nvcc lowers it (CUDA 13: __cudaLaunchKernel, __cudaGetKernel;
     * earlier: cudaLaunchKernel), and the explicit launch APIs, all taking a stream */
    "__cudaPushCallConfiguration", "__cudaPopCallConfiguration", "__cudaLaunchKernel",
    "__cudaGetKernel", "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
    /* errors */
    "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString", "cudaGetErrorName",
    /* read-only queries for sizing a launch */
    "cudaGetDevice", "cudaDeviceGetAttribute", "cudaGetDeviceProperties",
    "cudaGetDeviceProperties_v2", /* its name in CUDA 12 */
    "cudaFuncGetAttributes", "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cudaOccupancyAvailableDynamicSMemPerBlock", "cudaOccupancyMaxPotentialClusterSize",
    "cudaOccupancyMaxActiveClusters", "cudaGetSymbolAddress", "cudaGetSymbolSize",
    /* per-kernel settings: more than 48 KiB of dynamic shared memory, cluster sizes */
    "cudaFuncSetAttribute", "cudaFuncSetCacheConfig",
    /* stream-ordered work on `stream`, capturable into a CUDA graph */
    "cudaMemcpyAsync", "cudaMemsetAsync", "cudaMemcpy2DAsync", "cudaMemset2DAsync",
    "cudaMemcpyToSymbolAsync", "cudaMemcpyFromSymbolAsync",
    /* stream-ordered scratch memory, freed on `stream` before returning */
    "cudaMallocAsync", "cudaFreeAsync",
    /* the C++ runtime of nvcc's generated host code: guarded statics, exceptions, unwinding */
    "__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort", "__gxx_personality_v0",
    "_Unwind_Resume", "__cxa_allocate_exception", "__cxa_free_exception", "__cxa_throw",
    "__cxa_begin_catch", "__cxa_end_catch", "__cxa_rethrow", "__cxa_pure_virtual",
    /* operator new and delete (std::vector and friends in host code) */
    "_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t", "_ZdlPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t", "_ZnamSt11align_val_t", "_ZdaPvSt11align_val_t",
    "_ZdaPvmSt11align_val_t",
    /* std::terminate, which noexcept code calls when an exception escapes */
    "_ZSt9terminatev",
};

/* CUDA prefixes: type information and vtables of the C++ runtime (classes with virtual
 * functions, catch clauses), which are data, not code to call. */
static const char *const cuda_prefix[] = {"_ZTVN10__cxxabiv1", "_ZTISt", "_ZTSSt"};

/* Libraries a library may need. */
static const char *const needed_c[] = {"libc.so.6", "libm.so.6", "libmvec.so.1"};
static const char *const needed_cuda[] = {"libc.so.6",     "libm.so.6",     "libmvec.so.1",
                                          "libstdc++.so.6", "libgcc_s.so.1"};

enum family {
  F_NONE,
  F_THREADS,
  F_PROCESS,
  F_DLOPEN,
  F_FILES,
  F_MMAP,
  F_NET,
  F_TIME,
  F_ENV,
  F_SYSCALL,
  F_SIGNAL,
  F_EVENTS,
  F_PROFILER,
  F_STREAMS,
  F_SYNC,
  F_ALLOC,
  F_LEGACY,
  F_DEVICE,
  F_GRAPH,
  F_DRIVER,
  F_MANAGED,
  F_IOSTREAM
};

static const char *const family_text[] = {
    [F_NONE] = NULL,
    [F_THREADS] = "starts threads",
    [F_PROCESS] = "starts processes",
    [F_DLOPEN] = "loads code at run time",
    [F_FILES] = "opens or uses files or descriptors",
    [F_MMAP] = "maps or protects memory",
    [F_NET] = "opens network connections",
    [F_TIME] = "reads clocks or sleeps: the runner does the timing",
    [F_ENV] = "reads or changes the environment",
    [F_SYSCALL] = "makes raw system calls",
    [F_SIGNAL] = "handles or sends signals",
    [F_EVENTS] = "uses CUDA events: the runner does the timing",
    [F_PROFILER] = "uses the profiler",
    [F_STREAMS] = "uses streams other than `stream`",
    [F_SYNC] = "waits for the device: return without waiting, the runner synchronizes",
    [F_ALLOC] = "allocates memory that outlives the call or synchronizes: use cudaMallocAsync "
                "and cudaFreeAsync on `stream`",
    [F_LEGACY] = "copies on the legacy default stream: use the Async form on `stream`",
    [F_DEVICE] = "changes device-wide state",
    [F_GRAPH] = "builds CUDA graphs: work cached across calls",
    [F_DRIVER] = "calls the CUDA driver API directly",
    [F_MANAGED] = "uses managed (unified) memory",
    [F_IOSTREAM] = "uses C++ iostreams: print with fprintf(stderr, ...) if at all",
};

struct family_entry {
  const char *name;
  int prefix; /* 1: `name` is a prefix */
  enum family family;
};

/* Checked in order: the first match names the family. */
static const struct family_entry families[] = {
    {"pthread_", 1, F_THREADS},
    {"thrd_", 1, F_THREADS},
    {"GOMP_", 1, F_THREADS},
    {"omp_", 1, F_THREADS},
    {"__kmpc_", 1, F_THREADS},
    {"_ZNSt6thread", 1, F_THREADS},
    {"clone", 0, F_THREADS},
    {"clone3", 0, F_THREADS},
    {"fork", 0, F_PROCESS},
    {"vfork", 0, F_PROCESS},
    {"_Fork", 0, F_PROCESS},
    {"exec", 1, F_PROCESS},
    {"fexecve", 0, F_PROCESS},
    {"posix_spawn", 1, F_PROCESS},
    {"system", 0, F_PROCESS},
    {"popen", 0, F_PROCESS},
    {"daemon", 0, F_PROCESS},
    {"dl", 1, F_DLOPEN},
    {"_dl_", 1, F_DLOPEN},
    {"cudaGetDriverEntryPoint", 1, F_DLOPEN},
    {"cudaGetExportTable", 0, F_DLOPEN},
    {"socket", 0, F_NET},
    {"socketpair", 0, F_NET},
    {"connect", 0, F_NET},
    {"bind", 0, F_NET},
    {"listen", 0, F_NET},
    {"accept", 1, F_NET},
    {"send", 1, F_NET},
    {"recv", 1, F_NET},
    {"getaddrinfo", 0, F_NET},
    {"gethostbyname", 1, F_NET},
    {"open", 1, F_FILES},
    {"creat", 1, F_FILES},
    {"fopen", 1, F_FILES},
    {"freopen", 1, F_FILES},
    {"fdopen", 0, F_FILES},
    {"tmpfile", 1, F_FILES},
    {"fmemopen", 0, F_FILES},
    {"memfd_create", 0, F_FILES},
    {"shm_open", 0, F_FILES},
    {"mkfifo", 0, F_FILES},
    {"ioctl", 0, F_FILES},
    {"read", 0, F_FILES},
    {"write", 0, F_FILES},
    {"pread", 1, F_FILES},
    {"pwrite", 1, F_FILES},
    {"readv", 0, F_FILES},
    {"writev", 0, F_FILES},
    {"close", 0, F_FILES},
    {"dup", 1, F_FILES},
    {"fcntl", 1, F_FILES},
    {"unlink", 1, F_FILES},
    {"remove", 0, F_FILES},
    {"rename", 1, F_FILES},
    {"mkdir", 1, F_FILES},
    {"stat", 1, F_FILES},
    {"fstat", 1, F_FILES},
    {"lstat", 1, F_FILES},
    {"__xstat", 1, F_FILES},
    {"__fxstat", 1, F_FILES},
    {"access", 0, F_FILES},
    {"fread", 0, F_FILES},
    {"fgets", 0, F_FILES},
    {"fscanf", 0, F_FILES},
    {"stdin", 0, F_FILES},
    {"mmap", 1, F_MMAP},
    {"munmap", 0, F_MMAP},
    {"mremap", 0, F_MMAP},
    {"mprotect", 0, F_MMAP},
    {"madvise", 0, F_MMAP},
    {"shmat", 0, F_MMAP},
    {"shmget", 0, F_MMAP},
    {"clock", 1, F_TIME},
    {"gettimeofday", 0, F_TIME},
    {"time", 0, F_TIME},
    {"times", 0, F_TIME},
    {"timespec_get", 0, F_TIME},
    {"getrusage", 0, F_TIME},
    {"ftime", 0, F_TIME},
    {"nanosleep", 0, F_TIME},
    {"usleep", 0, F_TIME},
    {"sleep", 0, F_TIME},
    {"_ZNSt6chrono", 1, F_TIME},
    {"getenv", 0, F_ENV},
    {"secure_getenv", 0, F_ENV},
    {"setenv", 0, F_ENV},
    {"putenv", 0, F_ENV},
    {"unsetenv", 0, F_ENV},
    {"environ", 0, F_ENV},
    {"__environ", 0, F_ENV},
    {"syscall", 0, F_SYSCALL},
    {"prctl", 0, F_SYSCALL},
    {"ptrace", 0, F_SYSCALL},
    {"signal", 0, F_SIGNAL},
    {"sigaction", 0, F_SIGNAL},
    {"raise", 0, F_SIGNAL},
    {"kill", 0, F_SIGNAL},
    {"sigprocmask", 0, F_SIGNAL},
    {"alarm", 0, F_SIGNAL},
    {"setitimer", 0, F_SIGNAL},
    {"cudaEvent", 1, F_EVENTS},
    {"cupti", 1, F_PROFILER},
    {"cudaProfiler", 1, F_PROFILER},
    {"nvtx", 1, F_PROFILER},
    {"cudaStreamSynchronize", 0, F_SYNC},
    {"cudaDeviceSynchronize", 0, F_SYNC},
    {"cudaThreadSynchronize", 0, F_SYNC},
    {"cudaStream", 1, F_STREAMS},
    {"cudaLaunchHostFunc", 0, F_STREAMS},
    {"cudaMallocManaged", 0, F_MANAGED},
    {"__cudaRegisterManagedVar", 0, F_MANAGED},
    {"__cudaInitModule", 0, F_MANAGED},
    {"cudaMemPrefetchAsync", 0, F_MANAGED},
    {"cudaMemAdvise", 0, F_MANAGED},
    {"cudaMalloc", 1, F_ALLOC},
    {"cudaHostAlloc", 0, F_ALLOC},
    {"cudaHostRegister", 0, F_ALLOC},
    {"cudaHostUnregister", 0, F_ALLOC},
    {"cudaFree", 1, F_ALLOC},
    {"cudaMemcpy", 1, F_LEGACY},
    {"cudaMemset", 1, F_LEGACY},
    {"cudaGraph", 1, F_GRAPH},
    {"cudaUserObject", 1, F_GRAPH},
    {"cudaSetDevice", 1, F_DEVICE},
    {"cudaDevice", 1, F_DEVICE},
    {"cudaCtx", 1, F_DEVICE},
    {"cudaThread", 1, F_DEVICE},
    {"cudaMemPool", 1, F_DEVICE},
    {"cudaIpc", 1, F_DEVICE},
    {"_ZSt4cout", 0, F_IOSTREAM},
    {"_ZSt4cerr", 0, F_IOSTREAM},
    {"_ZSt4clog", 0, F_IOSTREAM},
    {"_ZNSo", 1, F_IOSTREAM},
    {"_ZStlsISt11char_traitsIcEERSt13basic_ostream", 1, F_IOSTREAM},
    {"_ZSt16__ostream_insert", 1, F_IOSTREAM},
    {"_ZNSt8ios_base", 1, F_IOSTREAM},
};

static int in_list(const char *name, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(name, list[i]) == 0)
      return 1;
  return 0;
}

static int has_prefix(const char *name, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strncmp(name, list[i], strlen(list[i])) == 0)
      return 1;
  return 0;
}

/* 1 when `name` is a libm function, in its double, float or long double form. */
static int is_libm(const char *name) {
  size_t len = strlen(name);
  for (size_t i = 0; i < COUNT(libm_names); i++) {
    size_t base = strlen(libm_names[i]);
    if (strncmp(name, libm_names[i], base) != 0)
      continue;
    if (len == base || (len == base + 1 && (name[base] == 'f' || name[base] == 'l')))
      return 1;
  }
  return 0;
}

/* 1 when `name` is a libmvec vector variant of a libm function (gcc -O3 -ffast-math):
 * _ZGV<isa><mask><lanes><parameters>_<function>, e.g. _ZGVdN8v_expf. */
static int is_libmvec(const char *name) {
  if (strncmp(name, "_ZGV", 4) != 0)
    return 0;
  const char *p = name + 4;
  if (*p < 'a' || *p > 'z')
    return 0;
  p++;
  if (*p != 'N' && *p != 'M')
    return 0;
  p++;
  if (!isdigit((unsigned char)*p))
    return 0;
  while (isdigit((unsigned char)*p))
    p++;
  while (*p == 'v' || *p == 'l' || *p == 'u')
    p++;
  return *p == '_' && is_libm(p + 1);
}

/* 1 for libstdc++'s helpers that throw its standard exceptions: _ZSt20__throw_length_errorPKc. */
static int is_throw_helper(const char *name) {
  if (strncmp(name, "_ZSt", 4) != 0)
    return 0;
  const char *p = name + 4;
  if (!isdigit((unsigned char)*p))
    return 0;
  while (isdigit((unsigned char)*p))
    p++;
  return strncmp(p, "__throw_", 8) == 0;
}

int kb__import_allowed(const char *name, enum kb__lang lang) {
  if (in_list(name, common_exact, COUNT(common_exact)) ||
      has_prefix(name, common_prefix, COUNT(common_prefix)) || is_libm(name) ||
      is_libmvec(name))
    return 1;
  switch (lang) {
  case KB__LANG_C:
    return 0;
  case KB__LANG_CUDA:
    return in_list(name, cuda_exact, COUNT(cuda_exact)) ||
           has_prefix(name, cuda_prefix, COUNT(cuda_prefix)) || is_throw_helper(name);
  }
  return 0;
}

/* 1 when `soname` is libcudart.so.<major>. */
static int is_cudart(const char *soname) {
  static const char prefix[] = "libcudart.so.";
  if (strncmp(soname, prefix, sizeof prefix - 1) != 0)
    return 0;
  const char *p = soname + sizeof prefix - 1;
  if (!isdigit((unsigned char)*p))
    return 0;
  while (isdigit((unsigned char)*p))
    p++;
  return *p == '\0';
}

int kb__needed_allowed(const char *soname, enum kb__lang lang) {
  switch (lang) {
  case KB__LANG_C:
    return in_list(soname, needed_c, COUNT(needed_c));
  case KB__LANG_CUDA:
    return in_list(soname, needed_cuda, COUNT(needed_cuda)) || is_cudart(soname);
  }
  return 0;
}

const char *kb__import_family(const char *name) {
  for (size_t i = 0; i < COUNT(families); i++) {
    const struct family_entry *f = &families[i];
    if (f->prefix ? strncmp(name, f->name, strlen(f->name)) == 0 : strcmp(name, f->name) == 0)
      return family_text[f->family];
  }
  /* the driver API: cuLaunchKernel, cuMemAlloc_v2, ... */
  if (name[0] == 'c' && name[1] == 'u' && isupper((unsigned char)name[2]))
    return family_text[F_DRIVER];
  return NULL;
}

/* Appends the concatenation of the NULL-terminated `parts` to `out` (`size` bytes, `*len`
 * used) if it fits whole; returns 0 when it does not (nothing appended). */
static int append(char *out, size_t size, size_t *len, const char *const *parts) {
  size_t total = 0;
  for (const char *const *p = parts; *p; p++)
    total += strlen(*p);
  if (*len + total + 1 > size)
    return 0;
  for (const char *const *p = parts; *p; p++) {
    size_t n = strlen(*p);
    memcpy(out + *len, *p, n);
    *len += n;
  }
  out[*len] = '\0';
  return 1;
}

/* 1 when `s` is a plain undefined symbol: no version, not weak, of no known family. */
static int plain_undefined(const struct kb__elf_import *s) {
  return s->version == NULL && !s->weak && kb__import_family(s->name) == NULL;
}

int kb__imports_check(const char *path, enum kb__lang lang, int *allowed, int *undefined,
                      char *reason, size_t size, struct kb_error *err) {
  struct kb__elf_imports im;
  kb__elf_imports_init(&im);
  *allowed = 0;
  if (undefined != NULL)
    *undefined = 0;
  if (size > 0)
    reason[0] = '\0';
  int rc = kb__elf_read_imports(path, &im, err);
  if (rc)
    return rc;
  size_t bad = 0, len = 0, listed = 0;
  /* the symbol named first is the first one of a known family, which says what the candidate
   * tried, else the first one not allowed */
  const struct kb__elf_import *first = NULL, *first_known = NULL;
  int all_plain = 1;
  for (size_t i = 0; i < im.n; i++)
    if (!kb__import_allowed(im.syms[i].name, lang)) {
      if (first == NULL)
        first = &im.syms[i];
      if (first_known == NULL && kb__import_family(im.syms[i].name) != NULL)
        first_known = &im.syms[i];
      all_plain &= plain_undefined(&im.syms[i]);
      bad++;
    }
  if (first_known != NULL)
    first = first_known;
  if (first != NULL) {
    const char *family = kb__import_family(first->name);
    if (family != NULL)
      append(reason, size, &len,
             (const char *const[]){"imports \"", first->name, "\" (", family, ")", NULL});
    else if (plain_undefined(first))
      append(reason, size, &len,
             (const char *const[]){"imports \"", first->name,
                                   "\", which is not on the allow-list (and no library it "
                                   "links defines it)",
                                   NULL});
    else
      append(reason, size, &len,
             (const char *const[]){"imports \"", first->name,
                                   "\", which is not on the allow-list", NULL});
    if (bad > 1) {
      char count[32];
      snprintf(count, sizeof count, "%zu", bad - 1);
      append(reason, size, &len, (const char *const[]){"; ", count, " more not allowed:", NULL});
      for (size_t i = 0; i < im.n; i++) {
        const struct kb__elf_import *s = &im.syms[i];
        if (s == first || kb__import_allowed(s->name, lang))
          continue;
        /* room is kept for the closing " ..." */
        if (len + strlen(s->name) + 8 >= size ||
            !append(reason, size, &len,
                    (const char *const[]){listed ? ", \"" : " \"", s->name, "\"", NULL}))
          break;
        listed++;
      }
      if (listed < bad - 1)
        append(reason, size, &len, (const char *const[]){listed ? ", ..." : " ...", NULL});
    }
  } else {
    for (size_t i = 0; i < im.n_needed; i++)
      if (!kb__needed_allowed(im.needed[i], lang)) {
        append(reason, size, &len,
               (const char *const[]){"links \"", im.needed[i],
                                     "\", which is not an allowed library", NULL});
        bad++;
        break;
      }
  }
  *allowed = bad == 0;
  size_t bad_needed = 0;
  for (size_t i = 0; i < im.n_needed; i++)
    bad_needed += !kb__needed_allowed(im.needed[i], lang);
  if (undefined != NULL)
    *undefined = first != NULL && all_plain && bad_needed == 0;
  kb__elf_imports_release(&im);
  return KB_OK;
}
