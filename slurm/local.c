/* Local launcher (see local.h). */
#include "local.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/catalog.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/fs.h"
#include "kb/log.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "kb/submit.h"
#include "kb/task.h"

#include "gpus.h"
#include "launch.h"
#include "leaderboard.h"
#include "lock.h"

extern char **environ;

#define MAX_RUNNERS 64
#define REDIS_ARGV_MAX 32
/* times kb-launch starts its redis-server again after it died, before it gives up */
#define REDIS_RESTARTS_MAX 5

struct local {
  const struct kb_local_opts *o;
  struct kb_submission sub;
  char dir[2048];        /* <results>/<campaign> */
  char redis_dir[2100];  /* <dir>/redis: AOF and log */
  char sock[108];        /* unix socket path (sun_path limit) */
  char addr[200];        /* "unix:<sock>" or the given address */
  char tmp_sock_dir[64]; /* mkdtemp folder when the socket path would be too long */
  pid_t redis_pid;
  char *redis_argv[REDIS_ARGV_MAX]; /* its command line (borrowed strings), for a restart */
  char redis_pidfile[2200];
  int redis_restarts;    /* times the redis-server was started again after it died */
  pid_t sched_pid;
  pid_t runner_pids[MAX_RUNNERS];
  int runner_status[MAX_RUNNERS]; /* waitpid status of a runner that exited */
  int n_runners;
  int gpus[KB_GPUS_MAX]; /* cuda campaigns: one runner per GPU ordinal here */
  int n_gpus;
  int lock_fd;           /* the campaign's launch lock (lock.h), -1 when not held */
};


/* Children die with the launcher (lock.h): redis-server by SIGTERM, which saves its AOF; the
 * scheduler and the runners by SIGKILL, which both survive by design (the HDF5 commit, leases
 * reaped), since their redis goes at the same moment and a SIGTERM would leave them waiting for
 * it. */
static int spawn_env(char *const argv[], const char *log_path, char *const envp[], pid_t *pid,
                     struct kb_error *err) {
  return kb__launch_spawn(argv, log_path, envp, SIGKILL, pid, err);
}

static int spawn_redis(char *const argv[], const char *log_path, pid_t *pid,
                       struct kb_error *err) {
  return kb__launch_spawn(argv, log_path, NULL, SIGTERM, pid, err);
}

/* 1 for the variables that give a redis password, which the redis-server we start has not. */
static int is_credential(const char *var) {
  return strncmp(var, "KB_REDIS_PASSWORD=", 18) == 0 ||
         strncmp(var, "KB_REDIS_PASSWORD_FILE=", 23) == 0 ||
         strncmp(var, "KB_REDIS_USER=", 14) == 0;
}

/* Our environment for a child: with CUDA_VISIBLE_DEVICES set to `gpu` when `gpu` >= 0 (the
 * entry `slot`, caller-owned, holds that one string), and without the redis credentials when
 * `own_redis` (our redis-server has no password: its unix socket is 0700). Returns a new array
 * of borrowed strings (free it with kb_free), or NULL when out of memory. */
static char **child_env(int gpu, int own_redis, char *slot, size_t slot_size) {
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = kb_reallocarray(NULL, n + 2, sizeof *env);
  if (!env)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!(gpu >= 0 && strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) == 0) &&
        !(own_redis && is_credential(environ[i])))
      env[k++] = environ[i];
  if (gpu >= 0) {
    snprintf(slot, slot_size, "CUDA_VISIBLE_DEVICES=%d", gpu);
    env[k++] = slot;
  }
  env[k] = NULL;
  return env;
}

/* Decides where the runners go: host campaigns run o->runners host-backend runners; cuda
 * campaigns one runner per GPU of o->gpus, or of every GPU kb-runner can see. */
