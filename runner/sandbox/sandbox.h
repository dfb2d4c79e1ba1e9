/* kb-sandbox's process set-up: what runs before the message loop (serve.h).
 *
 * The runner starts kb-sandbox with posix_spawn, its protocol socket as stdin and stdout and a
 * pipe as stderr, in its own process group, in a fresh working folder, with a scrubbed
 * environment. kb__sandbox_run() then: moves the protocol off descriptors 0 and 1 (stdin
 * becomes /dev/null, stdout a copy of stderr, so whatever a candidate prints lands in the
 * captured stderr and never in the protocol), closes every other inherited descriptor, ignores
 * the signals Slurm sends to every process of a job (SIGTERM, SIGINT, SIGHUP, SIGUSR1,
 * SIGUSR2: those are for the runner, which ends this process itself), restores the default
 * action of SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT and SIGTRAP (so a candidate's fault ends
 * the process with that signal, also in sanitizer builds), dies with its parent
 * (PR_SET_PDEATHSIG), writes no core files, is the OOM killer's first choice unless --trusted
 * (oom_score_adj 1000: a candidate that exhausts memory ends its own evaluation), opens the
 * device, sets up what CUDA, CUPTI and the
 * JSON library would set up lazily later (CUPTI's trace and Range Profiler, jansson's hash seed
 * from /dev/urandom), confines itself (confine.h: seccomp, Landlock over `dir`, `ro` and the
 * system folders, rlimits; not with --trusted) and serves. Before confining it opens its
 * witness file, witness.bin in `dir` (witness_calls.h). From then on no candidate library has been loaded yet
 * and none can undo the confinement.
 */
#ifndef KB_SANDBOX_SANDBOX_H
#define KB_SANDBOX_SANDBOX_H

#include <sys/types.h>

struct kb__sandbox_args {
  const char *backend; /* "host" or "cuda" */
  int device;          /* CUDA ordinal */
  const char *dir;     /* working folder, NULL: stay */
  pid_t parent;        /* expected parent; 0: do not check */
  const char *ro[16];  /* --ro: readable files and folders (the runner's build cache, ...) */
  int n_ro;
  int trusted;         /* --trusted: not confined, loads no candidate (eval is refused); runs
                          the task's oracle for the witness (witness_calls.h) */
};

/* Runs the sandbox; returns the process exit code (enum kb_exit where one fits): 0 after quit
 * or end of input, KB_EXIT_DEVICE (8) when the device cannot be opened, KB_EXIT_CONFINE (7)
 * when the process cannot be confined (the reason on stderr), 3 after a
 * fatal verdict, 1 otherwise. */
int kb__sandbox_run(const struct kb__sandbox_args *a);

#endif
