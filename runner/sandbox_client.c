/* The runner's side of the sandbox (see sandbox_client.h). */
#include "sandbox_client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/campaign.h"
#include "kb/buf.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/fs.h"
#include "kb/log.h"
#include "proc.h"
#include "sandbox/proto.h"
#include "watchdog.h"

#define POLL_MS 20

extern char **environ;

struct kb__sandbox {
  char *program;             /* owned; the worker script for KB__SANDBOX_TORCH */
  int worker;                /* enum kb__sandbox_worker */
  int trusted;               /* started with --trusted */
  char backend[8];           /* "host" or "cuda" */
  int device;
  double start_timeout_s;
  volatile sig_atomic_t *stop; /* borrowed */
  double grace_s;            /* a call may run this long past the stop flag */
  pid_t pid;                 /* running child, 0 when none */
  int sock;                  /* protocol socket, -1 when none */
  int err_fd;                /* the child's stderr, -1 when none */
  char dir[PATH_MAX];        /* its working folder, "" when none */
  json_t *hello;             /* its hello (owned) */
  int starts;
  double last_start_s;
  char tail[KB__SANDBOX_TAIL + 1]; /* stderr tail of the current call */
  size_t tail_len;
  char *ro[KB__SANDBOX_RO_MAX]; /* --ro paths, absolute (owned) */
  char *jit_dir;             /* --jit folder (owned), NULL when none */
  char confinement[24];      /* the level the last child's hello reported, "" before one */
  int n_ro;
};

/* ---- environment ----------------------------------------------------------------------- */

static int ends_with(const char *name, size_t len, const char *suffix) {
  size_t n = strlen(suffix);
  return len >= n && strncmp(name + len - n, suffix, n) == 0;
}

int kb__env_secret(const char *name, size_t len) {
  static const char *const suffixes[] = {"_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_PASSWD",
                                         "_CREDENTIALS", "_KEYS", "_PASS"};
  if (len >= 17 && strncmp(name, "KB_REDIS_PASSWORD", 17) == 0)
    return 1;
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
    if (ends_with(name, len, suffixes[i]))
      return 1;
  return 0;
}

static int env_kept(const char *name, size_t len) {
  static const char *const keep[] = {"PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
                                     "KB_BUILD_CPUS",
                                     "CUDA_DEVICE_ORDER", "LANG", "LC_ALL", "TZ",
                                     "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
                                     "KB_CONFINE_OPTIONAL"};
  if (kb__env_secret(name, len))
    return 0;
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
    if (strlen(keep[i]) == len && strncmp(keep[i], name, len) == 0)
      return 1;
  return 0;
}

void kb__env_free(char **env) {
  if (env == NULL)
    return;
  for (char **e = env; *e != NULL; e++)
    kb_free(*e);
  kb_free(env);
}

static char *join(const char *name, const char *value) {
  size_t n = strlen(name) + strlen(value) + 2;
  char *s = kb_malloc(n);
  if (s != NULL)
    snprintf(s, n, "%s=%s", name, value);
  return s;
}

char **kb__sandbox_env(char *const *env, const char *dir) {
  size_t n = 0;
  while (env != NULL && env[n] != NULL)
    n++;
  char **out = kb_calloc(n + 3, sizeof *out);
  if (out == NULL)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(env[i], '=');
    if (eq == NULL || !env_kept(env[i], (size_t)(eq - env[i])))
      continue;
    if ((out[k] = kb_strdup(env[i])) == NULL)
      goto fail;
    k++;
  }
  if ((out[k++] = join("HOME", dir)) == NULL || (out[k++] = join("TMPDIR", dir)) == NULL)
    goto fail;
  return out;
fail:
  kb__env_free(out);
  return NULL;
}

/* ---- finding the program ----------------------------------------------------------------- */

