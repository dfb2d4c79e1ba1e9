/* Error reports and numeric options of the commands (see kb/cli.h). */
#include "kb/cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kb/error.h"

int kb_cli_fail(const char *prog, const struct kb_error *err) {
  fprintf(stderr, "%s: %s\n", prog, err->msg);
  return kb_exit_code(err->code);
}

int kb_cli_usage(const char *prog, const struct kb_error *err) {
  fprintf(stderr, "%s: %s\n", prog, err->msg);
  return KB_EXIT_USAGE;
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
