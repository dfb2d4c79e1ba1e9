/* GPU lists for the local launcher (see gpus.h). */
#include "gpus.h"

#include <errno.h>
#include <jansson.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb/buf.h"
#include "kb/error.h"

extern char **environ;

#define MAX_ORDINAL 1023

/* Parses a decimal ordinal at `*p`, advancing it. Returns -1 when there is none or it is too
 * large. */
static int ordinal(const char **p) {
  if (**p < '0' || **p > '9')
    return -1;
  long v = 0;
  while (**p >= '0' && **p <= '9') {
    v = v * 10 + (**p - '0');
    if (v > MAX_ORDINAL)
      return -1;
    (*p)++;
  }
  return (int)v;
}

static int add(int *ids, int *n, int id, const char *list, struct kb_error *err) {
  for (int i = 0; i < *n; i++)
    if (ids[i] == id)
      return kb_error_set(err, KB_EINVAL, "--gpus \"%s\": GPU %d is listed twice", list, id);
  if (*n >= KB_GPUS_MAX)
    return kb_error_set(err, KB_EINVAL, "--gpus \"%s\": more than %d GPUs", list, KB_GPUS_MAX);
  ids[(*n)++] = id;
  return KB_OK;
}

int kb__gpus_parse(const char *list, int *ids, int *n, struct kb_error *err) {
  *n = 0;
  const char *p = list;
  for (;;) {
    const char *start = p;
    int lo = ordinal(&p), hi = lo;
    if (lo >= 0 && *p == '-') {
      p++;
      hi = ordinal(&p);
    }
    if (lo < 0 || hi < lo || (*p != ',' && *p != '\0')) {
      size_t len = strcspn(start, ",");
      return kb_error_set(err, KB_EINVAL,
                          "--gpus \"%s\": \"%.*s\" is not a GPU ordinal (0-%d) or a range A-B "
                          "with A <= B",
                          list, (int)len, start, MAX_ORDINAL);
    }
    for (int id = lo; id <= hi; id++) {
      int rc = add(ids, n, id, list, err);
      if (rc)
        return rc;
    }
    if (*p == '\0')
      return KB_OK;
    p++;
  }
}

/* Runs `runner --list-devices --json` and collects its stdout into `out`. */
static int run_probe(const char *runner, struct kb_buf *out, struct kb_error *err) {
  int fds[2];
  if (pipe(fds) != 0)
    return kb_error_set(err, KB_ECHILD, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  char *argv[] = {(char *)runner, "--list-devices", "--json", NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, runner, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return kb_error_set(err, KB_ECHILD, "cannot start %s: %s", runner, strerror(rc));
  }
  char chunk[4096];
  ssize_t got;
  rc = KB_OK;
  while ((got = read(fds[0], chunk, sizeof chunk)) != 0) {
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      rc = kb_error_set(err, KB_ECHILD, "reading from %s --list-devices: %s", runner,
                        strerror(errno));
      break;
    }
    if (rc == KB_OK && kb_buf_add(out, chunk, (size_t)got) != KB_OK)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory reading %s --list-devices", runner);
  }
  close(fds[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (rc == KB_OK && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    rc = kb_error_set(err, KB_ECHILD, "%s --list-devices --json failed (%s %d)", runner,
                      WIFEXITED(status) ? "exit status" : "signal",
                      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  return rc;
}

int kb__gpus_probe(const char *runner, int *ids, int *n, char *why, size_t why_size,
                  struct kb_error *err) {
  *n = 0;
  if (why_size)
    why[0] = '\0';
  struct kb_buf out;
  kb_buf_init(&out);
  int rc = run_probe(runner, &out, err);
  json_t *root = NULL;
  if (rc == KB_OK) {
    json_error_t je;
    root = json_loadb(out.data, out.len, 0, &je);
    if (!root)
      rc = kb_error_set(err, KB_EPARSE, "%s --list-devices --json: %s (line %d)", runner,
                        je.text, je.line);
  }
  json_t *devs = root ? json_object_get(root, "devices") : NULL;
  if (rc == KB_OK && !json_is_array(devs))
    rc = kb_error_set(err, KB_EPARSE, "%s --list-devices --json: no \"devices\" array", runner);
  for (size_t i = 0; rc == KB_OK && i < json_array_size(devs) && *n < KB_GPUS_MAX; i++) {
    json_t *index = json_object_get(json_array_get(devs, i), "index");
    if (!json_is_integer(index) || json_integer_value(index) < 0)
      rc = kb_error_set(err, KB_EPARSE, "%s --list-devices --json: devices[%zu].index is not "
                        "a device ordinal", runner, i);
    else
      ids[(*n)++] = (int)json_integer_value(index);
  }
  if (rc == KB_OK && *n == 0 && why_size) {
    const char *w = json_string_value(json_object_get(root, "why_none"));
    snprintf(why, why_size, "%s", w ? w : "no device reported");
  }
  json_decref(root);
  kb_buf_release(&out);
  return rc;
}
