/* A watchdog's deadline that leaves out the time the job was stopped (see watchdog.h). */
#include "watchdog.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kb/clock.h"
#include "kb/log.h"

double kb__watchdog_cpu_s(pid_t pid) {
  char path[64], text[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return -1;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  /* the name, field 2, is in parentheses and may hold anything: fields resume after the last ')' */
  const char *p = strrchr(text, ')');
  unsigned long long ut, st;
  long long cut, cst;
  if (p == NULL ||
      sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &ut, &st,
             &cut, &cst) != 4)
    return -1;
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0)
    return -1;
  return (double)(ut + st + (unsigned long long)(cut + cst)) / (double)hz;
}

void kb__watchdog_init(struct kb__watchdog *w, double timeout_s, pid_t child) {
  memset(w, 0, sizeof *w);
  w->deadline = kb_now_mono() + timeout_s;
  w->child = child;
  w->child_cpu_s = -1;
}

int kb__watchdog_slice(struct kb__watchdog *w, int max_ms) {
  double now = kb_now_mono();
  double left_ms = (w->deadline - now) * 1000.0;
  int ms = max_ms;
  if (left_ms < ms)
    ms = left_ms > 0 ? (int)left_ms + 1 : 0;
  w->slice_start = now;
  w->slice_s = ms / 1000.0;
  w->child_cpu_s = w->child > 0 ? kb__watchdog_cpu_s(w->child) : -1;
  return ms;
}

int kb__watchdog_expired(struct kb__watchdog *w) {
  double now = kb_now_mono();
  double gap = now - w->slice_start - w->slice_s;
  if (w->slice_start > 0 && gap > KB_WATCH_STOP_GAP_S && w->stopped_s < KB_WATCH_MAX_STOPPED_S) {
    /* the child ran during the gap (it was not stopped with us): no credit */
    double ran = -1;
    if (w->child > 0 && w->child_cpu_s >= 0) {
      double cpu = kb__watchdog_cpu_s(w->child);
      ran = cpu >= 0 ? cpu - w->child_cpu_s : -1;
    }
    if (w->child <= 0 || (ran >= 0 && ran < 0.25 * gap)) {
      if (gap > KB_WATCH_MAX_STOPPED_S - w->stopped_s)
        gap = KB_WATCH_MAX_STOPPED_S - w->stopped_s;
      w->stopped_s += gap;
      w->deadline += gap;
      kb_info("this runner was stopped for %.1f s (a suspended job, SIGSTOP, a frozen cgroup): "
              "the time is not counted against the watchdog", gap);
    }
  }
  w->slice_start = 0;
  return now >= w->deadline;
}
