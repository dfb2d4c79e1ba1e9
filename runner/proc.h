/* Child processes with a watchdog: the sandbox the host backend runs the compiler and every
 * candidate in.
 *
 * kb__proc_run() forks; the child gets its own process group (so a timeout kills everything it
 * started), dies with its parent (PR_SET_PDEATHSIG), writes no core files, reads /dev/null, has
 * its stdout and stderr on one pipe whose tail the parent keeps, and a second pipe on fd 3 for a
 * report; every other descriptor is closed. The parent drains both pipes while it waits, kills
 * the whole group with SIGKILL once the timeout passes, and always reaps the child before
 * returning.
 */
#ifndef KB_RUNNER_PROC_H
#define KB_RUNNER_PROC_H

#include <signal.h>
#include <stddef.h>

#include "kb/buf.h"

struct kb_error;

/* The descriptor the child writes its report to. */
#define KB__PROC_REPORT_FD 3

/* Runs in the child with `arg` (borrowed). Must not return; end with _exit() or exec. */
typedef void (*kb__proc_fn)(void *arg);

struct kb__proc_result {
  int exited;          /* 1: the child called exit/_exit (exit_code valid) */
  int exit_code;       /* 0..255 */
  int signal;          /* the signal that ended it, 0 when it exited */
  int timed_out;       /* 1: killed by the watchdog */
  int interrupted;     /* 1: killed (or never started) because *stop was set */
  double wall_s;       /* seconds from fork to reaping, wall clock */
  struct kb_buf output; /* the last `keep_output` bytes of stdout and stderr (owned) */
  size_t output_dropped; /* bytes of output before those, not kept */
  struct kb_buf report; /* what the child wrote to fd 3, at most `max_report` bytes (owned) */
};

/* Sets up `res` (caller-owned) empty; kb__proc_result_release() frees its buffers. */
void kb__proc_result_init(struct kb__proc_result *res);
void kb__proc_result_release(struct kb__proc_result *res);

/* Forks and runs `fn(arg)` in the sandboxed child, waiting at most `timeout_s` seconds.
 * Fills `res` (initialised by the caller; its buffers are reset first). When `*stop` (`stop`
 * may be NULL) is set before or while the child runs, the child is not started or is killed,
 * and res->interrupted is 1. Returns KB_OK once the child was reaped, whatever happened to it;
 * KB_ECHILD when pipes or fork failed (nothing left running), KB_ENOMEM. */
int kb__proc_run(kb__proc_fn fn, void *arg, double timeout_s, size_t keep_output,
                 size_t max_report, volatile sig_atomic_t *stop, struct kb__proc_result *res,
                 struct kb_error *err);

/* Name of a signal for messages: "SIGSEGV"; "signal 42" style for others, written into `buf`
 * (`size` bytes) which is returned. */
const char *kb__signal_name(int sig, char *buf, size_t size);


#endif
