/* Sandboxed child processes with a watchdog (see proc.h). */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb/clock.h"
#include "kb/error.h"

/* Poll period while the child runs, milliseconds: bounds how late the watchdog fires. */
#define POLL_MS 20
/* Descriptors at or above this are scratch space while the child rearranges its fds. */
#define SCRATCH_FD 10

const char *kb__signal_name(int sig, char *buf, size_t size) {
  static const struct {
    int sig;
    const char *name;
  } names[] = {
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
      {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},
      {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},   {SIGTRAP, "SIGTRAP"},
      {SIGPIPE, "SIGPIPE"}, {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}, {SIGALRM, "SIGALRM"},
      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].sig == sig)
      return names[i].name;
  if (size > 0 && snprintf(buf, size, "signal %d", sig) < 0)
    buf[0] = '\0';
  return buf;
}

void kb__proc_result_init(struct kb__proc_result *res) {
  memset(res, 0, sizeof *res);
  kb_buf_init(&res->output);
  kb_buf_init(&res->report);
}

void kb__proc_result_release(struct kb__proc_result *res) {
  if (res == NULL)
    return;
  kb_buf_release(&res->output);
  kb_buf_release(&res->report);
}

/* Closes every descriptor above KB__PROC_REPORT_FD. Uses /proc/self/fd so the cost follows the
 * open descriptors, not the limit; stays below the soft limit, above which valgrind keeps its
 * own descriptors. */
static void close_other_fds(void) {
  struct rlimit rl;
  long limit = 4096;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    limit = (long)rl.rlim_cur;
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL) {
    for (long fd = KB__PROC_REPORT_FD + 1; fd < limit && fd < 65536; fd++)
      close((int)fd);
    return;
  }
  int keep = dirfd(d);
  int fds[256];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < (int)(sizeof fds / sizeof fds[0])) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0')
      continue;
    if (fd > KB__PROC_REPORT_FD && fd != keep && fd < limit)
      fds[n++] = (int)fd;
  }
  closedir(d);
  for (int i = 0; i < n; i++)
    close(fds[i]);
}

/* Everything the child does before running its function. Failures end the child with 127:
 * the parent sees an early exit without a report. */
static void child_setup(pid_t parent, int out_w, int rep_w) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(127);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  static const int reset[] = {SIGSEGV, SIGBUS, SIGFPE,  SIGILL,  SIGABRT, SIGTERM, SIGINT,
                              SIGHUP,  SIGPIPE, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM, SIGQUIT};
  for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
    signal(reset[i], SIG_DFL);
  /* Slurm signals every process of a job (scancel, requeue, preemption, scancel --full): those
   * are for the runner, which ends this child itself with SIGKILL; a child they killed would
   * give the candidate a false "crash" */
  static const int ignore[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
  for (size_t i = 0; i < sizeof ignore / sizeof ignore[0]; i++)
    signal(ignore[i], SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);

  int out = fcntl(out_w, F_DUPFD, SCRATCH_FD);
  int rep = fcntl(rep_w, F_DUPFD, SCRATCH_FD);
  int devnull = open("/dev/null", O_RDONLY);
  if (out < 0 || rep < 0 || devnull < 0)
    _exit(127);
  if (dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 ||
      dup2(rep, KB__PROC_REPORT_FD) < 0)
    _exit(127);
  close_other_fds();
}

/* Reads what is available from `*fd` into `b`, keeping at most `cap` bytes (the newest when
 * `keep_tail`, the oldest otherwise; `*dropped` counts the rest). Closes `*fd` and sets it to -1
 * at end of file or on error. */
