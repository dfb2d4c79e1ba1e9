/* The evaluation's CPU and the builds' CPUs (see cpus.h). */
#define _GNU_SOURCE /* sched_getaffinity, pthread_setaffinity_np */
#include "cpus.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kb/error.h"

int kb__cpus_split(struct kb__cpus *c, struct kb_error *err) {
  memset(c, 0, sizeof *c);
  cpu_set_t all;
  CPU_ZERO(&all);
  if (pthread_getaffinity_np(pthread_self(), sizeof all, &all) != 0)
    return kb_error_set(err, KB_EINTERNAL, "cannot read this thread's CPU affinity");
  c->total = CPU_COUNT(&all);
  c->eval = all;
  c->builds = all;
  if (c->total < 3)
    return KB_OK;
  CPU_ZERO(&c->eval);
  for (int i = 0; i < CPU_SETSIZE; i++)
    if (CPU_ISSET(i, &all)) {
      CPU_SET(i, &c->eval);
      CPU_CLR(i, &c->builds);
      break;
    }
  c->split = 1;
  kb__cpus_format(&c->builds, c->builds_list, sizeof c->builds_list);
  return KB_OK;
}

int kb__cpus_pin(const cpu_set_t *set, struct kb_error *err) {
  int e = pthread_setaffinity_np(pthread_self(), sizeof *set, set);
  if (e != 0)
    return kb_error_set(err, KB_EINTERNAL, "cannot set this thread's CPU affinity: %s",
                        strerror(e));
  return KB_OK;
}

void kb__cpus_format(const cpu_set_t *set, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < CPU_SETSIZE; i++) {
    if (!CPU_ISSET(i, set))
      continue;
    int j = i;
    while (j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, set))
      j++;
    char one[32];
    int n = j > i ? snprintf(one, sizeof one, "%s%d-%d", at ? "," : "", i, j)
                  : snprintf(one, sizeof one, "%s%d", at ? "," : "", i);
    if (at + (size_t)n + 4 > len) {
      snprintf(buf + at, len - at, "...");
      return;
    }
    memcpy(buf + at, one, (size_t)n + 1);
    at += (size_t)n;
    i = j;
  }
}
