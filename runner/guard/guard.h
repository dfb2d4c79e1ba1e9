/* kb-tool-guard: runs one tool (a compiler) for the runner and ends it, with everything it
 * started, when the runner dies.
 *
 * The runner starts tools with posix_spawn (spawn_tool.h: several threads compile at once, so
 * no code may run between fork and exec), which cannot ask for a parent-death signal. So the
 * runner spawns this small program instead, in the tool's new process group, and it:
 *   - leads a process group of its own (the runner spawns it so), and asks the kernel for SIGUSR1 when the thread that spawned it ends (prctl
 *     PR_SET_PDEATHSIG: that thread waits in kb__spawn_run until the tool is reaped, so it ends
 *     early only when the whole runner does), and on it kills its process group (the tool and
 *     all it started: nvcc's cicc, ptxas, gcc) and itself;
 *   - passes a SIGTERM (the runner's timeout or cancel) on to the tool, which may end what it
 *     adopted first;
 *   - exits as the tool did: its exit code, or the same signal.
 * Before 2026-12-07 a compiler whose runner was killed (kill -9, OOM killer) ran on, reparented
 * to init, with no timeout left to end it. Single-threaded: fork is safe here.
 */
#ifndef KB_RUNNER_GUARD_H
#define KB_RUNNER_GUARD_H

#include <sys/types.h>

/* Runs `argv` (argv[0] an absolute path; borrowed, NULL-terminated) as described above, on
 * behalf of `parent` (the runner's pid: when the guard's parent is already another process, the
 * runner died before the guard could ask for the signal, and the group is killed at once).
 * Does not return on success: exits (or dies) as the tool did. Returns -1 when the tool could
 * not be started, with errno set (the caller says so and exits 127). */
int kb__guard_run(pid_t parent, char *const argv[]);

#endif
