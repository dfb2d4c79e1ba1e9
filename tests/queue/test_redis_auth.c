/* Authentication and addresses of the connection layer (kb/redis.h) against real servers:
 *  - a server with requirepass, its password taken from a file (the fixture hands it over in a
 *    0600 config file, never on the server's command line);
 *  - KB_REDIS_PASSWORD_FILE (0600) works; a file readable by group or others, or missing, is
 *    refused with KB_EINVAL naming the file; a wrong password gives KB_EAUTH;
 *  - KB_REDIS_PASSWORD works, and a wrong one gives KB_EAUTH;
 *  - an ACL user with KB_REDIS_USER works (ACL WHOAMI says so);
 *  - "127.0.0.1:<port>" (a second server listening on a free TCP port), "unix:/path", "/path"
 *    and $KB_REDIS all work;
 *  - no error message ever contains a password (random per run, so a hit is no accident).
 * The environment is cleared before each case and at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb/error.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "queue_helpers.h"
#include "redis_fixture.h"

static struct kbt_redis unix_srv;  /* unix socket, requirepass */
static struct kbt_redis tcp_srv;   /* also on 127.0.0.1:<free port>, requirepass */
static struct kbt_redis open_srv;  /* no password */
static char pw[64], user_pw[64], wrong_pw[64];
static char files_dir[64], pw_file[128], wrong_file[128], user_file[128];

/* Every error message any case produced, checked at the end of each test. */
static char messages[64][512];
static int n_messages;

static void clear_env(void) {
  unsetenv("KB_REDIS");
  unsetenv("KB_REDIS_PASSWORD");
  unsetenv("KB_REDIS_PASSWORD_FILE");
  unsetenv("KB_REDIS_USER");
}