static void drain(int *fd, struct kb_buf *b, size_t cap, int keep_tail, size_t *dropped) {
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
    size_t len = (size_t)n;
    if (!keep_tail) {
      size_t room = b->len < cap ? cap - b->len : 0;
      size_t take = len < room ? len : room;
      if (take && kb_buf_add(b, chunk, take) != KB_OK)
        take = 0;
      *dropped += len - take;
      continue;
    }
    if (kb_buf_add(b, chunk, len) != KB_OK) {
      *dropped += len;
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

static void trim_tail(struct kb_buf *b, size_t cap, size_t *dropped) {
  if (b->len <= cap)
    return;
  size_t cut = b->len - cap;
  memmove(b->data, b->data + cut, cap);
  b->len = cap;
  b->data[cap] = '\0';
  *dropped += cut;
}

static void set_flags(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static void close_pair(int p[2]) {
  for (int i = 0; i < 2; i++)
    if (p[i] >= 0) {
      close(p[i]);
      p[i] = -1;
    }
}

static pid_t reap(pid_t pid, int *status) {
  pid_t r;
  do
    r = waitpid(pid, status, 0);
  while (r < 0 && errno == EINTR);
  return r;
}

int kb__proc_run(kb__proc_fn fn, void *arg, double timeout_s, size_t keep_output,
                 size_t max_report, volatile sig_atomic_t *stop, struct kb__proc_result *res,
                 struct kb_error *err) {
  int out_pipe[2] = {-1, -1};
  int rep_pipe[2] = {-1, -1};
  kb_buf_reset(&res->output);
  kb_buf_reset(&res->report);
  res->exited = 0;
  res->exit_code = 0;
  res->signal = 0;
  res->timed_out = 0;
  res->interrupted = 0;
  res->wall_s = 0;
  res->output_dropped = 0;
  if (stop != NULL && *stop) {
    res->interrupted = 1;
    return KB_OK;
  }
  if (pipe(out_pipe) != 0 || pipe(rep_pipe) != 0) {
    int e = errno;
    close_pair(out_pipe);
    close_pair(rep_pipe);
    return kb_error_set(err, KB_ECHILD, "cannot create a pipe: %s", strerror(e));
  }
  set_flags(out_pipe[0]);
  set_flags(rep_pipe[0]);
  pid_t parent = getpid();
  double t0 = kb_now_mono();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close_pair(out_pipe);
    close_pair(rep_pipe);
    return kb_error_set(err, KB_ECHILD, "cannot fork: %s", strerror(e));
  }
  if (pid == 0) {
    child_setup(parent, out_pipe[1], rep_pipe[1]);
    fn(arg);
    _exit(127);
  }
  /* both sides set the group, so a kill(-pid) right after fork cannot miss it */
  setpgid(pid, pid);
  close(out_pipe[1]);
  close(rep_pipe[1]);
  int out_fd = out_pipe[0];
  int rep_fd = rep_pipe[0];
  size_t out_dropped = 0, rep_dropped = 0;
  double deadline = t0 + timeout_s;
  int status = 0;
  for (;;) {
    struct pollfd pfd[2];
    nfds_t n = 0;
    if (out_fd >= 0)
      pfd[n++] = (struct pollfd){.fd = out_fd, .events = POLLIN};
    if (rep_fd >= 0)
      pfd[n++] = (struct pollfd){.fd = rep_fd, .events = POLLIN};
    /* once both pipes are closed only the exit is left to notice: look often */
    int wait_ms = n ? POLL_MS : 1;
    double left_ms = (deadline - kb_now_mono()) * 1000.0;
    if (left_ms < wait_ms)
      wait_ms = left_ms > 0 ? (int)left_ms + 1 : 0;
    poll(pfd, n, wait_ms);
    drain(&out_fd, &res->output, keep_output, 1, &out_dropped);
    drain(&rep_fd, &res->report, max_report, 0, &rep_dropped);
    /* WNOWAIT leaves the zombie in place: while it exists its pid cannot be reused, so the
     * kill of its group below cannot hit a stranger */
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int w = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if (w == 0 && info.si_pid == pid)
      break;
    if (w < 0 && errno != EINTR)
      break; /* cannot happen for our own child; the kill and reap below still run */
    if (kb_now_mono() >= deadline) {
      res->timed_out = 1;
      break;
    }
    if (stop != NULL && *stop) {
      res->interrupted = 1;
      break;
    }
  }
  /* the child's group goes, including anything it left behind, then the child is reaped */
  kill(-pid, SIGKILL);
  if (res->timed_out || res->interrupted)
    kill(pid, SIGKILL);
  reap(pid, &status);
  res->wall_s = kb_now_mono() - t0;
  drain(&out_fd, &res->output, keep_output, 1, &out_dropped);
  drain(&rep_fd, &res->report, max_report, 0, &rep_dropped);
  if (out_fd >= 0)
    close(out_fd);
  if (rep_fd >= 0)
    close(rep_fd);
  trim_tail(&res->output, keep_output, &out_dropped);
  res->output_dropped = out_dropped;
  if (WIFEXITED(status)) {
    res->exited = 1;
    res->exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res->signal = WTERMSIG(status);
  }
  return KB_OK;
}
