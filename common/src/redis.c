/* Redis connection, reconnects and embedded scripts (see kb/redis.h). */
#include "kb/redis.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/log.h"
#include "lua_scripts.h"

#define MAX_SCRIPTS 64

struct kb_redis {
  redisContext *ctx;              /* NULL while disconnected */
  char addr[512];                 /* as given, for messages */
  char host[256];                 /* TCP host, "" for a unix socket */
  int port;                       /* TCP port */
  char path[512];                 /* unix socket path, "" for TCP */
  int connect_timeout_ms;
  int reply_timeout_ms;           /* how long one command waits for its reply */
  int retry_ms;                   /* reconnect budget per command */
  volatile sig_atomic_t *stop;    /* the process's stop flag (borrowed), or NULL */
  long stop_ms;                   /* monotonic ms when it was first seen set, 0 before */
  char *user;                     /* ACL user or NULL (owned) */
  char *password;                 /* or NULL (owned, wiped on free) */
  char cred_source[600];          /* where the password came from, for messages; "" for none */
  char shas[MAX_SCRIPTS][41];     /* SHA-1 of each embedded script, by table index */
  unsigned rng;                   /* jitter state */
  int full;                       /* the last handshake met a server at its maxclients */
  int dropped;                    /* the last handshake's connection was closed under it */
};

/* At most one "reconnecting" line per this many ms in a process (all its connections and
 * threads); the next one counts the others. */
#define WARN_EVERY_MS 10000
static _Atomic long warned_ms; /* monotonic ms of the last "reconnecting" line, 0 for none */
static _Atomic long unwarned;  /* reconnects since that line, not logged */

char *const kb_redis_server_settings[] = {
    "--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction",
    /* kb:{cid}:taskbudget holds 2-3 fields per task: past 128 a hashtable beats the listpack,
     * whose lookups are linear (bench/results/queue/queue-2026-11-30-experiments.md) */
    "--hash-max-listpack-entries", "128",
    /* a candidate's hash (task, name, its JSON in about 1 KB of zstd with the task's
     * dictionary) stays one listpack allocation instead of a hashtable of six strings: about
     * 200 bytes less per candidate (docs/benchmarks.md, "Memory") */
    "--hash-max-listpack-value", "2048", "--save", "", NULL};

static int parse_addr(struct kb_redis *r, const char *addr, struct kb_error *err) {
  if (snprintf(r->addr, sizeof r->addr, "%s", addr) >= (int)sizeof r->addr)
    return kb_error_set(err, KB_EINVAL, "redis address too long: \"%.40s...\"", addr);
  const char *path = NULL;
  if (strncmp(addr, "unix:", 5) == 0)
    path = addr + 5;
  else if (addr[0] == '/' || addr[0] == '.')
    path = addr;
  if (path) {
    if (snprintf(r->path, sizeof r->path, "%s", path) >= (int)sizeof r->path || !path[0])
      return kb_error_set(err, KB_EINVAL, "bad redis socket path \"%s\"", path);
    return KB_OK;
  }
  const char *colon = strrchr(addr, ':');
  if (colon == NULL || colon == addr)
    return kb_error_set(err, KB_EINVAL, "bad redis address \"%s\": expected HOST:PORT or "
                        "unix:PATH", addr);
  char *end = NULL;
  errno = 0;
  long port = strtol(colon + 1, &end, 10);
  if (errno || end == colon + 1 || *end != '\0' || port < 1 || port > 65535)
    return kb_error_set(err, KB_EINVAL, "bad port in redis address \"%s\"", addr);
  size_t hlen = (size_t)(colon - addr);
  if (hlen >= sizeof r->host)
    return kb_error_set(err, KB_EINVAL, "redis host name too long in \"%s\"", addr);
  memcpy(r->host, addr, hlen);
  r->host[hlen] = '\0';
  r->port = (int)port;
  return KB_OK;
}

