/* kb-tool-guard's work (see guard.h). */
#define _GNU_SOURCE
#include "guard.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t tool_pid;

/* The runner died: the whole group goes (this process leads it: the runner spawned it with a
 * new group), this process included. */
static void on_runner_death(int sig) {
  (void)sig;
  kill(0, SIGKILL);
  _exit(128 + SIGKILL);
}

/* The runner's timeout or cancel: the tool gets the SIGTERM (the runner kills the group after
 * its grace time). */
static void on_term(int sig) {
  if (tool_pid > 0)
    kill((pid_t)tool_pid, sig);
  else
    _exit(128 + sig);
}

static int catch(int sig, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL);
}

int kb__guard_run(pid_t parent, char *const argv[]) {
  /* the group killed below is its own, whoever started it (the runner makes it one already) */
  if (getpgrp() != getpid() && setpgid(0, 0) != 0)
    return -1;
  if (catch(SIGUSR1, on_runner_death) != 0 || catch(SIGTERM, on_term) != 0 ||
      prctl(PR_SET_PDEATHSIG, SIGUSR1) != 0)
    return -1;
  if (getppid() != parent) /* it died before the request: nothing would tell us */
    on_runner_death(SIGUSR1);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    signal(SIGUSR1, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execv(argv[0], argv);
    dprintf(2, "kb-tool-guard: cannot run \"%s\": %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  tool_pid = pid;
  int status = 0;
  pid_t r;
  do
    r = waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  if (r == pid && WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  _exit(r == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}
