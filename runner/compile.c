/* Host candidate builds and their content-addressed cache (see compile.h). */
#include "compile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "kb/hash.h"
#include "proc.h"

#define DEFAULT_TIMEOUT_S 60.0
/* A temporary build folder this old was left by a runner that died mid-build. */
#define STALE_TMP_S 3600
/* Names inside a temporary build folder. */
#define SRC_NAME "candidate.c"
#define LIB_NAME "lib.so"
#define LOG_NAME "build.log"
#define ERR_NAME "build.err"

/* Splits `s` (borrowed) on blanks into a NULL-terminated array of new strings in `*out` (new),
 * with `*n` words. Errors: KB_ENOMEM. */
static int split_words(const char *s, char ***out, int *n) {
  char **words = NULL;
  int count = 0;
  *out = NULL;
  *n = 0;
  for (const char *p = s; p != NULL && *p;) {
    while (*p && isspace((unsigned char)*p))
      p++;
    if (!*p)
      break;
    const char *start = p;
    while (*p && !isspace((unsigned char)*p))
      p++;
    char **grown = kb_reallocarray(words, (size_t)count + 2, sizeof *words);
    if (grown == NULL)
      goto nomem;
    words = grown;
    words[count] = kb_strndup(start, (size_t)(p - start));
    if (words[count] == NULL)
      goto nomem;
    count++;
    words[count] = NULL;
  }
  if (words == NULL) {
    words = kb_calloc(1, sizeof *words);
    if (words == NULL)
      return KB_ENOMEM;
  }
  *out = words;
  *n = count;
  return KB_OK;
nomem:
  for (int i = 0; i < count; i++)
    kb_free(words[i]);
  kb_free(words);
  return KB_ENOMEM;
}

static void free_words(char **words) {
  if (words == NULL)
    return;
  for (char **w = words; *w; w++)
    kb_free(*w);
  kb_free(words);
}

/* mkdir -p. Errors: KB_EIO naming the folder. */
static int make_dirs(const char *path, struct kb_error *err) {
  char *copy = kb_strdup(path);
  if (copy == NULL)
    return kb_error_set(err, KB_ENOMEM, "cannot create \"%s\": out of memory", path);
  int rc = KB_OK;
  for (char *p = copy + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char saved = *p;
    *p = '\0';
    if (mkdir(copy, 0777) != 0 && errno != EEXIST) {
      rc = kb_error_set(err, KB_EIO, "cannot create \"%s\": %s", copy, strerror(errno));
      break;
    }
    *p = saved;
    if (saved == '\0')
      break;
  }
  kb_free(copy);
  if (rc == KB_OK) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
      rc = kb_error_set(err, KB_EIO, "cache folder \"%s\" is not a folder", path);
  }
  return rc;
}

/* Writes `len` bytes to a new file `path`. Errors: KB_EIO. */
static int write_file(const char *path, const void *data, size_t len, struct kb_error *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return kb_error_set(err, KB_EIO, "cannot write \"%s\": %s", path, strerror(errno));
  const char *p = data;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      close(fd);
      return kb_error_set(err, KB_EIO, "cannot write \"%s\": %s", path, strerror(e));
    }
    p += n;
    len -= (size_t)n;
  }
  if (close(fd) != 0)
    return kb_error_set(err, KB_EIO, "cannot write \"%s\": %s", path, strerror(errno));
  return KB_OK;
}

/* `*out` = new "dir/name". Errors: KB_ENOMEM. */
static int join_path(const char *dir, const char *name, char **out) {
  struct kb_buf b;
  kb_buf_init(&b);
  if (kb_buf_addf(&b, "%s/%s", dir, name) != KB_OK) {
    kb_buf_release(&b);
    return KB_ENOMEM;
  }
  *out = kb_buf_detach(&b);
  return *out ? KB_OK : KB_ENOMEM;
}

struct exec_args {
  char **argv;     /* borrowed */
  const char *dir; /* working folder, NULL to stay */
};

