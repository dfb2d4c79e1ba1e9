/* Operational log lines on stderr (see kb/log.h). */
#include "kb/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *program = "kb";
static int threshold = KB_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void kb_log_init(const char *name) {
  program = name;
  const char *env = getenv("KB_LOG");
  if (env == NULL)
    return;
  for (int i = KB_LOG_DEBUG; i <= KB_LOG_ERROR; i++)
    if (strcmp(env, level_names[i]) == 0)
      threshold = i;
  if (strcmp(env, "off") == 0)
    threshold = KB_LOG_OFF;
}

void kb_log_set_level(int level) { threshold = level; }

int kb_log_enabled(int level) { return level >= threshold; }

void kb_log(int level, const char *fmt, ...) {
  if (level < threshold || level > KB_LOG_ERROR)
    return;
  char stamp[32];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* One fprintf per line keeps lines from concurrent processes whole. */
  fprintf(stderr, "%s.%03ld %s[%ld] %s: %s\n", stamp, ts.tv_nsec / 1000000L, program,
          (long)getpid(), level_names[level], line);
}
