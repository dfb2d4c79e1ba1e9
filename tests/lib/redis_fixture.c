/* Throwaway redis-server for tests (see redis_fixture.h). */
#include "redis_fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "kb/fs.h"
#include "kb/redis.h"

extern char **environ;

static void nap(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Connects to the unix socket and authenticates when the server has a password. NULL when it
 * cannot. */
static redisContext *admin_connect(const struct kbt_redis *r) {
  char sock[128];
  snprintf(sock, sizeof sock, "%s/redis.sock", r->dir);
  struct timeval tv = {1, 0};
  redisContext *c = redisConnectUnixWithTimeout(sock, tv);
  if (c == NULL)
    return NULL;
  if (c->err) {
    redisFree(c);
    return NULL;
  }
  if (r->password[0]) {
    redisReply *rep = redisCommand(c, "AUTH %s", r->password);
    int ok = rep && rep->type == REDIS_REPLY_STATUS;
    if (rep)
      freeReplyObject(rep);
    if (!ok) {
      redisFree(c);
      return NULL;
    }
  }
  return c;
}

/* Writes <dir>/redis.conf (mode 0600) holding the password, so that it never shows on the
 * server's command line. Returns 0 or -1. */
static int write_conf(const struct kbt_redis *r, char *path, size_t size) {
  snprintf(path, size, "%s/redis.conf", r->dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  char line[192];
  int n = snprintf(line, sizeof line, "requirepass \"%s\"\n", r->password);
  int ok = n > 0 && (size_t)n < sizeof line && write(fd, line, (size_t)n) == n;
  close(fd);
  return ok ? 0 : -1;
}

static int spawn_server(struct kbt_redis *r) {
  char sock[128], log[128], conf[128], port[16];
  snprintf(sock, sizeof sock, "%s/redis.sock", r->dir);
  snprintf(log, sizeof log, "%s/redis.log", r->dir);
  snprintf(port, sizeof port, "%d", r->tcp_port);
  char *argv[32];
  int n = 0;
  argv[n++] = "redis-server";
  if (r->password[0]) {
    if (write_conf(r, conf, sizeof conf))
      return -1;
    argv[n++] = conf; /* a config file must come first */
  }
  char *rest[] = {"--port", port, "--unixsocket", sock, "--unixsocketperm", "700",
                  "--dir", r->dir, "--logfile", log, NULL};
  for (int i = 0; rest[i]; i++)
    argv[n++] = rest[i];
  for (int i = 0; kb_redis_server_settings[i]; i++)
    argv[n++] = kb_redis_server_settings[i];
  if (r->tcp_port > 0) {
    argv[n++] = "--bind";
    argv[n++] = "127.0.0.1";
  }
  argv[n] = NULL;
  /* Its stdout must not hold the test's pipes open after a crash of the test. */
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  int rc = posix_spawnp(&r->pid, "redis-server", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    fprintf(stderr, "cannot start redis-server: %s\n", strerror(rc));
    r->pid = 0;
    return -1;
  }
  for (int i = 0; i < 400; i++) {
    int status = 0;
    if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
      fprintf(stderr, "redis-server exited at start (status 0x%x); see %s\n", status, log);
      r->pid = 0;
      return -1;
    }
    redisContext *c = admin_connect(r);
    if (c) {
      redisReply *rep = redisCommand(c, "PING");
      int ok = rep && rep->type == REDIS_REPLY_STATUS;
      if (rep)
        freeReplyObject(rep);
      redisFree(c);
      if (ok)
        return 0;
    }
    nap(25);
  }
  fprintf(stderr, "redis-server did not come up; see %s\n", log);
  return -1;
}

int kbt_redis_start(struct kbt_redis *r) { return kbt_redis_start_opts(r, NULL); }

/* Reads the first line of `path` into `out`; 0 or -1. */
static int read_password(const char *path, char *out, size_t size) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
    return -1;
  }
  int ok = fgets(out, (int)size, f) != NULL;
  fclose(f);
  if (!ok)
    return -1;
  out[strcspn(out, "\r\n")] = '\0';
  return out[0] ? 0 : -1;
}

int kbt_redis_start_opts(struct kbt_redis *r, const struct kbt_redis_opts *o) {
  memset(r, 0, sizeof *r);
  if (o && o->tcp_port > 0)
    r->tcp_port = o->tcp_port;
  if (o && o->password_file && read_password(o->password_file, r->password, sizeof r->password))
    return -1;
  snprintf(r->dir, sizeof r->dir, "/tmp/kbt-redis-XXXXXX");
  if (mkdtemp(r->dir) == NULL) {
    perror("mkdtemp");
    return -1;
  }
  snprintf(r->addr, sizeof r->addr, "unix:%s/redis.sock", r->dir);
  return spawn_server(r);
}

int kbt_free_tcp_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

/* Waits up to 10 s for the server to exit, then kills it. */
static void reap_server(struct kbt_redis *r) {
  for (int i = 0; i < 1000; i++) {
    if (waitpid(r->pid, NULL, WNOHANG) == r->pid)
      return;
    nap(10);
  }
  fprintf(stderr, "redis-server %d did not stop; killing it\n", (int)r->pid);
  kill(r->pid, SIGKILL);
  waitpid(r->pid, NULL, 0);
}

void kbt_redis_stop(struct kbt_redis *r, int graceful) {
  if (r->pid <= 0)
    return;
  if (graceful) {
    redisContext *c = admin_connect(r);
    redisReply *rep = c ? redisCommand(c, "SHUTDOWN") : NULL;
    /* SHUTDOWN answers only when it refuses; then ask with a signal (also a clean exit). */
    if (c == NULL || (rep && rep->type == REDIS_REPLY_ERROR))
      kill(r->pid, SIGTERM);
    if (rep)
      freeReplyObject(rep);
    if (c)
      redisFree(c);
  } else {
    kill(r->pid, SIGKILL);
  }
  reap_server(r);
  r->pid = 0;
}

int kbt_redis_restart(struct kbt_redis *r) {
  kbt_redis_stop(r, 1);
  return spawn_server(r);
}

void kbt_redis_destroy(struct kbt_redis *r) {
  kbt_redis_stop(r, 0);
  if (r->dir[0])
    if (getenv("KBT_KEEP") == NULL)
      kb_remove_tree(r->dir, NULL); /* best effort: a test's leftovers in /tmp */
  r->dir[0] = '\0';
}
