/* Compiling candidates into a content-addressed cache: tier 0 of the ladder.
 *
 * Two languages (allowlist.h): host C, built with
 *   <cc> -O2 -std=c11 -shared -fPIC -Wl,-z,relro,-z,now -I<abi dir> <knobs> <flags> -o lib.so
 *          candidate.c -lm
 * and CUDA, built with
 *   <nvcc> -O3 -arch=<arch> -shared -Xcompiler -fPIC -cudart shared --resource-usage
 *          -I<abi dir> <knobs> <flags> -o lib.so candidate.cu
 * `-cudart shared` matters: with nvcc's default static runtime every library imports
 * pthread_create, dlopen, socket, open and the like, which would hide a cheat from the import
 * allow-list; the evaluator links the shared runtime too, so both share one runtime instance.
 * From nvcc's resource usage report, a CUDA build records registers, spills, static shared
 * memory and stack per kernel: the maxima over kernels in `struct kb__build`, one line per
 * kernel at the top of its log.
 *
 * A build runs in a private temporary folder of the cache (cwd and TMPDIR there, so messages
 * name "candidate.c:LINE:COL" or "candidate.cu(LINE)") with a timeout, as a process started
 * with posix_spawn (spawn_tool.h: safe from the compile pool's threads) in a scrubbed environment
 * (PATH, LD_LIBRARY_PATH, HOME and LC_ALL=C only: nothing a source could #include from
 * /proc/self/environ, no NVCC_APPEND_FLAGS changing builds behind the cache key). The library
 * is renamed into place as <cache>/<key>.so, where the key is the SHA-256 of the language, the
 * source, knobs, flags, the compiler command and its `--version` output, the architecture
 * (CUDA) and the ABI header. rename() is atomic, so any number of runners can share one cache
 * folder, even on a network filesystem: the worst a race costs is one duplicate build. Next to
 * it: <key>.log (the trimmed log), <key>.meta (CUDA resource usage), both in place before the
 * library; a failed build's log as <key>.err, so a candidate that does not compile is not
 * compiled again either (a build that timed out is not cached: the next try may be on a quieter
 * machine).
 *
 * Then, unless the build is trusted (task oracles), the library's imports are checked against
 * the allow-list (allowlist.h), on cache hits too (the list may have changed since): a library
 * that imports something else is not ok and `rejected`, with a reason naming the symbol.
 *
 * Knobs must be -D/-U options. Flags must be on a per-language allow-list (optimisation, math
 * and warning options; see docs/candidate-abi.md): no option may choose the output, the
 * architecture, the runtime, include folders, libraries, the host compiler or programs the
 * compiler runs, since the flags come from the same untrusted generator as the source.
 */
#ifndef KB_RUNNER_COMPILE_H
#define KB_RUNNER_COMPILE_H

#include <stdatomic.h>

#include "allowlist.h"
#include "kb/candidate.h"

struct kb_buf;
struct kb_error;

/* Bytes of compiler output kept in a log: the tail, where the last errors are. */
#define KB__COMPILE_LOG_MAX 4096
/* Room for an architecture name, "sm_90a". */
#define KB__ARCH_MAX 16
/* The architecture a CUDA compiler builds for when neither it nor the build names one. */
#define KB__ARCH_DEFAULT "sm_90"

struct kb__compiler {
  enum kb__lang lang;  /* what it builds */
  char *cache_dir;     /* absolute folder of the cache (owned) */
  char **argv;         /* compiler command split on blanks, argv[0] an absolute path,
                          NULL-terminated (owned) */
  char **envp;         /* the environment compilers run in, NULL-terminated (owned) */
  char *version;       /* the compiler's `--version` output (owned) */
  char *include_dir;   /* folder holding kb_kernel.h (owned) */
  char abi_hash[KB_CAND_ID_LEN + 1]; /* SHA-256 of kb_kernel.h */
  char arch[KB__ARCH_MAX]; /* CUDA: default architecture, "sm_90"; "" for C */
  double timeout_s;    /* one build at most, seconds (60 for C, 180 for CUDA by default) */
};

/* Sets up a host C compiler `cc` (caller-owned): creates `cache_dir` (borrowed) and its parents
 * when missing, splits `command` (borrowed; "cc" when NULL) on blanks, finds its program on
 * $PATH, runs it with --version, and reads kb_kernel.h from `include_dir` (borrowed).
 * Errors: KB_EIO (cache folder, header), KB_ECOMPILE (the compiler is not found or does not
 * run), KB_EINVAL (empty command), KB_ECHILD, KB_ENOMEM. Released on failure. */
int kb__compiler_init(struct kb__compiler *cc, const char *cache_dir, const char *command,
                      const char *include_dir, struct kb_error *err);

