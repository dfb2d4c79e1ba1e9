/* The LLM client against the fake server (tests/fixtures/fake_llm.py): answers of both APIs,
 * retries after 429 (Retry-After honoured), 500, a timeout and truncated JSON, no retry after
 * 401, retries running out, tokens summed over attempts, and requests in flight at once.
 * usage: test_llm_client PYTHON FAKE_LLM_PY */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "fake_llm_proc.h"
#include "kb/alloc.h"
#include "kb/campaign.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "llm_api.h"
#include "llm_client.h"
#include "llm_extract.h"

static const char *python, *script;
static struct kbt_fake fake;

struct outcome {
  int done;
  struct kb_llm_done d;
  char *text;
};

static void on_done(struct kb_llm_done *d, void *arg) {
  struct outcome *o = d->user;
  (void)arg;
  o->done = 1;
  o->d = *d;
  o->text = d->text; /* stolen */
  d->text = NULL;
  o->d.text = NULL;
}

static struct kb_llm_client *client(int api, const char *key, double timeout_s, int retries) {
  struct kb_llm_client_opts o = {.api = api,
                                 .endpoint = api == KB_LLM_OPENAI ? fake.openai : fake.anthropic,
                                 .key = key, .concurrency = 8, .timeout_s = timeout_s,
                                 .max_retries = retries, .backoff_s = 0.05,
                                 .backoff_max_s = 0.2};
  struct kb_llm_client *c = NULL;
  struct kb_error err = {0};
  if (kb__llm_client_new(&o, &c, &err))
    fail_msg("client: %s", err.msg);
  return c;
}

static const char *BODY_OPENAI =
    "{\"model\":\"fake\",\"max_tokens\":100,\"messages\":[{\"role\":\"system\",\"content\":"
    "\"sys\"},{\"role\":\"user\",\"content\":\"Task sum: make it fast\"}]}";
static const char *BODY_ANTHROPIC =
    "{\"model\":\"fake\",\"max_tokens\":100,\"system\":\"sys\",\"messages\":[{\"role\":\"user\","
    "\"content\":\"Task matmul: make it fast\"}]}";

/* Runs `n` requests to completion; returns the seconds it took. */
static double run(struct kb_llm_client *c, const char *body, struct outcome *o, int n) {
  struct kb_error err = {0};
  for (int i = 0; i < n; i++)
    if (kb__llm_client_submit(c, body, &o[i], &err))
      fail_msg("submit: %s", err.msg);
  double t0 = kb_now_mono();
  while (kb__llm_client_pending(c) > 0) {
    if (kb__llm_client_poll(c, 200, on_done, NULL, &err))
      fail_msg("poll: %s", err.msg);
    if (kb_now_mono() - t0 > 30)
      fail_msg("requests still pending after 30 s");
  }
  for (int i = 0; i < n; i++)
    assert_true(o[i].done);
  return kb_now_mono() - t0;
}

static int64_t billed(void) {
  long n = 0;
  int64_t tokens = 0;
  assert_int_equal(kbt_fake_totals(&fake, 0, &n, &tokens), 0);
  return tokens;
}

static void test_ok_both_apis(void **state) {
  (void)state;
  assert_int_equal(kbt_fake_script(&fake, ""), 0);
  int64_t before = billed();
  struct kb_llm_client *c = client(KB_LLM_OPENAI, "sk-test", 10, 2);
  struct outcome o[1] = {{0}};
  run(c, BODY_OPENAI, o, 1);
  assert_int_equal(o[0].d.code, KB_OK);
  assert_int_equal(o[0].d.attempts, 1);
  assert_int_equal(o[0].d.http_status, 200);
  char *code = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__llm_extract_code(o[0].text, &code, &err), KB_OK);
  kb_free(code);
  assert_int_equal(o[0].d.tokens_in + o[0].d.tokens_out, billed() - before);
  assert_true(o[0].d.tokens_in > 0 && o[0].d.tokens_out > 0);
  kb_free(o[0].text);
  kb__llm_client_free(c);

  before = billed();
  c = client(KB_LLM_ANTHROPIC, "sk-test", 10, 2);
  struct outcome a[1] = {{0}};
  run(c, BODY_ANTHROPIC, a, 1);
  assert_int_equal(a[0].d.code, KB_OK);
  assert_non_null(strstr(a[0].text, "kb_forward"));
  assert_int_equal(a[0].d.tokens_in + a[0].d.tokens_out, billed() - before);
  kb_free(a[0].text);
  kb__llm_client_free(c);
}

static void test_429_retry_after_honoured(void **state) {
  (void)state;
  assert_int_equal(kbt_fake_script(&fake, "429,ok"), 0);
  struct kb_llm_client *c = client(KB_LLM_OPENAI, "sk-test", 10, 3);
  struct outcome o[1] = {{0}};
  double took = run(c, BODY_OPENAI, o, 1);
  assert_int_equal(o[0].d.code, KB_OK);
  assert_int_equal(o[0].d.attempts, 2);
  /* backoff alone would wait at most 0.05 s; the fake says Retry-After: 1 */
  if (took < 0.95)
    fail_msg("retried after %.3f s, Retry-After said 1 s", took);
  kb_free(o[0].text);
  kb__llm_client_free(c);
}

