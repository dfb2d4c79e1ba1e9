/* Throwaway redis-server for tests (see redis_fixture.h). */
#define _GNU_SOURCE /* nftw flags */
#include "redis_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

extern char **environ;

static void nap(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int spawn_server(struct kbt_redis *r) {
  char sock[128], log[128];
  snprintf(sock, sizeof sock, "%s/redis.sock", r->dir);
  snprintf(log, sizeof log, "%s/redis.log", r->dir);
  char *argv[] = {"redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
                  "--dir", r->dir, "--appendonly", "yes", "--appendfsync", "everysec",
                  "--maxmemory-policy", "noeviction", "--save", "", "--logfile", log, NULL};
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
    return -1;
  }
  for (int i = 0; i < 400; i++) {
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectUnixWithTimeout(sock, tv);
    if (c && !c->err) {
      redisReply *rep = redisCommand(c, "PING");
      int ok = rep && rep->type == REDIS_REPLY_STATUS;
      if (rep)
        freeReplyObject(rep);
      redisFree(c);
      if (ok)
        return 0;
    } else if (c) {
      redisFree(c);
    }
    nap(25);
  }
  fprintf(stderr, "redis-server did not come up; see %s\n", log);
  return -1;
}

int kbt_redis_start(struct kbt_redis *r) {
  memset(r, 0, sizeof *r);
  snprintf(r->dir, sizeof r->dir, "/tmp/kbt-redis-XXXXXX");
  if (mkdtemp(r->dir) == NULL) {
    perror("mkdtemp");
    return -1;
  }
  snprintf(r->addr, sizeof r->addr, "unix:%s/redis.sock", r->dir);
  return spawn_server(r);
}

void kbt_redis_stop(struct kbt_redis *r, int graceful) {
  if (r->pid <= 0)
    return;
  if (graceful) {
    char sock[128];
    snprintf(sock, sizeof sock, "%s/redis.sock", r->dir);
    redisContext *c = redisConnectUnix(sock);
    if (c && !c->err) {
      redisReply *rep = redisCommand(c, "SHUTDOWN");
      if (rep)
        freeReplyObject(rep);
    } else {
      kill(r->pid, SIGTERM);
    }
    if (c)
      redisFree(c);
  } else {
    kill(r->pid, SIGKILL);
  }
  waitpid(r->pid, NULL, 0);
  r->pid = 0;
}

int kbt_redis_restart(struct kbt_redis *r) {
  kbt_redis_stop(r, 1);
  return spawn_server(r);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

void kbt_redis_destroy(struct kbt_redis *r) {
  kbt_redis_stop(r, 0);
  if (r->dir[0])
    if (getenv("KBT_KEEP") == NULL)
    nftw(r->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
  r->dir[0] = '\0';
}
