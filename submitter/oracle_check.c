/* The oracle build check of kb-submit validate (see oracle_check.h). */
#include "oracle_check.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "kb/submit.h"
#include "kb/task.h"

extern char **environ;

#define OUTPUT_KEPT 600 /* bytes of a tool's message kept in the error */

/* Python run on every PyTorch oracle: argv[1..] are paths; prints "path: why" and exits 1 for
 * the first that does not parse, defines no class Model at module level, or binds no
 * get_inputs or get_init_inputs there (a def, an assignment or an import: the PyTorch worker
 * calls both; without them every evaluation of the task was infra_error). */
static const char py_check[] =
    "import ast, sys\n"
    "def bound(t):\n"
    "    for n in t.body:\n"
    "        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):\n"
    "            yield n.name\n"
    "        elif isinstance(n, (ast.Assign, ast.AnnAssign)):\n"
    "            for x in (n.targets if isinstance(n, ast.Assign) else [n.target]):\n"
    "                if isinstance(x, ast.Name):\n"
    "                    yield x.id\n"
    "        elif isinstance(n, (ast.Import, ast.ImportFrom)):\n"
    "            for a in n.names:\n"
    "                yield a.asname or a.name.split('.')[0]\n"
    "for p in sys.argv[1:]:\n"
    "    try:\n"
    "        t = ast.parse(open(p, encoding='utf-8').read(), p)\n"
    "    except (SyntaxError, UnicodeDecodeError) as e:\n"
    "        print('%s: %s' % (p, e)); sys.exit(1)\n"
    "    if not any(isinstance(n, ast.ClassDef) and n.name == 'Model' for n in t.body):\n"
    "        print('%s: defines no class Model' % p); sys.exit(1)\n"
    "    names = set(bound(t))\n"
    "    for f in ('get_inputs', 'get_init_inputs'):\n"
    "        if f not in names:\n"
    "            print('%s: defines no %s() at its top level' % (p, f)); sys.exit(1)\n";

/* A tool started by start(): its pid and the read end of its output. */
struct job {
  pid_t pid;  /* 0: not started (the program is not there) */
  int fd;     /* its stdout and stderr */
};

/* Starts argv (argv[0] looked up on PATH) with stdout and stderr into a pipe. `j->pid` = 0 when
 * the program is not there. */
