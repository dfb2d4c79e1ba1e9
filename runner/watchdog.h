/* A watchdog's deadline that leaves out the time the job was stopped.
 *
 * Slurm suspends a job (scontrol suspend, gang scheduling's time slices, preemption in SUSPEND
 * mode) by stopping every process of it (SIGSTOP ... SIGCONT), or by freezing its cgroup; a
 * user's Ctrl-Z does the same. CLOCK_MONOTONIC goes on meanwhile, so a deadline on it alone
 * expires while nothing ran, and an honest candidate under evaluation when the job was suspended
 * was recorded as `timeout` at its resume (tests/e2e/suspend.sh). The runner waits in short
 * slices; a slice that took more than KB_WATCH_STOP_GAP_S beyond what it asked, while the
 * process watched used almost no CPU (under a quarter of that gap: it was stopped too), is a
 * stop, and moves the deadline out by it. A child that keeps running while the runner alone is
 * stopped, or that starves the runner of CPU, used that time and gets no more: its CPU shows it.
 * At most KB_WATCH_MAX_STOPPED_S in all are left out (past that the item's lease has long
 * expired and the result would be refused anyway).
 */
#ifndef KB_RUNNER_WATCHDOG_H
#define KB_RUNNER_WATCHDOG_H

#include <sys/types.h>

/* a slice this much longer than asked (seconds) is a stop, not a late wake-up */
#define KB_WATCH_STOP_GAP_S 1.0
/* seconds of stops left out of one watchdog, at most */
#define KB_WATCH_MAX_STOPPED_S 3600.0

struct kb__watchdog {
  double deadline;          /* kb_now_mono() at which it fires, moved out by each stop */
  double slice_start;       /* kb_now_mono() when the current slice began */
  double slice_s;           /* seconds the current slice asked to wait */
  pid_t child;              /* the process watched (its CPU tells a stop), 0: none */
  double child_cpu_s;       /* its CPU seconds at the slice's start, < 0: unknown */
  double stopped_s;         /* seconds left out so far */
};

/* Sets up `w` (caller-owned) to fire `timeout_s` seconds from now, watching `child` (0: no
 * child; then every long slice counts as a stop). */
void kb__watchdog_init(struct kb__watchdog *w, double timeout_s, pid_t child);

/* Begins a wait: returns how many milliseconds to wait, at most `max_ms` and not past the
 * deadline (0 once it passed). */
int kb__watchdog_slice(struct kb__watchdog *w, int max_ms);

/* Ends the wait begun by kb__watchdog_slice(): a stop found is left out (logged once per stop).
 * Returns 1 once the deadline has passed, else 0. */
int kb__watchdog_expired(struct kb__watchdog *w);

/* The CPU seconds process `pid` and its reaped children have used (/proc/PID/stat: utime,
 * stime, cutime, cstime), or -1 when it cannot be read (gone, no /proc). */
double kb__watchdog_cpu_s(pid_t pid);

#endif
