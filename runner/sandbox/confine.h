/* Confinement of a sandbox process: a seccomp filter, Landlock rules and rlimits (docs/sandbox.md,
 * "Confinement").
 *
 * kb__confine_apply() runs once, after the device is open (CUDA context made, CUPTI and the Range
 * Profiler's host side set up) and before any candidate library is loaded. From then on:
 * - seccomp: every system call outside the profile's allow-list traps into a SIGSYS handler that
 *   writes `kb-sandbox: blocked system call <name> (<nr>)` to fd 2 and dies by SIGSYS (the runner
 *   turns that into `rejected`, "called <name>(2), which candidates may not use");
 * - Landlock (when the kernel has it): the system library folders, the toolkit and the `ro`
 *   paths are readable (and executable), the working folder `rw_dir` and the device nodes
 *   read-write, nothing else;
 * - rlimits: file size and open descriptors (the hard limits too, and the filter denies raising
 *   them again).
 * Profile KB__CONFINE_C (kb-sandbox, kb-sandbox-cuda): no thread, no process, and no file opened
 * outside a library-load window (kb__confine_load_begin/end around the engine's dlopen), where
 * only read-only opens pass; an open outside it is blocked like any other call (openat). Profile
 * KB__CONFINE_PYTHON (the PyTorch worker through libkb-confine.so): threads allowed, files may be
 * opened (Landlock bounds them). Not thread-safe: call it from the process's only thread (C) or
 * from the thread that will run the candidate (Python: Landlock binds the calling thread and the
 * threads it starts later; the seccomp filter is synchronised to all threads).
 *
 * Census mode (KB_CONFINE_CENSUS=1 in the environment at kb__confine_apply): nothing is blocked;
 * each system call outside the allow-list is written once to fd 2 as
 * `kb-confine census: <name> (<nr>)` (opens with their path and whether a load window was open)
 * and then made, so a run under it lists what the allow-list lacks (docs/sandbox.md). */
#ifndef KB_SANDBOX_CONFINE_H
#define KB_SANDBOX_CONFINE_H

#include <stddef.h>
#include <stdint.h>

enum kb__confine_profile {
  KB__CONFINE_C_HOST = 0, /* kb-sandbox: no ioctl either */
  KB__CONFINE_C_CUDA,     /* kb-sandbox-cuda: ioctl for the driver */
  KB__CONFINE_PYTHON      /* the PyTorch worker */
};

#define KB__CONFINE_RO_MAX 256

/* What a node can reach (kb__confine_probe) or what a process reached (kb__confine_apply). */
struct kb__confine_level {
  int seccomp;        /* 1: a seccomp filter is (or can be) in force */
  int landlock_abi;   /* the Landlock ABI in force (or available); 0: none */
  char level[24];     /* "none", "seccomp" or "seccomp+landlock" */
  char note[192];     /* e.g. "landlock unavailable: kernel too old"; "" when nothing to say */
};

struct kb__confine_opts {
  int profile;                          /* enum kb__confine_profile */
  const char *rw_dir;                   /* the working folder (borrowed); NULL: none */
  const char *ro[KB__CONFINE_RO_MAX];   /* readable files and folders (borrowed) */
  int n_ro;
  int proto[2];                         /* profiles C: the protocol's descriptors, which only
                                           kb__confine_send may write, close or duplicate */
  int n_proto;                          /* 0: none guarded */
};

/* What this node reaches, without changing anything: seccomp filters available (with
 * SECCOMP_RET_TRAP), the Landlock ABI. Fills `out`. */
void kb__confine_probe(struct kb__confine_level *out);

/* Confines the calling process (see above); fills `out` with the level reached. Returns 0 when
 * the level the node allows was reached (a node without Landlock gives "seccomp" and a note; one
 * without seccomp "none" and a note), -1 with the reason in `why` when a step the kernel
 * offers failed (the process may then be partly confined: end it). A second call returns 0 and
 * changes nothing. */
int kb__confine_apply(const struct kb__confine_opts *o, struct kb__confine_level *out,
                      char *why, size_t size);

/* The level reached by kb__confine_apply, or "none" (static). */
const char *kb__confine_level_name(void);
/* What kb__confine_apply reached (level "none" before it ran), into `out`. */
void kb__confine_current(struct kb__confine_level *out);

/* Ends the process with `code` after flushing stdio: with _exit() once confined, so that no
 * exit handler runs under the filter (LeakSanitizer's leak check at exit stops the world with
 * clone and ptrace, which the C profiles block; docs/sandbox.md), with exit() otherwise. In
 * census mode it first writes the thread count. */
_Noreturn void kb__confine_exit(int code);

/* send(fd, p, n, MSG_NOSIGNAL) made through the filter's gate: the one way to write to a
 * descriptor of kb__confine_opts.proto once confined; write(2) from the gate when `fd` is no
 * socket (a pipe: SIGPIPE is then not held off). A count, or -1 with errno. */
long kb__confine_send(int fd, const void *p, size_t n);

/* The library-load window of profile C: between these two calls read-only opens are made (the
 * dynamic loader's), outside it an open is a blocked call. Cheap; nesting is not counted. */
void kb__confine_load_begin(void);
void kb__confine_load_end(void);

/* The exported interface of libkb-confine.so (CONTRACTS.md), for the PyTorch worker (ctypes).
 * kb_confine_python: `ro_paths` is ':'-separated; profile KB__CONFINE_PYTHON. Returns 0, or -1
 * with the reason in `why`. Idempotent. */
int kb_confine_python(const char *rw_dir, const char *ro_paths, char *why, size_t size);
/* kb_confine_no_unix_sockets: for the compile tier (kb_build_modelnew.py), which must start
 * compilers, so none of the profiles above fits. A seccomp filter on the calling process, every
 * thread of it (TSYNC) and everything it starts afterwards, that allows every system call except:
 * socket(AF_UNIX, ...) and socketpair(..., SOCK_DGRAM, ...) fail with EACCES (an errno, so a
 * library's probe of nscd or syslog falls back), io_uring_setup/_enter/_register with ENOSYS;
 * a call of another ABI (i386, x32) ends the process. Sets no_new_privs. Returns 0, or -1 with
 * the reason in `why` (the filter is then not in force). Stacks: a second call adds a second,
 * equal filter. docs/sandbox.md, "The compile tier". */
int kb_confine_no_unix_sockets(char *why, size_t size);
/* kb_confine_level: the level reached, or "none" (static: lives as long as the process). */
const char *kb_confine_level(void);
/* kb_confine_landlock_abi: the Landlock ABI reached once confined; before that the ABI this
 * node offers (0: none). */
int kb_confine_landlock_abi(void);
/* kb_confine_code_sum: a checksum of the code of the loaded objects named in `names`
 * (':'-separated substrings of their paths, "[main]" the program) into *sum; returns how many
 * objects it summed. */
int kb_confine_code_sum(const char *names, uint64_t *sum);

#endif