static int choose_gpus(struct local *l, struct kb_error *err) {
  const char *cid = l->sub.campaign.id;
  struct kb_launch_args a = {.mode = KB_LAUNCH_LOCAL, .gpus = l->o->gpus,
                             .runners = l->o->runners};
  int rc = kb__launch_check_backend(&a, (int)l->sub.campaign.backend, cid, err);
  if (rc || l->sub.campaign.backend != KB_BACKEND_CUDA)
    return rc;
  if (l->o->gpus)
    return kb__gpus_parse(l->o->gpus, l->gpus, &l->n_gpus, err);
  char runner[1200], why[256];
  snprintf(runner, sizeof runner, "%s/kb-runner", l->o->bin_dir);
  rc = kb__gpus_probe(runner, l->gpus, &l->n_gpus, why, sizeof why, err);
  if (rc == KB_OK && l->n_gpus == 0)
    rc = kb_error_set(err, KB_EINVAL, "campaign \"%s\" uses the cuda backend but kb-runner sees "
                      "no GPU here (%s); run it on a GPU machine or give --gpus LIST", cid, why);
  return rc;
}

/* Removes everything in `dir` but the launch lock (--restart). */
static int remove_contents(const char *dir, struct kb_error *err) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return kb_error_set(err, KB_EIO, "cannot read \"%s\": %s", dir, strerror(errno));
  int rc = KB_OK;
  struct dirent *e;
  while (rc == KB_OK && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
        strcmp(e->d_name, KB_LAUNCH_LOCK_FILE) == 0)
      continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    rc = kb_remove_tree(path, err);
  }
  closedir(d);
  return rc;
}

/* Makes the campaign folder, takes its launch lock (lock.h), ends what a killed launcher left
 * running there, and with --restart empties it. */
static int prepare_dirs(struct local *l, struct kb_error *err) {
  const struct kb_campaign *c = &l->sub.campaign;
  if (snprintf(l->dir, sizeof l->dir, "%s/%s", c->results_dir, c->id) >= (int)sizeof l->dir)
    return kb_error_set(err, KB_EINVAL, "results path too long");
  snprintf(l->redis_dir, sizeof l->redis_dir, "%s/redis", l->dir);
  int rc = kb_mkdirs(l->dir, err);
  if (rc == KB_OK)
    rc = kb__launch_lock(l->dir, &l->lock_fd, err);
  if (rc)
    return rc;
  int orphans = kb__launch_end_orphans(l->redis_dir, 10000);
  if (orphans > 0)
    kb_warn("stopped %d process%s a killed kb-launch left running in %s", orphans,
            orphans == 1 ? "" : "es", l->redis_dir);
  rc = l->o->restart ? remove_contents(l->dir, err) : KB_OK;
  if (rc == KB_OK)
    rc = kb_mkdirs(l->redis_dir, err);
  if (rc)
    return rc;
  if (snprintf(l->sock, sizeof l->sock, "%s/redis.sock", l->redis_dir) >= (int)sizeof l->sock) {
    snprintf(l->tmp_sock_dir, sizeof l->tmp_sock_dir, "/tmp/kb-launch-XXXXXX");
    if (mkdtemp(l->tmp_sock_dir) == NULL)
      return kb_error_set(err, KB_EIO, "cannot create a socket folder in /tmp: %s",
                          strerror(errno));
    snprintf(l->sock, sizeof l->sock, "%s/redis.sock", l->tmp_sock_dir);
  }
  return KB_OK;
}

static int run_redis(struct local *l, struct kb_error *err);

