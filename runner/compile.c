/* Candidate builds and their content-addressed cache (see compile.h). */
#include "compile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "kb/fs.h"
#include "kb/hash.h"
#include "kb/log.h"
#include "proc.h"
#include "spawn_tool.h"

#define DEFAULT_TIMEOUT_C_S 60.0
#define DEFAULT_TIMEOUT_CUDA_S 180.0
#define VERSION_TIMEOUT_S 30.0
/* Bytes of nvcc output kept while it runs: the whole resource usage report of a library with
 * hundreds of template instances, before it is summarised into a log. */
#define CUDA_OUTPUT_KEEP (256 * 1024)
/* A temporary build folder this old was left by a runner that died mid-build. */
#define STALE_TMP_S 3600
/* Free space a build needs in the cache's file system (bytes): a compiler that failed with less
 * left there was more likely starved of disk than given bad source (kb__cache_check). */
#define CACHE_MIN_FREE (32L << 20)
/* Bytes of the file kb__cache_check writes to see that the cache takes writes (quota, device). */
#define PROBE_BYTES (64 * 1024)
/* Names inside a temporary build folder. */
#define SRC_NAME_C "candidate.c"
#define SRC_NAME_CUDA "candidate.cu"
#define LIB_NAME "lib.so"
#define LOG_NAME "build.log"
#define ERR_NAME "build.err"
#define META_NAME "build.meta"
#define PROBE_NAME "probe"
#define SUM_NAME "build.sum"
/* Environment variables a compiler keeps; everything else is dropped. */
static const char *const kept_env[] = {"PATH", "LD_LIBRARY_PATH", "HOME"};

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

static int count_words(char *const *words) {
  int n = 0;
  while (words[n] != NULL)
    n++;
  return n;
}

/* mkdir -p. Errors: KB_EWRITE (a write fault, kb_write_errno_code) or KB_EIO naming the
 * folder. */
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
      int e = errno;
      rc = kb_error_set(err, kb_write_errno_code(e), "%s: cannot create: %s (errno %d)", copy,
                        strerror(e), e);
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

/* "<path>: cannot write: <strerror(e)> (errno e)" as KB_EWRITE for a write fault (kb/fs.h:
 * the runner leaves, it is not the candidate's), else KB_EIO. Returns the code. */
static int write_fail(struct kb_error *err, const char *path, int e) {
  return kb_error_set(err, kb_write_errno_code(e), "%s: cannot write: %s (errno %d)", path,
                      strerror(e), e);
}

/* Writes `len` bytes to a new file `path`. Errors: write_fail's. */
static int write_file(const char *path, const void *data, size_t len, struct kb_error *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return write_fail(err, path, errno);
  if (kb_write_all(fd, data, len) != 0) {
    int e = errno;
    close(fd);
    return write_fail(err, path, e);
  }
  if (close(fd) != 0)
    return write_fail(err, path, errno);
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

/* Removes every file in `dir` (a build folder: files only, no subfolders), then `dir`. A few
 * tries: the tools of a killed compiler may still be dying and writing there; what is left
 * after that goes with the stale folders (remove_stale_tmp). */
static void remove_build_dir(const char *dir) {
  for (int attempt = 0; attempt < 5; attempt++) {
    DIR *d = opendir(dir);
    if (d != NULL) {
      struct dirent *e;
      while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
          continue;
        char *file = NULL;
        if (join_path(dir, e->d_name, &file) == KB_OK)
          unlink(file);
        kb_free(file);
      }
      closedir(d);
    }
    if (rmdir(dir) == 0 || errno != ENOTEMPTY)
      return;
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
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
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && now - st.st_mtime > STALE_TMP_S)
      remove_build_dir(path);
    kb_free(path);
  }
  closedir(d);
}

int kb__cache_check(const char *cache_dir, struct kb_error *err) {
  struct statvfs vfs;
  int e = 0;
  if (statvfs(cache_dir, &vfs) != 0)
    e = errno;
  else if (vfs.f_flag & ST_RDONLY)
    e = EROFS;
  unsigned long long avail = e == 0 ? (unsigned long long)vfs.f_bavail * vfs.f_frsize : 0;
  if (e == 0 && (avail < (unsigned long long)CACHE_MIN_FREE ||
                 (vfs.f_files > 0 && vfs.f_favail == 0)))
    return kb_error_set(err, KB_EWRITE, "%s: cannot build: %s (errno %d): %llu KiB free, a "
                        "build needs %ld MiB", cache_dir, strerror(ENOSPC), ENOSPC,
                        avail / 1024, CACHE_MIN_FREE >> 20);
  char *dir = NULL;
  if (e == 0 && join_path(cache_dir, "tmp.XXXXXX", &dir) != KB_OK)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  if (e == 0 && mkdtemp(dir) == NULL)
    e = errno;
  else if (e == 0) {
    static const char zeros[4096];
    char *file = NULL;
    if (join_path(dir, PROBE_NAME, &file) == KB_OK) {
      int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0)
        e = errno;
      for (int i = 0; fd >= 0 && e == 0 && i < PROBE_BYTES / (int)sizeof zeros; i++)
        if (kb_write_all(fd, zeros, sizeof zeros) != 0)
          e = errno;
      if (fd >= 0 && close(fd) != 0 && e == 0)
        e = errno;
    }
    kb_free(file);
    remove_build_dir(dir);
  }
  kb_free(dir);
  if (e == 0)
    return KB_OK;
  return kb_error_set(err, kb_write_errno_code(e), "%s: cannot build: %s (errno %d)", cache_dir,
                      strerror(e), e);
}

