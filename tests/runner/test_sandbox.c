/* The sandbox: the protocol's framing, kb-sandbox's answers to malformed requests, a child that
 * dies mid-message, the watchdog and restarts with host candidates that crash, hang, abort,
 * exit, edit their inputs or write out of bounds, the stop flag, and the scrubbed environment. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "compile_util.h"
#include "evaluator.h"
#include "fixture.h"
#include "host_backend.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/result.h"
#include "kb/task.h"
#include "sandbox/proto.h"
#include "sandbox_client.h"

#define CANDIDATES KB_SOURCE_DIR "/tests/runner/candidates"

extern char **environ;

static struct {
  struct runner_fixture base; /* backend, cache, the sum and matmul tasks, the ladder */
  struct kb_evaluator *ev;    /* the backend's generic evaluator (borrowed) */
  volatile sig_atomic_t stop;
} fx;

static int group_setup(void **state) {
  (void)state;
  /* secrets the sandbox must never see */
  setenv("KB_REDIS_PASSWORD", "hunter2", 1);
  setenv("KB_REDIS_PASSWORD_FILE", "/tmp/pw", 1);
  setenv("OPENAI_API_KEY", "sk-test", 1);
  setenv("GITHUB_TOKEN", "ghp-test", 1);
  setenv("KB_LLM_SECRET", "s", 1);
  setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  if (fixture_setup(&fx.base, "/tmp/kb-test-sandbox.XXXXXX") != 0)
    return -1;
  fx.ev = kb_host_backend_generic(fx.base.backend);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  fixture_teardown(&fx.base);
  return 0;
}

/* Evaluates the candidate file `path` on the sum task at `tier` with `flags`; returns the rc. */
static int eval_tier(const char *path, const struct kb_tier *tier, int index, int flags,
                     struct kb_result *r, struct kb_error *err) {
  char *source = tu_slurp(path);
  int rc = fixture_eval(&fx.base, &fx.base.sum, source, "", tier, index, flags, r, err);
  kb_free(source);
  return rc;
}

static void eval_file(const char *path, int index, struct kb_result *r) {
  struct kb_error err = {0};
  if (eval_tier(path, &fx.base.ladder.tiers[index], index, 0, r, &err) != KB_OK)
    fail_msg("evaluate: %s", err.msg);
}