/* redis-server on a socket in the campaign folder, with kb_redis_server_settings (kb/redis.h). */
static int start_redis(struct local *l, struct kb_error *err) {
  char *argv[] = {"redis-server", "--port", "0", "--unixsocket", l->sock,
                  "--unixsocketperm", "700", "--dir", l->redis_dir, "--daemonize", "no",
                  "--pidfile", l->redis_pidfile};
  snprintf(l->redis_pidfile, sizeof l->redis_pidfile, "%s/%s", l->redis_dir,
           KB_LAUNCH_REDIS_PIDFILE);
  int n = 0;
  for (; n < (int)(sizeof argv / sizeof *argv); n++)
    l->redis_argv[n] = argv[n];
  for (int i = 0; kb_redis_server_settings[i] && n < REDIS_ARGV_MAX - 1; i++)
    l->redis_argv[n++] = kb_redis_server_settings[i];
  l->redis_argv[n] = NULL;
  snprintf(l->addr, sizeof l->addr, "unix:%s", l->sock);
  struct kb_redis *other = NULL;
  struct kb_redis_opts oo = {.addr = l->addr, .retry_ms = 1, .no_credentials = 1};
  if (kb_redis_connect(&oo, &other, NULL) == KB_OK) { /* never two servers on one AOF */
    kb_redis_free(other);
    return kb_error_set(err, KB_ELOCKED, "a redis-server kb-launch did not start listens on %s; "
                        "stop it first", l->sock);
  }
  if ((getenv("KB_REDIS_PASSWORD") && *getenv("KB_REDIS_PASSWORD")) ||
      (getenv("KB_REDIS_PASSWORD_FILE") && *getenv("KB_REDIS_PASSWORD_FILE")))
    kb_info("KB_REDIS_PASSWORD(_FILE) not used: the redis-server kb-launch starts has no "
            "password; its unix socket (mode 0700) is open to this user only");
  return run_redis(l, err);
}

/* Spawns the redis-server of start_redis() (its command line in l->redis_argv) and waits until
 * it accepts connections. Returns KB_OK, or KB_ECONN naming its log when it exits at start (a
 * damaged AOF: the log says which file) or does not answer within 10 s. */
static int run_redis(struct local *l, struct kb_error *err) {
  char log[2200];
  snprintf(log, sizeof log, "%s/redis.log", l->redis_dir);
  int rc = spawn_redis(l->redis_argv, log, &l->redis_pid, err);
  if (rc)
    return rc;
  for (int i = 0; i < 200; i++) {
    struct kb_redis *r = NULL;
    struct kb_redis_opts ro = {.addr = l->addr, .retry_ms = 1, .no_credentials = !l->o->redis};
    if (kb_redis_connect(&ro, &r, NULL) == KB_OK) {
      kb_redis_free(r);
      return KB_OK;
    }
    int status;
    if (waitpid(l->redis_pid, &status, WNOHANG) == l->redis_pid) {
      l->redis_pid = 0;
      return kb_error_set(err, KB_ECONN, "redis-server exited at start; see %s", log);
    }
    kb_sleep_ms(50);
  }
  return kb_error_set(err, KB_ECONN, "redis-server did not accept connections within 10 s; "
                      "see %s", log);
}

static void stop_redis(struct local *l) {
  if (l->redis_pid <= 0)
    return;
  struct kb_redis *r = NULL;
  struct kb_redis_opts ro = {.addr = l->addr, .retry_ms = 1, .no_credentials = !l->o->redis};
  if (kb_redis_connect(&ro, &r, NULL) == KB_OK) {
    kb_redis_shutdown(r, NULL);
    kb_redis_free(r);
  } else {
    kill(l->redis_pid, SIGTERM);
  }
  waitpid(l->redis_pid, NULL, 0);
  l->redis_pid = 0;
  if (l->tmp_sock_dir[0])
    rmdir(l->tmp_sock_dir);
}

/* Submits, or finds the campaign already there (resumed from the AOF). */
static int submit(struct local *l, struct kb_queue_status *st, struct kb_error *err) {
  struct kb_redis *r = NULL;
  struct kb_redis_opts ro = {.addr = l->addr, .retry_ms = 3000,
                           .no_credentials = !l->o->redis};
  int rc = kb_redis_connect(&ro, &r, err);
  if (rc)
    return rc;
  struct kb_queue q;
  struct kb_error e = {0};
  rc = kb_queue_open(&q, r, l->sub.campaign.id, &e);
  if (rc == KB_ENOTFOUND) {
    rc = kb_submission_register(&l->sub, r, "kb-launch", NULL, err);
    if (rc == KB_OK)
      rc = kb_queue_open(&q, r, l->sub.campaign.id, err);
    if (rc == KB_OK)
      printf("submitted campaign \"%s\": %d tasks, %d seed candidates\n", l->sub.campaign.id,
             l->sub.n_tasks, l->sub.n_candidates);
  } else if (rc) {
    kb_error_set(err, rc, "%s", e.msg);
  } else {
    printf("resuming campaign \"%s\" from %s\n", l->sub.campaign.id, l->addr);
  }
  if (rc == KB_OK)
    rc = kb_queue_status(&q, st, err);
  kb_redis_free(r);
  fflush(stdout);
  return rc;
}