static void random_hex(char *out, size_t n) {
  unsigned char raw[16];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  assert_int_equal(read(fd, raw, sizeof raw), (ssize_t)sizeof raw);
  close(fd);
  for (size_t i = 0; i < sizeof raw && 2 * i + 2 < n; i++)
    snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

static void write_file(const char *path, const char *text, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  assert_int_equal(chmod(path, mode), 0);
}

/* Connects to `addr` (NULL: $KB_REDIS) with the current environment. Records the message. */
static int try_connect(const char *addr, struct kb_redis **out, struct kb_error *err) {
  kb_error_clear(err);
  *out = NULL;
  struct kb_redis_opts ro = {.addr = addr, .retry_ms = 1000};
  int rc = kb_redis_connect(&ro, out, err);
  if (rc && n_messages < 64)
    snprintf(messages[n_messages++], sizeof messages[0], "%s", err->msg);
  return rc;
}

/* Connects and proves the connection authenticated: PING, then a script round trip. */
static void assert_works(const char *addr, const char *expect_user) {
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  if (try_connect(addr, &r, &err))
    fail_msg("connect to %s: %s (%s)", addr ? addr : "$KB_REDIS", err.msg,
             kb_err_name(err.code));
  redisReply *rep = NULL;
  if (kb_redis_commandf(r, &rep, &err, "PING"))
    fail_msg("PING on %s: %s", kb_redis_addr(r), err.msg);
  assert_string_equal(rep->str, "PONG");
  freeReplyObject(rep);
  if (kb_redis_commandf(r, &rep, &err, "ACL WHOAMI"))
    fail_msg("ACL WHOAMI on %s: %s", kb_redis_addr(r), err.msg);
  assert_string_equal(rep->str, expect_user);
  freeReplyObject(rep);
  struct kb_queue q;
  kb_error_clear(&err);
  assert_int_equal(kb_queue_open(&q, r, "auth", &err), KB_OK);
  struct kb_queue_status st;
  assert_int_equal(kb_queue_status(&q, &st, &err), KB_OK); /* EVALSHA, after SCRIPT LOAD */
  assert_string_equal(st.state, "running");
  kb_redis_free(r);
}

static void assert_fails(const char *addr, int want, const char *must_mention) {
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  int rc = try_connect(addr, &r, &err);
  if (rc != want)
    fail_msg("connect to %s gave %s (\"%s\"), expected %s", addr, kb_err_name(rc), err.msg,
             kb_err_name(want));
  assert_null(r);
  if (must_mention && strstr(err.msg, must_mention) == NULL)
    fail_msg("message \"%s\" does not name \"%s\"", err.msg, must_mention);
}

static void assert_no_password_in_messages(void) {
  if (getenv("KB_TEST_VERBOSE"))
    for (int i = 0; i < n_messages; i++)
      printf("message: %s\n", messages[i]);
  const char *secrets[] = {pw, user_pw, wrong_pw};
  assert_true(n_messages > 0);
  for (int i = 0; i < n_messages; i++)
    for (int s = 0; s < 3; s++)
      if (strstr(messages[i], secrets[s]))
        fail_msg("error message \"%s\" contains a password", messages[i]);
}

static void test_password_file(void **state) {
  (void)state;
  clear_env();
  /* No credentials: the connection is refused at its PING (NOAUTH), naming the address and
   * the variables to set (issue 16); no password to leak. */
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  int rc = try_connect(unix_srv.addr, &r, &err);
  if (rc != KB_EAUTH || strstr(err.msg, "NOAUTH") == NULL ||
      strstr(err.msg, unix_srv.addr) == NULL || strstr(err.msg, "KB_REDIS_PASSWORD") == NULL)
    fail_msg("connect without credentials gave %s \"%s\", expected AUTH with NOAUTH, the "
             "address and KB_REDIS_PASSWORD", kb_err_name(rc), err.msg);
  assert_null(r);
  snprintf(messages[n_messages++], sizeof messages[0], "%s", err.msg);

  setenv("KB_REDIS_PASSWORD_FILE", pw_file, 1);
  assert_works(unix_srv.addr, "default");

  chmod(pw_file, 0644);
  assert_fails(unix_srv.addr, KB_EINVAL, pw_file);
  chmod(pw_file, 0640);
  assert_fails(unix_srv.addr, KB_EINVAL, pw_file);
  chmod(pw_file, 0604);
  assert_fails(unix_srv.addr, KB_EINVAL, pw_file);
  chmod(pw_file, 0600);
  assert_works(unix_srv.addr, "default");

  char missing[160];
  snprintf(missing, sizeof missing, "%s/no-such-file", files_dir);
  setenv("KB_REDIS_PASSWORD_FILE", missing, 1);
  assert_fails(unix_srv.addr, KB_EINVAL, missing);

  setenv("KB_REDIS_PASSWORD_FILE", wrong_file, 1);
  assert_fails(unix_srv.addr, KB_EAUTH, NULL);
  clear_env();
  assert_no_password_in_messages();
}

static void test_password_env(void **state) {
  (void)state;
  clear_env();
  setenv("KB_REDIS_PASSWORD", pw, 1);
  assert_works(unix_srv.addr, "default");
  setenv("KB_REDIS_PASSWORD", wrong_pw, 1);
  assert_fails(unix_srv.addr, KB_EAUTH, NULL);
  /* A password for a server that has none is refused too, without echoing it. */
  setenv("KB_REDIS_PASSWORD", pw, 1);
  assert_fails(open_srv.addr, KB_EAUTH, NULL);
  clear_env();
  assert_no_password_in_messages();
}

static void test_acl_user(void **state) {
  (void)state;
  clear_env();
  setenv("KB_REDIS_PASSWORD", pw, 1);
  struct kb_redis *admin = NULL;
  struct kb_error err = {0};
  assert_int_equal(try_connect(unix_srv.addr, &admin, &err), KB_OK);
  redisReply *rep = NULL;
  char rule[80];
  snprintf(rule, sizeof rule, ">%s", user_pw);
  if (kb_redis_commandf(admin, &rep, &err, "ACL SETUSER kbuser on %s ~* &* +@all", rule))
    fail_msg("ACL SETUSER: %s", err.msg);
  freeReplyObject(rep);
  kb_redis_free(admin);

  clear_env();
  setenv("KB_REDIS_USER", "kbuser", 1);
  setenv("KB_REDIS_PASSWORD", user_pw, 1);
  assert_works(unix_srv.addr, "kbuser");
  setenv("KB_REDIS_PASSWORD", pw, 1); /* the default user's password is not kbuser's */
  assert_fails(unix_srv.addr, KB_EAUTH, NULL);
  unsetenv("KB_REDIS_PASSWORD");
  setenv("KB_REDIS_PASSWORD_FILE", user_file, 1);
  assert_works(unix_srv.addr, "kbuser");
  setenv("KB_REDIS_USER", "nobody", 1);
  assert_fails(unix_srv.addr, KB_EAUTH, NULL);
  clear_env();
  assert_no_password_in_messages();
}

static void test_addresses(void **state) {
  (void)state;
  clear_env();
  setenv("KB_REDIS_PASSWORD_FILE", pw_file, 1);
  char tcp[64], path[160], unix_form[170];
  snprintf(tcp, sizeof tcp, "127.0.0.1:%d", tcp_srv.tcp_port);
  snprintf(path, sizeof path, "%s/redis.sock", unix_srv.dir);
  snprintf(unix_form, sizeof unix_form, "unix:%s", path);
  assert_works(tcp, "default");
  assert_works(unix_form, "default");
  assert_works(path, "default");
  setenv("KB_REDIS", tcp, 1);
  assert_works(NULL, "default"); /* the address from $KB_REDIS */
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  assert_int_equal(try_connect(NULL, &r, &err), KB_OK);
  assert_string_equal(kb_redis_addr(r), tcp);
  kb_redis_free(r);
  /* A wrong password over TCP, and a port nobody listens on. */
  setenv("KB_REDIS_PASSWORD_FILE", wrong_file, 1);
  assert_fails(tcp, KB_EAUTH, NULL);
  clear_env();
  int dead_port = kbt_free_tcp_port();
  assert_true(dead_port > 0);
  char dead[64];
  snprintf(dead, sizeof dead, "127.0.0.1:%d", dead_port);
  assert_fails(dead, KB_ECONN, dead);
  assert_fails("unix:", KB_EINVAL, NULL);
  assert_fails("127.0.0.1:99999", KB_EINVAL, "99999");
  assert_no_password_in_messages();
}

/* The fixture itself keeps the password off the server's command line. */
static void test_password_not_on_command_line(void **state) {
  (void)state;
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)unix_srv.pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  assert_true(n > 0);
  for (ssize_t i = 0; i < n; i++)
    if (buf[i] == '\0')
      buf[i] = ' ';
  buf[n] = '\0';
  if (strstr(buf, pw))
    fail_msg("redis-server's command line holds the password: %s", buf);
}