/* Reads the password from $KB_REDIS_PASSWORD or the 0600 file $KB_REDIS_PASSWORD_FILE. */
static int load_credentials(struct kb_redis *r, struct kb_error *err) {
  const char *user = getenv("KB_REDIS_USER");
  if (user && *user && (r->user = kb_strdup(user)) == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  const char *pw = getenv("KB_REDIS_PASSWORD");
  if (pw && *pw) {
    snprintf(r->cred_source, sizeof r->cred_source, "$KB_REDIS_PASSWORD");
    r->password = kb_strdup(pw);
    return r->password ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  const char *file = getenv("KB_REDIS_PASSWORD_FILE");
  if (file == NULL || *file == '\0')
    return KB_OK;
  struct stat st;
  if (stat(file, &st) != 0)
    return kb_error_set(err, KB_EINVAL, "cannot read redis password file \"%s\": %s", file,
                        strerror(errno));
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    return kb_error_set(err, KB_EINVAL, "redis password file \"%s\" is readable by others: "
                        "chmod 600 it", file);
  struct kb_buf b;
  kb_buf_init(&b);
  int rc = kb_buf_read_file(&b, file, err);
  if (rc)
    return rc;
  while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r'))
    b.data[--b.len] = '\0';
  snprintf(r->cred_source, sizeof r->cred_source, "the file \"%s\" ($KB_REDIS_PASSWORD_FILE)",
           file);
  r->password = kb_buf_detach(&b);
  return r->password ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
}

static void set_timeout(redisContext *c, int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  redisSetTimeout(c, tv);
}

/* The first exchange on a new connection failed without a reply: a peer that answered
 * something that is not RESP is not a redis server (KB_ENOTREDIS); else the link failed
 * (KB_ECONN). */
static int handshake_failed(struct kb_redis *r, const redisContext *c, const char *what,
                            struct kb_error *err) {
  if (c->err == REDIS_ERR_PROTOCOL)
    return kb_error_set(err, KB_ENOTREDIS, "%s is not a redis server: its answer to %s is not "
                        "the redis protocol (%s)", r->addr, what, c->errstr);
  if (c->err == REDIS_ERR_OOM)
    return kb_error_set(err, KB_ENOMEM, "out of memory talking to redis");
  r->dropped = 1; /* accepted, then closed: a server at its maxclients may close before the
                     refusal is read (the write of the first command fails: EPIPE) */
  return kb_error_set(err, KB_ECONN, "lost connection to redis at %s during %s: %s", r->addr,
                      what, c->err ? c->errstr : "no reply");
}

/* A server at its maxclients answers a new connection's first command with this error and
 * closes it: a transient refusal (clients leave), KB_ECONN, retried like a failed connect. */
static int server_full(struct kb_redis *r, const redisReply *rep, struct kb_error *err) {
  if (rep->type != REDIS_REPLY_ERROR || strstr(rep->str, "max number of clients") == NULL)
    return 0;
  r->full = 1;
  kb_error_set(err, KB_ECONN, "redis at %s serves its maximum number of clients already (%s): "
               "raise its maxclients and its open-file limit (ulimit -n; two connections per "
               "runner), or run fewer runners on it", r->addr, rep->str);
  return 1;
}

#define NO_REPLY_IN_TIME 1
static int exchange(struct kb_redis *r, redisContext *c, const char *cmd, size_t len,
                    int timeout_ms, void **rep, long *waited_ms);

/* One command of the handshake on `c` (printf-style, as redisCommand), its reply waited for
 * within the connect timeout, or less once the process is asked to stop (exchange): the reply
 * (new), or NULL (c->err set, or no reply in time). */
static redisReply *handshake_ask(struct kb_redis *r, redisContext *c, const char *fmt, ...) {
  char *cmd = NULL;
  va_list ap;
  va_start(ap, fmt);
  int len = redisvFormatCommand(&cmd, fmt, ap);
  va_end(ap);
  if (len < 0)
    return NULL;
  void *rep = NULL;
  long waited = 0;
  int got = exchange(r, c, cmd, (size_t)len, r->connect_timeout_ms, &rep, &waited);
  redisFreeCommand(cmd);
  return got == REDIS_OK ? rep : NULL;
}

/* AUTH (when a password is set) and PING on a new connection, within the connect timeout: a
 * peer that is not redis, a server at its maxclients, a missing password (NOAUTH) and a
 * refused one (WRONGPASS) are told apart here, at the first exchange. */
static int handshake(struct kb_redis *r, redisContext *c, struct kb_error *err) {
  set_timeout(c, r->connect_timeout_ms);
  redisReply *rep = NULL;
  if (r->password) {
    rep = r->user ? handshake_ask(r, c, "AUTH %s %s", r->user, r->password)
                  : handshake_ask(r, c, "AUTH %s", r->password);
    if (rep == NULL)
      return handshake_failed(r, c, "AUTH", err);
    if (server_full(r, rep, err)) {
      freeReplyObject(rep);
      return KB_ECONN;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
      kb_error_set(err, KB_EAUTH, "redis at %s refused the password%s%s from %s: %s", r->addr,
                   r->user ? " of user " : "", r->user ? r->user : "", r->cred_source, rep->str);
      freeReplyObject(rep);
      return KB_EAUTH;
    }
    freeReplyObject(rep);
  }
  rep = handshake_ask(r, c, "PING");
  if (rep == NULL)
    return handshake_failed(r, c, "PING", err);
  int rc = KB_OK;
  if (server_full(r, rep, err))
    rc = KB_ECONN;
  else if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOAUTH", 6) == 0)
    rc = kb_error_set(err, KB_EAUTH, "redis at %s wants a password (%s) and none was given: set "
                      "KB_REDIS_PASSWORD or KB_REDIS_PASSWORD_FILE (and KB_REDIS_USER for an "
                      "ACL user)", r->addr, rep->str);
  else if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "LOADING", 7) != 0)
    rc = kb_error_set(err, KB_EREDIS, "redis at %s refused PING: %s", r->addr, rep->str);
  freeReplyObject(rep);
  if (rc == KB_OK) /* a write to a server that reads nothing must not block for ever */
    set_timeout(c, r->reply_timeout_ms);
  return rc;
}

