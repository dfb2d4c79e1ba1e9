/* Turning termination signals into a flag that long-running loops poll: main() installs it,
 * the library's loops check `*flag` and leave cleanly (release leases, flush files). */
#ifndef KB_SIGNALS_H
#define KB_SIGNALS_H

#include <signal.h>

/* From now on, any of the `n` signals in `sigs` sets `*flag` (borrowed; must live as long as the
 * process) to that signal's number. Installed without SA_RESTART, so a blocking call returns
 * early with EINTR. One flag per process: a second call replaces the first. */
void kb_signals_catch(volatile sig_atomic_t *flag, const int *sigs, int n);

#endif
