/* Error reports and numeric options of the commands (see kb/cli.h). */
#include "kb/cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb/error.h"

int kb_cli_fail(const char *prog, const struct kb_error *err) {
  fprintf(stderr, "%s: %s\n", prog, err->msg);
  return kb_exit_code(err->code);
}

int kb_cli_usage(const char *prog, const struct kb_error *err) {
  fprintf(stderr, "%s: %s\n", prog, err->msg);
  return kb_cli_try_help(prog);
}

int kb_cli_try_help(const char *prog) {
  fprintf(stderr, "Try '%s --help' for more information.\n", prog);
  return KB_EXIT_USAGE;
}

/* defined in the build's kb_version.c (common/version.cmake) */
extern const char kb_version_string[];
extern const char kb_commit_string[];

int kb_cli_version(const char *prog) {
  printf("%s %s (commit %s)\n", prog, kb_version_string, kb_commit_string);
  return KB_EXIT_OK;
}

void kb_cli_user_tmp(const char *prefix, char *out, size_t size) {
  const char *user = getenv("USER");
  snprintf(out, size, "/tmp/%s-%s", prefix, user ? user : "user");
}

void kb_cli_who(const char *prog, char *out, size_t size) {
  char host[128] = "localhost";
  gethostname(host, sizeof host - 1);
  const char *user = getenv("USER");
  snprintf(out, size, "%s:%s@%s", prog, user ? user : "unknown", host);
}

int kb_cli_parse_long(const char *opt, const char *text, long min, long max, long *out,
                      struct kb_error *err) {
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < min || v > max)
    return kb_error_set(err, KB_EINVAL, "%s: \"%s\" is not a whole number from %ld to %ld", opt,
                        text, min, max);
  *out = v;
  return KB_OK;
}

int kb_cli_parse_double(const char *opt, const char *text, double min, double max, double *out,
                        struct kb_error *err) {
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !isfinite(v) || v < min || v > max)
    return kb_error_set(err, KB_EINVAL, "%s: \"%s\" is not a number from %g to %g", opt, text,
                        min, max);
  *out = v;
  return KB_OK;
}

void kb_cli_fit_name(const char *name, int width, char *out, size_t size) {
  if (width < 8)
    width = 8;
  if ((size_t)width >= size)
    width = (int)size - 1;
  size_t n = strlen(name);
  if (n <= (size_t)width) {
    snprintf(out, size, "%s", name);
    return;
  }
  int head = (width - 2) / 3, tail = width - 2 - head;
  snprintf(out, size, "%.*s..%s", head, name, name + n - (size_t)tail);
}