/* Data sent over TCP and not acknowledged within this long ends the connection
 * (TCP_USER_TIMEOUT), so a dropped link turns into an error the reconnect loop handles: without
 * it the kernel retransmits for up to 15 minutes with a growing backoff, and after a 30 s drop
 * (tests/multinode/link_drop.sh) the first request got through 24 s after the link came back.
 * The acknowledgement is the peer kernel's, not Redis's reply: a slow Redis does not trip it. */
#define UNACKED_LIMIT_MS 5000

static void bound_unacked(redisContext *c) {
  unsigned int ms = UNACKED_LIMIT_MS;
  (void)setsockopt(c->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms); /* best effort */
}

static int connect_once(struct kb_redis *r, struct kb_error *err) {
  r->full = r->dropped = 0;
  struct timeval tv = {r->connect_timeout_ms / 1000, (r->connect_timeout_ms % 1000) * 1000};
  redisContext *c = r->path[0] ? redisConnectUnixWithTimeout(r->path, tv)
                               : redisConnectWithTimeout(r->host, r->port, tv);
  if (c == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory connecting to redis");
  if (c->err) {
    kb_error_set(err, KB_ECONN, "cannot connect to redis at %s: %s", r->addr, c->errstr);
    redisFree(c);
    return KB_ECONN;
  }
  if (!r->path[0]) {
    redisEnableKeepAlive(c);
    bound_unacked(c);
  }
  int rc = handshake(r, c, err);
  if (rc) {
    redisFree(c);
    return rc;
  }
  r->ctx = c;
  return KB_OK;
}

static long mono_ms(void) { return (long)(kb_now_mono() * 1000); }

/* The end of a command's budget: `deadline` (monotonic ms), or sooner once the process was asked
 * to stop, KB_REDIS_STOP_WAIT_MS after that was first seen (then one attempt a command). */
static long budget_end(struct kb_redis *r, long deadline) {
  if (r->stop == NULL || !*r->stop)
    return deadline;
  if (r->stop_ms == 0)
    r->stop_ms = mono_ms();
  long end = r->stop_ms + KB_REDIS_STOP_WAIT_MS;
  return end < deadline ? end : deadline;
}

/* Reconnects with capped exponential backoff (50 ms doubling to 2 s, full jitter) until
 * `deadline` (monotonic ms). */
static int reconnect(struct kb_redis *r, long deadline, struct kb_error *err) {
  long delay = 50;
  for (;;) {
    struct kb_error attempt = {0};
    if (r->ctx) {
      redisFree(r->ctx);
      r->ctx = NULL;
    }
    int rc = connect_once(r, &attempt);
    if (rc == KB_OK)
      return KB_OK;
    if (rc != KB_ECONN || mono_ms() >= budget_end(r, deadline)) {
      kb_error_set(err, rc, "%s", attempt.msg);
      return rc;
    }
    long wait = (long)(rand_r(&r->rng) % (unsigned)delay) + 1;
    long left = budget_end(r, deadline) - mono_ms();
    if (wait > left)
      wait = left > 0 ? left : 1;
    kb_debug("redis at %s unreachable, retrying in %ld ms", r->addr, wait);
    kb_sleep_ms(wait);
    delay = delay * 2 > 2000 ? 2000 : delay * 2;
  }
}

/* A write to a connection the server dropped raises SIGPIPE, whose default action kills the
 * process; a dropped connection must be an error that the reconnect logic handles instead. */
static void ignore_sigpipe(void) {
  struct sigaction old;
  if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
  }
}

