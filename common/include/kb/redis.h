/* A Redis connection with reconnect, authentication and embedded Lua scripts.
 *
 * Addresses: "host:port", "unix:/path/to/socket" or "/path/to/socket". The address comes from the
 * caller (a --redis option) or, when NULL, from the KB_REDIS environment variable, else
 * "127.0.0.1:6379". A password is never taken from the command line: it comes from the
 * KB_REDIS_PASSWORD environment variable or from the file named by KB_REDIS_PASSWORD_FILE
 * (which must not be readable by group or others); KB_REDIS_USER names an ACL user.
 *
 * Commands that fail because the connection broke are retried after reconnecting with capped
 * exponential backoff and jitter, up to `retry_ms` in total. Every kernelbrain script is
 * idempotent or safe to retry (see common/lua/), which is what makes that retry correct.
 */
#ifndef KB_REDIS_H
#define KB_REDIS_H

/* The file in a campaign's results folder (<results_dir>/<campaign>/) where `kb-launch --local`
 * writes the address of the Redis it started, one line "KB_REDIS=<addr>": `kb-submit status`
 * and `watch` read it when given the campaign file and neither --redis nor $KB_REDIS. */
#define KB_REDIS_ADDR_FILE "redis.env"

#include <signal.h>

#include <hiredis/hiredis.h>
#include <stddef.h>

struct kb_error;
struct kb_redis; /* opaque */

/* The settings every redis-server of a campaign runs with, as redis-server arguments ("--name",
 * "value", ..., NULL; static): the append-only file fsynced every second (a restart from it
 * loses at most a second of writes, which the idempotent scripts absorb), no eviction (a full
 * Redis refuses writes rather than dropping items), no RDB snapshots, and hashes kept as
 * listpacks up to 128 fields and values of up to 2048 bytes (a candidate's hash is one).
 * kb-launch --local, the Slurm redis job (its config file),
 * the tests' servers (the shell tests' through kb-launch --redis-config) and the queue
 * benchmark's all start from this one list. */
extern char *const kb_redis_server_settings[];

struct kb_redis_opts {
  const char *addr;      /* see above; NULL = $KB_REDIS or 127.0.0.1:6379 (borrowed) */
  int connect_timeout_ms; /* per connection attempt; 0 = 2000 */
  int reply_timeout_ms;  /* how long a command waits for its reply before the connection counts
                            as lost (then reconnect and resend, within retry_ms); 0 =
                            $KB_REDIS_REPLY_TIMEOUT_MS or KB_REDIS_REPLY_TIMEOUT_MS */
  int retry_ms;          /* total reconnect budget for one command; 0 = 10000 */
  int no_credentials;    /* 1: ignore KB_REDIS_USER, KB_REDIS_PASSWORD(_FILE) (a redis-server
                            started without a password, as kb-launch --local starts its own) */
  volatile sig_atomic_t *stop; /* the process's stop flag (kb/signals.h; borrowed), or NULL: once
                            it is set, a command waits for a lost redis at most
                            KB_REDIS_STOP_WAIT_MS more, whatever is left of retry_ms */
};

/* How long a command may still wait for a lost or full redis once the process was asked to
 * stop (kb_redis_opts.stop), ms: a runner asked to leave (Slurm's SIGTERM) while its redis was
 * down waited out two budgets of --wait (124 s with the default 60) to release leases that
 * expire by themselves anyway, and the scheduler one, before exiting. */
#define KB_REDIS_STOP_WAIT_MS 2000

/* How long a command waits for its reply by default, ms: a server that keeps the connection open
 * and answers nothing (SIGSTOP, a hung or frozen host) is then treated as lost (reconnect and
 * resend within the retry budget, as after a connection lost mid-command: the queue's and the
 * ledger's scripts are idempotent under a resend, tests/queue/test_queue_lost_reply.c; the plain
 * commands a resend may apply twice are a generation-attempt count and an LLM request number).
 * Redis answers in microseconds to milliseconds; the longest legitimate wait is a fork or an
 * fsync stall of a second or two on a slow disk. $KB_REDIS_REPLY_TIMEOUT_MS (1000 to 86400000)
 * replaces it for every program. */