/* "<dir>/<name>" with `dir` of `len` bytes, new; NULL when out of memory. */
static char *join_path(const char *dir, size_t len, const char *name) {
  struct kb_buf b;
  kb_buf_init(&b);
  if (kb_buf_addf(&b, "%.*s/%s", (int)len, dir, name) != KB_OK) {
    kb_buf_release(&b);
    return NULL;
  }
  return kb_buf_detach(&b);
}

/* `name` in $KB_SANDBOX_DIR, else next to this program, else in the build's sandbox folder. */
static char *find_sandbox_file(const char *name) {
  const char *env = getenv("KB_SANDBOX_DIR");
  if (env != NULL && *env)
    return join_path(env, strlen(env), name);
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    const char *slash = strrchr(self, '/');
    char *path = slash ? join_path(self, (size_t)(slash - self), name) : NULL;
    if (path != NULL && access(path, X_OK) == 0)
      return path;
    kb_free(path);
  }
#ifdef KB_SANDBOX_DIR_DEFAULT
  return join_path(KB_SANDBOX_DIR_DEFAULT, strlen(KB_SANDBOX_DIR_DEFAULT), name);
#else
  return kb_strdup(name);
#endif
}

char *kb__sandbox_program(const char *backend) {
  return find_sandbox_file(strcmp(backend, "cuda") == 0 ? "kb-sandbox-cuda" : "kb-sandbox");
}

char *kb__sandbox_torch_script(void) { return find_sandbox_file("kb_sandbox_torch.py"); }

char *kb__tool_guard_program(void) { return find_sandbox_file("kb-tool-guard"); }

char *kb__sandbox_builder_script(void) { return find_sandbox_file("kb_build_modelnew.py"); }

const char *kb__sandbox_python(void) {
  const char *env = getenv("KB_PYTHON");
  return env != NULL && *env ? env : "/usr/bin/python3";
}

/* ---- life cycle -------------------------------------------------------------------------- */

