/* A fault-injecting proxy between a kernelbrain client and redis-server, for lost-reply tests.
 *
 * A child process listens on a unix socket and relays every connection to the server's socket.
 * Armed with a marker (a string the next matching request contains, such as a charge id), it
 * breaks that one request's connection once:
 *   KBT_DROP_REPLY    the request reaches redis and runs; its reply is read and thrown away and
 *                     both sides are closed: the client saw its command sent, then EOF
 *   KBT_DROP_REQUEST  the request is thrown away and both sides are closed: redis never saw it
 * Then it disarms itself; `fired` counts the faults injected.
 */
#ifndef KB_TEST_REDIS_PROXY_H
#define KB_TEST_REDIS_PROXY_H

#include <sys/types.h>

enum { KBT_PASS = 0, KBT_DROP_REPLY = 1, KBT_DROP_REQUEST = 2 };

struct kbt_proxy_ctl {
  volatile int mode;  /* KBT_*; the proxy resets it to KBT_PASS when it fires */
  volatile int fired; /* faults injected so far */
  char marker[256];   /* the request to break contains this */
};

struct kbt_proxy {
  char addr[160];            /* "unix:<path>", for kb_redis_connect */
  char path[150];            /* the proxy's socket */
  pid_t pid;                 /* the proxy process */
  struct kbt_proxy_ctl *ctl; /* shared with it (MAP_SHARED) */
};

/* Starts a proxy listening on `listen_path` that relays to the unix socket `upstream_path`
 * (both borrowed). Returns 0, or -1 (message on stderr). */
int kbt_proxy_start(struct kbt_proxy *p, const char *upstream_path, const char *listen_path);
/* Arms the next fault: the next request containing `marker` (borrowed; copied) meets `mode`. */
void kbt_proxy_arm(struct kbt_proxy *p, int mode, const char *marker);
/* Stops the proxy (SIGKILL, reaped) and removes its socket. */
void kbt_proxy_stop(struct kbt_proxy *p);

#endif