/* Sets up a CUDA compiler: as kb__compiler_init(), with `command` (borrowed) the nvcc command;
 * NULL looks for nvcc on $PATH, then in $CUDA_HOME/bin, $CUDA_PATH/bin and /usr/local/cuda/bin.
 * `arch` (borrowed; NULL for KB__ARCH_DEFAULT) is the default architecture, "sm_<digits>"
 * with an optional letter suffix ("sm_90a"). Needs no GPU. Errors: those of
 * kb__compiler_init(), and KB_EINVAL for a malformed `arch`. */
int kb__compiler_init_cuda(struct kb__compiler *cc, const char *cache_dir, const char *command,
                           const char *include_dir, const char *arch, struct kb_error *err);

/* Frees the contents of `cc`; NULL is fine. */
void kb__compiler_release(struct kb__compiler *cc);

/* Writes the architecture of a device of compute capability `major`.`minor` into `out`
 * (`size` bytes): "sm_90" for 9.0. Returns KB_OK, or KB_EINVAL for a capability out of range
 * or an `out` too small. */
int kb__cuda_arch(int major, int minor, char *out, size_t size);

/* 1 when `arch` (borrowed) is an architecture name kb__compile accepts: "sm_" followed by
 * digits and at most one lowercase letter ("sm_90", "sm_90a", "sm_100f"). */
int kb__cuda_arch_valid(const char *arch);

struct kb__build {
  int ok;                 /* 1: lib_path holds the library, allowed to run */
  int rejected;           /* 1: it built, but its imports are not on the allow-list (the reason
                             names the first such symbol); ok is 0 */
  int undefined;          /* 1 (with rejected): only for symbols no library it links defines,
                             a helper declared and never written: a build defect, which a
                             caller may report as compile_error rather than as a cheat */
  int infra;              /* 1: no verdict, the build failed for want of a resource (a ModelNew
                             build's warm-up out of device memory): infra_error, not cached */
  int cached;             /* 1: taken from the cache, no compiler ran */
  double seconds;         /* compiler wall time; 0 when cached */
  char key[KB_CAND_ID_LEN + 1]; /* cache key (hex) */
  char *lib_path;         /* absolute path of the library when ok (owned); kernelbench: of
                             the build's cache folder (<cache>/<key>.kb) */
  char *log;              /* trimmed compiler output, NULL when it printed nothing (owned);
                             CUDA: one line per kernel's resource usage first */
  char reason[256];       /* why it does not build or is rejected, "" when ok */
  /* CUDA resource usage from the compiler, -1 when unknown (host builds, failed builds) */
  int kernels;            /* kernels (entry functions) in the library */
  int registers;          /* registers per thread, the most of any kernel */
  int spill_store_bytes;  /* bytes of spill stores, the most of any function */
  int spill_load_bytes;   /* bytes of spill loads, the most of any function */
  int shared_bytes;       /* static shared memory per block, the most of any kernel */
  int stack_bytes;        /* stack frame per thread, the most of any function */
  int format;             /* enum kb_cand_format of the build: native (lib_path a library) or
                             kernelbench (lib_path the cache folder of a ModelNew build) */
  char label[16];         /* kernelbench: "kernel", "torch_compile" or "torch_only" (the static
                             rules of docs/sandbox.md); "" for native builds */
};

/* Empties `b` (caller-owned) for kb__compile; kb__build_release() frees its contents. */
void kb__build_init(struct kb__build *b);
void kb__build_release(struct kb__build *b);

/* One build to do. Every string is borrowed. */
struct kb__compile_req {
  const char *source; /* the candidate's source */
  const char *knobs;  /* "-DNAME=value ..."; NULL or "" for none */
  const char *flags;  /* extra compiler options; NULL or "" for none */
  const char *arch;   /* CUDA: architecture, "sm_90"; NULL for the compiler's; unused for C */
  double timeout_s;   /* seconds this build may take; <= 0 for the compiler's timeout_s */
  int trusted;        /* 1: skip the import allow-list (task oracles, never candidates) */
  int format;         /* enum kb_cand_format: KB_FORMAT_KERNELBENCH builds a ModelNew file
                         (compile_kb.c); 0 (native) the C or CUDA library */
  const char *oracle; /* kernelbench: the task's oracle .py (get_init_inputs); NULL for a task
                         without a pytorch oracle (the build is then refused: b->ok = 0);
                         reference: the task's module (.py: Model, get_inputs) */
  int reference;      /* 1: no candidate: torch.compile of the task's module `oracle` compiled
                         ahead into the reference caches (kb__compile_reference); trusted */
};

/* Builds `req` with `cc` or finds it in the cache, filling `b` (initialised; its old contents
 * are released first). Outcomes that are verdicts on the candidate give KB_OK: a source that
 * does not build, a knob or flag that is not allowed, a build that times out (b->ok = 0 and a
 * reason starting "does not compile: "), an import outside the allow-list (b->rejected = 1).
 * Errors, for a runner that cannot build anything: KB_EINVAL (a malformed `req->arch`), KB_EIO
 * (cache folder), KB_ECHILD (the compiler cannot be started), KB_ENOMEM, KB_EINTERNAL
 * (hashing). Thread-safe: any number of threads may build with one `cc` at once. */
