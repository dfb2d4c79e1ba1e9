/* Tools run through posix_spawn with a watchdog (see spawn_tool.h). */
#define _GNU_SOURCE /* pipe2, posix_spawn_file_actions_addchdir_np and _addclosefrom_np */
#include "spawn_tool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/log.h"
#include "sandbox_client.h"
#include "watchdog.h"

/* Poll period while the tool runs, milliseconds: bounds how late a timeout or cancel acts. */
#define POLL_MS 20
#define TERM_GRACE_S 2.0 /* seconds a tool out of time gets between SIGTERM and SIGKILL */

/* Reads what is available from `*fd` into `b`, keeping about the last `cap` bytes (`*dropped`
 * counts the rest). Closes `*fd` and sets it to -1 at end of file or on error. */
static void drain_tail(int *fd, struct kb_buf *b, size_t cap, size_t *dropped) {
  char chunk[4096];
  while (*fd >= 0) {
    ssize_t n = read(*fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n <= 0) {
      close(*fd);
      *fd = -1;
      return;
    }
    if (kb_buf_add(b, chunk, (size_t)n) != KB_OK) {
      *dropped += (size_t)n;
      continue;
    }
    if (b->len > 2 * cap + sizeof chunk) {
      size_t cut = b->len - cap;
      memmove(b->data, b->data + cut, cap);
      b->len = cap;
      b->data[cap] = '\0';
      *dropped += cut;
    }
  }
}

/* kb-tool-guard's path once found (NULL when it is not there: tools are then spawned as they
 * are, and a killed runner leaves them running; said once). */
static char *guard_path;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static void find_guard(void) {
  char *p = kb__tool_guard_program();
  if (p != NULL && access(p, X_OK) == 0) {
    guard_path = p;
    return;
  }
  kb_warn("%s not found: compilers run without it, and outlive a runner that is killed",
          p ? p : "kb-tool-guard");
  kb_free(p);
}

/* `argv` to spawn through kb-tool-guard: a new array (kb_free; its strings borrowed but for
 * `pid`, the caller's buffer), or NULL (out of memory). */
static char **guarded_argv(char *const argv[], char *pid) {
  size_t n = 0;
  while (argv[n] != NULL)
    n++;
  char **g = kb_calloc(n + 4, sizeof *g);
  if (g == NULL)
    return NULL;
  g[0] = guard_path;
  g[1] = "--parent";
  g[2] = pid;
  for (size_t i = 0; i <= n; i++)
    g[3 + i] = argv[i];
  return g;
}

/* Kept whole (135 lines): the pipe, the spawn, the watchdog loop and the reaping share the
 * child's descriptors and process group; the order of their steps is the contract. */