#define KB_REDIS_REPLY_TIMEOUT_MS 15000

/* Connects and authenticates. Sets SIGPIPE to ignored when it has its default action, so a
 * connection the server dropped is an error to handle, not the death of the process. Returns the connection in `*out` (new; kb_redis_free).
 * Every new connection (this one and each reconnect) starts with AUTH when a password is set and
 * PING, within the connect timeout.
 * Errors: KB_ECONN "cannot connect to redis at ADDR: why", KB_ENOTREDIS "ADDR is not a redis
 * server" (the peer answered something that is not RESP, e.g. an HTTP server), KB_EAUTH naming
 * the address: NOAUTH (a password is wanted and none was given) or a refused password, naming
 * where it came from ($KB_REDIS_PASSWORD or the file of $KB_REDIS_PASSWORD_FILE), KB_EREDIS (PING
 * refused otherwise), KB_EINVAL (bad address, an unsafe password file or a bad
 * $KB_REDIS_REPLY_TIMEOUT_MS), KB_ENOMEM. */
int kb_redis_connect(const struct kb_redis_opts *opts, struct kb_redis **out,
                     struct kb_error *err);
void kb_redis_free(struct kb_redis *r);
/* The address in use, for messages (borrowed from `r`). */
const char *kb_redis_addr(const struct kb_redis *r);

/* Runs one command given as an argument vector. On success `*reply` is the reply (new; free with
 * freeReplyObject), which may be a Redis error reply: kb_redis_command maps those to
 * KB_EREDIS with the server's text, except when `allow_error` is set. `lens` may be NULL for
 * NUL-terminated args. A dropped connection is retried within the retry budget, with jittered
 * exponential backoff (50 ms doubling to 2 s), logging "reconnecting" at most once per 10 s in
 * the process (with the count of the others). Errors: KB_ECONN after the retry budget,
 * KB_ENOTREDIS, KB_EAUTH (on a reconnect), KB_EREDIS, KB_ENOMEM. */
int kb_redis_command(struct kb_redis *r, int argc, const char **argv, const size_t *lens,
                     int allow_error, redisReply **reply, struct kb_error *err);
/* printf-style convenience for fixed commands (hiredis format: %s, %b, %lld). */
int kb_redis_commandf(struct kb_redis *r, redisReply **reply, struct kb_error *err,
                      const char *fmt, ...);

/* Runs the embedded script `name` (common/lua/<name>.lua) with EVALSHA, loading it on NOSCRIPT.
 * `keys` and `args` are NUL-terminated strings unless `arg_lens` is given (args only).
 * A script error "KB_<CODE> detail" becomes that code with "detail" as the message.
 * `*reply` (new) holds the script's return value on success. */
int kb_redis_script(struct kb_redis *r, const char *name, int nkeys, const char **keys,
                    int nargs, const char **args, const size_t *arg_lens, redisReply **reply,
                    struct kb_error *err);

/* The SHA-1 of embedded script `name` into `sha` (41 bytes), loading the script into the
 * server first when this connection has not yet: for a caller that sends EVALSHA on
 * connections of its own (an event loop). Errors: KB_EINTERNAL (no such script), those of
 * kb_redis_command(). */
int kb_redis_script_sha(struct kb_redis *r, const char *name, char sha[41], struct kb_error *err);
/* A script's error reply `text` as kb_redis_script() reports it: "KB_<CODE> detail" becomes
 * that code with "detail" as the message, anything else KB_EREDIS naming script `name`.
 * Returns the code. */
int kb_redis_script_error(const char *name, const char *text, struct kb_error *err);

/* Builds the key "kb:{<cid>}:<suffix>" into `out` (`size` bytes). Returns KB_OK or KB_EINVAL
 * when it does not fit. */
int kb_key(char *out, size_t size, const char *cid, const char *suffix_fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Asks the server to shut down (SHUTDOWN: the AOF is fsynced first) without reconnecting when
 * it drops the connection, as it does. Errors: KB_EREDIS when the server refused. */
int kb_redis_shutdown(struct kb_redis *r, struct kb_error *err);

/* Sets the reconnect budget in milliseconds for later commands. */
void kb_redis_set_retry(struct kb_redis *r, int retry_ms);

#endif