int kb__sandbox_new(const struct kb__sandbox_opts *o, struct kb__sandbox **out,
                    struct kb_error *err) {
  *out = NULL;
  const char *backend = o->backend ? o->backend : "host";
  if (strcmp(backend, "host") != 0 && strcmp(backend, "cuda") != 0)
    return kb_error_set(err, KB_EINVAL, "sandbox backend must be host or cuda, not \"%s\"",
                        backend);
  struct kb__sandbox *sb = kb_calloc(1, sizeof *sb);
  if (sb == NULL)
    return kb_error_set(err, KB_ENOMEM, "cannot create the sandbox: out of memory");
  if (o->worker != KB__SANDBOX_NATIVE && o->worker != KB__SANDBOX_TORCH) {
    kb_free(sb);
    return kb_error_set(err, KB_EINVAL, "unknown sandbox worker %d", o->worker);
  }
  sb->worker = o->worker;
  sb->trusted = o->trusted;
  sb->program = o->program                        ? kb_strdup(o->program)
                : o->worker == KB__SANDBOX_TORCH ? kb__sandbox_torch_script()
                                                  : kb__sandbox_program(backend);
  if (sb->program == NULL) {
    kb_free(sb);
    return kb_error_set(err, KB_ENOMEM, "cannot create the sandbox: out of memory");
  }
  if (sb->worker == KB__SANDBOX_TORCH) {
    const char *py = kb__sandbox_python();
    int rc = KB_OK;
    if (access(py, X_OK) != 0)
      rc = kb_error_set(err, KB_ENOTFOUND, "python interpreter \"%s\" of the PyTorch worker is "
                        "not executable: %s (set KB_PYTHON)", py, strerror(errno));
    else if (access(sb->program, R_OK) != 0)
      rc = kb_error_set(err, KB_ENOTFOUND, "PyTorch worker \"%s\" is not readable: %s (set "
                        "KB_SANDBOX_DIR to its folder)", sb->program, strerror(errno));
    if (rc) {
      kb_free(sb->program);
      kb_free(sb);
      return rc;
    }
  } else if (access(sb->program, X_OK) != 0) {
    int rc = kb_error_set(err, KB_ENOTFOUND, "sandbox program \"%s\" is not executable: %s "
                          "(set KB_SANDBOX_DIR to its folder)", sb->program, strerror(errno));
    kb_free(sb->program);
    kb_free(sb);
    return rc;
  }
  if (o->n_ro < 0 || o->n_ro > KB__SANDBOX_RO_MAX) {
    kb_free(sb->program);
    kb_free(sb);
    return kb_error_set(err, KB_EINVAL, "at most %d read-only paths for the sandbox",
                        KB__SANDBOX_RO_MAX);
  }
  if (o->jit_dir != NULL && (!o->trusted || o->worker != KB__SANDBOX_TORCH)) {
    kb_free(sb->program);
    kb_free(sb);
    return kb_error_set(err, KB_EINVAL, "a JIT cache folder is for a trusted PyTorch worker");
  }
  if (o->jit_dir != NULL) {
    /* made here and passed absolute: the worker starts in its own folder */
    char abs[PATH_MAX];
    if (mkdir(o->jit_dir, 0755) != 0 && errno != EEXIST) {
      int rc = kb_error_set(err, KB_EIO, "cannot create \"%s\": %s", o->jit_dir,
                            strerror(errno));
      kb_free(sb->program);
      kb_free(sb);
      return rc;
    }
    const char *p = realpath(o->jit_dir, abs) != NULL ? abs : o->jit_dir;
    if ((sb->jit_dir = kb_strdup(p)) == NULL) {
      kb_free(sb->program);
      kb_free(sb);
      return kb_error_set(err, KB_ENOMEM, "cannot create the sandbox: out of memory");
    }
  }
  for (int i = 0; i < o->n_ro; i++) {
    char abs[PATH_MAX];
    const char *p = realpath(o->ro[i], abs) != NULL ? abs : o->ro[i];
    if ((sb->ro[sb->n_ro] = kb_strdup(p)) == NULL) {
      for (int j = 0; j < sb->n_ro; j++)
        kb_free(sb->ro[j]);
      kb_free(sb->jit_dir);
      kb_free(sb->program);
      kb_free(sb);
      return kb_error_set(err, KB_ENOMEM, "cannot create the sandbox: out of memory");
    }
    sb->n_ro++;
  }
  snprintf(sb->backend, sizeof sb->backend, "%s", backend);
  sb->device = o->device;
  sb->start_timeout_s = o->start_timeout_s > 0 ? o->start_timeout_s : 60;
  sb->stop = o->stop;
  sb->sock = -1;
  sb->err_fd = -1;
  *out = sb;
  return KB_OK;
}


/* Appends what the child's stderr holds now to the tail. */
static void drain_stderr(struct kb__sandbox *sb) {
  char chunk[4096];
  while (sb->err_fd >= 0) {
    ssize_t n = read(sb->err_fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n <= 0) {
      close(sb->err_fd);
      sb->err_fd = -1;
      return;
    }
    size_t len = (size_t)n;
    const char *src = chunk;
    if (len >= KB__SANDBOX_TAIL) {
      src += len - KB__SANDBOX_TAIL;
      len = KB__SANDBOX_TAIL;
      sb->tail_len = 0;
    } else if (sb->tail_len + len > KB__SANDBOX_TAIL) {
      size_t cut = sb->tail_len + len - KB__SANDBOX_TAIL;
      memmove(sb->tail, sb->tail + cut, sb->tail_len - cut);
      sb->tail_len -= cut;
    }
    memcpy(sb->tail + sb->tail_len, src, len);
    sb->tail_len += len;
    sb->tail[sb->tail_len] = '\0';
  }
}

/* Ends the child: SIGKILL to its group, reap, close, remove the folder. Fills `*sig` and
 * `*code` (may be NULL) from its wait status. */
