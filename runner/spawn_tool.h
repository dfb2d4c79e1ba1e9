/* Running a tool (the compiler) with a watchdog, from any thread.
 *
 * Running C code in a forked child is only safe in a process with one thread. The compile pool
 * runs compilers from several threads at once, so tools are started here with posix_spawn: nothing runs between fork and exec but the C library's own
 * async-signal-safe steps. The tool gets its own process group (a timeout or a cancel kills
 * everything it started: nvcc runs cicc, ptxas, gcc, ld), default signal dispositions and an
 * empty mask, /dev/null as stdin, stdout and stderr on one pipe whose tail is kept, and no
 * other descriptor. posix_spawn cannot ask for a parent-death signal, so the tool is started
 * through kb-tool-guard (runner/guard/guard.h), which leads its group, kills the group when the
 * runner dies and passes a SIGTERM on; where that program is missing, tools are spawned
 * directly (said once) and one whose runner was killed runs on.
 */
#ifndef KB_RUNNER_SPAWN_TOOL_H
#define KB_RUNNER_SPAWN_TOOL_H

#include <stdatomic.h>
#include <stddef.h>

#include "proc.h"

struct kb_error;

/* Runs the program at `argv[0]` (an absolute path; borrowed, NULL-terminated like every array
 * here) with environment `envp`, in the folder `dir` (NULL: the current one), for at most
 * `timeout_s` seconds, keeping the last `keep_output` bytes of its output. When `cancel` is
 * not NULL it is polled every 20 ms; once non-zero, the tool's group is killed. Fills `res`
 * (initialised by the caller; report stays empty). Returns KB_OK once the tool was reaped,
 * whatever happened to it; KB_EINTERRUPTED when cancelled (killed and reaped); KB_ECHILD when it
 * could not be started (the message says why: no such file, not executable, no pipe), with
 * nothing left running; KB_ENOMEM. Thread-safe. */
int kb__spawn_run(char *const argv[], char *const envp[], const char *dir, double timeout_s,
                  size_t keep_output, const atomic_int *cancel, struct kb__proc_result *res,
                  struct kb_error *err);

#endif
