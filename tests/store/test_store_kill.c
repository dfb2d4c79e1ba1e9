/* Kill test: a writer (`store_writer loop`) appends evaluations with a flush every two and prints
 * the count after each flush; this test kills it with SIGKILL at random moments, many times, on
 * the same file. After each kill:
 *   - h5py reads the killed file as a SWMR reader (check_h5.py loop --swmr), before any recovery;
 *   - every other time, kb__store_open() recovers it here and check_h5.py checks that every row
 *     reported flushed is present exactly once and equal to what was written (otherwise the next
 *     writer recovers it itself, and may be killed while doing so).
 * At the end the file is recovered, a writer runs to completion on it, and h5dump and h5py read
 * it. KB_KILL_SEED=<n> replays a run; KB_KILLS=<n> sets the number of kills (default 20).
 *
 * usage: test_store_kill WRITER PYTHON CHECK_H5_PY H5DUMP
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "kb/error.h"
#include "store.h"

static uint64_t rng_state;

static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Uniform in [lo, hi] milliseconds, as nanoseconds. */
static int64_t rand_ns(int lo_ms, int hi_ms) {
  int64_t span = (int64_t)(hi_ms - lo_ms) * 1000000 + 1;
  return (int64_t)lo_ms * 1000000 + (int64_t)(rng() % (uint64_t)span);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Runs argv to completion; returns its exit status, or -1 when it did not exit normally. */
static int run(char *const argv[]) {
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    execv(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Parses the last complete line "<evals> <cands>" in `buf`; returns evals or -1 when none. */
static long last_report(const char *buf, size_t len) {
  long evals = -1;
  size_t start = 0;
  for (size_t i = 0; i < len; i++) {
    if (buf[i] != '\n')
      continue;
    char line[64];
    size_t n = i - start < sizeof line - 1 ? i - start : sizeof line - 1;
    memcpy(line, buf + start, n);
    line[n] = '\0';
    char *end = NULL;
    long v = strtol(line, &end, 10);
    if (end != line && *end == ' ')
      evals = v;
    start = i + 1;
  }
  return evals;
}

static size_t count_lines(const char *buf, size_t len) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++)
    n += buf[i] == '\n';
  return n;
}

struct kill_result {
  long reported; /* evaluations in the last reported flush; -1 when none */
  size_t lines;  /* reports seen */
  int64_t ms;    /* writer's lifetime */
};

/* Counts report lines in `buf` with more than `base` evaluations. */
static size_t count_new(const char *buf, size_t len, long base) {
  size_t n = 0, start = 0;
  for (size_t i = 0; i < len; i++) {
    if (buf[i] != '\n')
      continue;
    if (last_report(buf + start, i + 1 - start) > base)
      n++;
    start = i + 1;
  }
  return n;
}

/* Starts the writer, kills it with SIGKILL per `mode`, and collects what it reported (`base`:
 * the most reported before). Returns 0, or -1 when the writer was not killed by our signal (it
 * failed on its own). */
static int start_and_kill(const char *writer, const char *path, int mode, long base,
                          struct kill_result *out) {
  int fds[2];
  if (pipe(fds) != 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(writer, writer, "loop", path, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  int64_t t0 = now_ns();
  /* mode 0: during open/create/recovery; 1, 3: at a random time; 2: 0-3 ms after the k-th
   * report of new rows, so inside the next adds or flush */
  int64_t deadline = t0;
  size_t after_lines = 0;
  switch (mode) {
  case 0:
    deadline += rand_ns(0, 25);
    break;
  case 1:
    deadline += rand_ns(25, 400);
    break;
  case 2:
    deadline += 5000 * (int64_t)1000000;
    after_lines = 1 + (size_t)(rng() % 300);
    break;
  default:
    deadline += rand_ns(0, 1000);
    break;
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int64_t extra = -1;
  for (;;) {
    int64_t now = now_ns();
    if (extra < 0 && after_lines > 0 && count_new(buf, len, base) >= after_lines) {
      extra = rand_ns(0, 3);
      deadline = now + extra;
    }
    if (now >= deadline)
      break;
    struct pollfd p = {fds[0], POLLIN, 0};
    int wait_ms = (int)((deadline - now) / 1000000);
    int r = poll(&p, 1, wait_ms > 0 ? wait_ms : 0);
    if (r > 0) {
      if (len + 4096 > cap) {
        cap = cap ? cap * 2 : 65536;
        buf = realloc(buf, cap);
        if (buf == NULL)
          abort();
      }
      ssize_t n = read(fds[0], buf + len, 4096);
      if (n <= 0)
        break; /* the writer died or closed stdout: the status below says which */
      len += (size_t)n;
    }
  }
  kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  out->ms = (now_ns() - t0) / 1000000;
  for (;;) {
    if (len + 4096 > cap) {
      cap = cap ? cap * 2 : 65536;
      buf = realloc(buf, cap);
      if (buf == NULL)
        abort();
    }
    ssize_t n = read(fds[0], buf + len, 4096);
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  close(fds[0]);
  out->reported = last_report(buf, len);
  out->lines = count_lines(buf, len);
  free(buf);
  if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
    fprintf(stderr, "writer was not killed by us: status %d\n", st);
    return -1;
  }
  return 0;
}

/* Recovers `path` with kb__store_open(); checks it holds at least `min` evaluations. Returns the
 * count, or -1. */
static long recover(const char *path, long min, int *recovered) {
  struct kb_error err = {0, ""};
  struct kb_store_task_info info = fx_info();
  struct kb_store *s = NULL;
  if (kb__store_open(path, &info, &s, &err) != KB_OK) {
    fprintf(stderr, "recovery failed: %s\n", err.msg);
    return -1;
  }
  long n = kb__store_evaluation_count(s);
  *recovered = kb__store_recovered(s);
  kb__store_close(s);
  if (n < min) {
    fprintf(stderr, "after recovery %ld evaluations, %ld were reported flushed\n", n, min);
    return -1;
  }
  return n;
}

static int check(char *python, char *script, const char *path, long min, int swmr) {
  char minbuf[32];
  snprintf(minbuf, sizeof minbuf, "%ld", min < 0 ? 0 : min);
  char *argv[] = {python, script, "loop", (char *)path, minbuf, swmr ? "--swmr" : NULL, NULL};
  return run(argv);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: test_store_kill WRITER PYTHON CHECK_H5_PY H5DUMP\n");
    return 2;
  }
  char *writer = argv[1], *python = argv[2], *script = argv[3], *h5dump = argv[4];
  uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
  long kills = 20;
  const char *env = getenv("KB_KILL_SEED");
  char *end = NULL;
  if (env != NULL) {
    errno = 0;
    seed = strtoull(env, &end, 10);
    if (errno != 0 || end == env || *end != '\0') {
      fprintf(stderr, "bad KB_KILL_SEED \"%s\"\n", env);
      return 2;
    }
  }
  env = getenv("KB_KILLS");
  if (env != NULL) {
    errno = 0;
    kills = strtol(env, &end, 10);
    if (errno != 0 || end == env || *end != '\0' || kills < 10 || kills > 10000) {
      fprintf(stderr, "bad KB_KILLS \"%s\" (10..10000)\n", env);
      return 2;
    }
  }
  rng_state = seed ? seed : 88172645463325252ull;
  printf("seed %llu (KB_KILL_SEED replays), %ld kills\n", (unsigned long long)seed, kills);

  char dir[64];
  if (fx_mkdtemp(dir) != 0) {
    perror("mkdtemp");
    return 1;
  }
  char path[128];
  snprintf(path, sizeof path, "%s/sum.h5", dir);
  int failed = 0;
  long max_reported = 0;
  int flags_cleared = 0, dropped = 0, repaired = 0, before_first_report = 0;

  for (long k = 0; k < kills && !failed; k++) {
    int mode = (int)(k % 4);
    struct kill_result kr;
    if (start_and_kill(writer, path, mode, max_reported, &kr) != 0) {
      failed = 1;
      break;
    }
    if (kr.reported > max_reported)
      max_reported = kr.reported;
    if (kr.lines == 0)
      before_first_report++;
    printf("kill %2ld: mode %d after %4lld ms, %zu reports, last %ld\n", k, mode,
           (long long)kr.ms, kr.lines, kr.reported);
    fflush(stdout);
    struct stat st;
    if (stat(path, &st) != 0)
      continue; /* killed before the file was created */
    /* h5py reads the killed file before any recovery. */
    if (check(python, script, path, max_reported, 1) != 0) {
      fprintf(stderr, "kill %ld: h5py cannot read the killed file as a SWMR reader\n", k);
      failed = 1;
      break;
    }
    if (k % 2 == 1) {
      int bits = 0;
      long n = recover(path, max_reported, &bits);
      if (n < 0 || check(python, script, path, max_reported, 0) != 0) {
        fprintf(stderr, "kill %ld: recovered file fails the check\n", k);
        failed = 1;
        break;
      }
      flags_cleared += (bits & KB_STORE_RECOVERED_FLAGS) != 0;
      dropped += (bits & KB_STORE_RECOVERED_DROPPED) != 0;
      repaired += (bits & KB_STORE_RECOVERED_REPAIRED) != 0;
      printf("         recovered: %ld evaluations, bits %d\n", n, bits);
    }
  }

  if (!failed) {
    int bits = 0;
    long n = recover(path, max_reported, &bits);
    char maxbuf[32];
    snprintf(maxbuf, sizeof maxbuf, "%ld", n + 10);
    char *finish[] = {writer, "loop", path, maxbuf, NULL};
    char *dump_h[] = {h5dump, "-H", path, NULL};
    char *dump_e[] = {h5dump, "-d", "/evaluations", "-c", "5", path, NULL};
    if (n < 0) {
      failed = 1;
    } else {
      int out = dup(1), null = open("/dev/null", O_WRONLY);
      dup2(null, 1); /* the writer's reports and h5dump's output are not needed */
      int w = run(finish), d1 = run(dump_h), d2 = run(dump_e);
      dup2(out, 1);
      close(out);
      close(null);
      if (w != 0 || d1 != 0 || d2 != 0) {
        fprintf(stderr, "final writer exit %d, h5dump exits %d %d\n", w, d1, d2);
        failed = 1;
      } else if (check(python, script, path, n + 10, 0) != 0) {
        failed = 1;
      }
    }
  }
  printf("%s: %ld kills, %d before the first report, max reported %ld; recoveries here: "
         "%d cleared flags, %d dropped uncommitted rows, %d repaired columns\n",
         failed ? "FAIL" : "ok", kills, before_first_report, max_reported, flags_cleared,
         dropped, repaired);
  if (fx_rmdir(dir) != 0)
    fprintf(stderr, "cannot remove %s\n", dir);
  return failed ? 1 : 0;
}