/* 1 when `path` is a regular file this process may execute. */
static int is_executable(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Finds `prog` (borrowed) as a program: a name with a slash is resolved as a path, a bare name
 * searched in $PATH. `*out` = new absolute path, or NULL when not found. Errors: KB_ENOMEM. */
static int find_program(const char *prog, char **out) {
  *out = NULL;
  if (strchr(prog, '/') != NULL) {
    char *resolved = realpath(prog, NULL);
    if (resolved == NULL)
      return KB_OK;
    int found = is_executable(resolved);
    if (found)
      *out = kb_strdup(resolved);
    free(resolved); /* realpath allocates with malloc */
    return found && *out == NULL ? KB_ENOMEM : KB_OK;
  }
  const char *path = getenv("PATH");
  if (path == NULL || *path == '\0')
    path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path; *p;) {
    size_t len = strcspn(p, ":");
    struct kb_buf cand;
    kb_buf_init(&cand);
    /* an empty entry means the current folder */
    int rc = len == 0 ? kb_buf_addf(&cand, "./%s", prog)
                      : kb_buf_addf(&cand, "%.*s/%s", (int)len, p, prog);
    if (rc == KB_OK && is_executable(cand.data))
      rc = find_program(cand.data, out); /* absolute, with links resolved */
    kb_buf_release(&cand);
    if (rc != KB_OK || *out != NULL)
      return rc;
    p += len;
    if (*p == ':')
      p++;
  }
  return KB_OK;
}

/* The nvcc to use when none was named: $PATH, then the usual toolkit folders. `*out` = new
 * path or NULL. Errors: KB_ENOMEM. */
static int find_nvcc(char **out) {
  int rc = find_program("nvcc", out);
  static const char *const homes[] = {"CUDA_HOME", "CUDA_PATH"};
  for (size_t i = 0; rc == KB_OK && *out == NULL && i < 2; i++) {
    const char *home = getenv(homes[i]);
    char *path = NULL;
    if (home == NULL || *home == '\0')
      continue;
    if (join_path(home, "bin/nvcc", &path) != KB_OK)
      return KB_ENOMEM;
    rc = find_program(path, out);
    kb_free(path);
  }
  if (rc == KB_OK && *out == NULL)
    rc = find_program("/usr/local/cuda/bin/nvcc", out);
  return rc;
}

/* The environment compilers run in: kept_env from ours, LC_ALL=C (plain ASCII messages
 * whatever the runner's locale, and a --version text that does not depend on it), and a free
 * last-but-one slot for TMPDIR. Errors: KB_ENOMEM. */
static int build_env(char ***out) {
  size_t n_kept = sizeof kept_env / sizeof kept_env[0];
  char **env = kb_calloc(n_kept + 3, sizeof *env);
  size_t n = 0;
  if (env == NULL)
    return KB_ENOMEM;
  for (size_t i = 0; i < n_kept; i++) {
    const char *v = getenv(kept_env[i]);
    if (v == NULL && strcmp(kept_env[i], "PATH") == 0)
      v = "/usr/local/bin:/usr/bin:/bin";
    if (v == NULL)
      continue;
    struct kb_buf b;
    kb_buf_init(&b);
    if (kb_buf_addf(&b, "%s=%s", kept_env[i], v) != KB_OK || (env[n] = kb_buf_detach(&b)) == NULL) {
      kb_buf_release(&b);
      free_words(env);
      return KB_ENOMEM;
    }
    n++;
  }
  env[n] = kb_strdup("LC_ALL=C");
  if (env[n] == NULL) {
    free_words(env);
    return KB_ENOMEM;
  }
  *out = env;
  return KB_OK;
}

void kb__compiler_release(struct kb__compiler *cc) {
  if (cc == NULL)
    return;
  kb_free(cc->cache_dir);
  free_words(cc->argv);
  free_words(cc->envp);
  kb_free(cc->version);
  kb_free(cc->include_dir);
  memset(cc, 0, sizeof *cc);
}

int kb__cuda_arch_valid(const char *arch) {
  if (arch == NULL || strncmp(arch, "sm_", 3) != 0)
    return 0;
  const char *p = arch + 3;
  int digits = 0;
  while (isdigit((unsigned char)*p)) {
    p++;
    digits++;
  }
  if (digits < 2 || digits > 3)
    return 0;
  if (*p >= 'a' && *p <= 'z')
    p++;
  return *p == '\0';
}

int kb__cuda_arch(int major, int minor, char *out, size_t size) {
  if (major < 1 || major > 99 || minor < 0 || minor > 9)
    return KB_EINVAL;
  int n = snprintf(out, size, "sm_%d%d", major, minor);
  return n > 0 && (size_t)n < size ? KB_OK : KB_EINVAL;
}

/* Runs a tool for a short query (--version): `argv` in the compiler's environment. */
static int run_query(char **argv, char **envp, struct kb__proc_result *res,
                     struct kb_error *err) {
  return kb__spawn_run(argv, envp, NULL, VERSION_TIMEOUT_S, KB__COMPILE_LOG_MAX, NULL, res, err);
}