static void stop_child(struct kb__sandbox *sb, int *sig, int *code) {
  if (sb->pid > 0) {
    /* the zombie keeps its pid and group from reuse until reaped: the kill cannot miss */
    kill(-sb->pid, SIGKILL);
    kill(sb->pid, SIGKILL);
    int status = 0;
    pid_t r;
    do
      r = waitpid(sb->pid, &status, 0);
    while (r < 0 && errno == EINTR);
    if (r == sb->pid) {
      if (sig != NULL)
        *sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      if (code != NULL)
        *code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    }
    sb->pid = 0;
  }
  drain_stderr(sb);
  if (sb->sock >= 0)
    close(sb->sock);
  if (sb->err_fd >= 0)
    close(sb->err_fd);
  sb->sock = sb->err_fd = -1;
  if (sb->dir[0]) {
    kb_remove_tree(sb->dir, NULL);
    sb->dir[0] = '\0';
  }
  json_decref(sb->hello);
  sb->hello = NULL;
}

/* Waits up to `seconds` for the child to exit by itself (after quit or a fatal reply); 1 when
 * it did (still unreaped). */
static int wait_exit(struct kb__sandbox *sb, double seconds) {
  double end = kb_now_mono() + seconds;
  while (kb_now_mono() < end) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)sb->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == sb->pid)
      return 1;
    drain_stderr(sb);
    kb_sleep_ms(5);
  }
  return 0;
}

void kb__sandbox_kill(struct kb__sandbox *sb) {
  if (sb != NULL)
    stop_child(sb, NULL, NULL);
}

void kb__sandbox_free(struct kb__sandbox *sb) {
  if (sb == NULL)
    return;
  if (sb->pid > 0 && sb->sock >= 0) {
    json_t *quit = json_pack("{s:s}", "op", "quit");
    struct kb_error err = {0};
    if (quit != NULL && kb__msg_write(sb->sock, quit, kb_now_mono() + 1, &err) == KB_OK)
      wait_exit(sb, 1.0);
    json_decref(quit);
  }
  stop_child(sb, NULL, NULL);
  for (int i = 0; i < sb->n_ro; i++)
    kb_free(sb->ro[i]);
  kb_free(sb->jit_dir);
  kb_free(sb->program);
  kb_free(sb);
}

void kb__sandbox_set_stop(struct kb__sandbox *sb, volatile sig_atomic_t *stop) {
  sb->stop = stop;
}

void kb__sandbox_set_grace(struct kb__sandbox *sb, double seconds) {
  sb->grace_s = seconds > 0 ? seconds : 0;
}

pid_t kb__sandbox_pid(const struct kb__sandbox *sb) { return sb->pid; }
json_t *kb__sandbox_hello(const struct kb__sandbox *sb) { return sb->hello; }
int kb__sandbox_starts(const struct kb__sandbox *sb) { return sb->starts; }
double kb__sandbox_last_start_s(const struct kb__sandbox *sb) { return sb->last_start_s; }
const char *kb__sandbox_confinement(const struct kb__sandbox *sb) { return sb->confinement; }

const char *kb__sandbox_dir(const struct kb__sandbox *sb) {
  return sb->dir[0] ? sb->dir : NULL;
}