static int start(char *const argv[], struct job *j, struct kb_error *err) {
  j->pid = 0;
  j->fd = -1;
  int fds[2];
  if (pipe(fds) != 0)
    return kb_error_set(err, KB_EIO, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", 0, 0);
  int e = posix_spawnp(&j->pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (e != 0) {
    close(fds[0]);
    j->pid = 0;
    return e == ENOENT ? KB_OK : kb_error_set(err, KB_EIO, "cannot run %s: %s", argv[0],
                                                strerror(e));
  }
  j->fd = fds[0];
  return KB_OK;
}

/* Reads job `j`'s output into `out` (its first OUTPUT_KEPT bytes) and waits for it. `*ran` = 0
 * when the program was not there; else `*status` is its exit status (-1: a signal). */
static int collect(struct job *j, struct kb_buf *out, int *ran, int *status,
                   struct kb_error *err) {
  *ran = 0;
  *status = 0;
  if (j->pid == 0)
    return KB_OK;
  char chunk[4096];
  ssize_t n;
  int rc = KB_OK;
  while ((n = read(j->fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0 && rc == KB_OK && out->len < OUTPUT_KEPT)
      rc = kb_buf_add(out, chunk, (size_t)n);
  close(j->fd);
  int ws = 0;
  while (waitpid(j->pid, &ws, 0) < 0 && errno == EINTR) {
  }
  j->pid = 0;
  /* posix_spawnp reports a missing program as exit 127 on some libcs */
  *ran = !(WIFEXITED(ws) && WEXITSTATUS(ws) == 127);
  *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  return rc == KB_OK ? KB_OK : kb_error_set(err, rc, "out of memory");
}

/* start() then collect(). */
static int run(char *const argv[], struct kb_buf *out, int *ran, int *status,
               struct kb_error *err) {
  struct job j;
  int rc = start(argv, &j, err);
  if (rc == KB_OK)
    rc = collect(&j, out, ran, status, err);
  return rc;
}

static const char *include_dir(void) {
  const char *env = getenv("KB_INCLUDE_DIR");
  return env != NULL && *env ? env : KB_ABI_INCLUDE_DIR;
}

/* The error for task `t`'s oracle, with `out` (a tool's message) cut to its first error line
 * (else to its first 300 bytes). */
static int fail(const struct kb_task *t, const char *tool, struct kb_buf *out,
                struct kb_error *err) {
  const char *msg = out->data != NULL ? out->data : "";
  const char *base = strrchr(t->oracle_path, '/');
  const char *first = strstr(msg, "error"); /* the first error's line, when there is one */
  if (first != NULL) {
    while (first > msg && first[-1] != '\n')
      first--;
    const char *nl = strchr(first, '\n');
    msg = first;
    if (nl != NULL) {
      int len1 = (int)(nl - first);
      return kb_error_set(err, KB_EPARSE,
                          "%s: \"oracle.source\" \"%s\" does not compile (%s): %.*s",
                          t->json_path, base != NULL ? base + 1 : t->oracle_path, tool,
                          len1 > 300 ? 300 : len1, first);
    }
  }
  int len = (int)strlen(msg);
  while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
    len--;
  if (len > 300)
    len = 300;
  return kb_error_set(err, KB_EPARSE, "%s: \"oracle.source\" \"%s\" does not compile (%s): %.*s",
                      t->json_path, base != NULL ? base + 1 : t->oracle_path, tool, len, msg);
}

/* Starts the build of task `t`'s C or CUDA oracle. */
static int start_native(const struct kb_task *t, struct job *j, struct kb_error *err) {
  char inc[4200];
  snprintf(inc, sizeof inc, "-I%s", include_dir());
  char *cc_argv[] = {"cc", "-fsyntax-only", "-std=c11", inc, "-x", "c", t->oracle_path, NULL};
  char *nvcc_argv[] = {"nvcc", "-c", "-o", "/dev/null", inc, t->oracle_path, NULL};
  const char *no_nvcc = getenv("KB_VALIDATE_NVCC");
  int cuda = t->oracle_kind == KB_ORACLE_CUDA;
  if (cuda && no_nvcc != NULL && strcmp(no_nvcc, "0") == 0) {
    j->pid = 0;
    return KB_OK;
  }
  return start(cuda ? nvcc_argv : cc_argv, j, err);
}

/* The C and CUDA oracles, NATIVE_JOBS builds at a time (nvcc takes seconds per file). */
#define NATIVE_JOBS 8
static int check_native(const struct kb_submission *s, struct kb_error *err) {
  int rc = KB_OK;
  for (int first = 0; rc == KB_OK && first < s->n_tasks; first += NATIVE_JOBS) {
    struct job jobs[NATIVE_JOBS] = {{0, -1}};
    int n = s->n_tasks - first < NATIVE_JOBS ? s->n_tasks - first : NATIVE_JOBS;
    for (int i = 0; rc == KB_OK && i < n; i++) {
      int kind = s->tasks[first + i].oracle_kind;
      if (kind == KB_ORACLE_C || kind == KB_ORACLE_CUDA)
        rc = start_native(&s->tasks[first + i], &jobs[i], err);
    }
    for (int i = 0; i < n; i++) { /* every started build is waited for, also after a failure */
      struct kb_buf out;
      kb_buf_init(&out);
      int ran = 0, status = 0;
      struct kb_error jerr = {0};
      int jrc = collect(&jobs[i], &out, &ran, &status, &jerr);
      const struct kb_task *t = &s->tasks[first + i];
      if (rc == KB_OK && jrc != KB_OK)
        rc = kb_error_set(err, jrc, "%s", jerr.msg);
      else if (rc == KB_OK && ran && status != 0)
        rc = fail(t, t->oracle_kind == KB_ORACLE_CUDA ? "nvcc -c" : "cc -fsyntax-only", &out,
                  err);
      kb_buf_release(&out);
    }
  }
  return rc;
}

/* All PyTorch oracles in one interpreter. */
static int check_pytorch(const struct kb_submission *s, struct kb_error *err) {
  const char *py = getenv("KB_PYTHON");
  char **argv = kb_calloc((size_t)s->n_tasks + 4, sizeof *argv);
  if (argv == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  int n = 0;
  argv[n++] = (char *)(py != NULL && *py ? py : "/usr/bin/python3");
  argv[n++] = "-c";
  argv[n++] = (char *)py_check;
  for (int i = 0; i < s->n_tasks; i++)
    if (s->tasks[i].oracle_kind == KB_ORACLE_PYTORCH)
      argv[n++] = s->tasks[i].oracle_path;
  struct kb_buf out;
  kb_buf_init(&out);
  int ran = 0, status = 0, rc = KB_OK;
  if (n > 3)
    rc = run(argv, &out, &ran, &status, err);
  if (rc == KB_OK && ran && status != 0) {
    const struct kb_task *bad = &s->tasks[0];
    for (int i = 0; i < s->n_tasks; i++) /* the message starts with the path that failed */
      if (s->tasks[i].oracle_kind == KB_ORACLE_PYTORCH && out.data != NULL &&
          strncmp(out.data, s->tasks[i].oracle_path, strlen(s->tasks[i].oracle_path)) == 0)
        bad = &s->tasks[i];
    const char *msg = out.data != NULL ? out.data : "";
    size_t skip = strncmp(msg, bad->oracle_path, strlen(bad->oracle_path)) == 0
                      ? strlen(bad->oracle_path) + 2
                      : 0;
    struct kb_buf tail;
    kb_buf_init(&tail);
    rc = kb_buf_adds(&tail, skip <= strlen(msg) ? msg + skip : msg);
    rc = rc == KB_OK ? fail(bad, "python: parse, class Model, get_inputs, get_init_inputs", &tail, err)
                     : kb_error_set(err, KB_ENOMEM, "out of memory");
    kb_buf_release(&tail);
  }
  kb_buf_release(&out);
  kb_free(argv);
  return rc;
}

int kb__oracles_check(const struct kb_submission *s, struct kb_error *err) {
  int rc = check_native(s, err);
  return rc ? rc : check_pytorch(s, err);
}