/* Starts the scheduler and, `with_runners`, the runners. */
static int start_processes(struct local *l, int with_runners, struct kb_error *err) {
  const char *bin = l->o->bin_dir;
  char sched[1200], runner[1200], log[2200], cache[2200], name[64];
  snprintf(sched, sizeof sched, "%s/kb-scheduler", bin);
  snprintf(runner, sizeof runner, "%s/kb-runner", bin);
  snprintf(log, sizeof log, "%s/scheduler.log", l->redis_dir);
  snprintf(cache, sizeof cache, "%s/cache", l->redis_dir);
  char *sargv[] = {sched, "--campaign", l->sub.campaign.id, "--redis", l->addr, "--cache",
                   cache, NULL};
  char **senv = child_env(-1, !l->o->redis, NULL, 0);
  int rc = senv ? spawn_env(sargv, log, senv, &l->sched_pid, err)
                : kb_error_set(err, KB_ENOMEM, "out of memory starting the scheduler");
  kb_free(senv);
  int cuda = l->n_gpus > 0;
  int n = !with_runners ? 0 : cuda ? l->n_gpus : l->o->runners > 0 ? l->o->runners : 1;
  for (int i = 0; rc == KB_OK && i < n && i < MAX_RUNNERS; i++) {
    snprintf(log, sizeof log, "%s/runner-%d.log", l->redis_dir, i);
    char slot[64];
    char **env = child_env(cuda ? l->gpus[i] : -1, !l->o->redis, slot, sizeof slot);
    if (!env) {
      rc = kb_error_set(err, KB_ENOMEM, "out of memory starting runners");
      break;
    }
    if (cuda)
      snprintf(name, sizeof name, "local-gpu%d", l->gpus[i]);
    else
      snprintf(name, sizeof name, "local-%d", i);
    char *rargv[] = {runner, "--campaign", l->sub.campaign.id, "--redis", l->addr, "--cache",
                     cache, "--name", name, "--backend", cuda ? "cuda" : "host", NULL};
    rc = spawn_env(rargv, log, env, &l->runner_pids[i], err);
    kb_free(env);
    if (rc == KB_OK)
      l->n_runners++;
  }
  if (rc == KB_OK && cuda && with_runners) {
    printf("started kb-scheduler and %d runner%s on GPU%s", l->n_runners,
           l->n_runners == 1 ? "" : "s", l->n_runners == 1 ? "" : "s");
    for (int i = 0; i < l->n_runners; i++)
      printf("%s%d", i ? "," : " ", l->gpus[i]);
    printf("; logs in %s\n", l->redis_dir);
  } else if (rc == KB_OK && with_runners) {
    printf("started kb-scheduler and %d runner%s; logs in %s\n", l->n_runners,
           l->n_runners == 1 ? "" : "s", l->redis_dir);
  }
  fflush(stdout);
  return rc;
}

/* Signals every child still running and waits for it. */
static void stop_processes(struct local *l, int sig) {
  for (int i = 0; i < l->n_runners; i++)
    if (l->runner_pids[i] > 0)
      kill(l->runner_pids[i], sig);
  if (l->sched_pid > 0)
    kill(l->sched_pid, sig);
  for (int i = 0; i < l->n_runners; i++)
    if (l->runner_pids[i] > 0) {
      waitpid(l->runner_pids[i], NULL, 0);
      l->runner_pids[i] = 0;
    }
  if (l->sched_pid > 0) {
    waitpid(l->sched_pid, NULL, 0);
    l->sched_pid = 0;
  }
}

