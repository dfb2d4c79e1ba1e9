/* The evaluator's hold on the compile tier's warm-up passes (runner/warmup_hold.h), against
 * another process taking the lock as kb_build_modelnew.py's gpu_turn does (flock on
 * <cache>/.gpu-warmup.lock): a shared pass under way is waited for, an exclusive one past the
 * timeout is not, a stop ends the wait, and while the hold lasts no pass can start. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kb/clock.h"
#include "warmup_hold.h"

static char dir[] = "/tmp/kb-test-warmup.XXXXXX";
static char lock_path[64];

/* A child that takes the lock (`how`: LOCK_SH or LOCK_EX) as a warm-up pass does, holds it
 * `hold_s` seconds, and exits; returns once the child holds it. */
static pid_t pass(int how, double hold_s) {
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(lock_path, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || flock(fd, how) != 0)
      _exit(1);
    if (write(ready[1], "x", 1) != 1)
      _exit(1);
    usleep((useconds_t)(hold_s * 1e6));
    _exit(0);
  }
  char c;
  close(ready[1]);
  assert_int_equal(read(ready[0], &c, 1), 1);
  close(ready[0]);
  return pid;
}

static void reap(pid_t pid) {
  int status = 0;
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
}

static void free_lock_taken_at_once(void **state) {
  (void)state;
  double t0 = kb_now_mono();
  int fd = kb__warmup_hold(dir, 5.0, NULL);
  assert_true(fd >= 0);
  assert_true(kb_now_mono() - t0 < 0.5);
  kb__warmup_release(fd);
  assert_int_equal(kb__warmup_hold(NULL, 1.0, NULL), -1);
}

static void shared_pass_waited_for(void **state) {
  (void)state;
  pid_t pid = pass(LOCK_SH, 0.4);
  double t0 = kb_now_mono();
  int fd = kb__warmup_hold(dir, 5.0, NULL);
  double waited = kb_now_mono() - t0;
  assert_true(fd >= 0);
  assert_true(waited >= 0.25 && waited < 3.0);
  kb__warmup_release(fd);
  reap(pid);
}

static void long_pass_not_waited_past_timeout(void **state) {
  (void)state;
  pid_t pid = pass(LOCK_EX, 10.0);
  double t0 = kb_now_mono();
  int fd = kb__warmup_hold(dir, 0.3, NULL);
  double waited = kb_now_mono() - t0;
  assert_int_equal(fd, -1);
  assert_true(waited >= 0.25 && waited < 2.0);
  volatile sig_atomic_t stop = 1;
  t0 = kb_now_mono();
  assert_int_equal(kb__warmup_hold(dir, 30.0, &stop), -1);
  assert_true(kb_now_mono() - t0 < 1.0);
  reap(pid);
}

/* While held, a pass (shared or exclusive) cannot start; after the release it can. */
static void passes_held_off_while_held(void **state) {
  (void)state;
  int fd = kb__warmup_hold(dir, 5.0, NULL);
  assert_true(fd >= 0);
  int other = open(lock_path, O_RDWR);
  assert_true(other >= 0);
  assert_int_not_equal(flock(other, LOCK_SH | LOCK_NB), 0);
  kb__warmup_release(fd);
  assert_int_equal(flock(other, LOCK_SH | LOCK_NB), 0);
  close(other);
}

static int setup(void **state) {
  (void)state;
  if (mkdtemp(dir) == NULL)
    return -1;
  snprintf(lock_path, sizeof lock_path, "%s/.gpu-warmup.lock", dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(lock_path);
  rmdir(dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(free_lock_taken_at_once),
      cmocka_unit_test(shared_pass_waited_for),
      cmocka_unit_test(long_pass_not_waited_past_timeout),
      cmocka_unit_test(passes_held_off_while_held),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
