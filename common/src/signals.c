/* Signal-to-flag handlers (see kb/signals.h). */
#include "kb/signals.h"

#include <sys/prctl.h>

#include <string.h>

static volatile sig_atomic_t *target;

static void on_signal(int sig) {
  if (target)
    *target = sig;
}

void kb_signals_catch(volatile sig_atomic_t *flag, const int *sigs, int n) {
  target = flag;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < n; i++)
    sigaction(sigs[i], &sa, NULL);
}

int kb_harden_process(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