static void show_progress(struct local *l, struct kb_redis *r, int tty) {
  struct kb_queue q;
  struct kb_queue_status st;
  if (!tty || kb_queue_open(&q, r, l->sub.campaign.id, NULL) ||
      kb_queue_status(&q, &st, NULL))
    return;
  fprintf(stderr, "\r\033[K%s: %s, %lld done, %lld leased, %lld open, GPU %lld/%lld ms",
          q.cid, st.state, (long long)st.done, (long long)st.leased, (long long)st.open,
          (long long)st.gpu_spent, (long long)st.gpu_total);
  fflush(stderr);
}

/* Reaps runners that exited. Returns KB_OK while at least one runner runs, or all exited
 * cleanly (they leave on their own once the campaign is over, before the scheduler ends);
 * KB_ECHILD, naming the first failed runner and its log, once none runs and one failed: nothing
 * would evaluate the rest of the campaign. */
static int check_runners(struct local *l, struct kb_error *err) {
  int alive = 0;
  for (int i = 0; i < l->n_runners; i++) {
    int status = 0;
    if (l->runner_pids[i] > 0 && waitpid(l->runner_pids[i], &status, WNOHANG) == l->runner_pids[i]) {
      l->runner_pids[i] = 0;
      l->runner_status[i] = status;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        kb_warn("runner %d %s %d; see %s/runner-%d.log", i,
                WIFEXITED(status) ? "exited with status" : "was killed by signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), l->redis_dir, i);
    }
    alive += l->runner_pids[i] > 0;
  }
  if (alive || l->n_runners == 0)
    return KB_OK;
  for (int i = 0; i < l->n_runners; i++) {
    int st = l->runner_status[i];
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      return kb_error_set(err, KB_ECHILD,
                          "every runner has exited and the campaign is not over; runner %d %s %d "
                          "(see %s/runner-%d.log); run the same command to resume",
                          i, WIFEXITED(st) ? "exited with status" : "was killed by signal",
                          WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), l->redis_dir, i);
  }
  return KB_OK;
}

/* Starts the redis-server we run again on its AOF when it died (kill -9, the OOM killer, a
 * crash): the scheduler and the runners reconnect by themselves, so the campaign goes on instead
 * of waiting forever on a socket nobody listens on. Returns KB_OK (running, or started again),
 * or KB_ECONN once it died more than REDIS_RESTARTS_MAX times or does not start again (its log
 * says why, e.g. an AOF damaged in the middle). */
static int check_redis(struct local *l, struct kb_error *err) {
  int status = 0;
  if (l->redis_pid <= 0 || waitpid(l->redis_pid, &status, WNOHANG) != l->redis_pid)
    return KB_OK;
  l->redis_pid = 0;
  const char *how = WIFEXITED(status) ? "exited with status" : "was killed by signal";
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
  if (l->redis_restarts >= REDIS_RESTARTS_MAX)
    return kb_error_set(err, KB_ECONN, "redis-server %s %d after %d restarts; not started "
                        "again; see %s/redis.log; run the same command to resume", how, code,
                        l->redis_restarts, l->redis_dir);
  l->redis_restarts++;
  kb_warn("redis-server %s %d; starting it again on its AOF in %s (restart %d of at most %d)",
          how, code, l->redis_dir, l->redis_restarts, REDIS_RESTARTS_MAX);
  int rc = run_redis(l, err);
  if (rc == KB_OK)
    kb_info("redis-server is back; the scheduler and the runners reconnect");
  return rc;
}

