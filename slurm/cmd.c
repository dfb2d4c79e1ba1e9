/* Child commands with captured output (see cmd.h). */
#include "cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb/buf.h"
#include "kb/error.h"

extern char **environ;

/* Reads what is there from `*fd` into `b` (NULL: dropped); closes it at end of file. */
static int drain(int *fd, struct kb_buf *b) {
  char chunk[4096];
  ssize_t n = read(*fd, chunk, sizeof chunk);
  if (n > 0)
    return b && kb_buf_add(b, chunk, (size_t)n) ? KB_ENOMEM : KB_OK;
  if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(*fd);
    *fd = -1;
  }
  return KB_OK;
}

int kb__cmd_run(char *const argv[], struct kb_buf *out, struct kb_buf *errout, int *status,
                struct kb_error *err) {
  int po[2] = {-1, -1}, pe[2] = {-1, -1};
  if (pipe(po) != 0 || pipe(pe) != 0) {
    int e = errno;
    for (int i = 0; i < 2; i++) {
      if (po[i] >= 0)
        close(po[i]);
      if (pe[i] >= 0)
        close(pe[i]);
    }
    return kb_error_set(err, KB_ECHILD, "cannot create a pipe: %s", strerror(e));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, po[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
  posix_spawn_file_actions_addclose(&fa, po[0]);
  posix_spawn_file_actions_addclose(&fa, pe[0]);
  posix_spawn_file_actions_addclose(&fa, po[1]);
  posix_spawn_file_actions_addclose(&fa, pe[1]);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(po[1]);
  close(pe[1]);
  if (rc != 0) {
    close(po[0]);
    close(pe[0]);
    return kb_error_set(err, KB_ECHILD, "cannot run %s: %s", argv[0], strerror(rc));
  }
  int fds[2] = {po[0], pe[0]};
  struct kb_buf *bufs[2] = {out, errout};
  int result = KB_OK;
  while (fds[0] >= 0 || fds[1] >= 0) {
    struct pollfd pfd[2];
    int idx[2];
    nfds_t n = 0;
    for (int i = 0; i < 2; i++)
      if (fds[i] >= 0) {
        pfd[n] = (struct pollfd){.fd = fds[i], .events = POLLIN};
        idx[n++] = i;
      }
    if (poll(pfd, n, -1) < 0 && errno != EINTR)
      break;
    for (nfds_t k = 0; k < n; k++)
      if (pfd[k].revents && drain(&fds[idx[k]], bufs[idx[k]]) && result == KB_OK)
        result = kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  int st = 0;
  pid_t w;
  do
    w = waitpid(pid, &st, 0);
  while (w < 0 && errno == EINTR);
  if (w < 0)
    return kb_error_set(err, KB_ECHILD, "cannot wait for %s: %s", argv[0], strerror(errno));
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return result;
}