/* Kept whole (115 lines): one chain of set-up steps, each failing to the one cleanup at out. */
static int compiler_init(struct kb__compiler *cc, enum kb__lang lang, const char *cache_dir,
                         const char *command, const char *include_dir, const char *arch,
                         struct kb_error *err) {
  struct kb__proc_result res;
  struct kb_buf header;
  int argc = 0;
  int rc;
  memset(cc, 0, sizeof *cc);
  kb__proc_result_init(&res);
  kb_buf_init(&header);
  cc->lang = lang;
  cc->timeout_s = lang == KB__LANG_CUDA ? DEFAULT_TIMEOUT_CUDA_S : DEFAULT_TIMEOUT_C_S;
  if (lang == KB__LANG_CUDA) {
    if (arch == NULL)
      arch = KB__ARCH_DEFAULT;
    if (!kb__cuda_arch_valid(arch) || strlen(arch) >= sizeof cc->arch) {
      rc = kb_error_set(err, KB_EINVAL, "architecture \"%s\" is not valid (expected sm_90 or "
                        "the like)", arch);
      goto out;
    }
    memcpy(cc->arch, arch, strlen(arch) + 1);
  }

  rc = make_dirs(cache_dir, err);
  if (rc)
    goto out;
  char *resolved = realpath(cache_dir, NULL);
  if (resolved == NULL) {
    rc = kb_error_set(err, KB_EIO, "cannot resolve \"%s\": %s", cache_dir, strerror(errno));
    goto out;
  }
  /* realpath() allocates with malloc; keep every owned string on the kb_ allocator */
  cc->cache_dir = kb_strdup(resolved);
  free(resolved);
  cc->include_dir = kb_strdup(include_dir);
  if (cc->cache_dir == NULL || cc->include_dir == NULL || build_env(&cc->envp) != KB_OK) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot set up the compiler: out of memory");
    goto out;
  }
  remove_stale_tmp(cc->cache_dir);

  const char *fallback = lang == KB__LANG_CUDA ? "nvcc" : "cc";
  rc = split_words(command ? command : fallback, &cc->argv, &argc);
  if (rc) {
    rc = kb_error_set(err, rc, "cannot set up the compiler: out of memory");
    goto out;
  }
  if (argc == 0) {
    rc = kb_error_set(err, KB_EINVAL, "compiler command is empty");
    goto out;
  }
  char *program = NULL;
  rc = lang == KB__LANG_CUDA && command == NULL ? find_nvcc(&program)
                                                : find_program(cc->argv[0], &program);
  if (rc) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot set up the compiler: out of memory");
    goto out;
  }
  if (program == NULL) {
    rc = kb_error_set(err, KB_ECOMPILE, "cannot run compiler \"%s\": not found%s", cc->argv[0],
                      lang == KB__LANG_CUDA && command == NULL
                          ? " on $PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin or /usr/local/cuda/bin"
                          : "");
    goto out;
  }
  kb_free(cc->argv[0]);
  cc->argv[0] = program;

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
  rc = run_query(vargv, cc->envp, &res, err);
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

int kb__compiler_init(struct kb__compiler *cc, const char *cache_dir, const char *command,
                      const char *include_dir, struct kb_error *err) {
  return compiler_init(cc, KB__LANG_C, cache_dir, command, include_dir, NULL, err);
}

int kb__compiler_init_cuda(struct kb__compiler *cc, const char *cache_dir, const char *command,
                           const char *include_dir, const char *arch, struct kb_error *err) {
  return compiler_init(cc, KB__LANG_CUDA, cache_dir, command, include_dir, arch, err);
}

static void clear_usage(struct kb__build *b) {
  b->kernels = -1;
  b->registers = -1;
  b->spill_store_bytes = -1;
  b->spill_load_bytes = -1;
  b->shared_bytes = -1;
  b->stack_bytes = -1;
}

void kb__build_init(struct kb__build *b) {
  memset(b, 0, sizeof *b);
  clear_usage(b);
}

void kb__build_release(struct kb__build *b) {
  if (b == NULL)
    return;
  kb_free(b->lib_path);
  kb_free(b->log);
  kb__build_init(b);
}

/* ---- nvcc resource usage --------------------------------------------------------------- */

/* One function of a ptxas report. */
struct usage {
  char *name;    /* mangled name (owned) */
  int entry;     /* 1: a kernel (entry function) */
  int registers; /* -1 unknown */
  int shared;    /* static shared memory, bytes */
  int stack;     /* stack frame, bytes */
  int spill_stores;
  int spill_loads;
};

/* The integer right before " <unit>" in `line` (up to `end`), or -1 when there is none:
 * count_before("Used 40 registers, 1024 bytes smem", "registers") is 40. */
static int count_before(const char *line, const char *end, const char *unit) {
  size_t ulen = strlen(unit);
  for (const char *p = line; p + ulen <= end; p++) {
    if (memcmp(p, unit, ulen) != 0 || p == line || p[-1] != ' ')
      continue;
    if (p + ulen < end && isalnum((unsigned char)p[ulen]))
      continue;
    const char *q = p - 1;
    while (q > line && q[-1] == ' ')
      q--;
    const char *digits_end = q;
    while (q > line && isdigit((unsigned char)q[-1]))
      q--;
    if (q == digits_end)
      continue;
    long v = 0;
    for (const char *d = q; d < digits_end; d++) {
      v = v * 10 + (*d - '0');
      if (v > INT_MAX)
        return INT_MAX;
    }
    return (int)v;
  }
  return -1;
}

/* The quoted name after `marker` in `line` ('NAME' or "NAME") or, unquoted, up to the end of
 * the line; NULL when `marker` is not there. `*len` gets its length. */
static const char *name_after(const char *line, const char *end, const char *marker,
                              size_t *len) {
  size_t mlen = strlen(marker);
  const char *p = NULL;
  for (const char *q = line; q + mlen <= end; q++)
    if (memcmp(q, marker, mlen) == 0) {
      p = q + mlen;
      break;
    }
  if (p == NULL)
    return NULL;
  while (p < end && *p == ' ')
    p++;
  if (p < end && (*p == '\'' || *p == '"')) {
    char quote = *p++;
    const char *close = memchr(p, quote, (size_t)(end - p));
    *len = (size_t)((close ? close : end) - p);
    return p;
  }
  const char *e = end;
  while (e > p && isspace((unsigned char)e[-1]))
    e--;
  *len = (size_t)(e - p);
  return *len ? p : NULL;
}

/* The record named `name` (`len` bytes) in `*list`, added when missing. NULL on ENOMEM. */
static struct usage *usage_get(struct usage **list, size_t *n, const char *name, size_t len) {
  for (size_t i = 0; i < *n; i++)
    if (strlen((*list)[i].name) == len && memcmp((*list)[i].name, name, len) == 0)
      return &(*list)[i];
  struct usage *grown = kb_reallocarray(*list, *n + 1, sizeof **list);
  if (grown == NULL)
    return NULL;
  *list = grown;
  struct usage *u = &grown[*n];
  *u = (struct usage){.name = kb_strndup(name, len), .registers = -1};
  if (u->name == NULL)
    return NULL;
  (*n)++;
  return u;
}

static int max_int(int a, int b) { return a > b ? a : b; }

