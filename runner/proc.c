/* Child process results, signal names and folder removal (see proc.h). */
#include "proc.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *kb__signal_name(int sig, char *buf, size_t size) {
  static const struct {
    int sig;
    const char *name;
  } names[] = {
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
      {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},
      {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},   {SIGTRAP, "SIGTRAP"},
      {SIGPIPE, "SIGPIPE"}, {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}, {SIGALRM, "SIGALRM"},
      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].sig == sig)
      return names[i].name;
  if (size > 0 && snprintf(buf, size, "signal %d", sig) < 0)
    buf[0] = '\0';
  return buf;
}

void kb__proc_result_init(struct kb__proc_result *res) {
  memset(res, 0, sizeof *res);
  kb_buf_init(&res->output);
  kb_buf_init(&res->report);
}

void kb__proc_result_release(struct kb__proc_result *res) {
  if (res == NULL)
    return;
  kb_buf_release(&res->output);
  kb_buf_release(&res->report);
}


int kb__proc_cpu_ns(pid_t pid, unsigned long long *ns) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
  DIR *d = opendir(path);
  if (d == NULL)
    return -1;
  unsigned long long sum = 0;
  int found = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    char stat_path[128];
    snprintf(stat_path, sizeof stat_path, "/proc/%ld/task/%.20s/schedstat", (long)pid,
             e->d_name);
    FILE *f = fopen(stat_path, "re");
    unsigned long long run = 0;
    if (f == NULL)
      continue; /* a thread that ended meanwhile */
    if (fscanf(f, "%llu", &run) == 1) {
      sum += run;
      found = 1;
    }
    fclose(f);
  }
  closedir(d);
  if (!found)
    return -1;
  *ns = sum;
  return 0;
}