static void set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Folds the tail's blanks for a message. */
static void tail_text(const struct kb__sandbox *sb, char *out, size_t size) {
  size_t n = 0;
  for (size_t i = 0; i < sb->tail_len && n + 1 < size; i++) {
    char c = sb->tail[i];
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
    out[n++] = (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  while (n > 0 && out[n - 1] == ' ')
    n--;
  out[n] = '\0';
}

/* Reads one reply into `*out`, draining stderr meanwhile. Returns an enum kb__frame_status. */
static int read_reply(struct kb__sandbox *sb, double deadline, json_t **out,
                      struct kb_error *err) {
  *out = NULL;
  double stop_seen = 0;
  /* the time this job was suspended does not count (watchdog.h) */
  struct kb__watchdog w;
  kb__watchdog_init(&w, deadline - kb_now_mono(), sb->pid);
  for (;;) {
    struct pollfd pfd[2] = {{.fd = sb->sock, .events = POLLIN}, {.fd = sb->err_fd, .events = POLLIN}};
    poll(pfd, sb->err_fd >= 0 ? 2 : 1, kb__watchdog_slice(&w, POLL_MS));
    int expired = kb__watchdog_expired(&w);
    drain_stderr(sb);
    if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
      break;
    if (sb->stop != NULL && *sb->stop) {
      if (stop_seen == 0)
        stop_seen = kb_now_mono();
      if (kb_now_mono() - stop_seen >= sb->grace_s)
        return KB__FRAME_STOPPED;
    }
    if (expired)
      return KB__FRAME_TIMEOUT;
  }
  /* a reply has begun: the rest of it follows quickly, or the child dies mid-message */
  char *text = NULL;
  size_t len = 0;
  int st = kb__frame_read(sb->sock, &text, &len, w.deadline, NULL, err);
  drain_stderr(sb);
  if (st != KB__FRAME_OK)
    return st;
  int rc = kb__msg_parse(text, len, out, err);
  kb_free(text);
  return rc == KB_OK ? KB__FRAME_OK : KB__FRAME_IO;
}

/* What the sandbox's exit status `code` before its hello means (docs/sandbox.md), as ": ..." to
 * follow the number, or "" for a status without a meaning of its own. */
static const char *start_status_text(int code) {
  switch (code) {
  case KB_EXIT_USAGE: return ": bad command line";
  case KB_EXIT_CONFINE: return ": it cannot confine itself";
  case KB_EXIT_DEVICE: return ": the device cannot be opened";
  case KB__SANDBOX_EXIT_BLOCKED: return ": a blocked system call";
  default: return "";
  }
}

/* Kept whole (145 lines, 164 with its comments): spawn and hello are one transaction whose failure paths (fail,
 * died, done) share the child's descriptors and its reaping. */
int kb__sandbox_start(struct kb__sandbox *sb, struct kb_error *err) {
  if (sb->pid > 0)
    return KB_OK;
  /* with a grace time the evaluation under way may finish: its witness's trusted sandbox may
   * still have to start (its hello is then bounded by the grace, as any call) */
  if (sb->stop != NULL && *sb->stop && sb->grace_s <= 0)
    return kb_error_set(err, KB_EINTERRUPTED, "sandbox not started: the runner is leaving");
  const char *tmp = getenv("TMPDIR");
  if (snprintf(sb->dir, sizeof sb->dir, "%s/kb-sandbox.XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
          (int)sizeof sb->dir ||
      mkdtemp(sb->dir) == NULL) {
    int e = errno;
    sb->dir[0] = '\0';
    return kb_error_set(err, KB_EIO, "cannot create the sandbox's working folder: %s",
                        strerror(e));
  }
  int sv[2] = {-1, -1}, ep[2] = {-1, -1};
  char **envp = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  int have_fa = 0, have_at = 0, rc = KB_OK;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ep) != 0) {
    rc = kb_error_set(err, KB_ECHILD, "cannot create the sandbox's channels: %s",
                      strerror(errno));
    goto fail;
  }
  envp = kb__sandbox_env(environ, sb->dir);
  if (envp == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot start the sandbox: out of memory");
    goto fail;
  }
  char device[16], parent[24];
  snprintf(device, sizeof device, "%d", sb->device);
  snprintf(parent, sizeof parent, "%ld", (long)getpid());
  /* the PyTorch worker runs under the interpreter, isolated (-I: no PYTHON* variables, no user
   * site-packages, no script folder on the path) */
  char *python = (char *)kb__sandbox_python();
  char isolated[] = "-I";
  char ro_opt[] = "--ro";
  char trusted[] = "--trusted";
  char jit_opt[] = "--jit";
  char *argv[16 + 2 * KB__SANDBOX_RO_MAX] = {python, isolated, sb->program, "--backend",
                                             sb->backend, "--device", device, "--dir", sb->dir,
                                             "--parent", parent};
  int na = 11;
  for (int i = 0; i < sb->n_ro; i++) {
    argv[na++] = ro_opt;
    argv[na++] = sb->ro[i];
  }
  if (sb->trusted)
    argv[na++] = trusted;
  if (sb->jit_dir != NULL) {
    argv[na++] = jit_opt;
    argv[na++] = sb->jit_dir;
  }
  char **args = sb->worker == KB__SANDBOX_TORCH ? argv : argv + 2;
  have_fa = posix_spawn_file_actions_init(&fa) == 0;
  have_at = posix_spawnattr_init(&at) == 0;
  if (!have_fa || !have_at || posix_spawn_file_actions_adddup2(&fa, sv[1], 0) != 0 ||
      posix_spawn_file_actions_adddup2(&fa, sv[1], 1) != 0 ||
      posix_spawn_file_actions_adddup2(&fa, ep[1], 2) != 0) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot start the sandbox: out of memory");
    goto fail;
  }
  sigset_t none, def;
  sigemptyset(&none);
  sigfillset(&def);
  sigdelset(&def, SIGKILL);
  sigdelset(&def, SIGSTOP);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &def);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                    POSIX_SPAWN_SETSIGDEF);
  double t0 = kb_now_mono();
  pid_t pid = 0;
  int e = posix_spawn(&pid, args[0], &fa, &at, args, envp);
  if (e != 0) {
    rc = kb_error_set(err, KB_ECHILD, "cannot start the sandbox \"%s\": %s", args[0],
                      strerror(e));
    goto fail;
  }
  sb->pid = pid;
  close(sv[1]);
  close(ep[1]);
  sv[1] = ep[1] = -1;
  sb->sock = sv[0];
  sb->err_fd = ep[0];
  sv[0] = ep[0] = -1;
  set_nonblock(sb->sock);
  set_nonblock(sb->err_fd);
  sb->tail_len = 0;
  sb->tail[0] = '\0';

  json_t *hello = json_pack("{s:s}", "op", "hello");
  json_t *reply = NULL;
  double deadline = kb_now_mono() + sb->start_timeout_s;
  if (hello == NULL || kb__msg_write(sb->sock, hello, deadline, err) != KB_OK) {
    json_decref(hello);
    goto died;
  }
  json_decref(hello);
  int st = read_reply(sb, deadline, &reply, err);
  if (st == KB__FRAME_OK &&
      strcmp(json_string_value(json_object_get(reply, "op")), "hello") == 0) {
    sb->hello = reply;
    const char *lvl =
        json_string_value(json_object_get(json_object_get(reply, "confinement"), "level"));
    snprintf(sb->confinement, sizeof sb->confinement, "%s",
             lvl != NULL && kb_confinement_rank(lvl) >= 0 ? lvl : "none");
    sb->starts++;
    sb->last_start_s = kb_now_mono() - t0;
    const char *dev = json_string_value(json_object_get(reply, "device"));
    json_t *bw = json_object_get(reply, "bandwidth_gbs");
    kb_info("sandbox %ld started (%s, %s) in %.3f s, memory bandwidth %.1f GB/s (probed)",
            (long)pid, sb->backend, dev ? dev : "unknown device", sb->last_start_s,
            json_is_number(bw) ? json_number_value(bw) : 0.0);
    goto done;
  }
  json_decref(reply);
  if (st == KB__FRAME_STOPPED) {
    stop_child(sb, NULL, NULL);
    rc = kb_error_set(err, KB_EINTERRUPTED, "sandbox start stopped: the runner is leaving");
    goto done;
  }
  if (st == KB__FRAME_TIMEOUT) {
    char tail[KB__SANDBOX_TAIL + 1];
    stop_child(sb, NULL, NULL);
    tail_text(sb, tail, sizeof tail);
    kb_error_clear(err);
    rc = kb_error_set(err, KB_ECHILD, "sandbox did not say hello within %g s (killed)%s%s",
                      sb->start_timeout_s, tail[0] ? ": " : "", tail);
    goto done;
  }
