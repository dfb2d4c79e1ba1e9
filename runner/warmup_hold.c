/* Holding off the compile tier's warm-up passes at the device (warmup_hold.h). The lock is
 * the one kb_build_modelnew.py's gpu_turn takes: an flock(2) on `<cache>/.gpu-warmup.lock`. A
 * blocking flock cannot be bounded in time, so the wait polls LOCK_NB. */
#include "warmup_hold.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "kb/clock.h"
#include "kb/log.h"

#define POLL_NS 50000000L /* 50 ms */

int kb__warmup_hold(const char *cache_dir, double timeout_s, const volatile sig_atomic_t *stop) {
  if (cache_dir == NULL)
    return -1;
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/.gpu-warmup.lock", cache_dir);
  if (n < 0 || (size_t)n >= sizeof path)
    return -1;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    kb_warn("warm-up lock %s: %s: the retry goes ahead without it", path, strerror(errno));
    return -1;
  }
  double deadline = kb_now_mono() + timeout_s;
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
      return fd;
    if (errno != EWOULDBLOCK && errno != EINTR) {
      kb_warn("warm-up lock %s: %s: the retry goes ahead without it", path, strerror(errno));
      break;
    }
    if (kb_now_mono() >= deadline || (stop != NULL && *stop)) {
      kb_info("the compile tier's warm-up passes still held the device after %.0f s: the retry "
              "goes ahead beside them", timeout_s);
      break;
    }
    nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = POLL_NS}, NULL);
  }
  close(fd);
  return -1;
}

void kb__warmup_release(int fd) {
  if (fd < 0)
    return;
  (void)flock(fd, LOCK_UN);
  close(fd);
}