int kb__spawn_run(char *const argv[], char *const envp[], const char *dir, double timeout_s,
                  size_t keep_output, const atomic_int *cancel, struct kb__proc_result *res,
                  struct kb_error *err) {
  int out_pipe[2] = {-1, -1};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  int have_fa = 0, have_attr = 0;
  int rc = KB_OK;
  kb_buf_reset(&res->output);
  kb_buf_reset(&res->report);
  res->exited = 0;
  res->exit_code = 0;
  res->signal = 0;
  res->timed_out = 0;
  res->wall_s = 0;
  res->output_dropped = 0;

  /* O_CLOEXEC: a tool another thread spawns meanwhile must not inherit our write end, or the
   * pipe would not reach end of file when ours exits */
  if (pipe2(out_pipe, O_CLOEXEC) != 0)
    return kb_error_set(err, KB_ECHILD, "cannot create a pipe: %s", strerror(errno));
  int e = posix_spawn_file_actions_init(&fa);
  have_fa = e == 0;
  if (e == 0)
    e = posix_spawnattr_init(&attr);
  have_attr = have_fa && e == 0;
  if (e == 0)
    e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (e == 0)
    e = posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  if (e == 0)
    e = posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 2);
  if (e == 0 && dir != NULL)
    e = posix_spawn_file_actions_addchdir_np(&fa, dir);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  /* descriptors other libraries opened without O_CLOEXEC (sockets, files) stay behind */
  if (e == 0)
    e = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  if (e == 0)
    e = posix_spawnattr_setsigdefault(&attr, &all);
  if (e == 0)
    e = posix_spawnattr_setsigmask(&attr, &none);
  if (e == 0)
    e = posix_spawnattr_setpgroup(&attr, 0);
  if (e == 0)
    e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
                                            POSIX_SPAWN_SETPGROUP);
  if (e != 0) {
    rc = kb_error_set(err, e == ENOMEM ? KB_ENOMEM : KB_ECHILD, "cannot prepare \"%s\": %s",
                      argv[0], strerror(e));
    goto out;
  }

  /* through kb-tool-guard when it is there (it ends the tool's group if this process dies);
   * a tool that cannot run is said here, as posix_spawn would */
  pthread_once(&guard_once, find_guard);
  char pid_text[24];
  char **run = NULL;
  if (guard_path != NULL) {
    if (access(argv[0], X_OK) != 0) {
      rc = kb_error_set(err, KB_ECHILD, "cannot run \"%s\": %s", argv[0], strerror(errno));
      goto out;
    }
    snprintf(pid_text, sizeof pid_text, "%ld", (long)getpid());
    run = guarded_argv(argv, pid_text);
    if (run == NULL) {
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
      goto out;
    }
  }
  double t0 = kb_now_mono();
  pid_t pid;
  e = posix_spawn(&pid, run ? run[0] : argv[0], &fa, &attr, run ? run : argv, envp);
  kb_free(run);
  close(out_pipe[1]);
  out_pipe[1] = -1;
  if (e != 0) {
    rc = kb_error_set(err, KB_ECHILD, "cannot run \"%s\": %s", argv[0], strerror(e));
    goto out;
  }
  int fl = fcntl(out_pipe[0], F_GETFL);
  if (fl >= 0)
    fcntl(out_pipe[0], F_SETFL, fl | O_NONBLOCK);
  size_t dropped = 0;
  /* the time this job was suspended does not count (watchdog.h) */
  struct kb__watchdog wd;
  kb__watchdog_init(&wd, timeout_s, pid);
  int cancelled = 0;
  for (;;) {
    struct pollfd pfd = {.fd = out_pipe[0], .events = POLLIN};
    poll(&pfd, out_pipe[0] >= 0 ? 1 : 0, kb__watchdog_slice(&wd, out_pipe[0] >= 0 ? POLL_MS : 1));
    int expired = kb__watchdog_expired(&wd);
    drain_tail(&out_pipe[0], &res->output, keep_output, &dropped);
    /* WNOWAIT keeps the zombie, so its pid (and group id) cannot be reused before the kill
     * of its group below */
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int w = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if (w == 0 && info.si_pid == pid)
      break;
    if (w < 0 && errno != EINTR)
      break;
    if (cancel != NULL && atomic_load(cancel)) {
      cancelled = 1;
      break;
    }
    if (expired) {
      res->timed_out = 1;
      break;
    }
  }
  /* out of time or cancelled: SIGTERM first, and up to TERM_GRACE_S for the tool to end, so a
   * tool that adopted what it started (kb_build_modelnew.py: a process of a candidate's file
   * in a session of its own) can end it too; the group's kill below does not reach that one */
  if (res->timed_out || cancelled) {
    kill(pid, SIGTERM);
    double until = kb_now_mono() + TERM_GRACE_S;
    while (kb_now_mono() < until) {
      siginfo_t info;
      memset(&info, 0, sizeof info);
      int w = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
      if ((w == 0 && info.si_pid == pid) || (w < 0 && errno != EINTR))
        break;
      drain_tail(&out_pipe[0], &res->output, keep_output, &dropped);
      poll(NULL, 0, POLL_MS);
    }
  }
  /* the tool's group goes, with whatever it left running; then the tool is reaped */
  kill(-pid, SIGKILL);
  if (res->timed_out || cancelled)
    kill(pid, SIGKILL);
  int status = 0;
  pid_t r;
  do
    r = waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  res->wall_s = kb_now_mono() - t0;
  drain_tail(&out_pipe[0], &res->output, keep_output, &dropped);
  if (res->output.len > keep_output) {
    size_t cut = res->output.len - keep_output;
    memmove(res->output.data, res->output.data + cut, keep_output);
    res->output.len = keep_output;
    res->output.data[keep_output] = '\0';
    dropped += cut;
  }
  res->output_dropped = dropped;
  if (r == pid && WIFEXITED(status)) {
    res->exited = 1;
    res->exit_code = WEXITSTATUS(status);
  } else if (r == pid && WIFSIGNALED(status)) {
    res->signal = WTERMSIG(status);
  }
  if (cancelled)
    rc = kb_error_set(err, KB_EINTERRUPTED, "\"%s\" cancelled", argv[0]);
out:
  for (int i = 0; i < 2; i++)
    if (out_pipe[i] >= 0)
      close(out_pipe[i]);
  if (have_attr)
    posix_spawnattr_destroy(&attr);
  if (have_fa)
    posix_spawn_file_actions_destroy(&fa);
  return rc;
}
