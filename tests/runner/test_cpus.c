/* The runner's split of its CPUs between the evaluation and the builds (runner/cpus.h): CPU
 * lists as the kernel writes them, no split under three CPUs, the first CPU for the evaluation
 * from three on (that case needs a machine with three CPUs: skipped on fewer). */
#define _GNU_SOURCE /* cpu_set_t, pthread_setaffinity_np */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cpus.h"
#include "kb/error.h"

static cpu_set_t of(const int *cpus, int n) {
  cpu_set_t s;
  CPU_ZERO(&s);
  for (int i = 0; i < n; i++)
    CPU_SET(cpus[i], &s);
  return s;
}

static void lists_as_the_kernel_writes_them(void **state) {
  (void)state;
  char buf[64];
  cpu_set_t s = of((const int[]){0, 1, 2, 5, 7, 8}, 6);
  kb__cpus_format(&s, buf, sizeof buf);
  assert_string_equal(buf, "0-2,5,7-8");
  CPU_ZERO(&s);
  kb__cpus_format(&s, buf, sizeof buf);
  assert_string_equal(buf, "");
  s = of((const int[]){3}, 1);
  kb__cpus_format(&s, buf, sizeof buf);
  assert_string_equal(buf, "3");
  /* every other CPU of 0..99 does not fit in 16 bytes: cut after a whole entry, "..." */
  CPU_ZERO(&s);
  for (int i = 0; i < 100; i += 2)
    CPU_SET(i, &s);
  char small[16];
  kb__cpus_format(&s, small, sizeof small);
  assert_string_equal(small, "0,2,4,6,8,10...");
}

/* pins this thread to the first `n` CPUs it may use; 0 when there are fewer */
static int pin_first(int n, cpu_set_t *saved) {
  cpu_set_t all, want;
  pthread_getaffinity_np(pthread_self(), sizeof all, &all);
  *saved = all;
  CPU_ZERO(&want);
  int got = 0;
  for (int i = 0; i < CPU_SETSIZE && got < n; i++)
    if (CPU_ISSET(i, &all)) {
      CPU_SET(i, &want);
      got++;
    }
  if (got < n)
    return 0;
  return pthread_setaffinity_np(pthread_self(), sizeof want, &want) == 0;
}

static void no_split_under_three_cpus(void **state) {
  (void)state;
  cpu_set_t saved;
  for (int n = 1; n <= 2; n++) {
    if (!pin_first(n, &saved)) {
      pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
      continue;
    }
    struct kb__cpus c;
    struct kb_error err = {0};
    assert_int_equal(kb__cpus_split(&c, &err), KB_OK);
    assert_int_equal(c.total, n);
    assert_int_equal(c.split, 0);
    assert_string_equal(c.builds_list, "");
    assert_int_equal(CPU_COUNT(&c.eval), n); /* the evaluation keeps what it had */
    pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  }
}

static void first_cpu_evaluates_from_three_on(void **state) {
  (void)state;
  cpu_set_t saved;
  if (!pin_first(3, &saved)) {
    pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    skip(); /* fewer than three CPUs here */
  }
  struct kb__cpus c;
  struct kb_error err = {0};
  assert_int_equal(kb__cpus_split(&c, &err), KB_OK);
  pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  assert_int_equal(c.total, 3);
  assert_int_equal(c.split, 1);
  assert_int_equal(CPU_COUNT(&c.eval), 1);
  assert_int_equal(CPU_COUNT(&c.builds), 2);
  cpu_set_t both;
  CPU_AND(&both, &c.eval, &c.builds);
  assert_int_equal(CPU_COUNT(&both), 0);
  /* and a thread pinned so runs there */
  assert_int_equal(kb__cpus_pin(&c.eval, &err), KB_OK);
  cpu_set_t now;
  pthread_getaffinity_np(pthread_self(), sizeof now, &now);
  assert_true(CPU_EQUAL(&now, &c.eval));
  pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lists_as_the_kernel_writes_them),
      cmocka_unit_test(no_split_under_three_cpus),
      cmocka_unit_test(first_cpu_evaluates_from_three_on),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
