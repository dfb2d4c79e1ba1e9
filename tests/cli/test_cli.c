/* Unit tests of kb/cli.h (numeric options, the usage and failure reports' exit codes) and
 * kb/fs.h (kb_write_all through a pipe, kb_remove_tree on a tree with a symbolic link). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb/cli.h"
#include "kb/error.h"
#include "kb/fs.h"

static void test_parse_long(void **state) {
  (void)state;
  struct kb_error err = {0};
  long v = 7;
  assert_int_equal(kb_cli_parse_long("--runners", "12", 1, 4096, &v, &err), KB_OK);
  assert_int_equal(v, 12);
  assert_int_equal(kb_cli_parse_long("--runners", "1", 1, 4096, &v, &err), KB_OK);
  assert_int_equal(kb_cli_parse_long("--runners", "4096", 1, 4096, &v, &err), KB_OK);
  assert_int_equal(v, 4096);
  const char *bad[] = {"x", "", "0", "4097", "12x", "1.5", "-3", "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kb_error_clear(&err);
    v = 7;
    assert_int_equal(kb_cli_parse_long("--runners", bad[i], 1, 4096, &v, &err), KB_EINVAL);
    assert_int_equal(v, 7); /* unchanged */
    char want[128];
    snprintf(want, sizeof want, "--runners: \"%s\" is not a whole number from 1 to 4096", bad[i]);
    assert_string_equal(err.msg, want);
  }
}

static void test_parse_double(void **state) {
  (void)state;
  struct kb_error err = {0};
  double v = 0;
  assert_int_equal(kb_cli_parse_double("--interval", "0.05", 0.05, 86400, &v, &err), KB_OK);
  assert_true(v == 0.05);
  assert_int_equal(kb_cli_parse_double("--interval", "2", 0.05, 86400, &v, &err), KB_OK);
  assert_true(v == 2);
  const char *bad[] = {"0", "nan", "inf", "1e400", "2s", "", "86401"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kb_error_clear(&err);
    v = 5;
    assert_int_equal(kb_cli_parse_double("--interval", bad[i], 0.05, 86400, &v, &err),
                     KB_EINVAL);
    assert_true(v == 5);
    char want[128];
    snprintf(want, sizeof want, "--interval: \"%s\" is not a number from 0.05 to 86400", bad[i]);
    assert_string_equal(err.msg, want);
  }
}

static void test_exit_codes(void **state) {
  (void)state;
  struct kb_error err = {0};
  kb_error_set(&err, KB_ECONN, "cannot connect to redis at x");
  assert_int_equal(kb_cli_fail("kb-test", &err), KB_EXIT_REDIS);
  assert_int_equal(kb_cli_usage("kb-test", &err), KB_EXIT_USAGE);
  kb_error_clear(&err);
  kb_error_set(&err, KB_EINVAL, "bad");
  assert_int_equal(kb_cli_fail("kb-test", &err), KB_EXIT_INPUT);
  char who[64];
  kb_cli_who("kb-test", who, sizeof who);
  assert_int_equal(strncmp(who, "kb-test:", 8), 0);
  assert_non_null(strchr(who, '@'));
  char dir[64];
  kb_cli_user_tmp("kb-x", dir, sizeof dir);
  assert_int_equal(strncmp(dir, "/tmp/kb-x-", 10), 0);
}

static void test_write_all(void **state) {
  (void)state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  /* more than a pipe holds at once, so the writer's calls come back short while a child reads */
  size_t n = 1 << 20;
  char *buf = malloc(n);
  assert_non_null(buf);
  for (size_t i = 0; i < n; i++)
    buf[i] = (char)(i * 31);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[1]);
    size_t got = 0, bad = 0;
    char chunk[4096];
    ssize_t r;
    while ((r = read(fds[0], chunk, sizeof chunk)) > 0)
      for (ssize_t i = 0; i < r; i++, got++)
        bad += chunk[i] != (char)(got * 31);
    _exit(got == n && bad == 0 ? 0 : 1);
  }
  close(fds[0]);
  assert_int_equal(kb_write_all(fds[1], buf, n), 0);
  close(fds[1]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  free(buf);
  /* a closed descriptor: -1 and errno */
  errno = 0;
  assert_int_equal(kb_write_all(fds[1], "x", 1), -1);
  assert_int_equal(errno, EBADF);
}

static void touch(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_int_equal(kb_write_all(fd, "data", 4), 0);
  close(fd);
}

static void test_remove_tree(void **state) {
  (void)state;
  char dir[] = "/tmp/kbt-cli-XXXXXX", keep[] = "/tmp/kbt-cli-keep-XXXXXX", p[256];
  assert_non_null(mkdtemp(dir));
  assert_non_null(mkdtemp(keep));
  snprintf(p, sizeof p, "%s/keep.txt", keep);
  touch(p);
  snprintf(p, sizeof p, "%s/a", dir);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/a/b", dir);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/a/b/f", dir);
  touch(p);
  snprintf(p, sizeof p, "%s/link", dir); /* to a folder outside: removed, never followed */
  assert_int_equal(symlink(keep, p), 0);
  struct kb_error err = {0};
  assert_int_equal(kb_remove_tree(dir, &err), KB_OK);
  struct stat st;
  assert_int_equal(lstat(dir, &st), -1);
  snprintf(p, sizeof p, "%s/keep.txt", keep);
  assert_int_equal(stat(p, &st), 0);
  /* gone already: not an error */
  assert_int_equal(kb_remove_tree(dir, &err), KB_OK);
  assert_int_equal(kb_remove_tree(keep, &err), KB_OK);
  assert_int_equal(lstat(keep, &st), -1);
}

/* Names for a table column: whole when they fit, else head ".." tail, and names that differ
 * only at the end stay different. */
static void test_fit_name(void **state) {
  (void)state;
  char a[64], b[64];
  kb_cli_fit_name("softmax", 10, a, sizeof a);
  assert_string_equal(a, "softmax");
  kb_cli_fit_name("tuned~BK=64,BJ=2,BI=8", 16, a, sizeof a);
  kb_cli_fit_name("tuned~BK=64,BJ=2,BI=4", 16, b, sizeof b);
  assert_int_equal(strlen(a), 16);
  assert_string_equal(a, "tune..,BJ=2,BI=8"); /* a third head, two thirds tail */
  assert_string_not_equal(a, b);
  kb_cli_fit_name("l2_12_gemm_multiply_leakyrelu_and_more", 20, a, sizeof a);
  assert_int_equal(strlen(a), 20);
  assert_memory_equal(a, "l2_12_", 6);
  kb_cli_fit_name("abcdefghijkl", 3, a, sizeof a); /* at least 8 wide */
  assert_int_equal(strlen(a), 8);
  kb_cli_fit_name("abcdefghijkl", 40, a, 6); /* cut to the buffer */
  assert_int_equal(strlen(a), 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_long), cmocka_unit_test(test_parse_double),
      cmocka_unit_test(test_exit_codes), cmocka_unit_test(test_write_all),
      cmocka_unit_test(test_remove_tree), cmocka_unit_test(test_fit_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
