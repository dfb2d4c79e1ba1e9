/* Throwaway redis-server for the benchmark (see server.h). */
#include "server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "kb/error.h"
#include "kb/redis.h"

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* Removes `path` and everything under it (files and folders only; links are not followed). */
static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      struct dirent *e;
      while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
          continue;
        char child[512];
        if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) < (int)sizeof child)
          remove_tree(child);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* 1 when the server answers PING on its socket. */
static int answers(const char *sock) {
  struct timeval tv = {1, 0};
  redisContext *c = redisConnectUnixWithTimeout(sock, tv);
  int ok = 0;
  if (c && !c->err) {
    redisReply *rep = redisCommand(c, "PING");
    ok = rep && rep->type == REDIS_REPLY_STATUS;
    if (rep)
      freeReplyObject(rep);
  }
  if (c)
    redisFree(c);
  return ok;
}

int kb__bench_server_start(struct kb_bench_server *s, struct kb_error *err) {
  memset(s, 0, sizeof *s);
  snprintf(s->dir, sizeof s->dir, "/tmp/kb-bench-redis-XXXXXX");
  if (mkdtemp(s->dir) == NULL) {
    int e = errno;
    s->dir[0] = '\0';
    return kb_error_set(err, KB_EIO, "cannot create a temp folder for redis: %s", strerror(e));
  }
  char sock[128], log[128];
  snprintf(sock, sizeof sock, "%s/redis.sock", s->dir);
  snprintf(log, sizeof log, "%s/redis.log", s->dir);
  snprintf(s->addr, sizeof s->addr, "unix:%s", sock);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    kb__bench_server_destroy(s);
    return kb_error_set(err, KB_EIO, "cannot start redis-server: fork: %s", strerror(e));
  }
  if (pid == 0) {
    /* The server must not outlive a benchmark that was killed, nor hold its pipes open. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
    }
    char *argv[32] = {"redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm",
                      "700", "--dir", s->dir, "--logfile", log};
    int n = 11;
    for (int i = 0; kb_redis_server_settings[i] && n < 31; i++)
      argv[n++] = kb_redis_server_settings[i];
    argv[n] = NULL;
    execvp("redis-server", argv);
    _exit(127);
  }
  s->pid = pid;
  for (int i = 0; i < 400; i++) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      s->pid = 0;
      int rc = kb_error_set(err, KB_EIO, "redis-server exited at start (status %d); is it on "
                            "the PATH? see %s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, log);
      kb__bench_server_destroy(s);
      return rc;
    }
    if (answers(sock))
      return KB_OK;
    nap_ms(25);
  }
  kb_error_set(err, KB_ETIMEOUT, "redis-server at %s did not answer within 10 s", s->addr);
  kb__bench_server_destroy(s);
  return KB_ETIMEOUT;
}

void kb__bench_server_destroy(struct kb_bench_server *s) {
  if (s == NULL)
    return;
  if (s->pid > 0) {
    char sock[128];
    snprintf(sock, sizeof sock, "%s/redis.sock", s->dir);
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectUnixWithTimeout(sock, tv);
    if (c && !c->err) {
      redisReply *rep = redisCommand(c, "SHUTDOWN");
      if (rep)
        freeReplyObject(rep);
    } else {
      kill(s->pid, SIGTERM);
    }
    if (c)
      redisFree(c);
    int gone = 0;
    for (int i = 0; i < 1000 && !gone; i++) {
      if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
        gone = 1;
      else
        nap_ms(10);
    }
    if (!gone) {
      kill(s->pid, SIGKILL);
      waitpid(s->pid, NULL, 0);
    }
    s->pid = 0;
  }
  const char *keep = getenv("KB_BENCH_KEEP");
  if (s->dir[0] && !(keep && strcmp(keep, "1") == 0))
    remove_tree(s->dir);
  s->dir[0] = '\0';
}
