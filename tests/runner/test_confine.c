/* The sandbox's confinement (runner/sandbox/confine.h, docs/sandbox.md "Confinement"), on the
 * host backend with the real kb-sandbox: each system call a candidate may not make, made with an
 * inline `syscall` (no import, so the import allow-list passes it), ends the evaluation as
 * rejected with a reason naming the call, and an honest candidate is ok after each; a candidate
 * that reads its parent's /proc entries (environ, mem) finds no secret of the runner's; the level
 * is in the sandbox's hello and in every result; a campaign that requires a level this machine
 * cannot reach is refused. The candidates are tests/catalogue/host/sys_*.c (task row_sum).
 * The compile tier's filter (kb_confine_no_unix_sockets) in a child process: no unix socket but
 * a connected pair, no io_uring, the rest as before, also in a program it executes.
 *
 * The test process plays the runner: it re-executes itself once with KB_TEST_SECRET=<random
 * canary> in its initial environment (what /proc/<pid>/environ shows), then spawns the sandbox
 * as kb-runner does. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "confine.h"
#include "evaluator.h"
#include "fixture.h"
#include "kb/alloc.h"
#include "kb/campaign.h"
#include "kb/error.h"
#include "sandbox_client.h"

#define CATALOGUE KB_SOURCE_DIR "/tests/catalogue/host"
#define CANDIDATES KB_SOURCE_DIR "/tests/runner/candidates"

static struct runner_fixture fx;

static int setup(void **state) {
  (void)state;
  return fixture_setup(&fx, "/tmp/kb-test-confine.XXXXXX");
}

static int teardown(void **state) {
  (void)state;
  fixture_teardown(&fx);
  return 0;
}

/* The catalogue's candidate `name` of row_sum at the smoke tier. */
static void eval_file(const char *name, struct kb_result *r) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.c", CATALOGUE, name);
  fixture_eval_file(&fx, &fx.row_sum, path, "", FX_TIER_SMOKE, r);
}

static void expect_level(const struct kb_result *r) {
  struct kb__confine_level l;
  kb__confine_probe(&l);
  if (strcmp(r->confinement, l.level) != 0)
    fail_msg("result's confinement \"%s\", this node reaches \"%s\"", r->confinement, l.level);
}

static void test_blocked_calls(void **state) {
  (void)state;
  static const struct {
    const char *file, *call;
  } cases[] = {
      {"sys_socket", "socket"},
      {"sys_connect", "connect"},
      {"sys_execve", "execve"},
      {"sys_fork", "fork"},
      {"sys_clone", "clone"},
      {"sys_ptrace", "ptrace"},
      {"sys_process_vm_readv", "process_vm_readv"},
      {"sys_kill_parent", "kill"},
      {"sys_mount", "mount"},
      {"sys_bpf", "bpf"},
      {"sys_perf_event_open", "perf_event_open"},
      {"sys_personality", "personality"},
      {"sys_prctl_dumpable", "prctl"},
      {"sys_open_after_load", "openat"},
      {"sys_write_outside", "openat"},
      {"sys_proc_environ_call", "openat"},
      {"sys_prlimit_nofile", "prlimit64"},
  };
  struct kb__confine_level l;
  kb__confine_probe(&l);
  if (!l.seccomp)
    skip(); /* a kernel without seccomp filters: nothing is blocked (level "none") */
  unlink("/tmp/kb-confine-escape");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char want[96];
    snprintf(want, sizeof want, "called %s(2), which candidates may not use", cases[i].call);
    struct kb_result r;
    eval_file(cases[i].file, &r);
    if (r.status != KB_STATUS_REJECTED || strstr(r.reason, want) == NULL)
      fail_msg("%s: status %s, reason \"%s\"; expected rejected, \"%s\"", cases[i].file,
               kb_status_name(r.status), r.reason, want);
    expect_level(&r);
    kb_result_release(&r);
    eval_file(i % 2 ? "sys_honest" : "sys_prlimit_stack", &r); /* the stack's limit may be set */
    fixture_expect(&r, KB_STATUS_OK, NULL);
    expect_level(&r);
    kb_result_release(&r);
  }
  assert_int_equal(access("/tmp/kb-confine-escape", F_OK), -1); /* never created */
}

