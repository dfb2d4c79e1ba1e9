/* The campaign's one scheduler (see sched_lock.h). */
#include "sched_lock.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb/clock.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/log.h"
#include "kb/queue.h"
#include "kb/redis.h"

/* One call of the script: op "take" (with `dead`, the value of a holder found dead, or ""),
 * "renew" or "release". `*reply` new. */
static int call(struct kb_redis *r, const struct kb__sched_lock *l, const char *op,
                const char *dead, redisReply **reply, struct kb_error *err) {
  char ttl[16];
  snprintf(ttl, sizeof ttl, "%d", KB_SCHED_LOCK_TTL_MS);
  const char *keys[] = {l->key, l->meta};
  const char *args[] = {op, l->value, ttl, dead};
  return kb_redis_script(r, "sched_lock", 2, keys, 4, args, NULL, reply, err);
}

enum holder { HOLDER_ELSEWHERE, HOLDER_ALIVE_HERE, HOLDER_DEAD_HERE };

/* This process's host and PID namespace, "H/pidns:[N]": two processes whose places are equal
 * see each other's pids (containers may share a host name, not a PID namespace). */
static void place(char *out, size_t size) {
  char host[64] = "", ns[64] = "";
  gethostname(host, sizeof host - 1);
  ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  ns[n > 0 ? n : 0] = '\0';
  snprintf(out, size, "%s/%s", host, ns);
}

/* Where `holder` (a lock's value) runs: a process of this place (host and PID namespace) that
 * exists or no longer does, or elsewhere (or a value without place and pid), whose process
 * cannot be asked. */
static enum holder holder_where(const char *holder) {
  char where[160] = "", mine[160];
  long pid = 0;
  const char *h = strstr(holder, " host="), *p = strstr(holder, " pid=");
  if (h == NULL || p == NULL || sscanf(h, " host=%159s", where) != 1 ||
      sscanf(p, " pid=%ld", &pid) != 1 || pid <= 0)
    return HOLDER_ELSEWHERE;
  place(mine, sizeof mine);
  if (strcmp(where, mine) != 0)
    return HOLDER_ELSEWHERE;
  if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
    return HOLDER_DEAD_HERE;
  /* killed but not yet reaped (its parent killed too, say): a zombie holds nothing */
  char path[64], stat[256] = "";
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (f != NULL) {
    if (fgets(stat, sizeof stat, f) == NULL)
      stat[0] = '\0';
    fclose(f);
  }
  const char *paren = strrchr(stat, ')');
  if (paren != NULL && paren[1] == ' ' && paren[2] == 'Z')
    return HOLDER_DEAD_HERE;
  return HOLDER_ALIVE_HERE;
}

static void *renew_main(void *arg) {
  struct kb__sched_lock *l = arg;
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  struct kb_redis_opts ro = {.addr = l->addr, .retry_ms = KB_SCHED_LOCK_TTL_MS / 4,
                             .stop = l->stop};
  for (;;) {
    pthread_mutex_lock(&l->mu);
    int quit = l->quit;
    pthread_mutex_unlock(&l->mu);
    if (quit)
      break;
    kb_error_clear(&err);
    redisReply *rep = NULL;
    if (r == NULL && kb_redis_connect(&ro, &r, &err) != KB_OK)
      r = NULL;
    if (r != NULL && call(r, l, "renew", "", &rep, &err) == KB_OK) {
      if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 0) {
        freeReplyObject(rep);
        rep = NULL;
        /* who holds it now, for the message */
        char holder[200] = "";
        if (kb_redis_commandf(r, &rep, &err, "GET %s", l->key) == KB_OK &&
            rep->type == REDIS_REPLY_STRING)
          snprintf(holder, sizeof holder, "%s", rep->str);
        pthread_mutex_lock(&l->mu);
        l->lost = 1;
        memcpy(l->holder, holder, sizeof l->holder);
        pthread_mutex_unlock(&l->mu);
      }
    } else if (err.code != KB_OK) {
      kb_warn("scheduler lock: %s", err.msg); /* tried again at the next beat */
    }
    if (rep)
      freeReplyObject(rep);
    for (int i = 0; i < 5; i++) { /* a beat every TTL / 4, a quit seen within TTL / 20 */
      pthread_mutex_lock(&l->mu);
      quit = l->quit;
      pthread_mutex_unlock(&l->mu);
      if (quit)
        break;
      kb_sleep_ms(KB_SCHED_LOCK_TTL_MS / 20);
    }
  }
  kb_redis_free(r);
  return NULL;
}