/* Child side of a compiler run: on failure to start, the errno goes to the report pipe. */
static void exec_child(void *arg) {
  const struct exec_args *a = arg;
  fcntl(KB__PROC_REPORT_FD, F_SETFD, FD_CLOEXEC);
  /* plain ASCII messages whatever the runner's locale: logs and reasons read the same
   * everywhere, and the --version text in the cache key does not depend on the locale */
  setenv("LC_ALL", "C", 1);
  if (a->dir == NULL || chdir(a->dir) == 0)
    execvp(a->argv[0], a->argv);
  int e = errno;
  ssize_t ignored = write(KB__PROC_REPORT_FD, &e, sizeof e);
  (void)ignored;
  _exit(127);
}

/* Runs `argv` in `dir` under the watchdog. A compiler that cannot be started is KB_ECHILD. */
static int run_tool(char **argv, const char *dir, double timeout_s, struct kb__proc_result *res,
                    struct kb_error *err) {
  struct exec_args a = {argv, dir};
  int rc = kb__proc_run(exec_child, &a, timeout_s, KB__COMPILE_LOG_MAX, sizeof(int), res, err);
  if (rc)
    return rc;
  if (res->report.len >= sizeof(int)) {
    int e;
    memcpy(&e, res->report.data, sizeof e);
    return kb_error_set(err, KB_ECHILD, "cannot run compiler \"%s\": %s", argv[0], strerror(e));
  }
  return KB_OK;
}

/* Removes the folders "tmp.*" in the cache that a dead runner left, if older than STALE_TMP_S. */
static void remove_stale_tmp(const char *cache_dir) {
  DIR *d = opendir(cache_dir);
  if (d == NULL)
    return;
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "tmp.", 4) != 0)
      continue;
    char *path = NULL;
    if (join_path(cache_dir, e->d_name, &path) != KB_OK)
      break;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && now - st.st_mtime > STALE_TMP_S) {
      static const char *const names[] = {SRC_NAME, LIB_NAME, LOG_NAME, ERR_NAME};
      for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *file = NULL;
        if (join_path(path, names[i], &file) == KB_OK)
          unlink(file);
        kb_free(file);
      }
      rmdir(path);
    }
    kb_free(path);
  }
  closedir(d);
}

void kb__compiler_release(struct kb__compiler *cc) {
  if (cc == NULL)
    return;
  kb_free(cc->cache_dir);
  free_words(cc->argv);
  kb_free(cc->version);
  kb_free(cc->include_dir);
  memset(cc, 0, sizeof *cc);
}

int kb__compiler_init(struct kb__compiler *cc, const char *cache_dir, const char *command,
                      const char *include_dir, struct kb_error *err) {
  struct kb__proc_result res;
  struct kb_buf header;
  int argc = 0;
  int rc;
  memset(cc, 0, sizeof *cc);
  kb__proc_result_init(&res);
  kb_buf_init(&header);
  cc->timeout_s = DEFAULT_TIMEOUT_S;

  rc = make_dirs(cache_dir, err);
  if (rc)
    goto out;
  cc->cache_dir = realpath(cache_dir, NULL);
  if (cc->cache_dir == NULL) {
    rc = kb_error_set(err, KB_EIO, "cannot resolve \"%s\": %s", cache_dir, strerror(errno));
    goto out;
  }
  /* realpath() allocates with malloc; keep every owned string on the kb_ allocator */
  char *resolved = cc->cache_dir;
  cc->cache_dir = kb_strdup(resolved);
  free(resolved);
  cc->include_dir = kb_strdup(include_dir);
  if (cc->cache_dir == NULL || cc->include_dir == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot set up the compiler: out of memory");
    goto out;
  }
  remove_stale_tmp(cc->cache_dir);

  rc = split_words(command ? command : "cc", &cc->argv, &argc);
  if (rc) {
    rc = kb_error_set(err, rc, "cannot set up the compiler: out of memory");
    goto out;
  }
  if (argc == 0) {
    rc = kb_error_set(err, KB_EINVAL, "compiler command is empty");
    goto out;
  }

  char *header_path = NULL;
  if (join_path(include_dir, "kb_kernel.h", &header_path) != KB_OK) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot set up the compiler: out of memory");
    goto out;
  }
  rc = kb_buf_read_file(&header, header_path, err);
  kb_free(header_path);
  if (rc)
    goto out;
  rc = kb_sha256_hex(header.data, header.len, cc->abi_hash, err);
  if (rc)
    goto out;

  char **vargv = kb_calloc((size_t)argc + 2, sizeof *vargv);
  if (vargv == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot set up the compiler: out of memory");
    goto out;
  }
  for (int i = 0; i < argc; i++)
    vargv[i] = cc->argv[i];
  vargv[argc] = "--version";
  rc = run_tool(vargv, NULL, 30.0, &res, err);
  kb_free(vargv);
  if (rc) {
    if (rc == KB_ECHILD)
      rc = KB_ECOMPILE;
    if (err && err->code != KB_OK)
      err->code = rc;
    goto out;
  }
  if (!res.exited || res.exit_code != 0 || res.timed_out) {
    rc = kb_error_set(err, KB_ECOMPILE, "compiler \"%s\" --version failed: %s", cc->argv[0],
                      res.output.len ? res.output.data : "no output");
    goto out;
  }
  cc->version = kb_buf_detach(&res.output);
  if (cc->version == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot set up the compiler: out of memory");
    goto out;
  }