died: {
  int sig = 0, code = 0;
  if (sb->pid > 0)
    wait_exit(sb, 0.5);
  char tail[KB__SANDBOX_TAIL + 1];
  stop_child(sb, &sig, &code);
  tail_text(sb, tail, sizeof tail);
  char sbuf[32];
  kb_error_clear(err);
  if (sig > 0)
    rc = kb_error_set(err, KB_ECHILD, "sandbox died before saying hello: killed by %s%s%s",
                      kb__signal_name(sig, sbuf, sizeof sbuf), tail[0] ? ": " : "", tail);
  else
    rc = kb_error_set(err, KB_ECHILD, "sandbox did not say hello (exit status %d%s)%s%s", code,
                      start_status_text(code), tail[0] ? ": " : "", tail);
  goto done;
}
fail:
  if (sb->dir[0]) {
    kb_remove_tree(sb->dir, NULL);
    sb->dir[0] = '\0';
  }
done:
  for (int i = 0; i < 2; i++) {
    if (sv[i] >= 0)
      close(sv[i]);
    if (ep[i] >= 0)
      close(ep[i]);
  }
  if (have_fa)
    posix_spawn_file_actions_destroy(&fa);
  if (have_at)
    posix_spawnattr_destroy(&at);
  kb__env_free(envp);
  return rc;
}