static void test_500_then_ok_and_truncated(void **state) {
  (void)state;
  assert_int_equal(kbt_fake_script(&fake, "500,truncated,500,ok"), 0);
  int64_t before = billed();
  struct kb_llm_client *c = client(KB_LLM_ANTHROPIC, "sk-test", 10, 5);
  struct outcome o[1] = {{0}};
  run(c, BODY_ANTHROPIC, o, 1);
  assert_int_equal(o[0].d.code, KB_OK);
  assert_int_equal(o[0].d.attempts, 4);
  /* only the last answer reported tokens; the client's sum matches the fake's; the truncated
   * answer is counted as billed without a usage, the 500s are not */
  assert_int_equal(o[0].d.tokens_in + o[0].d.tokens_out, billed() - before);
  assert_int_equal(o[0].d.unreported, 1);
  kb_free(o[0].text);
  kb__llm_client_free(c);
}

static void test_timeout_then_ok(void **state) {
  (void)state;
  assert_int_equal(kbt_fake_script(&fake, "slow,ok"), 0);
  struct kb_llm_client *c = client(KB_LLM_OPENAI, "sk-test", 0.5, 2);
  struct outcome o[1] = {{0}};
  run(c, BODY_OPENAI, o, 1);
  assert_int_equal(o[0].d.code, KB_OK);
  assert_int_equal(o[0].d.attempts, 2);
  assert_int_equal(o[0].d.unreported, 1); /* the server had the request: it may bill it */
  kb_free(o[0].text);
  kb__llm_client_free(c);
}

/* A request that never reached a server (nothing listens on the port) was billed by nobody:
 * it fails after its retries with no attempt counted as unreported. */
static void test_never_sent_not_billed(void **state) {
  (void)state;
  struct kb_llm_client_opts opts = {.api = KB_LLM_OPENAI,
                                    .endpoint = "http://127.0.0.1:1/v1/chat/completions",
                                    .key = "sk-test", .concurrency = 1, .timeout_s = 2,
                                    .max_retries = 1, .backoff_s = 0.05, .backoff_max_s = 0.1};
  struct kb_llm_client *c = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__llm_client_new(&opts, &c, &err), KB_OK);
  struct outcome o[1] = {{0}};
  run(c, BODY_OPENAI, o, 1);
  assert_int_equal(o[0].d.code, KB_EIO);
  assert_int_equal(o[0].d.attempts, 2);
  assert_int_equal(o[0].d.unreported, 0);
  kb__llm_client_free(c);
}

static void test_retries_run_out(void **state) {
  (void)state;
  assert_int_equal(kbt_fake_script(&fake, "500,500,500,ok"), 0);
  struct kb_llm_client *c = client(KB_LLM_OPENAI, "sk-test", 10, 2);
  struct outcome o[1] = {{0}};
  run(c, BODY_OPENAI, o, 1);
  assert_int_equal(o[0].d.code, KB_EIO);
  assert_int_equal(o[0].d.attempts, 3);
  assert_int_equal(o[0].d.http_status, 500);
  assert_non_null(strstr(o[0].d.error, "http 500"));
  assert_null(o[0].text);
  assert_int_equal(o[0].d.tokens_in + o[0].d.tokens_out, 0);
  assert_int_equal(o[0].d.unreported, 0);
  kb__llm_client_free(c);
  /* garbage until the end: a parse error, not retried forever */
  assert_int_equal(kbt_fake_script(&fake, "truncated,error,truncated"), 0);
  c = client(KB_LLM_OPENAI, "sk-test", 10, 2);
  memset(o, 0, sizeof o);
  run(c, BODY_OPENAI, o, 1);
  assert_int_equal(o[0].d.code, KB_EPARSE);
  assert_int_equal(o[0].d.attempts, 3);
  kb__llm_client_free(c);
  assert_int_equal(kbt_fake_script(&fake, ""), 0);
}

static void test_401_not_retried(void **state) {
  (void)state;
  assert_int_equal(kbt_fake_script(&fake, ""), 0);
  struct kb_llm_client *c = client(KB_LLM_OPENAI, "sk-wrong", 10, 5);
  struct outcome o[1] = {{0}};
  run(c, BODY_OPENAI, o, 1);
  assert_int_equal(o[0].d.code, KB_EIO);
  assert_int_equal(o[0].d.attempts, 1);
  assert_int_equal(o[0].d.http_status, 401);
  kb__llm_client_free(c);
}

static void test_requests_in_flight_at_once(void **state) {
  (void)state;
  /* six answers that each take the fake 1.5 s: in flight together they end in about 1.5 s */
  assert_int_equal(kbt_fake_script(&fake, "slow,slow,slow,slow,slow,slow"), 0);
  struct kb_llm_client *c = client(KB_LLM_OPENAI, "sk-test", 10, 0);
  struct outcome o[6];
  memset(o, 0, sizeof o);
  double took = run(c, BODY_OPENAI, o, 6);
  for (int i = 0; i < 6; i++) {
    assert_int_equal(o[i].d.code, KB_OK);
    kb_free(o[i].text);
  }
  if (took > 6.0)
    fail_msg("6 slow requests took %.2f s: not concurrent (one at a time would take 9 s)", took);
  kb__llm_client_free(c);
}

static int setup(void **state) {
  (void)state;
  const char *args[] = {"--key", "sk-test", "--retry-after", "1", "--slow-seconds", "1.5", NULL};
  return kbt_fake_start(&fake, python, script, args);
}

static int teardown(void **state) {
  (void)state;
  kbt_fake_stop(&fake);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_llm_client PYTHON FAKE_LLM_PY\n");
    return 2;
  }
  python = argv[1];
  script = argv[2];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ok_both_apis),
      cmocka_unit_test(test_429_retry_after_honoured),
      cmocka_unit_test(test_500_then_ok_and_truncated),
      cmocka_unit_test(test_never_sent_not_billed),
      cmocka_unit_test(test_timeout_then_ok),
      cmocka_unit_test(test_retries_run_out),
      cmocka_unit_test(test_401_not_retried),
      cmocka_unit_test(test_requests_in_flight_at_once),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