out:
  kb__proc_result_release(&res);
  kb_buf_release(&header);
  if (rc)
    kb__compiler_release(cc);
  return rc;
}

void kb__build_init(struct kb__build *b) {
  memset(b, 0, sizeof *b);
}

void kb__build_release(struct kb__build *b) {
  if (b == NULL)
    return;
  kb_free(b->lib_path);
  kb_free(b->log);
  kb__build_init(b);
}

/* Feeds `s` and a NUL separator to `h`. */
static int hash_part(struct kb_sha256 *h, const char *s) {
  int rc = kb_sha256_update(h, s, strlen(s));
  if (rc == KB_OK)
    rc = kb_sha256_update(h, "", 1);
  return rc;
}

/* The fixed part of every build command, between the compiler and -I. */
static const char *const fixed_flags[] = {"-O2", "-std=c11", "-shared", "-fPIC"};

static int cache_key(const struct kb__compiler *cc, const char *source, const char *knobs,
                     const char *flags, char key[KB_CAND_ID_LEN + 1], struct kb_error *err) {
  struct kb_sha256 *h = kb_sha256_new();
  if (h == NULL)
    return kb_error_set(err, KB_EINTERNAL, "cannot hash the build: sha-256 unavailable");
  int rc = hash_part(h, "kernelbrain host build 1");
  for (char **w = cc->argv; rc == KB_OK && *w; w++)
    rc = hash_part(h, *w);
  for (size_t i = 0; rc == KB_OK && i < sizeof fixed_flags / sizeof fixed_flags[0]; i++)
    rc = hash_part(h, fixed_flags[i]);
  if (rc == KB_OK)
    rc = hash_part(h, cc->version);
  if (rc == KB_OK)
    rc = hash_part(h, cc->abi_hash);
  if (rc == KB_OK)
    rc = hash_part(h, knobs);
  if (rc == KB_OK)
    rc = hash_part(h, flags);
  if (rc == KB_OK)
    rc = hash_part(h, source);
  if (rc) {
    kb_sha256_free(h);
    return kb_error_set(err, KB_EINTERNAL, "cannot hash the build");
  }
  if (kb_sha256_final_hex(h, key) != KB_OK)
    return kb_error_set(err, KB_EINTERNAL, "cannot hash the build");
  return KB_OK;
}

/* The text of a kept log: the tail of the output, starting at a line, with a note when cut.
 * Returns new text or NULL (no output, or ENOMEM: the log is a diagnostic). */
static char *trimmed_log(const struct kb__proc_result *res) {
  const char *text = res->output.data;
  size_t len = res->output.len;
  if (len == 0)
    return NULL;
  struct kb_buf b;
  kb_buf_init(&b);
  if (res->output_dropped > 0) {
    const char *nl = memchr(text, '\n', len);
    if (nl != NULL && (size_t)(nl - text) + 1 < len) {
      len -= (size_t)(nl - text) + 1;
      text = nl + 1;
    }
    if (kb_buf_addf(&b, "[%zu earlier bytes cut]\n", res->output_dropped) != KB_OK) {
      kb_buf_release(&b);
      return NULL;
    }
  }
  if (kb_buf_add(&b, text, len) != KB_OK) {
    kb_buf_release(&b);
    return NULL;
  }
  return kb_buf_detach(&b);
}