/* $KB_REDIS_REPLY_TIMEOUT_MS, when set, replaces the default reply timeout. */
static int reply_timeout_from_env(struct kb_redis *r, struct kb_error *err) {
  const char *v = getenv("KB_REDIS_REPLY_TIMEOUT_MS");
  if (v == NULL || *v == '\0')
    return KB_OK;
  char *end = NULL;
  errno = 0;
  long ms = strtol(v, &end, 10);
  if (errno || *end || ms < 1000 || ms > 86400000)
    return kb_error_set(err, KB_EINVAL, "$KB_REDIS_REPLY_TIMEOUT_MS is \"%s\": want a whole "
                        "number of milliseconds from 1000 (the scheduler's reads of the results "
                        "stream block for up to 500 ms) to 86400000", v);
  r->reply_timeout_ms = (int)ms;
  return KB_OK;
}

static void warn_retry(const struct kb_redis *r, const char *why, const char *verb);

int kb_redis_connect(const struct kb_redis_opts *opts, struct kb_redis **out,
                     struct kb_error *err) {
  *out = NULL;
  ignore_sigpipe();
  struct kb_redis *r = kb_calloc(1, sizeof *r);
  if (r == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  const char *addr = opts && opts->addr ? opts->addr : getenv("KB_REDIS");
  if (addr == NULL || *addr == '\0')
    addr = "127.0.0.1:6379";
  r->connect_timeout_ms = opts && opts->connect_timeout_ms ? opts->connect_timeout_ms : 2000;
  r->reply_timeout_ms = opts && opts->reply_timeout_ms ? opts->reply_timeout_ms
                                                       : KB_REDIS_REPLY_TIMEOUT_MS;
  r->retry_ms = opts && opts->retry_ms ? opts->retry_ms : 10000;
  r->stop = opts ? opts->stop : NULL;
  r->rng = (unsigned)mono_ms() ^ (unsigned)(uintptr_t)r;
  int rc = parse_addr(r, addr, err);
  if (rc == KB_OK && !(opts && opts->reply_timeout_ms))
    rc = reply_timeout_from_env(r, err);
  if (rc == KB_OK && !(opts && opts->no_credentials))
    rc = load_credentials(r, err);
  if (rc == KB_OK)
    rc = connect_once(r, err);
  if (rc == KB_ECONN && (r->full || r->dropped)) {
    /* at its maxclients (clients leave: a runner array starting beside the last one's end), or
     * closing connections as it accepts them (the same, its refusal not read in time) */
    warn_retry(r, r->full ? "at its maximum number of clients"
                          : "closed the connection it accepted (at its maximum number of clients?)",
               "retrying");
    kb_error_clear(err);
    rc = reconnect(r, mono_ms() + r->retry_ms, err);
  }
  if (rc) {
    kb_redis_free(r);
    return rc;
  }
  *out = r;
  return KB_OK;
}

void kb_redis_free(struct kb_redis *r) {
  if (r == NULL)
    return;
  if (r->ctx)
    redisFree(r->ctx);
  if (r->password) {
    memset(r->password, 0, strlen(r->password));
    kb_free(r->password);
  }
  kb_free(r->user);
  kb_free(r);
}

const char *kb_redis_addr(const struct kb_redis *r) { return r->addr; }

void kb_redis_set_retry(struct kb_redis *r, int retry_ms) { r->retry_ms = retry_ms; }

/* Logs "redis at ADDR: why; <verb>" at most once per WARN_EVERY_MS in the process, with the
 * count of the reconnects and retries since the last line. */
static void warn_retry(const struct kb_redis *r, const char *why, const char *verb) {
  long now = mono_ms(), last = atomic_load(&warned_ms);
  if ((last != 0 && now - last < WARN_EVERY_MS) ||
      !atomic_compare_exchange_strong(&warned_ms, &last, now)) {
    atomic_fetch_add(&unwarned, 1);
    return;
  }
  long others = atomic_exchange(&unwarned, 0);
  if (others > 0)
    kb_warn("redis at %s: %s; %s (%ld more times in the last %ld s)", r->addr, why, verb,
            others, (now - last) / 1000);
  else
    kb_warn("redis at %s: %s; %s", r->addr, why, verb);
}

static void warn_reconnect(const struct kb_redis *r, const char *why) {
  warn_retry(r, why, "reconnecting");
}

/* Sends one formatted command on connection `c` and waits for its reply: at most `timeout_ms`,
 * and at most until budget_end once the process is asked to stop. The wait is
 * poll(2) in slices, not a blocking read: hiredis's blocking read retries after EINTR, so a
 * server that holds the connection open and answers nothing (stopped with SIGSTOP, hung, its
 * host frozen) kept the process in read(2) for ever, SIGTERM included. Returns REDIS_OK with
 * `*rep` (new), REDIS_ERR with r->ctx->err set by hiredis, or NO_REPLY_IN_TIME with `*waited_ms`
 * (the connection is then unusable: the reply may still come). */
static int exchange(struct kb_redis *r, redisContext *c, const char *cmd, size_t len,
                    int timeout_ms, void **rep, long *waited_ms) {
  *rep = NULL;
  *waited_ms = 0;
  if (redisAppendFormattedCommand(c, cmd, len) != REDIS_OK)
    return REDIS_ERR;
  long start = mono_ms(), end = start + timeout_ms;
  int done = 0;
  while (!done) { /* the socket's send timeout (reply_timeout_ms) bounds each write */
    if (redisBufferWrite(c, &done) != REDIS_OK)
      return REDIS_ERR;
    if (!done && mono_ms() >= budget_end(r, end)) { /* interrupted (EINTR) past the budget */
      *waited_ms = mono_ms() - start;
      return NO_REPLY_IN_TIME;
    }
  }
  for (;;) {
    if (redisGetReplyFromReader(c, rep) != REDIS_OK)
      return REDIS_ERR;
    if (*rep != NULL)
      return REDIS_OK;
    long now = mono_ms(), until = budget_end(r, end);
    if (now >= until) {
      *waited_ms = now - start;
      return NO_REPLY_IN_TIME;
    }
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int n = poll(&p, 1, (int)(until - now < 200 ? until - now : 200));
    if (n < 0 && errno != EINTR) {
      c->err = REDIS_ERR_IO;
      snprintf(c->errstr, sizeof c->errstr, "poll: %s", strerror(errno));
      return REDIS_ERR;
    }
    if (n > 0 && redisBufferRead(c) != REDIS_OK)
      return REDIS_ERR;
  }
}

/* Sends one formatted command (`cmd`, `len` bytes, from redisFormatCommand*) and reads its
 * reply, reconnecting on I/O errors and on a reply that does not come within the reply timeout
 * (as after a lost reply, the command is sent again: every write the project makes is a script
 * that a resend leaves as one run would), within the retry budget. On success `*reply` is the reply
 * (new), possibly a Redis error reply. */
static int send_formatted(struct kb_redis *r, const char *cmd, size_t len, redisReply **reply,
                          struct kb_error *err) {
  long deadline = mono_ms() + r->retry_ms, delay = 50;
  for (;;) {
    if (r->ctx == NULL) {
      int rc = reconnect(r, deadline, err);
      if (rc)
        return rc;
    }
    void *rep = NULL;
    long waited = 0;
    int got = exchange(r, r->ctx, cmd, len, r->reply_timeout_ms, &rep, &waited);
    if (got == REDIS_OK && rep != NULL) {
      redisReply *rr = rep;
      /* A restarted server answers LOADING while it replays its AOF: wait it out. */
      if (rr->type == REDIS_REPLY_ERROR && strncmp(rr->str, "LOADING", 7) == 0 &&
          mono_ms() < budget_end(r, deadline)) {
        freeReplyObject(rr);
        kb_sleep_ms(50);
        continue;
      }
      /* Over its maxmemory (OOM), or unable to write its AOF or RDB (MISCONF: its disk full
       * or failing), the server refuses a write command, and a script at its first write, so
       * before it changed anything (the refusal's cause cannot change while a script runs):
       * wait for memory or disk to be freed, with the same backoff, within the same budget.
       * Before, a full disk under Redis ended every runner and the scheduler at once (exit 1),
       * the runners' leases still held. */
      int oom = rr->type == REDIS_REPLY_ERROR && strncmp(rr->str, "OOM ", 4) == 0;
      int misconf = rr->type == REDIS_REPLY_ERROR && strncmp(rr->str, "MISCONF ", 8) == 0;
      if ((oom || misconf) && mono_ms() < budget_end(r, deadline)) {
        warn_retry(r, oom ? "out of memory (maxmemory reached)"
                          : "cannot write its data to disk (MISCONF: its disk full or failing)",
                   "retrying");
        freeReplyObject(rr);
        long wait = (long)(rand_r(&r->rng) % (unsigned)delay) + 1;
        kb_sleep_ms(wait < budget_end(r, deadline) - mono_ms() ? wait : 1);
        delay = delay * 2 > 2000 ? 2000 : delay * 2;
        continue;
      }
      *reply = rep;
      return KB_OK;
    }
    if (r->ctx->err == REDIS_ERR_OOM)
      return kb_error_set(err, KB_ENOMEM, "out of memory talking to redis");
    if (r->ctx->err == REDIS_ERR_PROTOCOL) {
      kb_error_set(err, KB_ENOTREDIS, "%s is not a redis server: %s", r->addr, r->ctx->errstr);
      redisFree(r->ctx);
      r->ctx = NULL;
      return KB_ENOTREDIS;
    }
    char why[160];
    if (got == NO_REPLY_IN_TIME)
      snprintf(why, sizeof why, "no reply in %ld ms (the server stopped, hung or overloaded)",
               waited);
    else
      snprintf(why, sizeof why, "%s", r->ctx->errstr);
    warn_reconnect(r, why);
    redisFree(r->ctx);
    r->ctx = NULL;
    if (mono_ms() >= budget_end(r, deadline))
      return kb_error_set(err, KB_ECONN, "lost connection to redis at %s: %s", r->addr, why);
    /* a server that accepts and drops at once must not make this a busy loop */
    long wait = (long)(rand_r(&r->rng) % (unsigned)delay) + 1;
    kb_sleep_ms(wait < budget_end(r, deadline) - mono_ms() ? wait : 1);
    delay = delay * 2 > 2000 ? 2000 : delay * 2;
  }
}

/* Sends `cmd` (stolen: freed here) and maps an error reply to KB_EREDIS unless `allow_error`. */
static int send_and_check(struct kb_redis *r, char *cmd, long long len, const char *name,
                          int allow_error, redisReply **reply, struct kb_error *err) {
  *reply = NULL;
  if (len < 0)
    return kb_error_set(err, KB_ENOMEM, "out of memory formatting a redis command");
  redisReply *rep = NULL;
  int rc = send_formatted(r, cmd, (size_t)len, &rep, err);
  redisFreeCommand(cmd);
  if (rc)
    return rc;
  if (rep->type == REDIS_REPLY_ERROR && !allow_error) {
    kb_error_set(err, KB_EREDIS, "redis %s: %s", name, rep->str);
    freeReplyObject(rep);
    return KB_EREDIS;
  }
  *reply = rep;
  return KB_OK;
}

int kb_redis_command(struct kb_redis *r, int argc, const char **argv, const size_t *lens,
                     int allow_error, redisReply **reply, struct kb_error *err) {
  char *cmd = NULL;
  long long len = redisFormatCommandArgv(&cmd, argc, argv, lens);
  return send_and_check(r, cmd, len, argv[0], allow_error, reply, err);
}

int kb_redis_commandf(struct kb_redis *r, redisReply **reply, struct kb_error *err,
                      const char *fmt, ...) {
  char *cmd = NULL;
  va_list ap;
  va_start(ap, fmt);
  int len = redisvFormatCommand(&cmd, fmt, ap);
  va_end(ap);
  char name[16];
  snprintf(name, sizeof name, "%.*s", (int)strcspn(fmt, " "), fmt);
  return send_and_check(r, cmd, len, name, 0, reply, err);
}

static int find_script(const char *name) {
  for (int i = 0; kb_lua_scripts[i].name; i++)
    if (strcmp(kb_lua_scripts[i].name, name) == 0)
      return i;
  return -1;
}

static int load_script(struct kb_redis *r, int idx, struct kb_error *err) {
  const char *argv[3] = {"SCRIPT", "LOAD", kb_lua_scripts[idx].text};
  size_t lens[3] = {6, 4, kb_lua_scripts[idx].len};
  redisReply *rep = NULL;
  int rc = kb_redis_command(r, 3, argv, lens, 0, &rep, err);
  if (rc)
    return rc;
  if (rep->type != REDIS_REPLY_STRING || rep->len != 40) {
    freeReplyObject(rep);
    return kb_error_set(err, KB_EREDIS, "SCRIPT LOAD of \"%s\" gave an unexpected reply",
                        kb_lua_scripts[idx].name);
  }
  memcpy(r->shas[idx], rep->str, 40);
  r->shas[idx][40] = '\0';
  freeReplyObject(rep);
  return KB_OK;
}

int kb_redis_script_error(const char *name, const char *text, struct kb_error *err) {
  if (strncmp(text, "KB_", 3) == 0) {
    char code[32];
    size_t n = strcspn(text + 3, " ");
    if (n < sizeof code) {
      memcpy(code, text + 3, n);
      code[n] = '\0';
      const char *detail = text + 3 + n;
      while (*detail == ' ')
        detail++;
      return kb_error_set(err, kb_err_from_name(code), "%s", detail);
    }
  }
  return kb_error_set(err, KB_EREDIS, "script %s: %s", name, text);
}

int kb_redis_script(struct kb_redis *r, const char *name, int nkeys, const char **keys,
                    int nargs, const char **args, const size_t *arg_lens, redisReply **reply,
                    struct kb_error *err) {
  *reply = NULL;
  int idx = find_script(name);
  if (idx < 0 || idx >= MAX_SCRIPTS)
    return kb_error_set(err, KB_EINTERNAL, "no embedded script \"%s\"", name);
  int argc = 3 + nkeys + nargs;
  const char **argv = kb_calloc((size_t)argc, sizeof *argv);
  size_t *lens = kb_calloc((size_t)argc, sizeof *lens);
  char nk[16];
  int rc = KB_OK;
  if (argv == NULL || lens == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    goto out;
  }
  snprintf(nk, sizeof nk, "%d", nkeys);
  argv[0] = "EVALSHA";
  argv[2] = nk;
  for (int i = 0; i < nkeys; i++)
    argv[3 + i] = keys[i];
  for (int i = 0; i < nargs; i++) {
    argv[3 + nkeys + i] = args[i];
    lens[3 + nkeys + i] = arg_lens ? arg_lens[i] : strlen(args[i]);
  }
  for (int i = 0; i < 3 + nkeys; i++)
    lens[i] = i == 1 ? 40 : strlen(argv[i]);
  /* Two rounds: the second after (re)loading the script on NOSCRIPT, e.g. after a restart. */
  for (int round = 0; round < 2; round++) {
    if (r->shas[idx][0] == '\0') {
      rc = load_script(r, idx, err);
      if (rc)
        goto out;
    }
    argv[1] = r->shas[idx];
    redisReply *rep = NULL;
    rc = kb_redis_command(r, argc, argv, lens, 1, &rep, err);
    if (rc)
      goto out;
    if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOSCRIPT", 8) == 0) {
      freeReplyObject(rep);
      r->shas[idx][0] = '\0';
      continue;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
      rc = kb_redis_script_error(name, rep->str, err);
      freeReplyObject(rep);
      goto out;
    }
    *reply = rep;
    goto out;
  }
  rc = kb_error_set(err, KB_EREDIS, "script %s: NOSCRIPT after loading it", name);
out:
  kb_free(argv);
  kb_free(lens);
  return rc;
}