/* An honest candidate passes at smoke: the sandbox (restarted or not) still works. */
static void honest_passes(void) {
  struct kb_result r;
  eval_file(fx.base.sum.seeds[0].path, FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  kb_result_release(&r);
}

/* ---- framing ----------------------------------------------------------------------------- */

static void test_frame_roundtrip(void **state) {
  (void)state;
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  struct kb_error err = {0};
  json_t *m = json_pack("{s:s, s:i}", "op", "hello", "n", 42);
  assert_int_equal(kb__msg_write(sv[0], m, kb_now_mono() + 1, &err), KB_OK);
  json_decref(m);
  char *text = NULL;
  size_t len = 0;
  assert_int_equal(kb__frame_read(sv[1], &text, &len, kb_now_mono() + 1, NULL, &err),
                   KB__FRAME_OK);
  json_t *back = NULL;
  assert_int_equal(kb__msg_parse(text, len, &back, &err), KB_OK);
  assert_int_equal(json_integer_value(json_object_get(back, "n")), 42);
  json_decref(back);
  kb_free(text);
  /* nothing more: the deadline passes */
  double t0 = kb_now_mono();
  assert_int_equal(kb__frame_read(sv[1], &text, &len, kb_now_mono() + 0.1, NULL, &err),
                   KB__FRAME_TIMEOUT);
  assert_true(kb_now_mono() - t0 >= 0.09);
  /* the stop flag ends a wait */
  volatile sig_atomic_t stop = 1;
  kb_error_clear(&err);
  assert_int_equal(kb__frame_read(sv[1], &text, &len, 0, &stop, &err), KB__FRAME_STOPPED);
  /* a header cut short, then a body cut short, then a frame too large */
  assert_int_equal(write(sv[0], "\0\0", 2), 2);
  close(sv[0]);
  kb_error_clear(&err);
  assert_int_equal(kb__frame_read(sv[1], &text, &len, kb_now_mono() + 1, NULL, &err),
                   KB__FRAME_TRUNCATED);
  close(sv[1]);
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(write(sv[0], "\0\0\0\x10{\"op\"", 9), 9);
  close(sv[0]);
  kb_error_clear(&err);
  assert_int_equal(kb__frame_read(sv[1], &text, &len, kb_now_mono() + 1, NULL, &err),
                   KB__FRAME_TRUNCATED);
  assert_non_null(strstr(err.msg, "after 5 of 16 bytes"));
  close(sv[1]);
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(write(sv[0], "\x7f\0\0\0", 4), 4);
  kb_error_clear(&err);
  assert_int_equal(kb__frame_read(sv[1], &text, &len, kb_now_mono() + 1, NULL, &err),
                   KB__FRAME_TOO_LARGE);
  /* a clean end before a frame is EOF, not an error */
  close(sv[0]);
  kb_error_clear(&err);
  assert_int_equal(kb__frame_read(sv[1], &text, &len, kb_now_mono() + 1, NULL, &err),
                   KB__FRAME_EOF);
  close(sv[1]);
  /* a peer that is gone is an error, not SIGPIPE */
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  close(sv[1]);
  kb_error_clear(&err);
  assert_int_equal(kb__frame_write(sv[0], "{}", 2, kb_now_mono() + 1, &err), KB_EIO);
  close(sv[0]);
}

/* ---- kb-sandbox's answers to raw requests ------------------------------------------------- */

struct raw {
  pid_t pid;
  int fd;
};

/* kb-sandbox --backend host on a socket pair, `ro` (NULL: none) readable inside, `dir` (NULL:
 * none) its working folder, started --trusted when `trusted`. */
static void raw_start_in(struct raw *r, const char *ro, const char *dir, int trusted) {
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
  char *prog = kb__sandbox_program("host");
  char *argv[10] = {prog, "--backend", "host"};
  int n = 3;
  if (ro != NULL) {
    argv[n++] = "--ro";
    argv[n++] = (char *)ro;
  }
  if (dir != NULL) {
    argv[n++] = "--dir";
    argv[n++] = (char *)dir;
  }
  if (trusted)
    argv[n++] = "--trusted";
  assert_int_equal(posix_spawn(&r->pid, prog, &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  kb_free(prog);
  close(sv[1]);
  r->fd = sv[0];
}

static void raw_start_ro(struct raw *r, const char *ro) { raw_start_in(r, ro, NULL, 0); }
static void raw_start(struct raw *r) { raw_start_ro(r, NULL); }

/* Sends `text` as one frame and returns the reply (new reference). */
static json_t *raw_ask(struct raw *r, const char *text) {
  struct kb_error err = {0};
  assert_int_equal(kb__frame_write(r->fd, text, strlen(text), kb_now_mono() + 5, &err), KB_OK);
  char *reply = NULL;
  size_t len = 0;
  int st = kb__frame_read(r->fd, &reply, &len, kb_now_mono() + 10, NULL, &err);
  if (st != KB__FRAME_OK)
    fail_msg("no reply to %s: %s", text, err.msg);
  json_t *m = NULL;
  assert_int_equal(kb__msg_parse(reply, len, &m, &err), KB_OK);
  kb_free(reply);
  return m;
}

/* The reply to `text` is an error naming `field`, and the sandbox still says hello. */
static void expect_error(struct raw *r, const char *text, const char *field, const char *in_reason) {
  json_t *m = raw_ask(r, text);
  const char *op = json_string_value(json_object_get(m, "op"));
  const char *f = json_string_value(json_object_get(m, "field"));
  const char *why = json_string_value(json_object_get(m, "reason"));
  if (strcmp(op, "error") != 0 || strcmp(f, field) != 0 || strstr(why, in_reason) == NULL)
    fail_msg("request %s: got op %s field \"%s\" reason \"%s\"", text, op, f ? f : "",
             why ? why : "");
  print_message("error %s: %s\n", f, why);
  json_decref(m);
  m = raw_ask(r, "{\"op\":\"hello\"}");
  assert_string_equal(json_string_value(json_object_get(m, "op")), "hello");
  json_decref(m);
}

static void test_malformed_requests(void **state) {
  (void)state;
  struct raw r;
  raw_start(&r);
  json_t *m = raw_ask(&r, "{\"op\":\"hello\"}");
  assert_string_equal(json_string_value(json_object_get(m, "backend")), "host");
  assert_int_equal(json_integer_value(json_object_get(m, "pid")), r.pid);
  json_decref(m);
  expect_error(&r, "{\"op\":", "", "message:1:");
  expect_error(&r, "[1,2]", "", "not a JSON object");
  expect_error(&r, "{\"no\":\"op\"}", "", "\"op\" must be a string");
  expect_error(&r, "{\"op\":\"launch\"}", "op", "unknown request \"launch\"");
  const char *prep_ok_head = "{\"op\":\"prepare\",\"key\":\"k\",\"oracle\":\"/nonexistent.so\",";
  char buf[1024];
  snprintf(buf, sizeof buf, "%s\"outputs\":[],\"sets\":[],\"atol\":0,\"rtol\":0}", prep_ok_head);
  expect_error(&r, buf, "inputs", "\"inputs\" is missing");
  snprintf(buf, sizeof buf,
           "%s\"inputs\":[{\"name\":\"x\",\"dtype\":\"f33\",\"shape\":[4]}],\"outputs\":[],"
           "\"sets\":[],\"atol\":0,\"rtol\":0}",
           prep_ok_head);
  expect_error(&r, buf, "inputs[0].dtype", "unknown dtype \"f33\"");
  snprintf(buf, sizeof buf,
           "%s\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4, 0]}],"
           "\"outputs\":[{\"name\":\"y\",\"dtype\":\"f32\",\"shape\":[1]}],"
           "\"sets\":[{\"seed\":1,\"distribution\":\"uniform\",\"low\":0,\"high\":1}],"
           "\"atol\":0,\"rtol\":0}",
           prep_ok_head);
  expect_error(&r, buf, "inputs[0].shape[1]", "must be an integer in 1..");
  snprintf(buf, sizeof buf,
           "%s\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4]}],"
           "\"outputs\":[{\"name\":\"y\",\"dtype\":\"f32\",\"shape\":[1]}],"
           "\"sets\":[{\"seed\":1,\"distribution\":\"cauchy\",\"low\":0,\"high\":1}],"
           "\"atol\":0,\"rtol\":0}",
           prep_ok_head);
  expect_error(&r, buf, "sets[0].distribution", "unknown distribution \"cauchy\"");
  /* KB_MAX_TENSORS inputs (the frame holds them) pass the parsing; one more is refused */
  for (int n = KB_MAX_TENSORS; n <= KB_MAX_TENSORS + 1; n++) {
    struct kb_buf big;
    kb_buf_init(&big);
    assert_int_equal(kb_buf_addf(&big, "%s\"inputs\":[", prep_ok_head), KB_OK);
    for (int i = 0; i < n; i++)
      assert_int_equal(kb_buf_addf(&big, "%s{\"name\":\"x%d\",\"dtype\":\"f32\",\"shape\":[4]}",
                                      i ? "," : "", i), KB_OK);
    assert_int_equal(kb_buf_addf(&big, "],\"outputs\":[{\"name\":\"y\",\"dtype\":\"f32\","
                                    "\"shape\":[1]}],\"sets\":[{\"seed\":1,\"distribution\":"
                                    "\"cauchy\",\"low\":0,\"high\":1}],\"atol\":0,\"rtol\":0}"),
                     KB_OK);
    if (n == KB_MAX_TENSORS) /* read up to the sets, the first field after the tensors */
      expect_error(&r, big.data, "sets[0].distribution", "unknown distribution \"cauchy\"");
    else
      expect_error(&r, big.data, "inputs", "must be an array of 1..1024 elements");
    kb_buf_release(&big);
  }
  /* well formed, but the oracle does not exist: a failed prepare, not a protocol error */
  snprintf(buf, sizeof buf,
           "%s\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4]}],"
           "\"outputs\":[{\"name\":\"y\",\"dtype\":\"f32\",\"shape\":[1]}],"
           "\"sets\":[{\"seed\":1,\"distribution\":\"uniform\",\"low\":0,\"high\":1}],"
           "\"atol\":0,\"rtol\":-1}",
           prep_ok_head);
  expect_error(&r, buf, "rtol", "must be a number in 0..");
  snprintf(buf, sizeof buf,
           "%s\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4]}],"
           "\"outputs\":[{\"name\":\"y\",\"dtype\":\"f32\",\"shape\":[1]}],"
           "\"sets\":[{\"seed\":1,\"distribution\":\"uniform\",\"low\":0,\"high\":1}],"
           "\"atol\":0,\"rtol\":0}",
           prep_ok_head);
  m = raw_ask(&r, buf);
  assert_string_equal(json_string_value(json_object_get(m, "op")), "prepare");
  assert_true(json_is_false(json_object_get(m, "ok")));
  assert_non_null(strstr(json_string_value(json_object_get(m, "reason")), "cannot load the oracle"));
  json_decref(m);
  const char *eval_tail = "\"warmup\":0,\"min_samples\":1,\"max_samples\":1,\"noise\":0.1,"
                          "\"max_seconds\":1,\"flush_l2\":false,\"recheck\":true}";
  snprintf(buf, sizeof buf, "{\"op\":\"eval\",\"key\":\"nope\",\"library\":\"/x.so\",\"sets\":1,%s",
           eval_tail);
  expect_error(&r, buf, "key", "no task is prepared");
  snprintf(buf, sizeof buf, "{\"op\":\"eval\",\"key\":\"k\",\"library\":\"/x.so\",\"sets\":\"all\",%s",
           eval_tail);
  expect_error(&r, buf, "sets", "must be an integer");
  snprintf(buf, sizeof buf,
           "{\"op\":\"eval\",\"key\":\"k\",\"library\":\"/x.so\",\"sets\":1,\"warmup\":0,"
           "\"min_samples\":5,\"max_samples\":1,\"noise\":0.1,\"max_seconds\":1,"
           "\"flush_l2\":false,\"recheck\":1}");
  expect_error(&r, buf, "recheck", "must be true or false");
  /* quit ends it cleanly */
  m = raw_ask(&r, "{\"op\":\"quit\"}");
  assert_string_equal(json_string_value(json_object_get(m, "op")), "bye");
  json_decref(m);
  int status = 0;
  assert_int_equal(waitpid(r.pid, &status, 0), r.pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  close(r.fd);
}

/* A frame too large to read cannot be skipped: an error reply, then the sandbox ends. */
static void test_oversized_frame(void **state) {
  (void)state;
  struct raw r;
  raw_start(&r);
  assert_int_equal(write(r.fd, "\x7f\xff\xff\xff", 4), 4);
  char *reply = NULL;
  size_t len = 0;
  struct kb_error err = {0};
  assert_int_equal(kb__frame_read(r.fd, &reply, &len, kb_now_mono() + 10, NULL, &err),
                   KB__FRAME_OK);
  assert_non_null(strstr(reply, "exceeds the"));
  kb_free(reply);
  int status = 0;
  assert_int_equal(waitpid(r.pid, &status, 0), r.pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  close(r.fd);
}

/* ---- the client against a sandbox that dies mid-message ----------------------------------- */

/* Writes an executable shell script `name` into the cache folder; returns its path (new). */
static char *script(const char *name, const char *body) {
  char *path = kb_malloc(256);
  snprintf(path, 256, "%s/%s", fx.base.cache, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\n%s\n", body);
  fclose(f);
  chmod(path, 0755);
  return path;
}

/* A reply without the request's nonce (what candidate code writing on the protocol socket
 * sends: docs/sandbox.md, "Framing") is KB__SB_FORGED, the child killed. */
static void test_forged_reply(void **state) {
  (void)state;
  struct kb_error err = {0};
  char *prog = script("forger.sh",
                      "head -c 18 >/dev/null\n"
                      "printf '\\000\\000\\000\\016{\"op\":\"hello\"}'\n"
                      "head -c 4 >/dev/null\n"
                      "printf '\\000\\000\\000\\015{\"op\":\"eval\"}'\n"
                      "exec sleep 30");
  struct kb__sandbox_opts o = {.program = prog, .backend = "host", .start_timeout_s = 5};
  struct kb__sandbox *sb = NULL;
  assert_int_equal(kb__sandbox_new(&o, &sb, &err), KB_OK);
  json_t *req = json_pack("{s:s}", "op", "eval");
  struct kb__sb_call call;
  double t0 = kb_now_mono();
  if (kb__sandbox_call(sb, req, 5, &call, &err) != KB_OK)
    fail_msg("call: %s", err.msg);
  assert_int_equal(call.outcome, KB__SB_FORGED);
  assert_null(call.reply);
  assert_non_null(strstr(call.detail, "a reply without the request's nonce (op \"eval\")"));
  assert_true(kb_now_mono() - t0 < 3);
  assert_int_equal(kb__sandbox_pid(sb), 0);
  kb__sb_call_release(&call);
  kb__sandbox_free(sb);
  kb_free(prog);
  json_decref(req);
}

static void test_dies_mid_message(void **state) {
  (void)state;
  struct kb_error err = {0};
  /* reads the hello request (a 4-byte length and the 14 bytes of {"op":"hello"}) and says
   * hello; then, once the call's request has begun, starts a reply and dies after 8 of its 64
   * bytes (reading only the hello's length prefix let it die before the call began, so the
   * call's fresh stderr tail could miss "dying now") */
  char *prog = script("half-reply.sh",
                      "head -c 18 >/dev/null\n"
                      "printf '\\000\\000\\000\\016{\"op\":\"hello\"}'\n"
                      "head -c 4 >/dev/null\n"
                      "printf '\\000\\000\\000\\100{\"op\":\"ev'\n"
                      "echo 'dying now' >&2\n"
                      "exit 5");
  struct kb__sandbox_opts o = {.program = prog, .backend = "host", .start_timeout_s = 5};
  struct kb__sandbox *sb = NULL;
  assert_int_equal(kb__sandbox_new(&o, &sb, &err), KB_OK);
  json_t *req = json_pack("{s:s}", "op", "eval");
  struct kb__sb_call call;
  if (kb__sandbox_call(sb, req, 5, &call, &err) != KB_OK)
    fail_msg("call: %s", err.msg);
  assert_int_equal(call.outcome, KB__SB_DIED);
  assert_int_equal(call.exit_code, 5);
  assert_int_equal(call.signal, 0);
  assert_non_null(strstr(call.tail, "dying now"));
  assert_int_equal(kb__sandbox_pid(sb), 0);
  kb__sb_call_release(&call);
  kb__sandbox_free(sb);
  kb_free(prog);
  /* one that dies before its hello is a start failure with its stderr */
  prog = script("no-hello.sh", "echo 'cannot open the device' >&2\nexit 8");
  o.program = prog;
  assert_int_equal(kb__sandbox_new(&o, &sb, &err), KB_OK);
  kb_error_clear(&err);
  assert_int_equal(kb__sandbox_call(sb, req, 5, &call, &err), KB_ECHILD);
  assert_non_null(strstr(err.msg, "exit status 8: the device cannot be opened"));
  assert_non_null(strstr(err.msg, "cannot open the device"));
  kb__sandbox_free(sb);
  kb_free(prog);
  /* one that never says hello: killed after the start timeout */
  prog = script("mute.sh", "echo 'initialising' >&2\nexec sleep 30");
  o.program = prog;
  o.start_timeout_s = 0.3;
  assert_int_equal(kb__sandbox_new(&o, &sb, &err), KB_OK);
  kb_error_clear(&err);
  double s0 = kb_now_mono();
  assert_int_equal(kb__sandbox_call(sb, req, 5, &call, &err), KB_ECHILD);
  assert_true(kb_now_mono() - s0 < 3);
  assert_non_null(strstr(err.msg, "did not say hello within 0.3 s"));
  assert_non_null(strstr(err.msg, "initialising"));
  assert_int_equal(kb__sandbox_pid(sb), 0);
  kb__sandbox_free(sb);
  kb_free(prog);
  o.start_timeout_s = 5;
  /* one that never answers: the watchdog */
  prog = script("silent.sh",
                "printf '\\000\\000\\000\\016{\"op\":\"hello\"}'\nexec sleep 30");
  o.program = prog;
  assert_int_equal(kb__sandbox_new(&o, &sb, &err), KB_OK);
  double t0 = kb_now_mono();
  assert_int_equal(kb__sandbox_call(sb, req, 0.3, &call, &err), KB_OK);
  assert_int_equal(call.outcome, KB__SB_TIMEOUT);
  assert_true(kb_now_mono() - t0 < 3);
  assert_int_equal(kb__sandbox_pid(sb), 0);
  kb__sandbox_free(sb);
  kb_free(prog);
  json_decref(req);
  /* a program that is not there */
  o.program = "/nonexistent/kb-sandbox";
  kb_error_clear(&err);
  assert_int_equal(kb__sandbox_new(&o, &sb, &err), KB_ENOTFOUND);
}

/* ---- watchdog and restarts with host candidates ------------------------------------------- */

/* Evaluates `file` at `tier`, expects `status` with `in_reason`, a restarted sandbox iff
 * `restart`, and an honest candidate passing afterwards. */
static void misbehaves(const char *file, int tier, int status, const char *in_reason,
                       int restart) {
  honest_passes();
  int pid0 = kb__evaluator_sandbox_pid(fx.ev);
  int starts0 = kb__evaluator_sandbox_starts(fx.ev);
  assert_true(pid0 > 0);
  struct kb_result r;
  eval_file(file, tier, &r);
  fixture_expect(&r, status, in_reason);
  kb_result_release(&r);
  honest_passes();
  int starts = kb__evaluator_sandbox_starts(fx.ev);
  if (restart) {
    assert_int_equal(starts, starts0 + 1);
    assert_int_not_equal(kb__evaluator_sandbox_pid(fx.ev), pid0);
    print_message("sandbox restarted in %.3f s\n", kb__evaluator_sandbox_start_s(fx.ev));
    assert_true(kb__evaluator_sandbox_start_s(fx.ev) < 5.0);
  } else {
    assert_int_equal(starts, starts0);
    assert_int_equal(kb__evaluator_sandbox_pid(fx.ev), pid0);
  }
}

static void test_segfault_restarts(void **state) {
  (void)state;
  misbehaves(CANDIDATES "/segfault.c", FX_TIER_SMOKE, KB_STATUS_CRASH, "killed by SIGSEGV", 1);
}

static void test_abort_restarts(void **state) {
  (void)state;
  misbehaves(CANDIDATES "/aborts.c", FX_TIER_SMOKE, KB_STATUS_CRASH, "killed by SIGABRT", 1);
  /* its stderr is in the reason */
  struct kb_result r;
  eval_file(CANDIDATES "/aborts.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_CRASH, "CHECK failed: n % 4 == 0");
  kb_result_release(&r);
}

static void test_exit_restarts(void **state) {
  (void)state;
  misbehaves(CANDIDATES "/calls_exit.c", FX_TIER_SMOKE, KB_STATUS_CRASH, "exited with status 0", 1);
}

static void test_hang_is_killed(void **state) {
  (void)state;
  struct kb_tier tier = fx.base.ladder.tiers[FX_TIER_SMOKE];
  tier.timeout_s = 0.5;
  honest_passes();
  int pid0 = kb__evaluator_sandbox_pid(fx.ev);
  struct kb_result r;
  struct kb_error err = {0};
  double t0 = kb_now_mono();
  assert_int_equal(eval_tier(CANDIDATES "/infinite_loop.c", &tier, FX_TIER_SMOKE, 0, &r, &err),
                   KB_OK);
  double took = kb_now_mono() - t0;
  fixture_expect(&r, KB_STATUS_TIMEOUT, "timed out after 0.5 s");
  assert_true(r.cost_ms >= 500);
  assert_true(took < 10);
  kb_result_release(&r);
  /* the hung process is gone, group and all */
  errno = 0;
  assert_int_equal(kill(pid0, 0), -1);
  assert_int_equal(errno, ESRCH);
  honest_passes();
}

static void test_error_return_keeps_sandbox(void **state) {
  (void)state;
  misbehaves(CANDIDATES "/returns_error.c", FX_TIER_SMOKE, KB_STATUS_CRASH,
             "kb_forward returned 7 on input set 0", 0);
  misbehaves(CANDIDATES "/returns_nan.c", FX_TIER_SMOKE, KB_STATUS_WRONG_OUTPUT, "is nan", 0);
}

/* Returns after half the work: the first unwritten element is named. */
static void test_returns_early(void **state) {
  (void)state;
  struct kb_error err = {0};
  char *source = tu_slurp(CANDIDATES "/half_rows.c");
  struct kb_result r;
  assert_int_equal(fixture_eval(&fx.base, &fx.base.matmul, source, "",
                                &fx.base.ladder.tiers[FX_TIER_SMOKE], FX_TIER_SMOKE, 0, &r, &err),
                   KB_OK);
  fixture_expect(&r, KB_STATUS_WRONG_OUTPUT, "output \"c\" of input set 0: element 32768 is nan");
  kb_result_release(&r);
  kb_free(source);
}

static void test_edits_inputs(void **state) {
  (void)state;
  misbehaves(CANDIDATES "/writes_inputs.c", FX_TIER_SCREEN, KB_STATUS_REJECTED,
             "modified its inputs: element 0 of input \"x\" of input set 0 changed", 0);
}

static void test_writes_reference(void **state) {
  (void)state;
  /* where an evaluator keeping its reference next to the outputs would have it, the guard after
   * the output is: its checksum catches the write, and the sandbox, whose memory it wrote out of
   * bounds, is replaced */
  misbehaves(CANDIDATES "/writes_reference.c", FX_TIER_SMOKE, KB_STATUS_REJECTED,
             "wrote outside its outputs: the guard after output \"sum\" of input set 0 (check "
             "call) changed",
             1);
}

/* An output cache keyed by the input pointer: caught once the sets' contents move between
 * buffers before timing (screen has three sets). */
static void test_caches_by_pointer(void **state) {
  (void)state;
  misbehaves(CANDIDATES "/caches_by_pointer.c", FX_TIER_SCREEN, KB_STATUS_REJECTED,
             "wrong after repeated calls: output \"sum\" of input set 1 (moved to another "
             "buffer)",
             0);
}

/* The work done on the first call only: rejected at the second check call, not wrong_output. */
static void test_first_call_only(void **state) {
  (void)state;
  misbehaves(CANDIDATES "/first_call_only.c", FX_TIER_SCREEN, KB_STATUS_REJECTED,
             "did the work on the first call only: output \"sum\" of input set 1 was right on the "
             "first call and left untouched (still poisoned) on call 2",
             0);
  /* one set (smoke) cannot tell: the first call is right */
  struct kb_result r;
  eval_file(CANDIDATES "/first_call_only.c", FX_TIER_SMOKE, &r);
  fixture_expect(&r, KB_STATUS_REJECTED, "wrong after repeated calls");
  kb_result_release(&r);
  /* a candidate that is simply wrong on every set stays wrong_output */
  misbehaves(CANDIDATES "/returns_nan.c", FX_TIER_SCREEN, KB_STATUS_WRONG_OUTPUT,
             "output \"sum\" of input set 0", 0);
}

static void test_stateful_rejected(void **state) {
  (void)state;
  misbehaves(CANDIDATES "/stateful.c", FX_TIER_SCREEN, KB_STATUS_REJECTED,
             "wrong after repeated calls", 0);
}

static void on_alarm(int sig) { fx.stop = (sig_atomic_t)sig; }

/* The stop flag, set by a signal handler while a candidate hangs, ends the evaluation at once:
 * no verdict, the sandbox killed, a new one for the next evaluation. */
static void test_stop_interrupts(void **state) {
  (void)state;
  honest_passes();
  int pid0 = kb__evaluator_sandbox_pid(fx.ev);
  kb__evaluator_set_stop(fx.ev, &fx.stop);
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, &old);
  struct itimerval it = {.it_value = {.tv_sec = 0, .tv_usec = 300000}};
  setitimer(ITIMER_REAL, &it, NULL);
  struct kb_tier tier = fx.base.ladder.tiers[FX_TIER_SMOKE];
  tier.timeout_s = 20;
  double t0 = kb_now_mono();
  struct kb_result r;
  struct kb_error err = {0};
  int rc = eval_tier(CANDIDATES "/infinite_loop.c", &tier, FX_TIER_SMOKE, 0, &r, &err);
  double took = kb_now_mono() - t0;
  sigaction(SIGALRM, &old, NULL);
  assert_int_equal(rc, KB_EINTERRUPTED);
  assert_true(fx.stop != 0);
  print_message("interrupted after %.3f s: %s\n", took, err.msg);
  assert_true(took < 5);
  kb_result_release(&r);
  errno = 0;
  assert_int_equal(kill(pid0, 0), -1);
  fx.stop = 0;
  kb__evaluator_set_stop(fx.ev, NULL);
  honest_passes();
}

/* At the full tier the baseline is re-timed in the same run: a same-run speedup. */
static void test_same_run_baseline(void **state) {
  (void)state;
  struct kb_tier tier = fx.base.ladder.tiers[FX_TIER_FULL];
  tier.max_samples = 12;
  tier.min_samples = 10;
  struct kb_result r;
  struct kb_error err = {0};
  const char *fast = NULL;
  for (int i = 0; i < fx.base.sum.n_seeds; i++)
    if (strcmp(fx.base.sum.seeds[i].name, "unrolled") == 0)
      fast = fx.base.sum.seeds[i].path;
  assert_non_null(fast);
  assert_int_equal(eval_tier(fast, &tier, FX_TIER_FULL, KB_EVAL_FULL, &r, &err), KB_OK);
  fixture_expect(&r, KB_STATUS_OK, NULL);
  assert_true(r.timing.samples >= 10);
  assert_true(isfinite(r.baseline_median_us) && r.baseline_median_us > 0);
  assert_true(isfinite(r.same_run_speedup));
  assert_float_equal(r.same_run_speedup, r.baseline_median_us / r.timing.median_us, 1e-9);
  print_message("same-run: candidate %.1f us, baseline %.1f us, speedup %.2fx\n",
                r.timing.median_us, r.baseline_median_us, r.same_run_speedup);
  /* the result carries it through JSON */
  char *json = NULL;
  snprintf(r.campaign, sizeof r.campaign, "c");
  snprintf(r.task, sizeof r.task, "sum");
  memset(r.candidate, 'a', KB_CAND_ID_LEN);
  r.candidate[KB_CAND_ID_LEN] = '\0';
  r.tier = 3;
  snprintf(r.tier_name, sizeof r.tier_name, "full");
  r.attempt = 1;
  snprintf(r.charge_id, sizeof r.charge_id, "x#1");
  snprintf(r.runner, sizeof r.runner, "t");
  /* host evaluations have no hardware profile */
  assert_true(isnan(r.dram_pct) && isnan(r.kernel_us));
  r.dram_pct = 71.5;
  r.l2_hit_pct = 12.25;
  assert_int_equal(kb_result_to_json(&r, &json, &err), KB_OK);
  struct kb_result back;
  assert_int_equal(kb_result_from_json(json, "test", &back, &err), KB_OK);
  assert_float_equal(back.same_run_speedup, r.same_run_speedup, 1e-6 * r.same_run_speedup);
  assert_float_equal(back.dram_pct, 71.5, 1e-12);
  assert_float_equal(back.l2_hit_pct, 12.25, 1e-12);
  assert_true(isnan(back.sm_pct));
  kb_result_release(&back);
  kb_free(json);
  kb_result_release(&r);
  /* without the flag there is none */
  assert_int_equal(eval_tier(fast, &tier, FX_TIER_FULL, 0, &r, &err), KB_OK);
  assert_true(isnan(r.same_run_speedup));
  kb_result_release(&r);
}

/* ---- the timed samples' chunks, the dumps, the metrics rule (issue 17) ---------------------- */

/* One raw eval of `lib` on the prepared task "s" with `extra` fields ("" or ",\"k\":v...");
 * returns the reply (new reference), fails the test unless it is an ok verdict. */
static json_t *raw_eval(struct raw *r, const char *lib, const char *extra) {
  char buf[2048];
  snprintf(buf, sizeof buf,
           "{\"op\":\"eval\",\"key\":\"s\",\"library\":\"%s\",\"sets\":0,\"warmup\":1,"
           "\"min_samples\":12,\"max_samples\":12,\"noise\":0,\"max_seconds\":30,"
           "\"flush_l2\":false,\"recheck\":true%s}",
           lib, extra);
  json_t *m = raw_ask(r, buf);
  const char *st = json_string_value(json_object_get(m, "status"));
  if (st == NULL || strcmp(st, "ok") != 0)
    fail_msg("eval %s: %s", extra, json_dumps(m, 0));
  return m;
}

/* Twelve samples, no noise stop: queued in a few chunks by default, one wait each with
 * "sample_chunk": 1; "dump_samples" gives every sample and call back; "metrics_below_us" asks
 * for the metrics pass only under that median (on the host the pass is refused with a note: the
 * note shows whether it was tried). */
static void test_sample_chunks(void **state) {
  (void)state;
  const struct kb__compiler *cc = kb__evaluator_compiler(fx.ev);
  struct kb__build oracle, cand;
  char *osrc = tu_slurp(KB_SOURCE_DIR "/tasks/host/sum/oracle.c");
  tu_build(cc, osrc, NULL, NULL, NULL, &oracle);
  kb_free(osrc);
  const char *fast = NULL;
  for (int i = 0; i < fx.base.sum.n_seeds; i++)
    if (strcmp(fx.base.sum.seeds[i].name, "unrolled") == 0)
      fast = fx.base.sum.seeds[i].path;
  char *src = tu_slurp(fast);
  tu_build(cc, src, NULL, NULL, NULL, &cand);
  kb_free(src);
  if (!oracle.ok || !cand.ok)
    fail_msg("builds: oracle %s, candidate %s", oracle.reason, cand.reason);
  struct raw r;
  raw_start_ro(&r, fx.base.cache); /* the builds are there */
  char buf[1024];
  snprintf(buf, sizeof buf,
           "{\"op\":\"prepare\",\"key\":\"s\",\"oracle\":\"%s\",\"inputs\":[{\"name\":\"x\","
           "\"dtype\":\"f32\",\"shape\":[65536]}],\"outputs\":[{\"name\":\"y\",\"dtype\":\"f32\","
           "\"shape\":[1]}],\"sets\":[{\"seed\":1,\"distribution\":\"uniform\",\"low\":-1,"
           "\"high\":1},{\"seed\":2,\"distribution\":\"uniform\",\"low\":0,\"high\":1}],"
           "\"atol\":0.01,\"rtol\":0.001}",
           oracle.lib_path);
  json_t *m = raw_ask(&r, buf);
  if (!json_is_true(json_object_get(m, "ok")))
    fail_msg("prepare: %s", json_string_value(json_object_get(m, "reason")));
  json_decref(m);

  /* chunks are asked for: the default is one wait per sample (engine.c, chunk_size) */
  m = raw_eval(&r, cand.lib_path, ",\"dump_samples\":true,\"sample_chunk\":64");
  json_int_t chunked = json_integer_value(json_object_get(m, "chunks"));
  json_t *samples = json_object_get(m, "samples_us"), *calls = json_object_get(m, "calls_us");
  assert_int_equal(json_array_size(samples), 12);
  assert_int_equal(json_array_size(calls), 12); /* not flushed: one entry per sample */
  double sum = 0;
  for (size_t i = 0; i < 12; i++)
    sum += json_real_value(json_array_get(samples, i));
  assert_true(sum > 0);
  json_t *t = json_object_get(m, "timing");
  assert_true(json_real_value(json_object_get(t, "median_us")) > 0);
  assert_null(json_object_get(m, "metrics_note"));
  print_message("12 samples in %lld chunk(s)\n", (long long)chunked);
  assert_true(chunked >= 1 && chunked < 12);
  json_decref(m);

  m = raw_eval(&r, cand.lib_path, ",\"sample_chunk\":1");
  assert_int_equal(json_integer_value(json_object_get(m, "chunks")), 12);
  assert_null(json_object_get(m, "samples_us")); /* not asked */
  double median = json_real_value(json_object_get(json_object_get(m, "timing"), "median_us"));
  json_decref(m);

  /* the metrics pass: tried under the bound, not over it */
  snprintf(buf, sizeof buf, ",\"metrics\":true,\"metrics_below_us\":%.6g", median * 1000);
  m = raw_eval(&r, cand.lib_path, buf);
  assert_non_null(strstr(json_string_value(json_object_get(m, "metrics_note")),
                         "no hardware metrics on the host device"));
  json_decref(m);
  snprintf(buf, sizeof buf, ",\"metrics\":true,\"metrics_below_us\":%.6g", median / 1000);
  m = raw_eval(&r, cand.lib_path, buf);
  assert_null(json_object_get(m, "metrics_note"));
  json_decref(m);
  m = raw_eval(&r, cand.lib_path, ",\"metrics\":true"); /* no bound: always */
  assert_non_null(json_object_get(m, "metrics_note"));
  json_decref(m);
  expect_error(&r, "{\"op\":\"eval\",\"key\":\"s\",\"library\":\"/x.so\",\"sets\":0,"
               "\"warmup\":0,\"min_samples\":1,\"max_samples\":1,\"noise\":0,\"max_seconds\":1,"
               "\"flush_l2\":false,\"recheck\":true,\"sample_chunk\":-1}",
               "sample_chunk", "must be an integer");

  /* the fresh samples' schedule (docs/sandbox.md, "Fresh samples at each tier"): three at least
   * by default; exactly one with "fresh_min": 1 and no share past it */
  m = raw_eval(&r, cand.lib_path, "");
  json_int_t fresh_default = json_integer_value(json_object_get(m, "fresh_samples"));
  json_decref(m);
  m = raw_eval(&r, cand.lib_path, ",\"fresh_min\":1,\"fresh_share\":0");
  json_int_t fresh_one = json_integer_value(json_object_get(m, "fresh_samples"));
  const char *one_status = json_string_value(json_object_get(m, "status"));
  print_message("fresh samples: %lld by default, %lld with fresh_min 1 (%s)\n",
                (long long)fresh_default, (long long)fresh_one, one_status);
  assert_true(fresh_default >= 3);
  /* one; or, when that one pair was over the bound on a loaded machine (a wall-clock pair of
   * a few us), the confirmation round's 2 x 3 pairs in all, which clear this honest kernel */
  assert_true(fresh_one == 1 || (fresh_one == 6 && strcmp(one_status, "ok") == 0));
  json_decref(m);
  expect_error(&r, "{\"op\":\"eval\",\"key\":\"s\",\"library\":\"/x.so\",\"sets\":0,"
               "\"warmup\":0,\"min_samples\":1,\"max_samples\":1,\"noise\":0,\"max_seconds\":1,"
               "\"flush_l2\":false,\"recheck\":true,\"fresh_min\":0}",
               "fresh_min", "must be an integer in 1..1000");
  expect_error(&r, "{\"op\":\"eval\",\"key\":\"s\",\"library\":\"/x.so\",\"sets\":0,"
               "\"warmup\":0,\"min_samples\":1,\"max_samples\":1,\"noise\":0,\"max_seconds\":1,"
               "\"flush_l2\":false,\"recheck\":true,\"fresh_share\":1.5}",
               "fresh_share", "must be a number in 0..1");

  m = raw_ask(&r, "{\"op\":\"quit\"}");
  json_decref(m);
  int status = 0;
  assert_int_equal(waitpid(r.pid, &status, 0), r.pid);
  close(r.fd);
  kb__build_release(&oracle);
  kb__build_release(&cand);
}

/* ---- the witness's requests (runner/sandbox/witness_calls.h) --------------------------------- */

/* A witness request for the sum task (`seed`, 5 calls) with `extra` fields; the reply (new). */
static json_t *raw_witness(struct raw *r, const char *oracle, int seed, const char *extra) {
  char buf[2048];
  snprintf(buf, sizeof buf,
           "{\"op\":\"witness\",\"key\":\"s\",\"oracle\":\"%s\",\"inputs\":[{\"name\":\"x\","
           "\"dtype\":\"f32\",\"shape\":[65536]}],\"outputs\":[{\"name\":\"y\",\"dtype\":"
           "\"f32\",\"shape\":[1]}],\"sets\":[{\"seed\":1,\"distribution\":\"uniform\","
           "\"low\":-1,\"high\":1},{\"seed\":2,\"distribution\":\"normal\",\"low\":0,"
           "\"high\":1}],\"atol\":0.01,\"rtol\":0.001,\"seed\":%d,\"calls\":5%s}",
           oracle, seed, extra);
  return raw_ask(r, buf);
}

static void expect_witness(json_t *m, const char *status, const char *in_reason) {
  const char *st = json_string_value(json_object_get(m, "status"));
  const char *why = json_string_value(json_object_get(m, "reason"));
  if (st == NULL || strcmp(st, status) != 0 || strstr(why ? why : "", in_reason) == NULL)
    fail_msg("witness: want %s \"%s\", got %s", status, in_reason, json_dumps(m, 0));
  print_message("witness: %s %s\n", st, why);
  json_decref(m);
}

/* The confined sandbox writes the candidate's outputs on the drawn inputs to its witness file;
 * a trusted one (--trusted) runs the oracle on the same draws and compares: ok for the same
 * seed, rejected for another (other inputs, other sums), rejected for a FIFO in the file's
 * place (read without blocking); a trusted sandbox refuses eval and a candidate library, a
 * confined one the comparison; one without a working folder has no witness file; the check
 * request after the rounds finds an honest candidate's process as it was and a forging one's
 * changed (rejected, the process ends). */
static void test_witness_requests(void **state) {
  (void)state;
  const struct kb__compiler *cc = kb__evaluator_compiler(fx.ev);
  struct kb__build oracle, cand;
  char *osrc = tu_slurp(KB_SOURCE_DIR "/tasks/host/sum/oracle.c");
  tu_build(cc, osrc, NULL, NULL, NULL, &oracle);
  kb_free(osrc);
  char *src = tu_slurp(fx.base.sum.seeds[0].path);
  tu_build(cc, src, NULL, NULL, NULL, &cand);
  kb_free(src);
  if (!oracle.ok || !cand.ok)
    fail_msg("builds: oracle %s, candidate %s", oracle.reason, cand.reason);
  char cdir[] = "/tmp/kb-witness-c.XXXXXX", tdir[] = "/tmp/kb-witness-t.XXXXXX";
  assert_non_null(mkdtemp(cdir));
  assert_non_null(mkdtemp(tdir));
  struct raw c, t, none;
  raw_start_in(&c, fx.base.cache, cdir, 0);
  raw_start_in(&t, NULL, tdir, 1);
  raw_start_ro(&none, fx.base.cache);
  char file[256], extra[1024];
  snprintf(file, sizeof file, "%s/witness.bin", cdir);
  snprintf(extra, sizeof extra, ",\"library\":\"%s\"", cand.lib_path);
  json_t *m = raw_witness(&c, oracle.lib_path, 7, extra);
  assert_int_equal(json_integer_value(json_object_get(m, "calls")), 5);
  assert_int_equal(json_integer_value(json_object_get(m, "bytes")), 5 * 8);
  assert_true(json_number_value(json_object_get(m, "module_us")) > 0);
  expect_witness(m, "ok", "");
  /* the check after the rounds (a request of its own, outside the witness's clock): an honest
   * candidate left the process as it was */
  m = raw_ask(&c, "{\"op\":\"check\"}");
  expect_witness(json_incref(m), "ok", "");
  assert_false(json_is_true(json_object_get(m, "fatal")));
  assert_null(json_object_get(m, "tainted"));
  json_decref(m);
  snprintf(extra, sizeof extra, ",\"check\":true,\"path\":\"%s\"", file);
  expect_witness(raw_witness(&t, oracle.lib_path, 7, extra), "ok", "");
  expect_witness(raw_witness(&t, oracle.lib_path, 8, extra), "rejected",
                 "wrong on inputs drawn after the runner asked, read outside its process: "
                 "output \"y\" of witness call 1 of 5");
  char fifo[256];
  snprintf(fifo, sizeof fifo, "%s/fifo", cdir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  snprintf(extra, sizeof extra, ",\"check\":true,\"path\":\"%s\"", fifo);
  expect_witness(raw_witness(&t, oracle.lib_path, 7, extra), "rejected", "not a regular file");
  unlink(fifo);
  char req[1024];
  snprintf(req, sizeof req,
           "{\"op\":\"eval\",\"key\":\"s\",\"library\":\"%s\",\"sets\":0,\"warmup\":1,"
           "\"max_samples\":1,\"flush_l2\":false,\"recheck\":false}", cand.lib_path);
  expect_error(&t, req, "op", "a trusted sandbox evaluates no candidate");
  snprintf(extra, sizeof extra, ",\"library\":\"%s\"", cand.lib_path);
  m = raw_witness(&t, oracle.lib_path, 7, extra);
  assert_string_equal(json_string_value(json_object_get(m, "field")), "library");
  json_decref(m);
  snprintf(extra, sizeof extra, ",\"library\":\"%s\",\"check\":true,\"path\":\"%s\"",
           cand.lib_path, file);
  m = raw_witness(&c, oracle.lib_path, 7, extra);
  assert_string_equal(json_string_value(json_object_get(m, "field")), "check");
  json_decref(m);
  snprintf(extra, sizeof extra, ",\"library\":\"%s\"", cand.lib_path);
  m = raw_witness(&none, oracle.lib_path, 7, extra);
  assert_non_null(strstr(json_string_value(json_object_get(m, "reason")), "no witness file"));
  json_decref(m);
  /* a candidate that rewrites the sandbox's clock during its witness calls only: the check
   * after them rejects it and the process ends by itself (the catalogue's timer_forge, which
   * patches at its first call; on this task's 1-d input it then returns 1) */
  struct kb__build forge;
  src = tu_slurp(KB_SOURCE_DIR "/tests/catalogue/host/timer_forge.c");
  tu_build(cc, src, NULL, NULL, NULL, &forge);
  kb_free(src);
  if (!forge.ok)
    fail_msg("timer_forge does not build: %s", forge.reason);
  struct raw f;
  raw_start_in(&f, fx.base.cache, cdir, 0);
  snprintf(extra, sizeof extra, ",\"library\":\"%s\"", forge.lib_path);
  json_decref(raw_witness(&f, oracle.lib_path, 7, extra));
  m = raw_ask(&f, "{\"op\":\"check\"}");
  assert_true(json_is_true(json_object_get(m, "fatal")));
  assert_non_null(strstr(json_string_value(json_object_get(m, "tainted")), "function table"));
  expect_witness(m, "rejected", "changed the sandbox's own process");
  int fst = 0;
  assert_int_equal(waitpid(f.pid, &fst, 0), f.pid);
  assert_true(WIFEXITED(fst));
  close(f.fd);
  kb__build_release(&forge);
  struct raw *all[] = {&c, &t, &none};
  for (int i = 0; i < 3; i++) {
    close(all[i]->fd);
    waitpid(all[i]->pid, NULL, 0);
  }
  unlink(file);
  snprintf(file, sizeof file, "%s/witness.bin", tdir);
  unlink(file);
  rmdir(cdir);
  rmdir(tdir);
  kb__build_release(&oracle);
  kb__build_release(&cand);
}

/* ---- the environment ---------------------------------------------------------------------- */

static void test_env_scrubbed(void **state) {
  (void)state;
  char *in[] = {"PATH=/usr/bin", "KB_REDIS_PASSWORD=hunter2", "KB_REDIS_PASSWORD_FILE=/p",
                "OPENAI_API_KEY=k", "AWS_SECRET=s", "X_TOKEN=t", "HOME=/root", "LANG=C.UTF-8",
                "LD_LIBRARY_PATH=/l", "KB_REDIS=1.2.3.4:6379", "NOEQUALS", NULL};
  char **out = kb__sandbox_env(in, "/tmp/d");
  assert_non_null(out);
  const char *want[] = {"PATH=/usr/bin", "LANG=C.UTF-8", "LD_LIBRARY_PATH=/l", "HOME=/tmp/d",
                        "TMPDIR=/tmp/d", NULL};
  int n = 0;
  for (char **e = out; *e; e++, n++) {
    int found = 0;
    for (const char **w = want; *w; w++)
      found |= strcmp(*e, *w) == 0;
    if (!found)
      fail_msg("unexpected variable in the sandbox's environment: %s", *e);
  }
  assert_int_equal(n, 5);
  kb__env_free(out);
  assert_true(kb__env_secret("KB_REDIS_PASSWORD", 17));
  assert_true(kb__env_secret("MY_API_KEY", 10));
  assert_false(kb__env_secret("PATH", 4));

  /* the running sandbox's own environment and folder, as the candidate sees them */
  honest_passes();
  int pid = kb__evaluator_sandbox_pid(fx.ev);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/environ", pid);
  struct kb_buf env;
  struct kb_error err = {0};
  kb_buf_init(&env);
  assert_int_equal(kb_buf_read_file(&env, path, &err), KB_OK);
  int saw_path = 0, saw_cuda = 0;
  for (size_t off = 0; off < env.len; off += strlen(env.data + off) + 1) {
    const char *v = env.data + off;
    if (strstr(v, "hunter2") || strncmp(v, "KB_REDIS_PASSWORD", 17) == 0 ||
        strstr(v, "_KEY=") || strstr(v, "_TOKEN=") || strstr(v, "_SECRET="))
      fail_msg("the sandbox sees %s", v);
    saw_path |= strncmp(v, "PATH=", 5) == 0;
    saw_cuda |= strcmp(v, "CUDA_VISIBLE_DEVICES=0") == 0;
  }
  assert_true(saw_path);
  assert_true(saw_cuda);
  kb_buf_release(&env);
  /* the OOM killer's first choice: a candidate exhausting memory ends its own evaluation */
  snprintf(path, sizeof path, "/proc/%d/oom_score_adj", pid);
  struct kb_buf adj;
  kb_buf_init(&adj);
  assert_int_equal(kb_buf_read_file(&adj, path, &err), KB_OK);
  assert_int_equal(atoi(adj.data), 1000);
  kb_buf_release(&adj);
  /* it works in a folder of its own, which goes when it goes */
  char cwd[512] = "";
  snprintf(path, sizeof path, "/proc/%d/cwd", pid);
  ssize_t len = readlink(path, cwd, sizeof cwd - 1);
  assert_true(len > 0);
  cwd[len] = '\0';
  assert_non_null(strstr(cwd, "kb-sandbox."));
  struct stat st;
  assert_int_equal(stat(cwd, &st), 0);
  kb_host_backend_free(fx.base.backend);
  fx.base.backend = NULL;
  errno = 0;
  assert_int_equal(stat(cwd, &st), -1);
  assert_int_equal(errno, ENOENT);
  /* and it was reaped */
  errno = 0;
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
  assert_int_equal(errno, ECHILD);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_frame_roundtrip),
      cmocka_unit_test(test_malformed_requests),
      cmocka_unit_test(test_forged_reply),
      cmocka_unit_test(test_oversized_frame),
      cmocka_unit_test(test_dies_mid_message),
      cmocka_unit_test(test_segfault_restarts),
      cmocka_unit_test(test_abort_restarts),
      cmocka_unit_test(test_exit_restarts),
      cmocka_unit_test(test_hang_is_killed),
      cmocka_unit_test(test_error_return_keeps_sandbox),
      cmocka_unit_test(test_returns_early),
      cmocka_unit_test(test_edits_inputs),
      cmocka_unit_test(test_writes_reference),
      cmocka_unit_test(test_stateful_rejected),
      cmocka_unit_test(test_caches_by_pointer),
      cmocka_unit_test(test_first_call_only),
      cmocka_unit_test(test_stop_interrupts),
      cmocka_unit_test(test_same_run_baseline),
      cmocka_unit_test(test_sample_chunks),
      cmocka_unit_test(test_witness_requests),
      cmocka_unit_test(test_env_scrubbed), /* last: it frees the backend */
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
