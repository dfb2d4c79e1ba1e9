/* The watchdog's deadline leaves out the time the job was stopped (runner/watchdog.h): a slice
 * that took far longer than asked while the child watched was stopped too (a suspended job) moves
 * the deadline out; the same slice while the child kept running (the runner alone stopped, or
 * starved by the child) does not; a child that is never stopped times out on time. The runner's
 * stop is played by a busy wait between kb__watchdog_slice() and kb__watchdog_expired(). */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kb/clock.h"
#include "watchdog.h"

static void *spin(void *arg) {
  (void)arg;
  volatile unsigned long x = 0;
  for (;;)
    x++;
  return NULL;
}

/* a child that spins on the CPU until killed, on four threads: on a loaded machine it still gets
 * far more than a quarter of a CPU */
static pid_t spinner(void) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    pthread_t t;
    for (int i = 0; i < 3; i++)
      pthread_create(&t, NULL, spin, NULL);
    spin(NULL);
  }
  return pid;
}

static void reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* one slice of the watchdog during which this process "was stopped" for `stop_s` seconds */
static int slice_stopped(struct kb__watchdog *w, double stop_s) {
  kb__watchdog_slice(w, 20);
  double until = kb_now_mono() + stop_s;
  while (kb_now_mono() < until)
    ;
  return kb__watchdog_expired(w);
}

static void stop_of_the_whole_job_is_left_out(void **state) {
  (void)state;
  pid_t child = spinner();
  kill(child, SIGSTOP); /* Slurm stopped every process of the job */
  struct kb__watchdog w;
  kb__watchdog_init(&w, 1.0, child);
  assert_int_equal(slice_stopped(&w, 2.5), 0);
  assert_true(w.stopped_s > 2.0);
  kill(child, SIGCONT);
  reap(child);
}

static void child_that_ran_meanwhile_gets_no_more_time(void **state) {
  (void)state;
  pid_t child = spinner(); /* it runs while "the runner" is stopped, or starves it */
  struct kb__watchdog w;
  kb__watchdog_init(&w, 1.0, child);
  assert_int_equal(slice_stopped(&w, 2.5), 1);
  assert_true(w.stopped_s == 0.0);
  reap(child);
}

static void hang_times_out_on_time(void **state) {
  (void)state;
  pid_t child = spinner();
  struct kb__watchdog w;
  kb__watchdog_init(&w, 0.5, child);
  double t0 = kb_now_mono();
  int expired = 0;
  while (!expired) {
    usleep((useconds_t)kb__watchdog_slice(&w, 20) * 1000);
    expired = kb__watchdog_expired(&w);
  }
  double took = kb_now_mono() - t0;
  assert_true(took >= 0.5 && took < 5.0);
  reap(child);
}

static void cpu_of_a_gone_process_is_unknown(void **state) {
  (void)state;
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0)
    _exit(0);
  waitpid(child, NULL, 0);
  assert_true(kb__watchdog_cpu_s(child) < 0);
  assert_true(kb__watchdog_cpu_s(getpid()) >= 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stop_of_the_whole_job_is_left_out),
      cmocka_unit_test(child_that_ran_meanwhile_gets_no_more_time),
      cmocka_unit_test(hang_times_out_on_time),
      cmocka_unit_test(cpu_of_a_gone_process_is_unknown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