/* Writes the reason of a failed build from its log: the first line naming an error. */
static void failure_reason(const char *log, int exit_code, char *out, size_t size) {
  const char *line = NULL;
  size_t line_len = 0;
  for (const char *p = log; p != NULL && *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    const char *hit = strstr(p, "error");
    if (hit != NULL && (size_t)(hit - p) < len) {
      line = p;
      line_len = len;
      break;
    }
    p = nl ? nl + 1 : NULL;
  }
  int n;
  if (line != NULL)
    n = snprintf(out, size, "does not compile: %.*s", (int)line_len, line);
  else
    n = snprintf(out, size, "does not compile: compiler exited with status %d", exit_code);
  if (n < 0 && size > 0)
    out[0] = '\0';
}

/* Checks knob and flag words: knobs define or undefine macros; flags are options that do not
 * choose the output file. Writes the reason and returns 0 for the first word that is not. */
static int words_allowed(char **knobs, char **flags, char *reason, size_t size) {
  const char *bad = NULL;
  const char *what = NULL;
  for (char **w = knobs; bad == NULL && *w; w++)
    if (strncmp(*w, "-D", 2) != 0 && strncmp(*w, "-U", 2) != 0) {
      bad = *w;
      what = "knob";
    }
  for (char **w = flags; bad == NULL && *w; w++)
    if ((*w)[0] != '-' || strncmp(*w, "-o", 2) == 0) {
      bad = *w;
      what = "flag";
    }
  if (bad == NULL)
    return 1;
  if (snprintf(reason, size, "does not compile: %s \"%s\" is not allowed", what, bad) < 0)
    reason[0] = '\0';
  return 0;
}

/* Puts `text` into the cache as `final` through a temporary file in `tmp_dir`; best effort. */
static void cache_text(const char *tmp_dir, const char *name, const char *text,
                       const char *final) {
  char *tmp = NULL;
  if (join_path(tmp_dir, name, &tmp) != KB_OK)
    return;
  if (write_file(tmp, text ? text : "", text ? strlen(text) : 0, NULL) == KB_OK)
    rename(tmp, final);
  unlink(tmp);
  kb_free(tmp);
}

