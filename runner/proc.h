/* What a child process left behind (spawn_tool.h runs the compilers with it), and signal
 * names for messages. Candidates run in the sandbox process instead (sandbox_client.h).
 */
#ifndef KB_RUNNER_PROC_H
#define KB_RUNNER_PROC_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "kb/buf.h"

struct kb_error;

struct kb__proc_result {
  int exited;          /* 1: the child called exit/_exit (exit_code valid) */
  int exit_code;       /* 0..255 */
  int signal;          /* the signal that ended it, 0 when it exited */
  int timed_out;       /* 1: killed by the watchdog */
  int interrupted;     /* 1: killed (or never started) because it was cancelled */
  double wall_s;       /* seconds from start to reaping, wall clock */
  struct kb_buf output; /* the last `keep_output` bytes of stdout and stderr (owned) */
  size_t output_dropped; /* bytes of output before those, not kept */
  struct kb_buf report; /* unused by tools; kept empty (owned) */
};

/* Sets up `res` (caller-owned) empty; kb__proc_result_release() frees its buffers. */
void kb__proc_result_init(struct kb__proc_result *res);
void kb__proc_result_release(struct kb__proc_result *res);

/* Name of a signal for messages: a static "SIGSEGV" for the common ones; for others "signal 42"
 * written into `buf` (`size` bytes, borrowed), which is then returned. */
const char *kb__signal_name(int sig, char *buf, size_t size);

/* The CPU time process `pid` has run, all its threads, nanoseconds (/proc/PID/task/N/schedstat:
 * the kernel's count, whatever the process does), into *ns. Returns 0, or -1 when it cannot be
 * read (the process is gone, no /proc). */
int kb__proc_cpu_ns(pid_t pid, unsigned long long *ns);

#endif