int kb__ptxas_parse(const char *text, struct kb__build *b, struct kb_buf *summary) {
  struct usage *list = NULL;
  size_t n = 0;
  struct usage *entry = NULL; /* the kernel "Used N registers" lines belong to */
  struct usage *props = NULL; /* the function a properties line belongs to */
  int rc = KB_OK;
  for (const char *line = text; line != NULL && *line;) {
    const char *nl = strchr(line, '\n');
    const char *end = nl ? nl : line + strlen(line);
    const char *name;
    size_t len;
    if ((name = name_after(line, end, "Compiling entry function", &len)) != NULL) {
      entry = usage_get(&list, &n, name, len);
      if (entry == NULL)
        goto nomem;
      entry->entry = 1;
      props = NULL;
    } else if ((name = name_after(line, end, "Function properties for", &len)) != NULL) {
      props = usage_get(&list, &n, name, len);
      if (props == NULL)
        goto nomem;
    } else if (count_before(line, end, "registers") >= 0 && entry != NULL &&
               strstr(line, "Used") != NULL && strstr(line, "Used") < end) {
      entry->registers = max_int(entry->registers, count_before(line, end, "registers"));
      entry->shared = max_int(entry->shared, count_before(line, end, "bytes smem"));
    } else if (props != NULL && count_before(line, end, "bytes stack frame") >= 0) {
      props->stack = max_int(props->stack, count_before(line, end, "bytes stack frame"));
      props->spill_stores =
          max_int(props->spill_stores, count_before(line, end, "bytes spill stores"));
      props->spill_loads =
          max_int(props->spill_loads, count_before(line, end, "bytes spill loads"));
      props = NULL;
    }
    line = nl ? nl + 1 : NULL;
  }
  clear_usage(b);
  b->kernels = 0;
  b->registers = b->spill_store_bytes = b->spill_load_bytes = b->shared_bytes = 0;
  b->stack_bytes = 0;
  for (size_t i = 0; i < n; i++) {
    const struct usage *u = &list[i];
    if (u->entry) {
      b->kernels++;
      b->registers = max_int(b->registers, u->registers);
      b->shared_bytes = max_int(b->shared_bytes, u->shared);
    }
    b->spill_store_bytes = max_int(b->spill_store_bytes, u->spill_stores);
    b->spill_load_bytes = max_int(b->spill_load_bytes, u->spill_loads);
    b->stack_bytes = max_int(b->stack_bytes, u->stack);
    if (summary == NULL)
      continue;
    int wrote;
    if (u->entry)
      wrote = kb_buf_addf(summary, "kernel %s: %d registers, %d bytes shared, %d bytes stack, "
                          "%d bytes spill stores, %d bytes spill loads\n", u->name, u->registers,
                          u->shared, u->stack, u->spill_stores, u->spill_loads);
    else
      wrote = kb_buf_addf(summary, "function %s: %d bytes stack, %d bytes spill stores, "
                          "%d bytes spill loads\n", u->name, u->stack, u->spill_stores,
                          u->spill_loads);
    if (wrote != KB_OK)
      goto nomem;
  }
  goto out;
nomem:
  rc = KB_ENOMEM;
out:
  for (size_t i = 0; i < n; i++)
    kb_free(list[i].name);
  kb_free(list);
  return rc;
}

/* 1 when the `len` bytes at `s` contain `needle`. */
static int contains(const char *s, size_t len, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(s + i, needle, n) == 0)
      return 1;
  return 0;
}

/* 1 for a line of nvcc's resource usage report, which the summary replaces in the log. */
static int is_usage_line(const char *line, size_t len) {
  if (len >= 10 && memcmp(line, "ptxas info", 10) == 0)
    return 1;
  size_t i = 0;
  while (i < len && line[i] == ' ')
    i++;
  return i > 0 && i < len && isdigit((unsigned char)line[i]) &&
         contains(line, len, "bytes stack frame");
}

/* The log of a CUDA build that succeeded: the per-kernel summary, then what else nvcc said
 * (warnings), cut to KB__COMPILE_LOG_MAX. New, or NULL when empty or on ENOMEM. */
static char *cuda_log(const struct kb_buf *summary, const char *output) {
  struct kb_buf b;
  kb_buf_init(&b);
  if (kb_buf_add(&b, summary->data, summary->len) != KB_OK)
    goto fail;
  for (const char *line = output; line != NULL && *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (!is_usage_line(line, len) &&
        (kb_buf_add(&b, line, len) != KB_OK || kb_buf_add(&b, "\n", 1) != KB_OK))
      goto fail;
    line = nl ? nl + 1 : NULL;
  }
  if (b.len > KB__COMPILE_LOG_MAX) {
    size_t cut = b.len - KB__COMPILE_LOG_MAX;
    b.len = KB__COMPILE_LOG_MAX;
    b.data[b.len] = '\0';
    if (kb_buf_addf(&b, "\n[%zu more bytes cut]\n", cut) != KB_OK)
      goto fail;
  }
  if (b.len == 0)
    goto fail;
  return kb_buf_detach(&b);
fail:
  kb_buf_release(&b);
  return NULL;
}

/* Writes the usage fields of `b` as the text of a .meta file into `out`. */
static int meta_text(const struct kb__build *b, struct kb_buf *out) {
  return kb_buf_addf(out, "kernels %d\nregisters %d\nspill_store_bytes %d\nspill_load_bytes %d\n"
                     "shared_bytes %d\nstack_bytes %d\n", b->kernels, b->registers,
                     b->spill_store_bytes, b->spill_load_bytes, b->shared_bytes, b->stack_bytes);
}