/* The sandbox's own system call (the open gate of confine.c), found by its bytes and called
 * with socket(2): only opens and writes pass from there, the rest goes on to the allow-list
 * (before 2026-12-07 every call did: ok). An honest candidate is ok after it. */
static void test_gate_borrowed(void **state) {
  (void)state;
  struct kb__confine_level l;
  kb__confine_probe(&l);
  if (!l.seccomp)
    skip();
  struct kb_result r;
  fixture_eval_file(&fx, &fx.row_sum, CANDIDATES "/gate_socket.c", "", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_REJECTED, "called socket(2), which candidates may not use");
  kb_result_release(&r);
  eval_file("sys_honest", &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  kb_result_release(&r);
}

/* A signal's action or the check's own maps descriptor left changed (leaves_signals.c, compiled
 * twice): on the host the filter refuses any new signal action since 2026-12-07 (the check
 * between candidates, which saw it before, still stands behind it on the GPU); the check sees
 * the descriptor; the next candidate is ok. */
static void test_left_behind(void **state) {
  (void)state;
#if !defined(__x86_64__)
  skip();
#endif
  static const struct {
    const char *flags, *want;
  } cases[] = {
      {"-DKB_LEAVE=1", "called rt_sigaction(2), which candidates may not use"},
      {"-DKB_LEAVE=2", "changed the sandbox's own process: its descriptor of /proc/self/maps"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct kb_result r;
    fixture_eval_file(&fx, &fx.row_sum, CANDIDATES "/leaves_signals.c", cases[i].flags,
                      FX_TIER_SMOKE, &r);
    fixture_expect(&r, KB_STATUS_REJECTED, cases[i].want);
    kb_result_release(&r);
    eval_file("sys_honest", &r);
    fixture_expect(&r, KB_STATUS_OK, NULL);
    kb_result_release(&r);
  }
}

/* Code of its own left in an anonymous executable page, hidden behind 5,000 one-page mappings
 * (hides_mapping.c): the check reads every mapping, not the first 4,096 (ok before 2026-12-07),
 * and the next candidate is ok. */
static void test_hidden_mapping(void **state) {
  (void)state;
#if !defined(__x86_64__)
  skip();
#endif
  struct kb_result r;
  fixture_eval_file(&fx, &fx.row_sum, CANDIDATES "/hides_mapping.c", "", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_REJECTED,
                 "changed the sandbox's own process: an executable mapping that no file backs");
  kb_result_release(&r);
  eval_file("sys_honest", &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  kb_result_release(&r);
}

/* The full tier of `name` (a catalogue file), with the witness (KB_EVAL_FULL), into `r`. */
static void eval_full(const char *name, struct kb_result *r) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.c", CATALOGUE, name);
  char *source = tu_slurp(path);
  struct kb_error err = {0};
  int rc = fixture_eval(&fx, &fx.row_sum, source, "", &fx.ladder.tiers[FX_TIER_FULL],
                        FX_TIER_FULL, KB_EVAL_FULL, r, &err);
  kb_free(source);
  if (rc != KB_OK)
    fail_msg("evaluate %s: %s", name, err.msg);
}

/* A library the sandbox keeps loaded between evaluations: the one its last witness called.
 * rewrites_oracle.c puts a jump into its own code at the start of every kb_forward loaded
 * before it; the witness's library (honest_naive.c's, from the evaluation before) was one, and
 * the same file evaluated again found it loaded, rewritten: crash (SIGSEGV) before 2026-12-07.
 * Now the witness's library is closed before each evaluation; the rewritten oracle is found
 * (rejected) and loaded again, and the honest file is ok. */
static void test_kept_library(void **state) {
  (void)state;
#if !defined(__x86_64__)
  skip();
#endif
  struct kb_result r;
  eval_full("honest_naive", &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  kb_result_release(&r);
  eval_file("rewrites_oracle", &r);
  fixture_expect(&r, KB_STATUS_REJECTED, "changed the oracle's code");
  kb_result_release(&r);
  eval_full("honest_naive", &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  kb_result_release(&r);
}

/* A reply frame of the candidate's own written into the protocol's socket: the filter lets only
 * the sandbox's gate write there, so it is rejected for the write, and the next candidate gets
 * its own verdict (no stale reply in the channel). */
static void test_forged_reply(void **state) {
  (void)state;
  struct kb__confine_level l;
  kb__confine_probe(&l);
  if (!l.seccomp)
    skip();
#if !defined(__x86_64__)
  skip();
#endif
  struct kb_result r;
  fixture_eval_file(&fx, &fx.row_sum, CANDIDATES "/proto_forge.c", "", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_REJECTED, "called write(2), which candidates may not use");
  kb_result_release(&r);
  eval_file("sys_honest", &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  kb_result_release(&r);
}

/* Code of the sandbox's process rewritten in place, its protection put back (libc's
 * clock_gettime made to run 40x slow): the check between candidates finds the changed code,
 * the candidate is rejected and its process ends, so the next candidate is timed on a true
 * clock. */
static void test_code_rewritten(void **state) {
  (void)state;
#if !defined(__x86_64__)
  skip();
#endif
  struct kb_result r;
  fixture_eval_file(&fx, &fx.row_sum, CANDIDATES "/text_patch.c", "", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_REJECTED, "changed the sandbox's own process: the code of");
  kb_result_release(&r);
  eval_file("sys_honest", &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  kb_result_release(&r);
}

/* The runner's secret is in this process's initial environment; a candidate reading
 * /proc/<parent>/environ or /proc/<parent>/mem from its constructor (inside the load window,
 * where read-only opens pass the filter) must be refused by Landlock: it aborts when it finds
 * the secret (a crash whose reason would hold it), else sums honestly. */
static void test_secret(void **state) {
  (void)state;
  const char *secret = getenv("KB_TEST_SECRET");
  assert_non_null(secret);
  /* the canary is where the candidate looks: this process's /proc entry shows it */
  char *env = tu_slurp("/proc/self/environ");
  int found = 0;
  for (size_t i = 0; env[i] != '\0' || env[i + 1] != '\0'; i++)
    if (strncmp(env + i, "KB_TEST_SECRET=", 15) == 0 && strstr(env + i, secret) != NULL)
      found = 1;
  kb_free(env);
  assert_true(found);
  struct kb__confine_level l;
  kb__confine_probe(&l);
  struct kb_result r;
  eval_file("sys_proc_environ", &r);
  if (strstr(r.reason, secret) != NULL)
    fail_msg("the candidate read the runner's secret: %s", r.reason);
  if (l.landlock_abi > 0)
    fixture_expect(&r, KB_STATUS_OK, NULL); /* it ran, and found nothing */
  kb_result_release(&r);
  eval_file("sys_proc_environ_call", &r);
  if (strstr(r.reason, secret) != NULL)
    fail_msg("the candidate read the runner's secret: %s", r.reason);
  if (l.seccomp)
    fixture_expect(&r, KB_STATUS_REJECTED, "called openat(2)");
  kb_result_release(&r);
}

/* The sandbox's hello says the level it reached, the one this node's probe reports. */
static void test_hello_level(void **state) {
  (void)state;
  char *prog = kb__sandbox_program("host");
  struct kb__sandbox_opts o = {.program = prog, .backend = "host", .start_timeout_s = 10,
                               .ro = {fx.cache}, .n_ro = 1};
  struct kb__sandbox *sb = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__sandbox_new(&o, &sb, &err), KB_OK);
  assert_int_equal(kb__sandbox_start(sb, &err), KB_OK);
  json_t *c = json_object_get(kb__sandbox_hello(sb), "confinement");
  assert_true(json_is_object(c));
  struct kb__confine_level l;
  kb__confine_probe(&l);
  assert_string_equal(json_string_value(json_object_get(c, "level")), l.level);
  assert_int_equal(json_is_true(json_object_get(c, "seccomp")), l.seccomp);
  assert_int_equal(json_integer_value(json_object_get(c, "landlock_abi")), l.landlock_abi);
  assert_true(json_is_string(json_object_get(c, "note")));
  kb__sandbox_free(sb);
  kb_free(prog);
}

/* A campaign's sandbox.require against what this node reaches. */
static void test_campaign_require(void **state) {
  (void)state;
  struct kb__confine_level l;
  kb__confine_probe(&l);
  struct kb_error err = {0};
  assert_int_equal(kb_confinement_rank("none"), 0);
  assert_int_equal(kb_confinement_rank("seccomp"), 1);
  assert_int_equal(kb_confinement_rank("seccomp+landlock"), 2);
  assert_int_equal(kb_confinement_rank("landlock"), -1);
  assert_int_equal(kb_confinement_check("demo", "none", l.level, &err), KB_OK);
  assert_int_equal(kb_confinement_check("demo", l.level, l.level, &err), KB_OK);
  /* a level above the one reached is refused with a message naming the campaign and both */
  assert_int_equal(kb_confinement_check("demo", "seccomp+landlock", "seccomp", &err), KB_ECONFINE);
  assert_non_null(strstr(err.msg, "\"demo\""));
  assert_non_null(strstr(err.msg, "seccomp+landlock"));
  assert_non_null(strstr(err.msg, "reaches \"seccomp\""));
}

/* In a child under kb_confine_no_unix_sockets: 0, or the number of the first check that failed. */
static int unix_sockets_child(void) {
  char why[256];
  if (kb_confine_no_unix_sockets(why, sizeof why) != 0) {
    fprintf(stderr, "kb_confine_no_unix_sockets: %s\n", why);
    return 1;
  }
  errno = 0;
  if (socket(AF_UNIX, SOCK_STREAM, 0) != -1 || errno != EACCES)
    return 2;
  /* the kernel reads the family as an int: high bits set are still AF_UNIX */
  errno = 0;
  if (syscall(SYS_socket, (1L << 32) | AF_UNIX, SOCK_DGRAM, 0) != -1 || errno != EACCES)
    return 3;
  int pair[2];
  errno = 0;
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) != -1 || errno != EACCES)
    return 4;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    return 5;
  int inet = socket(AF_INET, SOCK_STREAM, 0); /* TCP is Landlock's (the builder's rules) */
  if (inet < 0)
    return 6;
  close(inet);
  char params[120] = {0}; /* struct io_uring_params */
  errno = 0;
  if (syscall(425 /* io_uring_setup */, 8, params) != -1 || errno != ENOSYS)
    return 7;
  pid_t pid = fork(); /* a program it executes has the filter too */
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", "exec python3 -c 'import socket; socket.socket(socket.AF_UNIX)' "
          "2>/dev/null", (char *)NULL);
    _exit(127);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 1)
    return 8;
  return 0;
}

static void test_build_unix_sockets(void **state) {
  (void)state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    _exit(unix_sockets_child());
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

int main(int argc, char **argv) {
  (void)argc;
  if (getenv("KB_TEST_SECRET") == NULL) {
    unsigned char raw[16];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
      return 1;
    char canary[64] = "kb-canary-";
    for (size_t i = 0; i < sizeof raw; i++)
      snprintf(canary + 10 + 2 * i, 3, "%02x", raw[i]);
    setenv("KB_TEST_SECRET", canary, 1);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "test_confine: cannot re-execute itself: %s\n", strerror(errno));
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_blocked_calls),
      cmocka_unit_test(test_gate_borrowed),
      cmocka_unit_test(test_code_rewritten),
      cmocka_unit_test(test_forged_reply),
      cmocka_unit_test(test_left_behind),
      cmocka_unit_test(test_hidden_mapping),
      cmocka_unit_test(test_kept_library),
      cmocka_unit_test(test_secret),
      cmocka_unit_test(test_hello_level),
      cmocka_unit_test(test_campaign_require),
      cmocka_unit_test(test_build_unix_sockets),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
