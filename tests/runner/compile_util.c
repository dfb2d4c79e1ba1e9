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

void tu_remove_tree(const char *path) {
  DIR *d = opendir(path);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char child[PATH_MAX];
      int n = snprintf(child, sizeof child, "%s/%s", path, e->d_name);
      if (n < 0 || (size_t)n >= sizeof child)
        continue;
      struct stat st;
      if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
        tu_remove_tree(child);
      else
        unlink(child);
    }
    closedir(d);
  }
  rmdir(path);
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
