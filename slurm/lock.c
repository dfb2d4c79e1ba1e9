/* One launcher per campaign (see lock.h). */
#define _GNU_SOURCE /* pipe2 */
#include "lock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb/clock.h"
#include "kb/error.h"
#include "kb/fs.h"

extern char **environ;

int kb__launch_lock(const char *dir, int *fd, struct kb_error *err) {
  *fd = -1;
  char path[4200];
  if (snprintf(path, sizeof path, "%s/%s", dir, KB_LAUNCH_LOCK_FILE) >= (int)sizeof path)
    return kb_error_set(err, KB_EINVAL, "results path too long");
  int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (f < 0)
    return kb_error_set(err, KB_EIO, "cannot open \"%s\": %s", path, strerror(errno));
  int r;
  do
    r = flock(f, LOCK_EX | LOCK_NB);
  while (r != 0 && errno == EINTR);
  if (r != 0 && errno == EWOULDBLOCK) {
    char who[256] = "";
    ssize_t n = pread(f, who, sizeof who - 1, 0);
    who[n > 0 ? n : 0] = '\0';
    who[strcspn(who, "\n")] = '\0';
    close(f);
    return kb_error_set(err, KB_ELOCKED, "another kb-launch runs this campaign (%s; lock %s); "
                        "stop it first, or wait for it to end", who[0] ? who : "holder unknown",
                        path);
  }
  if (r != 0) {
    int e = errno;
    close(f);
    return kb_error_set(err, KB_EIO, "cannot lock \"%s\": %s", path, strerror(e));
  }
  char host[256] = "?", since[32] = "?", line[400];
  gethostname(host, sizeof host - 1);
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm))
    strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
  int len = snprintf(line, sizeof line, "pid=%ld host=%s since=%s\n", (long)getpid(), host,
                     since);
  if (ftruncate(f, 0) != 0 || kb_write_all(f, line, (size_t)len) != 0) {
    int e = errno;
    close(f);
    return kb_error_set(err, KB_EIO, "cannot write \"%s\": %s", path, strerror(e));
  }
  *fd = f;
  return KB_OK;
}

void kb__launch_unlock(int fd) {
  if (fd >= 0)
    close(fd);
}

int kb__launch_spawn(char *const argv[], const char *log_path, char *const envp[], int death_sig,
                     pid_t *pid, struct kb_error *err) {
  int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0)
    return kb_error_set(err, KB_EIO, "cannot open \"%s\": %s", log_path, strerror(errno));
  int report[2]; /* the child writes exec's errno here; closed on a successful exec */
  if (pipe2(report, O_CLOEXEC) != 0) {
    close(log);
    return kb_error_set(err, KB_ECHILD, "cannot start %s: %s", argv[0], strerror(errno));
  }
  pid_t parent = getpid();
  pid_t p = fork();
  if (p == 0) {
    /* Dies with the launcher; and if the launcher died before this line, leaves at once. */
    if (prctl(PR_SET_PDEATHSIG, death_sig) != 0 || getppid() != parent)
      _exit(127);
    int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
      _exit(127);
    if (envp)
      environ = (char **)envp;
    execvp(argv[0], argv);
    int e = errno;
    ssize_t w = write(report[1], &e, sizeof e);
    (void)w;
    _exit(127);
  }
  int e = errno;
  close(report[1]);
  close(log);
  if (p < 0) {
    close(report[0]);
    return kb_error_set(err, KB_ECHILD, "cannot start %s: %s", argv[0], strerror(e));
  }
  int child_errno = 0;
  ssize_t n;
  do
    n = read(report[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == (ssize_t)sizeof child_errno) {
    waitpid(p, NULL, 0);
    return kb_error_set(err, KB_ECHILD, "cannot start %s: %s", argv[0], strerror(child_errno));
  }
  *pid = p;
  return KB_OK;
}

/* 1 when process `pid` is a redis-server, kb-scheduler or kb-runner whose command line names
 * `folder`, or its pid is `pidfile_pid` and it is a redis-server (whose title may name only a
 * socket elsewhere). A `tail -f` of a log there is none of them. */
static int is_orphan(const char *pid, const char *folder, long pidfile_pid) {
  char path[64], buf[8192];
  snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
  int f = open(path, O_RDONLY | O_CLOEXEC);
  if (f < 0)
    return 0;
  ssize_t n = read(f, buf, sizeof buf - 1);
  close(f);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  size_t len0 = strcspn(buf, " "); /* argv[0], up to its first NUL or space (a redis title) */
  const char *prog = buf;
  for (size_t i = 0; i < len0; i++)
    if (buf[i] == '/')
      prog = buf + i + 1;
  size_t plen = len0 - (size_t)(prog - buf);
  int redis = plen == 12 && strncmp(prog, "redis-server", 12) == 0;
  if (!redis && !(plen == 12 && strncmp(prog, "kb-scheduler", 12) == 0) &&
      !(plen == 9 && strncmp(prog, "kb-runner", 9) == 0))
    return 0;
  if (redis && strtol(pid, NULL, 10) == pidfile_pid)
    return 1;
  for (ssize_t i = 0; i < n; i++) /* the arguments, NUL-separated, as one string */
    if (buf[i] == '\0')
      buf[i] = ' ';
  return strstr(buf, folder) != NULL;
}

/* Signals every process of ours (but this one) that names `folder`. Returns how many. */
static int signal_all(const char *folder, long pidfile_pid, int sig) {
  DIR *d = opendir("/proc");
  if (d == NULL)
    return 0;
  int n = 0;
  uid_t me = getuid();
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end = NULL;
    long pid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 1 || pid == (long)getpid())
      continue;
    char status[64];
    snprintf(status, sizeof status, "/proc/%ld", pid);
    struct stat st;
    if (stat(status, &st) != 0 || st.st_uid != me || !is_orphan(e->d_name, folder, pidfile_pid))
      continue;
    if (kill((pid_t)pid, sig) == 0)
      n++;
  }
  closedir(d);
  return n;
}

int kb__launch_end_orphans(const char *folder, int grace_ms) {
  char pidfile[4200], text[32] = "";
  long pidfile_pid = -1;
  snprintf(pidfile, sizeof pidfile, "%s/%s", folder, KB_LAUNCH_REDIS_PIDFILE);
  int f = open(pidfile, O_RDONLY | O_CLOEXEC);
  if (f >= 0) {
    ssize_t n = read(f, text, sizeof text - 1);
    close(f);
    text[n > 0 ? n : 0] = '\0';
    pidfile_pid = strtol(text, NULL, 10);
  }
  int found = signal_all(folder, pidfile_pid, SIGTERM);
  if (found == 0)
    return 0;
  for (int waited = 0; waited < grace_ms && signal_all(folder, pidfile_pid, 0) > 0; waited += 50)
    kb_sleep_ms(50);
  signal_all(folder, pidfile_pid, SIGKILL);
  for (int i = 0; i < 40 && signal_all(folder, pidfile_pid, 0) > 0; i++) /* until they are gone */
    kb_sleep_ms(50);
  return found;
}