int kb_redis_script_sha(struct kb_redis *r, const char *name, char sha[41], struct kb_error *err) {
  int idx = find_script(name);
  if (idx < 0 || idx >= MAX_SCRIPTS)
    return kb_error_set(err, KB_EINTERNAL, "no embedded script \"%s\"", name);
  if (r->shas[idx][0] == '\0') {
    int rc = load_script(r, idx, err);
    if (rc)
      return rc;
  }
  memcpy(sha, r->shas[idx], 41);
  return KB_OK;
}

int kb_key(char *out, size_t size, const char *cid, const char *suffix_fmt, ...) {
  int n = snprintf(out, size, "kb:{%s}:", cid);
  if (n < 0 || (size_t)n >= size)
    return KB_EINVAL;
  va_list ap;
  va_start(ap, suffix_fmt);
  int m = vsnprintf(out + n, size - (size_t)n, suffix_fmt, ap);
  va_end(ap);
  if (m < 0 || (size_t)m >= size - (size_t)n)
    return KB_EINVAL;
  return KB_OK;
}

int kb_redis_shutdown(struct kb_redis *r, struct kb_error *err) {
  if (r->ctx == NULL)
    return kb_error_set(err, KB_ECONN, "not connected to redis at %s", r->addr);
  redisReply *rep = redisCommand(r->ctx, "SHUTDOWN");
  int rc = KB_OK;
  if (rep && rep->type == REDIS_REPLY_ERROR)
    rc = kb_error_set(err, KB_EREDIS, "redis at %s refused SHUTDOWN: %s", r->addr, rep->str);
  if (rep)
    freeReplyObject(rep);
  redisFree(r->ctx);
  r->ctx = NULL;
  return rc;
}
