/* Test fixture: a throwaway redis-server on a unix socket in a fresh temp folder, with AOF on,
 * as the launcher runs it. Tests start their own and stop it; nothing is shared. */
#ifndef KB_TEST_REDIS_FIXTURE_H
#define KB_TEST_REDIS_FIXTURE_H

#include <sys/types.h>

struct kbt_redis {
  char dir[64];      /* mkdtemp folder: socket, AOF, log */
  char addr[128];    /* "unix:<dir>/redis.sock" */
  pid_t pid;         /* redis-server, 0 when stopped */
};

/* Starts redis-server and waits until it answers. Returns 0, or -1 (message on stderr). */
int kbt_redis_start(struct kbt_redis *r);
/* Stops it: SHUTDOWN (AOF fsynced) when `graceful`, else SIGKILL. Keeps the folder. */
void kbt_redis_stop(struct kbt_redis *r, int graceful);
/* Starts it again on the same folder (AOF replayed). */
int kbt_redis_restart(struct kbt_redis *r);
/* Stops it and removes the folder. */
void kbt_redis_destroy(struct kbt_redis *r);

#endif