/* Registers the campaign "auth" on `srv` (connecting with the password). */
static int seed_campaign(struct kbt_redis *srv) {
  setenv("KB_REDIS_PASSWORD", pw, 1);
  struct kb_redis *r = kbq_connect(srv->addr, 2000);
  struct kb_queue q;
  kbq_make_campaign(r, "auth", 1000, 60000, 3, &q);
  kb_redis_free(r);
  clear_env();
  return 0;
}

static int setup(void **state) {
  (void)state;
  clear_env();
  random_hex(pw, sizeof pw);
  random_hex(user_pw, sizeof user_pw);
  random_hex(wrong_pw, sizeof wrong_pw);
  snprintf(files_dir, sizeof files_dir, "/tmp/kbt-auth-XXXXXX");
  if (mkdtemp(files_dir) == NULL)
    return -1;
  snprintf(pw_file, sizeof pw_file, "%s/pw", files_dir);
  snprintf(wrong_file, sizeof wrong_file, "%s/wrong", files_dir);
  snprintf(user_file, sizeof user_file, "%s/user", files_dir);
  char line[80];
  snprintf(line, sizeof line, "%s\n", pw); /* a trailing newline, as editors leave it */
  write_file(pw_file, line, 0600);
  snprintf(line, sizeof line, "%s\r\n", wrong_pw);
  write_file(wrong_file, line, 0600);
  write_file(user_file, user_pw, 0600);
  struct kbt_redis_opts with_pw = {.password_file = pw_file};
  if (kbt_redis_start_opts(&unix_srv, &with_pw))
    return -1;
  int started = -1;
  for (int i = 0; i < 5 && started != 0; i++) { /* the free port may be taken meanwhile */
    struct kbt_redis_opts tcp = {.password_file = pw_file, .tcp_port = kbt_free_tcp_port()};
    started = tcp.tcp_port > 0 ? kbt_redis_start_opts(&tcp_srv, &tcp) : -1;
    if (started != 0)
      kbt_redis_destroy(&tcp_srv);
  }
  if (started != 0 || kbt_redis_start(&open_srv))
    return -1;
  seed_campaign(&unix_srv);
  seed_campaign(&tcp_srv);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  clear_env();
  kbt_redis_destroy(&unix_srv);
  kbt_redis_destroy(&tcp_srv);
  kbt_redis_destroy(&open_srv);
  unlink(pw_file);
  unlink(wrong_file);
  unlink(user_file);
  rmdir(files_dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_password_file),
      cmocka_unit_test(test_password_env),
      cmocka_unit_test(test_acl_user),
      cmocka_unit_test(test_addresses),
      cmocka_unit_test(test_password_not_on_command_line),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
