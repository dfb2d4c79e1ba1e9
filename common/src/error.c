/* Error codes, names and messages (see kb/error.h). */
#include "kb/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const descriptions[] = {
#define KB_ERR_DESC(name, desc) desc,
    KB_ERRNO_MAP(KB_ERR_DESC)
#undef KB_ERR_DESC
};

static const char *const names[] = {
#define KB_ERR_NAME(name, desc) #name,
    KB_ERRNO_MAP(KB_ERR_NAME)
#undef KB_ERR_NAME
};

const char *kb_strerror(int code) {
  if (code < 0 || code >= KB_ERR_COUNT)
    return "unknown error";
  return descriptions[code];
}

const char *kb_err_name(int code) {
  if (code < 0 || code >= KB_ERR_COUNT)
    return "UNKNOWN";
  return names[code];
}

int kb_err_from_name(const char *name) {
  for (int i = 0; i < KB_ERR_COUNT; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return KB_EINTERNAL;
}

int kb_error_set(struct kb_error *err, int code, const char *fmt, ...) {
  if (err == NULL || err->code != KB_OK)
    return code;
  err->code = code;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  if (n < 0)
    snprintf(err->msg, sizeof err->msg, "%s", kb_strerror(code));
  return code;
}

void kb_error_clear(struct kb_error *err) {
  if (err == NULL)
    return;
  err->code = KB_OK;
  err->msg[0] = '\0';
}

int kb_exit_code(int code) {
  switch ((enum kb_err)code) {
  case KB_EOK:
    return KB_EXIT_OK;
  case KB_EPARSE:
  case KB_EINVAL:
    return KB_EXIT_INPUT;
  case KB_ECONN:
  case KB_EAUTH:
  case KB_ENOTREDIS:
  case KB_EGONE:
    return KB_EXIT_REDIS;
  case KB_EEXISTS:
  case KB_ESTATE:
  case KB_ELOCKED:
    return KB_EXIT_CONFLICT;
  case KB_EBUDGET:
    return KB_EXIT_BUDGET;
  case KB_ECONFINE:
    return KB_EXIT_CONFINE;
  case KB_EINTERRUPTED:
    return KB_EXIT_INTERRUPTED;
  case KB_EWRITE:
    return KB_EXIT_WRITE;
  case KB_ENOMEM:
  case KB_EIO:
  case KB_EREDIS:
  case KB_ENOTFOUND:
  case KB_EEMPTY:
  case KB_ELEASE:
  case KB_ECOMPILE:
  case KB_ELOAD:
  case KB_EHDF5:
  case KB_ECHILD:
  case KB_ETIMEOUT:
  case KB_EINTERNAL:
  case KB_ERR_COUNT:
    return KB_EXIT_FAILURE;
  }
  return KB_EXIT_FAILURE;
}
