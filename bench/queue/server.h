/* A throwaway redis-server for one benchmark run: a unix socket in a fresh mkdtemp folder, AOF on
 * with fsync every second, no eviction, no RDB snapshots, hashes of more than 128 fields as hash
 * tables; the settings tests/lib/redis_fixture.c and the launcher use, so the numbers describe
 * the configuration campaigns run with.
 */
#ifndef KB_BENCH_SERVER_H
#define KB_BENCH_SERVER_H

#include <sys/types.h>

struct kb_error;

struct kb_bench_server {
  char dir[64];   /* mkdtemp folder: socket, AOF, log; "" when none */
  char addr[192]; /* "unix:<dir>/redis.sock" */
  pid_t pid;      /* redis-server, 0 when not running */
};

/* Starts redis-server (found on $PATH) in a new temp folder and waits up to 10 s until it answers
 * PING. The server gets SIGTERM if the calling thread dies first. `s` is caller-owned.
 * Errors: KB_EIO (no temp folder, cannot start), KB_ETIMEOUT (never answered; the message names
 * its log file). On failure nothing is left running or on disk. */
int kb__bench_server_start(struct kb_bench_server *s, struct kb_error *err);
/* Stops the server (SHUTDOWN, then SIGKILL after 10 s) and removes its folder; `s` may be NULL
 * or never started. Set KB_BENCH_KEEP=1 to keep the folder for inspection. */
void kb__bench_server_destroy(struct kb_bench_server *s);

#endif