int kb__sched_lock_take(struct kb__sched_lock *l, struct kb_redis *r, const struct kb_queue *q,
                        const char *addr, struct kb_error *err) {
  volatile sig_atomic_t *stop = l->stop; /* the caller's, kept */
  memset(l, 0, sizeof *l);
  l->stop = stop;
  pthread_mutex_init(&l->mu, NULL);
  kb_queue_key(q, l->key, sizeof l->key, KB_KEY_SCHED_LOCK);
  kb_queue_key(q, l->meta, sizeof l->meta, KB_KEY_META);
  snprintf(l->addr, sizeof l->addr, "%s", addr ? addr : "");
  char where[160];
  place(where, sizeof where);
  FILE *u = fopen("/dev/urandom", "rb");
  unsigned long long token = 0;
  if (u == NULL || fread(&token, sizeof token, 1, u) != 1)
    token = (unsigned long long)getpid() * 2654435761u ^ (unsigned long long)(kb_now_wall() * 1e6);
  if (u != NULL)
    fclose(u);
  snprintf(l->value, sizeof l->value, "%016llx host=%.100s pid=%ld since=%.0f", token, where,
           (long)getpid(), kb_now_wall() * 1000);
  double give_up = kb_now_mono() + KB_SCHED_LOCK_TTL_MS / 1000.0 + 2;
  int said = 0;
  for (;;) {
    redisReply *rep = NULL;
    int rc = call(r, l, "take", "", &rep, err);
    if (rc)
      return rc;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
        rep->element[1]->type == REDIS_REPLY_STRING &&
        holder_where(rep->element[1]->str) == HOLDER_DEAD_HERE) {
      /* killed on this host (kill -9): its restart need not wait for the lock to expire */
      char dead[200];
      snprintf(dead, sizeof dead, "%s", rep->element[1]->str);
      freeReplyObject(rep);
      rep = NULL;
      rc = call(r, l, "take", dead, &rep, err);
      if (rc)
        return rc;
      if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1)
        kb_info("scheduler lock: taken over from a scheduler that is gone (%s)", dead);
    }
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1) {
      freeReplyObject(rep);
      break;
    }
    char holder[200] = "";
    long long pttl = 0;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
        rep->element[1]->type == REDIS_REPLY_STRING)
      snprintf(holder, sizeof holder, "%s", rep->element[1]->str);
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
        rep->element[2]->type == REDIS_REPLY_INTEGER)
      pttl = rep->element[2]->integer;
    freeReplyObject(rep);
    if (holder[0] == '\0')
      return kb_error_set(err, KB_EREDIS, "sched_lock: unexpected reply from redis");
    /* a holder that renews its lock is alive wherever it runs (its pid here may also be a
     * reused one): refused once the lock did not expire in its time to live */
    if (kb_now_mono() >= give_up)
      return kb_error_set(err, KB_ELOCKED, "campaign \"%s\" has a scheduler already: %s (%s, "
                          "renewed every %.1f s); a second one would split its results: stop it, "
                          "or wait for it to end", q->cid, holder, l->key,
                          KB_SCHED_LOCK_TTL_MS / 4000.0);
    if (!said)
      kb_info("waiting for the scheduler lock %s held by %s (it expires in %.1f s unless its "
              "holder renews it)", l->key, holder, pttl / 1000.0);
    said = 1;
    kb_sleep_ms(200);
  }
  if (pthread_create(&l->thread, NULL, renew_main, l) != 0) {
    kb__sched_lock_release(l, r);
    return kb_error_set(err, KB_EINTERNAL, "cannot start the scheduler lock's thread");
  }
  l->started = 1;
  return KB_OK;
}

int kb__sched_lock_check(struct kb__sched_lock *l, struct kb_error *err) {
  pthread_mutex_lock(&l->mu);
  int lost = l->lost;
  char holder[200];
  memcpy(holder, l->holder, sizeof holder);
  pthread_mutex_unlock(&l->mu);
  if (!lost)
    return KB_OK;
  return kb_error_set(err, KB_ELOCKED, "lost the scheduler lock %s to %s: another scheduler "
                      "runs this campaign; stopping before writing more", l->key,
                      holder[0] ? holder : "(none)");
}

void kb__sched_lock_release(struct kb__sched_lock *l, struct kb_redis *r) {
  if (l->key[0] == '\0')
    return;
  if (l->started) {
    pthread_mutex_lock(&l->mu);
    l->quit = 1;
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    l->started = 0;
  }
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (r != NULL && call(r, l, "release", "", &rep, &err) == KB_OK)
    freeReplyObject(rep);
  pthread_mutex_destroy(&l->mu);
  l->key[0] = '\0';
}