void kb__sb_call_release(struct kb__sb_call *call) {
  if (call == NULL)
    return;
  json_decref(call->reply);
  call->reply = NULL;
}

/* A request's nonce: 16 bytes of the kernel's generator in hex, into `out` (33 bytes). */
static int new_nonce(char out[33], struct kb_error *err) {
  unsigned char b[16];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
    return kb_error_set(err, KB_EIO, "no random bytes for a request's nonce: %s",
                        strerror(errno));
  for (size_t i = 0; i < sizeof b; i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
  return KB_OK;
}

/* Whether the child has written anything that no request asked for: candidate code of the
 * last request, after its reply (a thread), writing on the protocol socket. */
static int unasked(const struct kb__sandbox *sb) {
  struct pollfd p = {.fd = sb->sock, .events = POLLIN};
  return sb->sock >= 0 && poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

int kb__sandbox_call(struct kb__sandbox *sb, const json_t *req, double timeout_s,
                     struct kb__sb_call *call, struct kb_error *err) {
  return kb__sandbox_call_answering(sb, req, timeout_s, NULL, call, err);
}

/* Reads frames until the reply to the request under `nonce`: each frame of `ans`'s op before
 * it (the child asking, with the nonce) answered with `ans->fn`'s answer and the nonce. A
 * frame of that op without the nonce, or one the hook refuses, is KB__FRAME_IO with `detail`
 * saying why. Returns a KB__FRAME_* status and the reply in *reply. */
static int read_answering(struct kb__sandbox *sb, const char *nonce, double deadline,
                          const struct kb__sb_answerer *ans, json_t **reply,
                          struct kb_error *io, char *detail, size_t size) {
  for (;;) {
    int st = read_reply(sb, deadline, reply, io);
    const char *op = st == KB__FRAME_OK ? json_string_value(json_object_get(*reply, "op")) : NULL;
    if (ans == NULL || op == NULL || strcmp(op, ans->op) != 0)
      return st;
    const char *echo = json_string_value(json_object_get(*reply, "nonce"));
    json_t *a = NULL;
    if (echo == NULL || strcmp(echo, nonce) != 0)
      snprintf(detail, size, "a \"%.32s\" frame %s the request's nonce", ans->op,
               echo == NULL ? "without" : "with another nonce than");
    else if (ans->fn(ans->ctx, *reply, &a, detail, size) == KB_OK && a != NULL &&
             json_object_set_new(a, "nonce", json_string(nonce)) == 0) {
      json_decref(*reply);
      *reply = NULL;
      int wr = kb__msg_write(sb->sock, a, deadline, io);
      json_decref(a);
      if (wr != KB_OK)
        return io->code == KB_ETIMEOUT ? KB__FRAME_TIMEOUT : KB__FRAME_EOF;
      continue;
    }
    json_decref(a);
    json_decref(*reply);
    *reply = NULL;
    return KB__FRAME_IO;
  }
}

int kb__sandbox_call_answering(struct kb__sandbox *sb, const json_t *req, double timeout_s,
                               const struct kb__sb_answerer *ans, struct kb__sb_call *call,
                               struct kb_error *err) {
  memset(call, 0, sizeof *call);
  if (sb->pid > 0 && unasked(sb)) {
    kb_warn("the sandbox (pid %d) wrote on its protocol socket after its last reply: code it "
            "ran did (a reply the sandbox did not send); replaced", (int)sb->pid);
    stop_child(sb, NULL, NULL);
  }
  int rc = kb__sandbox_start(sb, err);
  if (rc)
    return rc;
  char nonce[33];
  rc = new_nonce(nonce, err);
  if (rc)
    return rc;
  json_t *q = json_copy((json_t *)req);
  if (q == NULL || json_object_set_new(q, "nonce", json_string(nonce)) != 0) {
    json_decref(q);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  drain_stderr(sb);
  sb->tail_len = 0;
  sb->tail[0] = '\0';
  double t0 = kb_now_mono();
  double deadline = t0 + timeout_s;
  struct kb_error io = {0};
  int st;
  json_t *reply = NULL;
  if (kb__msg_write(sb->sock, q, deadline, &io) != KB_OK)
    st = io.code == KB_ETIMEOUT ? KB__FRAME_TIMEOUT : KB__FRAME_EOF;
  else
    st = read_answering(sb, nonce, deadline, ans, &reply, &io, call->detail,
                        sizeof call->detail);
  json_decref(q);
  call->seconds = kb_now_mono() - t0;
  const char *echo = st == KB__FRAME_OK ? json_string_value(json_object_get(reply, "nonce"))
                                        : NULL;
  if (st == KB__FRAME_OK && (echo == NULL || strcmp(echo, nonce) != 0)) {
    snprintf(call->detail, sizeof call->detail, "a reply %s the request's nonce (op \"%.32s\")",
             echo == NULL ? "without" : "with another nonce than",
             json_is_string(json_object_get(reply, "op"))
                 ? json_string_value(json_object_get(reply, "op"))
                 : "");
    json_decref(reply);
    reply = NULL;
    st = KB__FRAME_IO;
  } else if (st != KB__FRAME_OK && st != KB__FRAME_TIMEOUT && st != KB__FRAME_STOPPED &&
             st != KB__FRAME_EOF && st != KB__FRAME_TRUNCATED && call->detail[0] == '\0') {
    snprintf(call->detail, sizeof call->detail, "not a protocol message: %.100s", io.msg);
  }
  switch (st) {
  case KB__FRAME_OK:
    call->outcome = KB__SB_REPLY;
    call->reply = reply;
    if (json_is_true(json_object_get(reply, "fatal"))) {
      /* it exits by itself; a process that does not is killed */
      wait_exit(sb, 5.0);
      stop_child(sb, NULL, NULL);
    }
    break;
  case KB__FRAME_TIMEOUT:
    call->outcome = KB__SB_TIMEOUT;
    stop_child(sb, NULL, NULL);
    break;
  case KB__FRAME_STOPPED:
    call->outcome = KB__SB_STOPPED;
    stop_child(sb, NULL, NULL);
    break;
  case KB__FRAME_EOF:
  case KB__FRAME_TRUNCATED:
    call->outcome = KB__SB_DIED;
    wait_exit(sb, 2.0);
    stop_child(sb, &call->signal, &call->exit_code);
    break;
  default: /* the child's own code frames every reply with the nonce: code it ran wrote this */
    call->outcome = KB__SB_FORGED;
    stop_child(sb, NULL, NULL);
    break;
  }
  tail_text(sb, call->tail, sizeof call->tail);
  return rc;
}