/* Reads a .meta file's text into the usage fields of `b`; unknown lines are skipped. */
static void meta_parse(const char *text, struct kb__build *b) {
  static const char *const keys[] = {"kernels", "registers", "spill_store_bytes",
                                     "spill_load_bytes", "shared_bytes", "stack_bytes"};
  int *fields[] = {&b->kernels, &b->registers, &b->spill_store_bytes, &b->spill_load_bytes,
                   &b->shared_bytes, &b->stack_bytes};
  for (const char *line = text; line != NULL && *line;) {
    const char *nl = strchr(line, '\n');
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
      size_t klen = strlen(keys[i]);
      if (strncmp(line, keys[i], klen) != 0 || line[klen] != ' ')
        continue;
      char *end;
      errno = 0;
      long v = strtol(line + klen + 1, &end, 10);
      if (errno == 0 && end != line + klen + 1 && (*end == '\n' || *end == '\0') && v >= -1 &&
          v <= INT_MAX)
        *fields[i] = (int)v;
    }
    line = nl ? nl + 1 : NULL;
  }
}

/* ---- the build ------------------------------------------------------------------------- */

/* Feeds `s` and a NUL separator to `h`. */
static int hash_part(struct kb_sha256 *h, const char *s) {
  int rc = kb_sha256_update(h, s, strlen(s));
  if (rc == KB_OK)
    rc = kb_sha256_update(h, "", 1);
  return rc;
}

/* The fixed part of every build command, between the compiler and -I. The CUDA one gets the
 * architecture inserted after -O3. Host libraries are linked with full RELRO (-z now): every
 * function a library calls resolved at load and its table inside the read-only segment the
 * sandbox checksums for the libraries it compares a candidate with (the oracle, the same-run
 * baseline: kb__integrity_object_sum), so no candidate rewrites their calls unseen. */
static const char *const fixed_c[] = {"-O2", "-std=c11", "-shared", "-fPIC",
                                      "-Wl,-z,relro,-z,now"};
static const char *const fixed_cuda[] = {"-O3",     "-shared", "-Xcompiler",       "-fPIC",
                                         "-cudart", "shared",  "--resource-usage"};

