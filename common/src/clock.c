/* Clocks and sleeping (see kb/clock.h). */
#include "kb/clock.h"

#include <errno.h>
#include <time.h>

static double seconds(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double kb_now_mono(void) { return seconds(CLOCK_MONOTONIC); }

double kb_now_wall(void) { return seconds(CLOCK_REALTIME); }

void kb_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}
