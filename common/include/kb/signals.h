/* Turning termination signals into a flag that long-running loops poll: main() installs it,
 * the library's loops check `*flag` and leave cleanly (release leases, flush files). */
#ifndef KB_SIGNALS_H
#define KB_SIGNALS_H

#include <signal.h>

/* From now on, any of the `n` signals in `sigs` sets `*flag` (borrowed; must live as long as the
 * process) to that signal's number. Installed without SA_RESTART, so a blocking call returns
 * early with EINTR. One flag per process: a second call replaces the first. */
void kb_signals_catch(volatile sig_atomic_t *flag, const int *sigs, int n);

/* Marks the process non-dumpable (prctl PR_SET_DUMPABLE 0): no core file, and a process of the
 * same user (a candidate's sandbox among them) can neither ptrace it nor read its
 * /proc/<pid>/environ, mem or maps. Call first thing in main(). Where the process runs as root,
 * this protects nothing against a root child: the sandbox's Landlock rules keep it out of other
 * processes' /proc entries (docs/sandbox.md, "Confinement"). Returns 0, or -1 (errno). */
int kb_harden_process(void);

#endif