int kb__compile_req(const struct kb__compiler *cc, const struct kb__compile_req *req,
                    struct kb__build *b, struct kb_error *err);

/* kb__compile_req() that stops when `*cancel` (may be NULL) becomes non-zero: the compiler is
 * killed, nothing is cached, and it returns KB_EINTERRUPTED. For the compile pool. */
int kb__compile_cancellable(const struct kb__compiler *cc, const struct kb__compile_req *req,
                            const atomic_int *cancel, struct kb__build *b,
                            struct kb_error *err);

/* The build of a KernelBench-format candidate (req->format == KB_FORMAT_KERNELBENCH; the
 * dispatch of kb__compile_cancellable), in compile_kb.c: kb_build_modelnew.py runs the file in
 * a scrubbed, time-limited Python process (posix_spawn, as the compiler) that builds its
 * load_inline/load extensions and JIT caches into a build folder, checks the static rules and
 * instantiates ModelNew; the folder is renamed into place as <cache>/<key>.kb, the key the
 * SHA-256 of "kernelbench", the source, the oracle's text, the backend, the architecture, the
 * compiler's --version, the interpreter and the builder script. b->lib_path is that folder
 * (the PyTorch worker loads from it, read-only), b->label the static label. A failure is
 * cached as <key>.kb.err (first line the reason). Verdicts and errors as kb__compile_req. */
int kb__compile_kernelbench(const struct kb__compiler *cc, const struct kb__compile_req *req,
                            const atomic_int *cancel, struct kb__build *b,
                            struct kb_error *err);

/* torch.compile of a task's own module compiled ahead (req->reference; the dispatch of
 * kb__compile_cancellable), in compile_kb.c: kb_build_modelnew.py --reference runs the module
 * twice on the device as the trusted PyTorch worker times it, in a time-limited process
 * (posix_spawn), with Triton's and inductor's caches in kb__reference_jit_dir(), where the
 * trusted worker's point (sandbox_client.h, jit_dir): its torch.compile timing then finds the
 * compilation done on the compile pool's CPUs while the device ran other evaluations
 * (docs/sandbox.md, "torch.compile compiled ahead"). Done once per key (the SHA-256 of
 * "reference", the module's text, the backend, the architecture, the interpreter and the
 * builder script): <cache>/<key>.ref records it. b->ok = 1 and b->label "reference" when the
 * builder ran (b->reason says why nothing was compiled, when so: no torch.compile, no device,
 * inputs too large for a shared turn); b->ok = 0 with the reason when it failed or timed out.
 * Nothing here is a verdict on a candidate. Errors as kb__compile_req. */
int kb__compile_reference(const struct kb__compiler *cc, const struct kb__compile_req *req,
                          const atomic_int *cancel, struct kb__build *b, struct kb_error *err);

/* The reference caches' folder, `<cache>/reference.jit`, into `out` (`size` bytes). Returns
 * KB_OK, or KB_EINVAL when the compiler has no cache folder or the path does not fit. */
int kb__reference_jit_dir(const struct kb__compiler *cc, char *out, size_t size);

/* Whether the build cache `cache_dir` (borrowed) can take a build, asked after a build failed
 * (with its own folder removed first, so what a candidate's build wrote does not count):
 * KB_EWRITE "<cache_dir>: cannot build: <strerror> (errno N)" when its file system is
 * read-only, has under 32 MiB or no inode free, or a 64 KiB file cannot be written there (a
 * quota, a failing device). Such a failure is the machine's: it is neither the candidate's
 * verdict nor remembered in the cache, and the runner leaves (exit 9) with its items released.
 * KB_OK otherwise; KB_ENOMEM. */
int kb__cache_check(const char *cache_dir, struct kb_error *err);

/* kb__compile_req() of an untrusted candidate for the compiler's default architecture. */
int kb__compile(const struct kb__compiler *cc, const char *source, const char *knobs,
                const char *flags, struct kb__build *b, struct kb_error *err);

/* Reads nvcc's resource usage report (`-Xptxas -v` or `--resource-usage` output; borrowed)
 * into the usage fields of `b` (kernels, registers, spills, shared, stack) and, when `summary`
 * is not NULL, appends one line per function to it: "kernel NAME: 40 registers, 1024 bytes
 * shared, 0 bytes stack, 0 bytes spill stores, 0 bytes spill loads". Lines it does not know
 * are skipped, so later nvcc versions degrade to unknown (-1) fields rather than errors.
 * Returns KB_OK or KB_ENOMEM. */
int kb__ptxas_parse(const char *text, struct kb__build *b, struct kb_buf *summary);

#endif
