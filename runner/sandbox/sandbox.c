/* kb-sandbox's process set-up (see sandbox.h). */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>

#include "confine.h"
#include "dev.h"
#include "integrity.h"
#include "kb/error.h"
#include "proto.h"
#include "serve.h"
#ifdef KB_HAVE_CUPTI_TRACE
#include "cupti_trace.h"
#endif

#define PROTO_FD_MIN 10 /* the protocol moves to descriptors at or above this */
#define WITNESS_FILE "witness.bin" /* in the working folder (witness_calls.h) */

/* Closes every descriptor above 2 but `keep1` and `keep2`. */
static void close_others(int keep1, int keep2) {
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL) {
    for (int fd = 3; fd < 4096; fd++)
      if (fd != keep1 && fd != keep2)
        close(fd);
    return;
  }
  int self = dirfd(d);
  int fds[512];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < (int)(sizeof fds / sizeof fds[0])) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0')
      continue;
    if (fd > 2 && fd != self && fd != keep1 && fd != keep2)
      fds[n++] = (int)fd;
  }
  closedir(d);
  for (int i = 0; i < n; i++)
    close(fds[i]);
}

/* Confines this process (confine.h) over the working folder and `a`'s read-only paths.
 * Returns 0, or -1 after saying why on stderr. */
static int confine(const struct kb__sandbox_args *a, int cuda, int in, int out) {
  struct kb__confine_opts co = {
      .profile = cuda ? KB__CONFINE_C_CUDA : KB__CONFINE_C_HOST,
      .rw_dir = a->dir != NULL ? "." : NULL,
      .proto = {in, out},
      .n_proto = 2};
  for (int i = 0; i < a->n_ro && i < KB__CONFINE_RO_MAX; i++)
    co.ro[co.n_ro++] = a->ro[i];
  struct kb__confine_level level;
  char why[256] = ""; /* kb__confine_apply's reason (confine.h keeps a buffer: see there) */
  if (kb__confine_apply(&co, &level, why, sizeof why) != 0) {
    fprintf(stderr, "kb-sandbox: cannot confine the process: %s\n", why);
    return -1;
  }
  /* the filter lets no other code write to, close or copy the protocol's descriptors: a
   * candidate cannot put a frame of its own in front of the sandbox's reply */
  kb__proto_set_sender(kb__confine_send);
  return 0;
}

/* Makes this process the one the kernel's OOM killer takes first (oom_score_adj 1000): a
 * candidate that exhausts the node's memory (or the Slurm job's cgroup) must end its own
 * evaluation as a crash ("killed by SIGKILL"), not the runner, its trusted worker or Redis,
 * which the killer could otherwise pick for their larger size. Raising one's own score needs
 * no privilege; a failure (no /proc) is said and changes nothing else. */
static void first_to_die(void) {
  int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, "1000", 4) != 4)
    fprintf(stderr, "kb-sandbox: cannot set its oom_score_adj: %s\n", strerror(errno));
  if (fd >= 0)
    close(fd);
}

int kb__sandbox_run(const struct kb__sandbox_args *a) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (a->parent > 0 && getppid() != a->parent)
    return KB_EXIT_FAILURE; /* the runner died before we got here */
  /* a candidate's fault must end the process with its signal, which the runner names; a
   * sanitizer build installs handlers that would turn it into an exit status */
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
    signal(fatal[i], SIG_DFL);
  static const int ignore[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
  for (size_t i = 0; i < sizeof ignore / sizeof ignore[0]; i++)
    signal(ignore[i], SIG_IGN);
  struct rlimit no_core = {1, 1}; /* 1 byte: no core file, and no piped core (confine.c) */
  setrlimit(RLIMIT_CORE, &no_core);
  if (!a->trusted)
    first_to_die();

  int in = fcntl(0, F_DUPFD_CLOEXEC, PROTO_FD_MIN);
  int out = fcntl(1, F_DUPFD_CLOEXEC, PROTO_FD_MIN);
  int devnull = open("/dev/null", O_RDONLY);
  if (in < 0 || out < 0 || devnull < 0 || dup2(devnull, 0) < 0 || dup2(2, 1) < 0) {
    fprintf(stderr, "kb-sandbox: cannot set up its descriptors\n");
    return KB_EXIT_FAILURE;
  }
  close(devnull);
  close_others(in, out);
  if (a->dir != NULL && chdir(a->dir) != 0) {
    fprintf(stderr, "kb-sandbox: cannot enter the working folder \"%s\"\n", a->dir);
    return KB_EXIT_FAILURE;
  }

  struct kb__dev d;
  struct kb_error err = {0};
  int cuda = strcmp(a->backend, "cuda") == 0;
  int rc = cuda ? kb__dev_cuda_open(&d, a->device, &err) : kb__dev_host_open(&d, &err);
  if (rc != KB_OK) {
    fprintf(stderr, "kb-sandbox: cannot open the %s device: %s\n", a->backend, err.msg);
    return KB_EXIT_DEVICE;
  }
  /* what would otherwise be set up lazily, after confinement: CUPTI's and the Range Profiler's
   * host side (libraries, buffers, threads), jansson's hash seed (it reads /dev/urandom) */
#ifdef KB_HAVE_CUPTI_TRACE
  struct kb_error cerr = {0};
  if (cuda && kb__cupti_prewarm(&cerr) != KB_OK)
    fprintf(stderr, "kb-sandbox: cupti set-up: %s\n", cerr.msg);
#endif
  json_object_seed(0);
  kb__fpenv_save(); /* what each candidate's call leaves is put back to this (integrity.h) */
  /* the witness's outputs (witness_calls.h): opened now, as no file can be once confined */
  int wfd = a->dir != NULL ? open(WITNESS_FILE, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC |
                                                    O_NOFOLLOW, 0600)
                           : -1;
  /* the process's own mappings, checked between candidates (integrity.h): the kernel writes
   * this file anew at each read, and none can be opened once confined */
  int maps_fd = a->trusted ? -1 : open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  struct kb__serve_opts so = {.ordinal = a->device, .in_fd = in, .out_fd = out,
                              .trusted = a->trusted, .witness_fd = wfd, .maps_fd = maps_fd};
  /* a trusted sandbox loads no candidate: the oracle and the confined sandbox's file only */
  if (!a->trusted && confine(a, cuda, in, out) != 0)
    return KB_EXIT_CONFINE;
  rc = kb__sandbox_serve(&d, &so);
  if (rc != 3)
    d.close(&d);
  fflush(stdout);
  return rc;
}