/* Waits for the scheduler to end the campaign. */
static int wait_scheduler(struct local *l, struct kb_error *err) {
  int tty = isatty(STDERR_FILENO);
  struct kb_redis *r = NULL;
  struct kb_redis_opts ro = {.addr = l->addr, .retry_ms = 1000,
                           .no_credentials = !l->o->redis};
  kb_redis_connect(&ro, &r, NULL);
  int rc = KB_OK;
  for (long tick = 0;; tick++) {
    if (*l->o->stop) {
      rc = kb_error_set(err, KB_EINTERRUPTED, "interrupted; run the same command to resume");
      break;
    }
    int status = 0;
    pid_t p = waitpid(l->sched_pid, &status, WNOHANG);
    if (p == l->sched_pid) {
      l->sched_pid = 0;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        rc = kb_error_set(err, KB_ECHILD, "kb-scheduler failed (%s %d); see %s/scheduler.log; "
                          "run the same command to resume",
                          WIFEXITED(status) ? "exit code" : "signal",
                          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                          l->redis_dir);
      break;
    }
    rc = check_redis(l, err);
    if (rc == KB_OK)
      rc = check_runners(l, err);
    if (rc)
      break;
    if (r && tick % 5 == 0)
      show_progress(l, r, tty);
    kb_sleep_ms(100);
  }
  if (tty)
    fprintf(stderr, "\n");
  kb_redis_free(r);
  return rc;
}

/* Writes <dir>/redis.env (KB_REDIS_ADDR_FILE) with the address in use, and prints the line to
 * use: on stdout, or on stderr under --json (stdout is the summary then). */
static int announce_addr(struct local *l, struct kb_error *err) {
  char path[2200], line[600];
  snprintf(path, sizeof path, "%s/%s", l->dir, KB_REDIS_ADDR_FILE);
  snprintf(line, sizeof line, "KB_REDIS=%s\n", l->addr);
  int rc = kb_write_file_atomic(path, line, strlen(line), err);
  if (rc)
    return rc;
  fprintf(l->o->json ? stderr : stdout,
          "KB_REDIS=%s\n(kb-submit status|watch %s finds it in %s)\n", l->addr,
          l->o->campaign_path, path);
  fflush(l->o->json ? stderr : stdout);
  return KB_OK;
}

static int print_result(struct local *l, struct kb_error *err) {
  char path[2200];
  snprintf(path, sizeof path, "%s/summary.json", l->dir);
  if (l->o->json) {
    struct kb_buf b;
    kb_buf_init(&b);
    int rc = kb_buf_read_file(&b, path, err);
    if (rc == KB_OK)
      fputs(b.data, stdout);
    kb_buf_release(&b);
    return rc;
  }
  printf("\n");
  return kb__leaderboard_print(path, stdout, 0, err);
}

int kb__local_run(const struct kb_local_opts *o, struct kb_error *err) {
  struct local l;
  memset(&l, 0, sizeof l);
  l.o = o;
  l.lock_fd = -1;
  int rc = kb_submission_load(o->campaign_path, &l.sub, err);
  if (rc)
    return rc;
  struct kb_queue_status st;
  rc = choose_gpus(&l, err);
  if (rc == KB_OK)
    rc = prepare_dirs(&l, err);
  if (rc == KB_OK && o->redis)
    snprintf(l.addr, sizeof l.addr, "%s", o->redis);
  else if (rc == KB_OK)
    rc = start_redis(&l, err);
  if (rc == KB_OK)
    rc = announce_addr(&l, err);
  if (rc == KB_OK)
    rc = submit(&l, &st, err);
  int over = rc == KB_OK && (strcmp(st.state, "done") == 0 || strcmp(st.state, "cancelled") == 0);
  /* A campaign that is over gets its scheduler alone: it writes summary.json again (also one
   * that could not be written when the campaign ended) and exits. */
  if (rc == KB_OK) {
    rc = start_processes(&l, !over, err);
    if (rc == KB_OK)
      rc = wait_scheduler(&l, err);
    /* Runners leave by themselves once the campaign is over; SIGTERM makes them release
     * whatever they hold when we were interrupted. */
    stop_processes(&l, SIGTERM);
  }
  if (!o->redis)
    stop_redis(&l);
  if (rc == KB_OK)
    rc = print_result(&l, err);
  kb__launch_unlock(l.lock_fd);
  kb_submission_release(&l.sub);
  return rc;
}