int kb__compile(const struct kb__compiler *cc, const char *source, const char *knobs,
                const char *flags, struct kb__build *b, struct kb_error *err) {
  char **knob_words = NULL, **flag_words = NULL, **argv = NULL;
  int n_knobs = 0, n_flags = 0, argc = 0;
  char *so_path = NULL, *log_path = NULL, *err_path = NULL, *tmp_dir = NULL;
  char *src_path = NULL, *lib_tmp = NULL, *include_opt = NULL;
  struct kb_buf text;
  struct kb__proc_result res;
  int rc;
  kb_buf_init(&text);
  kb__proc_result_init(&res);
  kb__build_release(b);

  knobs = knobs ? knobs : "";
  flags = flags ? flags : "";
  rc = split_words(knobs, &knob_words, &n_knobs);
  if (rc == KB_OK)
    rc = split_words(flags, &flag_words, &n_flags);
  if (rc) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot compile: out of memory");
    goto out;
  }
  if (!words_allowed(knob_words, flag_words, b->reason, sizeof b->reason))
    goto out;

  rc = cache_key(cc, source, knobs, flags, b->key, err);
  if (rc)
    goto out;
  char name[KB_CAND_ID_LEN + 8];
  int wrote = snprintf(name, sizeof name, "%s.so", b->key);
  rc = wrote > 0 && (size_t)wrote < sizeof name ? join_path(cc->cache_dir, name, &so_path)
                                                : KB_EINTERNAL;
  if (rc == KB_OK) {
    snprintf(name, sizeof name, "%s.log", b->key);
    rc = join_path(cc->cache_dir, name, &log_path);
  }
  if (rc == KB_OK) {
    snprintf(name, sizeof name, "%s.err", b->key);
    rc = join_path(cc->cache_dir, name, &err_path);
  }
  if (rc) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot compile: out of memory");
    goto out;
  }

  if (access(so_path, R_OK) == 0) {
    b->ok = 1;
    b->cached = 1;
    b->lib_path = so_path;
    so_path = NULL;
    if (kb_buf_read_file(&text, log_path, NULL) == KB_OK && text.len > 0)
      b->log = kb_buf_detach(&text);
    goto out;
  }
  if (access(err_path, R_OK) == 0 && kb_buf_read_file(&text, err_path, NULL) == KB_OK) {
    b->cached = 1;
    failure_reason(text.data, 1, b->reason, sizeof b->reason);
    if (text.len > 0)
      b->log = kb_buf_detach(&text);
    goto out;
  }

  rc = join_path(cc->cache_dir, "tmp.XXXXXX", &tmp_dir);
  if (rc) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot compile: out of memory");
    goto out;
  }
  if (mkdtemp(tmp_dir) == NULL) {
    rc = kb_error_set(err, KB_EIO, "cannot create a build folder in \"%s\": %s", cc->cache_dir,
                      strerror(errno));
    kb_free(tmp_dir);
    tmp_dir = NULL;
    goto out;
  }
  if (kb_buf_addf(&text, "-I%s", cc->include_dir) == KB_OK)
    include_opt = kb_buf_detach(&text);
  if (include_opt == NULL || join_path(tmp_dir, SRC_NAME, &src_path) != KB_OK ||
      join_path(tmp_dir, LIB_NAME, &lib_tmp) != KB_OK) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot compile: out of memory");
    goto out;
  }
  rc = write_file(src_path, source, strlen(source), err);
  if (rc)
    goto out;

  int n_fixed = (int)(sizeof fixed_flags / sizeof fixed_flags[0]);
  int n_cc = 0;
  while (cc->argv[n_cc])
    n_cc++;
  argv = kb_calloc((size_t)(n_cc + n_fixed + 1 + n_knobs + n_flags + 5), sizeof *argv);
  if (argv == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot compile: out of memory");
    goto out;
  }
  for (int i = 0; i < n_cc; i++)
    argv[argc++] = cc->argv[i];
  for (int i = 0; i < n_fixed; i++)
    argv[argc++] = (char *)fixed_flags[i];
  argv[argc++] = include_opt;
  for (int i = 0; i < n_knobs; i++)
    argv[argc++] = knob_words[i];
  for (int i = 0; i < n_flags; i++)
    argv[argc++] = flag_words[i];
  argv[argc++] = "-o";
  argv[argc++] = LIB_NAME;
  argv[argc++] = SRC_NAME;
  argv[argc++] = "-lm";
  argv[argc] = NULL;

  rc = run_tool(argv, tmp_dir, cc->timeout_s, &res, err);
  if (rc)
    goto out;
  b->seconds = res.wall_s;
  b->log = trimmed_log(&res);
  if (res.timed_out) {
    if (snprintf(b->reason, sizeof b->reason, "does not compile: compiler timed out after %g s",
                 cc->timeout_s) < 0)
      b->reason[0] = '\0';
    goto out;
  }
  if (res.exited && res.exit_code == 0 && access(lib_tmp, R_OK) == 0) {
    cache_text(tmp_dir, LOG_NAME, b->log, log_path);
    if (rename(lib_tmp, so_path) != 0) {
      rc = kb_error_set(err, KB_EIO, "cannot store \"%s\": %s", so_path, strerror(errno));
      goto out;
    }
    b->ok = 1;
    b->lib_path = so_path;
    so_path = NULL;
    goto out;
  }
  if (res.exited && res.exit_code != 0) {
    failure_reason(b->log, res.exit_code, b->reason, sizeof b->reason);
    /* only a plain failure is deterministic enough to remember */
    cache_text(tmp_dir, ERR_NAME, b->log, err_path);
  } else {
    char sig[32];
    if (snprintf(b->reason, sizeof b->reason, "does not compile: compiler %s",
                 res.signal ? kb__signal_name(res.signal, sig, sizeof sig)
                            : "produced no library") < 0)
      b->reason[0] = '\0';
  }
out:
  if (tmp_dir != NULL) {
    if (src_path)
      unlink(src_path);
    if (lib_tmp)
      unlink(lib_tmp);
    rmdir(tmp_dir);
  }
  kb_free(tmp_dir);
  kb_free(src_path);
  kb_free(lib_tmp);
  kb_free(include_opt);
  kb_free(so_path);
  kb_free(log_path);
  kb_free(err_path);
  kb_free(argv);
  free_words(knob_words);
  free_words(flag_words);
  kb_buf_release(&text);
  kb__proc_result_release(&res);
  if (rc)
    kb__build_release(b);
  return rc;
}
