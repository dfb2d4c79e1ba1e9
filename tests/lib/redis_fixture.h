/* Test fixture: a throwaway redis-server on a unix socket in a fresh temp folder, with AOF on,
 * as the launcher runs it. Tests start their own and stop it; nothing is shared.
 * Options add a TCP listener on 127.0.0.1 and a password (requirepass), for tests of the
 * connection layer. */
#ifndef KB_TEST_REDIS_FIXTURE_H
#define KB_TEST_REDIS_FIXTURE_H

#include <sys/types.h>

struct kbt_redis {
  char dir[64];      /* mkdtemp folder: socket, AOF, log */
  char addr[128];    /* "unix:<dir>/redis.sock" */
  pid_t pid;         /* redis-server, 0 when stopped */
  int tcp_port;      /* also listening on 127.0.0.1:tcp_port; 0 = unix socket only */
  char password[128]; /* requirepass of the default user; "" = none */
};

struct kbt_redis_opts {
  int tcp_port;              /* listen on 127.0.0.1:<port> too; 0 = unix socket only */
  const char *password_file; /* requirepass with the password read from this file (borrowed;
                                first line, newline stripped); NULL = no password. The password
                                goes to the server in a 0600 config file in `dir`, never on its
                                command line */
};

/* Starts redis-server and waits until it answers. Returns 0, or -1 (message on stderr). */
int kbt_redis_start(struct kbt_redis *r);
/* Same, with options (`o` may be NULL; borrowed). Restarts keep the options. */
int kbt_redis_start_opts(struct kbt_redis *r, const struct kbt_redis_opts *o);
/* Stops it: SHUTDOWN (AOF fsynced) when `graceful`, else SIGKILL. Keeps the folder. */
void kbt_redis_stop(struct kbt_redis *r, int graceful);
/* Starts it again on the same folder (AOF replayed). */
int kbt_redis_restart(struct kbt_redis *r);
/* Stops it and removes the folder. */
void kbt_redis_destroy(struct kbt_redis *r);
/* A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0), or -1. */
int kbt_free_tcp_port(void);

#endif