static int cache_key(const struct kb__compiler *cc, const char *arch, const char *source,
                     const char *knobs, const char *flags, char key[KB_CAND_ID_LEN + 1],
                     struct kb_error *err) {
  struct kb_sha256 *h = kb_sha256_new();
  if (h == NULL)
    return kb_error_set(err, KB_EINTERNAL, "cannot hash the build: sha-256 unavailable");
  int cuda = cc->lang == KB__LANG_CUDA;
  int rc = hash_part(h, cuda ? "kernelbrain cuda build 2" : "kernelbrain host build 2");
  for (char **w = cc->argv; rc == KB_OK && *w; w++)
    rc = hash_part(h, *w);
  const char *const *fixed = cuda ? fixed_cuda : fixed_c;
  size_t n_fixed = cuda ? sizeof fixed_cuda / sizeof *fixed_cuda : sizeof fixed_c / sizeof *fixed_c;
  for (size_t i = 0; rc == KB_OK && i < n_fixed; i++)
    rc = hash_part(h, fixed[i]);
  if (rc == KB_OK)
    rc = hash_part(h, cuda ? arch : "");
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
  size_t dropped = res->output_dropped;
  if (len == 0)
    return NULL;
  if (len > KB__COMPILE_LOG_MAX) {
    dropped += len - KB__COMPILE_LOG_MAX;
    text += len - KB__COMPILE_LOG_MAX;
    len = KB__COMPILE_LOG_MAX;
  }
  struct kb_buf b;
  kb_buf_init(&b);
  if (dropped > 0) {
    const char *nl = memchr(text, '\n', len);
    if (nl != NULL && (size_t)(nl - text) + 1 < len) {
      dropped += (size_t)(nl - text) + 1;
      len -= (size_t)(nl - text) + 1;
      text = nl + 1;
    }
    if (kb_buf_addf(&b, "[%zu earlier bytes cut]\n", dropped) != KB_OK) {
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

/* ---- allowed flags --------------------------------------------------------------------- */

static int starts(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int one_of(const char *s, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(s, list[i]) == 0)
      return 1;
  return 0;
}

static int starts_one_of(const char *s, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (starts(s, list[i]))
      return 1;
  return 0;
}

/* 1 when `w` is a host compiler option a candidate may add: optimisation, code generation,
 * language standard, macros, warnings, debug info. Not: output, include or library folders,
 * libraries, linker or assembler options, plugins, programs or spec files for the driver. */
static int host_flag_ok(const char *w) {
  static const char *const exact[] = {"-w", "-pedantic", "-pedantic-errors", "-pipe"};
  static const char *const denied_f[] = {"-fplugin", "-fprofile", "-fauto-profile", "-fdump",
                                         "-fuse-ld", "-fcreate-profile", "-fsave-optimization"};
  if (one_of(w, exact, sizeof exact / sizeof *exact))
    return 1;
  if (starts(w, "-O") || starts(w, "-D") || starts(w, "-U") || starts(w, "-std=") ||
      (starts(w, "-m") && w[2] != '\0') || starts(w, "-g"))
    return 1;
  if (starts(w, "-f") && w[2] != '\0')
    return !starts_one_of(w, denied_f, sizeof denied_f / sizeof *denied_f);
  if (starts(w, "-W") && w[2] != '\0')
    return strchr(w, ',') == NULL; /* -Wl, -Wa, -Wp pass options on to other programs */
  return 0;
}

/* 1 when every comma-separated part of `list` passes `ok`. */
static int each_part_ok(const char *list, int (*ok)(const char *)) {
  char part[256];
  if (*list == '\0')
    return 0;
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == 0 || len >= sizeof part)
      return 0;
    memcpy(part, p, len);
    part[len] = '\0';
    if (!ok(part))
      return 0;
    p += len;
    if (*p == ',')
      p++;
  }
  return 1;
}

/* ptxas options a candidate may pass with -Xptxas. */
static int ptxas_flag_ok(const char *w) {
  static const char *const exact[] = {"-v", "--verbose", "-warn-spills", "--warn-on-spills",
                                      "-warn-lmem-usage", "--warn-on-local-memory-usage",
                                      "-O0", "-O1", "-O2", "-O3"};
  static const char *const prefix[] = {"-dlcm=", "--def-load-cache=", "-dscm=",
                                       "--def-store-cache=", "--allow-expensive-optimizations",
                                       "-allow-expensive-optimizations", "-maxrregcount=",
                                       "--maxrregcount=", "-fmad=", "--fmad="};
  return one_of(w, exact, sizeof exact / sizeof *exact) ||
         starts_one_of(w, prefix, sizeof prefix / sizeof *prefix);
}

static int host_part_ok(const char *w) { return host_flag_ok(w); }

/* Checks nvcc flag `w[*i]`, consuming its value word when it takes one. */
static int nvcc_flag_ok(char **w, int *i) {
  static const char *const exact[] = {
      "-use_fast_math", "--use_fast_math", "-lineinfo", "--generate-line-info", "-restrict",
      "--restrict", "-extra-device-vectorization", "--extra-device-vectorization",
      "--expt-relaxed-constexpr", "-expt-relaxed-constexpr", "--expt-extended-lambda",
      "-expt-extended-lambda", "--extended-lambda", "-extended-lambda", "--resource-usage",
      "-res-usage", "-w", "--disable-warnings", "-G", "--device-debug", "-g", "--debug"};
  static const char *const prefix[] = {
      "-O", "-D", "-U", "-std=", "--std=", "-ftz=", "--ftz=", "-prec-div=", "--prec-div=",
      "-prec-sqrt=", "--prec-sqrt=", "-fmad=", "--fmad=", "-maxrregcount=", "--maxrregcount="};
  const char *f = w[*i];
  if (one_of(f, exact, sizeof exact / sizeof *exact) ||
      starts_one_of(f, prefix, sizeof prefix / sizeof *prefix))
    return 1;
  if (starts(f, "-W") && f[2] != '\0' && strchr(f, ',') == NULL && strchr(f, '=') == NULL)
    return 1;
  /* options whose value is the next word or follows '=' */
  static const struct {
    const char *name;
    int (*ok)(const char *);
  } valued[] = {{"-Xptxas", ptxas_flag_ok},         {"--ptxas-options", ptxas_flag_ok},
                {"-Xcompiler", host_part_ok},       {"--compiler-options", host_part_ok}};
  for (size_t k = 0; k < sizeof valued / sizeof *valued; k++) {
    size_t len = strlen(valued[k].name);
    if (strncmp(f, valued[k].name, len) != 0)
      continue;
    if (f[len] == '=')
      return each_part_ok(f + len + 1, valued[k].ok);
    if (f[len] != '\0' || w[*i + 1] == NULL)
      return 0;
    (*i)++;
    return each_part_ok(w[*i], valued[k].ok);
  }
  if ((strcmp(f, "-maxrregcount") == 0 || strcmp(f, "--maxrregcount") == 0) && w[*i + 1]) {
    (*i)++;
    for (const char *p = w[*i]; *p; p++)
      if (!isdigit((unsigned char)*p))
        return 0;
    return w[*i][0] != '\0';
  }
  return 0;
}

/* Checks knob and flag words: knobs define or undefine macros; flags are on the language's
 * allow-list. Writes the reason and returns 0 for the first word that is not. */
static int words_allowed(enum kb__lang lang, char **knobs, char **flags, char *reason,
                         size_t size) {
  const char *bad = NULL;
  const char *what = NULL;
  for (char **w = knobs; bad == NULL && *w; w++)
    if (strncmp(*w, "-D", 2) != 0 && strncmp(*w, "-U", 2) != 0) {
      bad = *w;
      what = "knob";
    }
  for (int i = 0; bad == NULL && flags[i]; i++) {
    int start = i;
    int ok = lang == KB__LANG_CUDA ? nvcc_flag_ok(flags, &i) : host_flag_ok(flags[i]);
    if (!ok) {
      bad = flags[start];
      what = "flag";
    }
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

/* The cache's files of one key. */
struct cache_paths {
  char *so, *log, *err, *meta, *sum; /* owned */
};

static void cache_paths_release(struct cache_paths *p) {
  kb_free(p->so);
  kb_free(p->log);
  kb_free(p->err);
  kb_free(p->meta);
  kb_free(p->sum);
}

static int cache_paths_make(const char *dir, const char *key, struct cache_paths *p) {
  static const char *const ext[] = {"so", "log", "err", "meta", "sum"};
  char **slots[] = {&p->so, &p->log, &p->err, &p->meta, &p->sum};
  for (size_t i = 0; i < 5; i++) {
    char name[KB_CAND_ID_LEN + 8];
    int n = snprintf(name, sizeof name, "%s.%s", key, ext[i]);
    if (n < 0 || (size_t)n >= sizeof name || join_path(dir, name, slots[i]) != KB_OK)
      return KB_ENOMEM;
  }
  return KB_OK;
}

/* The SHA-256 of the file at `path` into `hex`. Errors: kb_buf_read_file's, KB_ENOMEM. */
static int file_sha256(const char *path, char hex[65], struct kb_error *err) {
  struct kb_buf b;
  kb_buf_init(&b);
  int rc = kb_buf_read_file(&b, path, err);
  if (rc == KB_OK)
    rc = kb_sha256_hex(b.data ? b.data : "", b.len, hex, err);
  kb_buf_release(&b);
  return rc;
}

/* 1 when the cached library `p->so` is whole: its SHA-256 is the one `p->sum` recorded when it
 * was stored. Else 0 with `why` (`size` bytes) saying what differs: the file cut short or
 * damaged since (a crash before the disk had it, a full disk, a hand), or stored without a sum
 * (an older version, or a store interrupted between the two). */
static int cached_lib_whole(const struct cache_paths *p, char *why, size_t size) {
  struct kb_buf want;
  kb_buf_init(&want);
  char got[65] = "";
  struct kb_error e = {0};
  int whole = 0;
  if (kb_buf_read_file(&want, p->sum, NULL) != KB_OK)
    snprintf(why, size, "no checksum beside it");
  else if (file_sha256(p->so, got, &e) != KB_OK)
    snprintf(why, size, "%.200s", e.msg);
  else if (want.len < 64 || memcmp(want.data, got, 64) != 0)
    snprintf(why, size, "its SHA-256 is %.12s..., %.12s... was stored", got,
             want.len >= 12 ? want.data : "(nothing)");
  else
    whole = 1;
  kb_buf_release(&want);
  return whole;
}

/* The import check of a library that built: `b` becomes rejected unless every import is on
 * the allow-list. Errors: KB_ENOMEM only; a library that cannot be read is rejected. */
static int check_imports(const struct kb__compiler *cc, struct kb__build *b,
                         struct kb_error *err) {
  int allowed = 0;
  struct kb_error check_err = {0};
  int rc = kb__imports_check(b->lib_path, cc->lang, &allowed, &b->undefined, b->reason,
                             sizeof b->reason, &check_err);
  if (rc == KB_ENOMEM)
    return kb_error_set(err, rc, "%s", check_err.msg);
  if (rc != KB_OK && snprintf(b->reason, sizeof b->reason,
                              "cannot check the library's imports: %s", check_err.msg) < 0)
    b->reason[0] = '\0';
  if (rc == KB_OK && allowed)
    return KB_OK;
  b->ok = 0;
  b->rejected = 1;
  kb_free(b->lib_path);
  b->lib_path = NULL;
  return KB_OK;
}

/* Kept whole (200 lines): the build's one transaction (key, cache, temporary folder, tool run,
 * publish), every step failing to the one cleanup at out; split it would scatter that cleanup. */
int kb__compile_cancellable(const struct kb__compiler *cc, const struct kb__compile_req *req,
                            const atomic_int *cancel, struct kb__build *b,
                            struct kb_error *err) {
  char **knob_words = NULL, **flag_words = NULL, **argv = NULL, **envp = NULL;
  int n_knobs = 0, n_flags = 0, argc = 0;
  struct cache_paths paths = {0};
  char *tmp_dir = NULL, *src_path = NULL, *lib_tmp = NULL;
  char *include_opt = NULL, *arch_opt = NULL, *tmpdir_env = NULL;
  struct kb_buf text, summary;
  struct kb__proc_result res;
  int cuda = cc->lang == KB__LANG_CUDA;
  int rc;
  kb_buf_init(&text);
  kb_buf_init(&summary);
  kb__proc_result_init(&res);
  kb__build_release(b);
  if (req->reference)
    return kb__compile_reference(cc, req, cancel, b, err);
  if (req->format == KB_FORMAT_KERNELBENCH)
    return kb__compile_kernelbench(cc, req, cancel, b, err);

  const char *source = req->source ? req->source : "";
  const char *knobs = req->knobs ? req->knobs : "";
  const char *flags = req->flags ? req->flags : "";
  const char *arch = req->arch ? req->arch : cc->arch;
  double timeout_s = req->timeout_s > 0 ? req->timeout_s : cc->timeout_s;
  if (cuda && !kb__cuda_arch_valid(arch)) {
    rc = kb_error_set(err, KB_EINVAL, "architecture \"%s\" is not valid (expected sm_90 or the "
                      "like)", arch);
    goto out;
  }
  rc = split_words(knobs, &knob_words, &n_knobs);
  if (rc == KB_OK)
    rc = split_words(flags, &flag_words, &n_flags);
  if (rc) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot compile: out of memory");
    goto out;
  }
  if (!words_allowed(cc->lang, knob_words, flag_words, b->reason, sizeof b->reason))
    goto out;

  rc = cache_key(cc, arch, source, knobs, flags, b->key, err);
  if (rc)
    goto out;
  if (cache_paths_make(cc->cache_dir, b->key, &paths) != KB_OK) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot compile: out of memory");
    goto out;
  }

  if (access(paths.so, R_OK) == 0) {
    char why[256];
    if (!cached_lib_whole(&paths, why, sizeof why)) {
      /* never a verdict from a damaged library: it is built again, as if never cached */
      kb_warn("build cache: %s is not the library that was stored (%s); building it again",
              paths.so, why);
      unlink(paths.so);
      unlink(paths.sum);
    }
  }
  if (access(paths.so, R_OK) == 0) {
    b->ok = 1;
    b->cached = 1;
    b->lib_path = paths.so;
    paths.so = NULL;
    if (kb_buf_read_file(&text, paths.log, NULL) == KB_OK && text.len > 0)
      b->log = kb_buf_detach(&text);
    kb_buf_reset(&text);
    if (cuda && kb_buf_read_file(&text, paths.meta, NULL) == KB_OK)
      meta_parse(text.data, b);
    if (!req->trusted)
      rc = check_imports(cc, b, err);
    goto out;
  }
  if (access(paths.err, R_OK) == 0 && kb_buf_read_file(&text, paths.err, NULL) == KB_OK) {
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
    int e = errno;
    rc = kb_error_set(err, kb_write_errno_code(e), "%s: cannot create a build folder: %s "
                      "(errno %d)", cc->cache_dir, strerror(e), e);
    kb_free(tmp_dir);
    tmp_dir = NULL;
    goto out;
  }
  const char *src_name = cuda ? SRC_NAME_CUDA : SRC_NAME_C;
  if (kb_buf_addf(&text, "-I%s", cc->include_dir) == KB_OK)
    include_opt = kb_buf_detach(&text);
  if (kb_buf_addf(&text, "-arch=%s", arch) == KB_OK)
    arch_opt = kb_buf_detach(&text);
  if (kb_buf_addf(&text, "TMPDIR=%s", tmp_dir) == KB_OK)
    tmpdir_env = kb_buf_detach(&text);
  if (include_opt == NULL || arch_opt == NULL || tmpdir_env == NULL ||
      join_path(tmp_dir, src_name, &src_path) != KB_OK ||
      join_path(tmp_dir, LIB_NAME, &lib_tmp) != KB_OK) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot compile: out of memory");
    goto out;
  }
  rc = write_file(src_path, source, strlen(source), err);
  if (rc)
    goto out;

  int n_env = count_words(cc->envp);
  envp = kb_calloc((size_t)n_env + 2, sizeof *envp);
  int n_cc = count_words(cc->argv);
  int n_fixed = cuda ? (int)(sizeof fixed_cuda / sizeof *fixed_cuda)
                     : (int)(sizeof fixed_c / sizeof *fixed_c);
  argv = kb_calloc((size_t)(n_cc + n_fixed + 2 + n_knobs + n_flags + 5), sizeof *argv);
  if (argv == NULL || envp == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot compile: out of memory");
    goto out;
  }
  for (int i = 0; i < n_env; i++)
    envp[i] = cc->envp[i];
  envp[n_env] = tmpdir_env; /* nvcc's and gcc's intermediate files go into the build folder */
  for (int i = 0; i < n_cc; i++)
    argv[argc++] = cc->argv[i];
  for (int i = 0; i < n_fixed; i++) {
    argv[argc++] = (char *)(cuda ? fixed_cuda[i] : fixed_c[i]);
    if (cuda && i == 0)
      argv[argc++] = arch_opt;
  }
  argv[argc++] = include_opt;
  for (int i = 0; i < n_knobs; i++)
    argv[argc++] = knob_words[i];
  for (int i = 0; i < n_flags; i++)
    argv[argc++] = flag_words[i];
  argv[argc++] = "-o";
  argv[argc++] = LIB_NAME;
  argv[argc++] = (char *)src_name;
  if (!cuda)
    argv[argc++] = "-lm";
  argv[argc] = NULL;

  rc = kb__spawn_run(argv, envp, tmp_dir, timeout_s, cuda ? CUDA_OUTPUT_KEEP : KB__COMPILE_LOG_MAX,
                     cancel, &res, err);
  if (rc)
    goto out;
  b->seconds = res.wall_s;
  if (res.timed_out) {
    b->log = trimmed_log(&res);
    if (snprintf(b->reason, sizeof b->reason, "does not compile: compiler timed out after %g s",
                 timeout_s) < 0)
      b->reason[0] = '\0';
    goto out;
  }
  if (res.exited && res.exit_code == 0 && access(lib_tmp, R_OK) == 0) {
    if (cuda) {
      rc = kb__ptxas_parse(res.output.data, b, &summary);
      if (rc) {
        rc = kb_error_set(err, rc, "cannot compile: out of memory");
        goto out;
      }
      b->log = cuda_log(&summary, res.output.data);
      kb_buf_reset(&text);
      if (meta_text(b, &text) == KB_OK)
        cache_text(tmp_dir, META_NAME, text.data, paths.meta);
    } else {
      b->log = trimmed_log(&res);
    }
    /* log, meta and the library's checksum go into place before the library, which is on
     * the disk first (fsync): whoever sees the library sees them, and a crash cannot leave a
     * library that looks whole but is not (a cache hit checks the sum: cached_lib_whole) */
    cache_text(tmp_dir, LOG_NAME, b->log, paths.log);
    char sum[65];
    rc = kb_fsync_path(lib_tmp, 0) == 0 ? KB_OK : write_fail(err, lib_tmp, errno);
    if (rc == KB_OK)
      rc = file_sha256(lib_tmp, sum, err);
    if (rc)
      goto out;
    cache_text(tmp_dir, SUM_NAME, sum, paths.sum);
    if (rename(lib_tmp, paths.so) != 0) {
      rc = write_fail(err, paths.so, errno);
      goto out;
    }
    b->ok = 1;
    b->lib_path = paths.so;
    paths.so = NULL;
    if (!req->trusted)
      rc = check_imports(cc, b, err);
    goto out;
  }
  b->log = trimmed_log(&res);
  if (!res.signal) {
    /* a compiler starved of disk fails like one given bad source ("No space left on device"
     * from ld or as): neither the candidate's verdict nor remembered, the runner leaves; what
     * the build wrote goes first, so a candidate that fills the disk fails on its own */
    remove_build_dir(tmp_dir);
    rc = kb__cache_check(cc->cache_dir, err);
    if (rc)
      goto out;
  }
  if (res.exited && res.exit_code != 0) {
    failure_reason(b->log, res.exit_code, b->reason, sizeof b->reason);
    /* only a plain failure is deterministic enough to remember (in the emptied build folder
     * made again; best effort) */
    if (mkdir(tmp_dir, 0700) == 0)
      cache_text(tmp_dir, ERR_NAME, b->log, paths.err);
  } else {
    char sig[32];
    if (snprintf(b->reason, sizeof b->reason, "does not compile: compiler %s",
                 res.signal ? kb__signal_name(res.signal, sig, sizeof sig)
                            : "produced no library") < 0)
      b->reason[0] = '\0';
  }
out:
  if (tmp_dir != NULL)
    remove_build_dir(tmp_dir);
  kb_free(tmp_dir);
  kb_free(src_path);
  kb_free(lib_tmp);
  kb_free(include_opt);
  kb_free(arch_opt);
  kb_free(tmpdir_env);
  cache_paths_release(&paths);
  kb_free(argv);
  kb_free(envp);
  free_words(knob_words);
  free_words(flag_words);
  kb_buf_release(&text);
  kb_buf_release(&summary);
  kb__proc_result_release(&res);
  if (rc)
    kb__build_release(b);
  return rc;
}

int kb__compile_req(const struct kb__compiler *cc, const struct kb__compile_req *req,
                    struct kb__build *b, struct kb_error *err) {
  return kb__compile_cancellable(cc, req, NULL, b, err);
}

int kb__compile(const struct kb__compiler *cc, const char *source, const char *knobs,
                const char *flags, struct kb__build *b, struct kb_error *err) {
  struct kb__compile_req req = {.source = source, .knobs = knobs, .flags = flags};
  return kb__compile_req(cc, &req, b, err);
}
