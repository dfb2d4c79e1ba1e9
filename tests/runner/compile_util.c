/* Helpers of the compile-tier tests (see compile_util.h). */
#include "compile_util.h"

#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kb/clock.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "proc.h"

int tu_compiler_setup(struct kb__compiler *cc, char *cache, size_t size, const char *templ,
                      const char *compiler, const char *abi_dir) {
  struct kb_error err = {0};
  snprintf(cache, size, "%s", templ);
  if (mkdtemp(cache) == NULL)
    return -1;
  if (kb__compiler_init(cc, cache, compiler, abi_dir, &err) != KB_OK) {
    fprintf(stderr, "compiler: %s\n", err.msg);
    return -1;
  }
  return 0;
}

int tu_compiler_teardown(struct kb__compiler *cc, const char *cache) {
  kb__compiler_release(cc);
  kb_remove_tree(cache, NULL);
  return 0;
}

char **tu_list_files(const char *dir, const char *ext, int *n) {
  char **names = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  size_t elen = strlen(ext);
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len <= elen || strcmp(e->d_name + len - elen, ext) != 0)
      continue;
    names = kb_reallocarray(names, (size_t)*n + 1, sizeof *names);
    assert_non_null(names);
    names[(*n)++] = kb_strdup(e->d_name);
  }
  closedir(d);
  for (int i = 0; i < *n; i++)
    for (int j = i + 1; j < *n; j++)
      if (strcmp(names[j], names[i]) < 0) {
        char *t = names[i];
        names[i] = names[j];
        names[j] = t;
      }
  return names;
}

void tu_free_names(char **names, int n) {
  for (int i = 0; i < n; i++)
    kb_free(names[i]);
  kb_free(names);
}

void tu_expect_free_kills(struct kb__compile_pool *p, const char *cache, int min_running) {
  int running = tu_processes_in(cache);
  print_message("processes in build folders before free: %d\n", running);
  assert_true(running >= min_running);
  double t1 = kb_now_mono();
  kb__compile_pool_free(p);
  double took = kb_now_mono() - t1;
  print_message("free took %.3f s\n", took);
  assert_true(took < 1.0);
  /* killed orphans (background children of a build) are reaped by init, a moment later */
  assert_int_equal(tu_processes_left(cache, 2), 0);
  assert_int_equal(tu_build_dirs_in(cache), 0);
}

void tu_mkdtemp(char *templ) {
  if (mkdtemp(templ) == NULL)
    fail_msg("cannot create \"%s\"", templ);
}

char *tu_slurp(const char *path) {
  struct kb_buf b;
  struct kb_error err = {0};
  kb_buf_init(&b);
  if (kb_buf_read_file(&b, path, &err) != KB_OK)
    fail_msg("%s", err.msg);
  return kb_buf_detach(&b);
}

void tu_write(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
    fail_msg("cannot write \"%s\"", path);
}

int tu_processes_in(const char *dir) {
  char real[PATH_MAX];
  if (realpath(dir, real) == NULL)
    snprintf(real, sizeof real, "%s", dir);
  size_t len = strlen(real);
  int found = 0;
  DIR *d = opendir("/proc");
  if (d == NULL)
    return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0)
      continue;
    char link[64], cwd[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%ld/cwd", pid);
    ssize_t n = readlink(link, cwd, sizeof cwd - 1);
    if (n <= 0)
      continue;
    cwd[n] = '\0';
    if (strncmp(cwd, real, len) == 0 && (cwd[len] == '/' || cwd[len] == '\0'))
      found++;
  }
  closedir(d);
  return found;
}

int tu_processes_left(const char *dir, double timeout_s) {
  double t0 = kb_now_mono();
  int n;
  while ((n = tu_processes_in(dir)) > 0 && kb_now_mono() - t0 < timeout_s)
    usleep(20000);
  return n;
}

int tu_build_dirs_in(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  if (d == NULL)
    return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, "tmp.", 4) == 0)
      n++;
  closedir(d);
  return n;
}

void tu_build(const struct kb__compiler *cc, const char *source, const char *knobs,
              const char *flags, const char *arch, struct kb__build *b) {
  struct kb_error err = {0};
  struct kb__compile_req req = {.source = source, .knobs = knobs, .flags = flags, .arch = arch};
  kb__build_init(b);
  int rc = kb__compile_req(cc, &req, b, &err);
  if (rc != KB_OK)
    fail_msg("build: %s: %s", kb_err_name(rc), err.msg);
}

void tu_header(const char *source, const char *name, char *out, size_t size) {
  char marker[64];
  snprintf(marker, sizeof marker, "// %s:", name);
  out[0] = '\0';
  const char *p = strstr(source, marker);
  if (p == NULL)
    return;
  p += strlen(marker);
  while (*p == ' ')
    p++;
  size_t len = strcspn(p, "\n");
  snprintf(out, size, "%.*s", (int)len, p);
}
