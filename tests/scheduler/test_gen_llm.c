/* The llm generator with a real redis-server and the fake LLM server: every request's tokens
 * are reserved, then posted as the API reported them (an answer without a readable usage at its
 * reservation) or voided, so the ledger is exact after 429s, 500s, truncated and error answers
 * and answers without code, and never below what the API billed; audit entries; charges left
 * open by a killed scheduler are voided at start; a budget too small stops requests.
 * usage: test_gen_llm PYTHON FAKE_LLM_PY */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_llm_proc.h"
#include "gen_fixture.h"
#include "gen_llm.h"
#include "kb/alloc.h"
#include "kb/campaign.h"
#include "kb/catalog.h"
#include "kb/clock.h"
#include "kb/compress.h"
#include "kb/error.h"
#include "ledger.h"
#include "llm_api.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "redis_fixture.h"

static const char *python, *script;
static struct kbt_fake fake;
static struct kbt_redis server;

static void make_task(struct kb_task *t) {
  memset(t, 0, sizeof *t);
  snprintf(t->id, sizeof t->id, "sum");
  t->name = "sum of a vector";
  t->backend = KB_BACKEND_HOST;
  static struct kb_tensor_spec in[1], out[1]; /* never released: the task is not either */
  memset(in, 0, sizeof in);
  memset(out, 0, sizeof out);
  t->inputs = in;
  t->outputs = out;
  t->n_inputs = t->n_outputs = 1;
  snprintf(t->inputs[0].name, sizeof t->inputs[0].name, "x");
  t->inputs[0].ndim = 1;
  t->inputs[0].shape[0] = 1024;
  snprintf(t->outputs[0].name, sizeof t->outputs[0].name, "total");
  t->outputs[0].ndim = 1;
  t->outputs[0].shape[0] = 1;
}

static struct kb_gen_llm_cfg cfg(void) {
  struct kb_gen_llm_cfg c = {.enabled = 1, .weight = 1, .api = KB_LLM_OPENAI,
                             .endpoint = fake.openai, .model = "fake-model", .concurrency = 1,
                             .max_tokens = 500, .temperature = 0.5, .timeout_s = 10,
                             .max_retries = 2, .backoff_s = 0.02, .backoff_max_s = 0.1};
  return c;
}

struct emitted {
  int n;
  char names[8][64];
};

static int emit(const struct kb_candidate *c, void *arg, struct kb_error *err) {
  (void)err;
  struct emitted *e = arg;
  assert_string_equal(c->generator, "llm");
  assert_true(e->n < 8);
  snprintf(e->names[e->n++], 64, "%s", c->name);
  return KB_OK;
}

/* One request, driven to its end. */
static void one_request(struct kb_gen_llm *l, const struct kb_task *t,
                        const struct kb_task_pop *tp, struct emitted *e) {
  struct kb_error err = {0};
  if (kb__gen_llm_request(l, t, "REFERENCE SOURCE TEXT", tp, &err))
    fail_msg("request: %s", err.msg);
  double t0 = kb_now_mono();
  while (kb__gen_llm_pending(l) > 0) {
    if (kb__gen_llm_poll(l, 200, emit, e, &err))
      fail_msg("poll: %s", err.msg);
    if (kb_now_mono() - t0 > 20)
      fail_msg("request still pending after 20 s");
  }
}

static int64_t ledger(struct kb_redis *r, const char *cid, const char *field) {
  char key[100];
  snprintf(key, sizeof key, "kb:{%s}:ledger", cid);
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(r, &rep, &err, "HGET %s llm_tokens:%s", key, field))
    fail_msg("%s", err.msg);
  long long v = rep->type == REDIS_REPLY_STRING ? strtoll(rep->str, NULL, 10) : -1;
  freeReplyObject(rep);
  return v;
}

static long long int_reply(struct kb_redis *r, const char *fmt, const char *key) {
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(r, &rep, &err, fmt, key))
    fail_msg("%s", err.msg);
  long long v = rep->integer;
  freeReplyObject(rep);
  return v;
}

/* The sum of the integer field `field` over the audit stream `key`. */
static int64_t audit_sum(struct kb_redis *r, const char *key, const char *field) {
  redisReply *rep = NULL;
  struct kb_error err = {0};
  if (kb_redis_commandf(r, &rep, &err, "XRANGE %s - +", key))
    fail_msg("%s", err.msg);
  int64_t sum = 0;
  for (size_t i = 0; i < rep->elements; i++) {
    redisReply *f = rep->element[i]->element[1];
    for (size_t k = 0; k + 1 < f->elements; k += 2)
      if (strcmp(f->element[k]->str, field) == 0)
        sum += strtoll(f->element[k + 1]->str, NULL, 10);
  }
  freeReplyObject(rep);
  return sum;
}

static void test_tokens_exact_after_failures(void **state) {
  (void)state;
  struct kb_redis *r = kbg_connect(server.addr);
  struct kb_queue q;
  kbg_campaign(r, "llm1", "{}", 100000, &q);
  struct kb_gen_llm_cfg c = cfg();
  struct kb_gen_llm *l = NULL;
  struct kb_error err = {0};
  if (kb__gen_llm_new(&q, &c, "sk-test", 3, &l, &err))
    fail_msg("new: %s", err.msg);
  struct kb_task t;
  make_task(&t);
  struct kb_population pop;
  kb__population_init(&pop, 3);
  struct kb_task_pop *tp = kb__population_task(&pop, "sum");
  struct emitted e = {0};
  /* ok after a 429; ok after 500 and truncated; an answer without code; errors to the end */
  assert_int_equal(kbt_fake_script(&fake, "429,ok,500,truncated,ok,nocode,error,500,truncated"),
                   0);
  for (int i = 0; i < 4; i++)
    one_request(l, &t, tp, &e);
  struct kb__gen_llm_stats st;
  kb__gen_llm_stats(l, &st);
  assert_int_equal(st.requests, 4);
  assert_int_equal(st.candidates, 2);
  assert_int_equal(st.no_code, 1);
  assert_int_equal(st.failed, 1);
  assert_int_equal(e.n, 2);
  assert_string_equal(e.names[0], "llm-translate-1");
  /* the ledger holds nothing and spent exactly what the replies reported, plus the
   * reservation of each of the two truncated answers (billed, their usage unreadable): so at
   * least what the fake billed */
  long n = 0;
  int64_t reported = 0;
  assert_int_equal(kbt_fake_totals(&fake, 0, &n, &reported), 0);
  assert_int_equal(n, 9);
  assert_true(reported > 0);
  int64_t spent = ledger(r, "llm1", "spent");
  assert_int_equal(audit_sum(r, "kb:{llm1}:llm:sum", "unreported"), 2);
  assert_int_equal(audit_sum(r, "kb:{llm1}:llm:sum", "tokens_in") +
                       audit_sum(r, "kb:{llm1}:llm:sum", "tokens_out"),
                   spent);
  assert_true(spent > reported);
  assert_true(spent >= kbt_fake_billed(&fake));
  assert_int_equal(st.tokens, spent);
  assert_int_equal(ledger(r, "llm1", "held"), 0);
  assert_int_equal(ledger(r, "llm1", "available") + ledger(r, "llm1", "spent"),
                   ledger(r, "llm1", "total"));
  assert_int_equal(int_reply(r, "HLEN %s", "kb:{llm1}:gen:llm:open"), 0);
  /* every write-ahead record completed by its stream entry */
  assert_int_equal(int_reply(r, "HLEN %s", "kb:{llm1}:gen:llm:sent"), 0);
  /* one audit entry per request, prompts and answers compressed */
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XRANGE kb:{llm1}:llm:sum - +"), KB_OK);
  assert_int_equal(rep->elements, 4);
  const char *want_status[] = {"ok", "ok", "no_code", "failed"};
  for (size_t i = 0; i < rep->elements; i++) {
    redisReply *f = rep->element[i]->element[1];
    const char *status = NULL;
    char *prompt = NULL;
    for (size_t k = 0; k + 1 < f->elements; k += 2) {
      if (strcmp(f->element[k]->str, "status") == 0)
        status = f->element[k + 1]->str;
      if (strcmp(f->element[k]->str, "prompt") == 0) {
        size_t len = 0;
        assert_int_equal(kb_decompress(f->element[k + 1]->str, f->element[k + 1]->len, 1 << 20,
                                       &prompt, &len, &err),
                         KB_OK);
      }
    }
    assert_non_null(status);
    assert_string_equal(status, want_status[i]);
    assert_non_null(prompt);
    assert_non_null(strstr(prompt, "Task sum:"));
    assert_non_null(strstr(prompt, "REFERENCE SOURCE TEXT"));
    kb_free(prompt);
  }
  freeReplyObject(rep);
  kb__gen_llm_free(l);
  kb__population_release(&pop);
  kb_redis_free(r);
}

/* Answers the API billed but whose usage cannot be read (no usage, a negative count and a
 * string, both counts 0, a body cut mid-way by a closed connection) are charged their
 * request's reservation, never nothing: the ledger spends at least what the provider billed.
 * Counts no request can reach (2^63 - 1 each: their sum overflowed) are charged whole at the
 * cap, which leaves the budget below 0 and stops the generator. */
static void test_unreadable_usage_never_undercharged(void **state) {
  (void)state;
  struct kb_redis *r = kbg_connect(server.addr);
  struct kb_queue q;
  kbg_campaign(r, "llm4", "{}", 1000000, &q);
  struct kb_gen_llm_cfg c = cfg();
  struct kb_gen_llm *l = NULL;
  struct kb_error err = {0};
  if (kb__gen_llm_new(&q, &c, "sk-test", 3, &l, &err))
    fail_msg("new: %s", err.msg);
  struct kb_task t;
  make_task(&t);
  struct kb_population pop;
  kb__population_init(&pop, 3);
  struct kb_task_pop *tp = kb__population_task(&pop, "sum");
  struct emitted e = {0};
  int64_t billed0 = kbt_fake_billed(&fake);
  assert_int_equal(kbt_fake_script(&fake, "nousage,badusage,zerousage,cut,ok"), 0);
  for (int i = 0; i < 4; i++)
    one_request(l, &t, tp, &e);
  assert_int_equal(e.n, 4); /* every answer carried its kernel */
  int64_t billed = kbt_fake_billed(&fake) - billed0;
  int64_t spent = ledger(r, "llm4", "spent");
  assert_true(billed > 0);
  if (spent < billed)
    fail_msg("the provider billed %lld tokens, the ledger spent %lld", (long long)billed,
             (long long)spent);
  const char *stream = "kb:{llm4}:llm:sum";
  assert_int_equal(audit_sum(r, stream, "tokens_in") + audit_sum(r, stream, "tokens_out"),
                   spent);
  assert_int_equal(audit_sum(r, stream, "unreported"), 4);
  assert_int_equal(ledger(r, "llm4", "held"), 0);
  assert_int_equal(ledger(r, "llm4", "available") + spent, ledger(r, "llm4", "total"));
  /* a lie beyond any request */
  assert_int_equal(kbt_fake_script(&fake, "hugeusage"), 0);
  one_request(l, &t, tp, &e);
  assert_int_equal(ledger(r, "llm4", "spent") - spent, 2 * KB_LLM_TOKENS_MAX);
  assert_int_equal(ledger(r, "llm4", "held"), 0);
  assert_true(ledger(r, "llm4", "available") < 0);
  assert_int_equal(kb__gen_llm_request(l, &t, "REF", tp, &err), KB_EBUDGET);
  assert_true(kb__gen_llm_out_of_tokens(l));
  kb__gen_llm_free(l);
  kb__population_release(&pop);
  kb_redis_free(r);
}

static void test_open_charges_voided_at_start(void **state) {
  (void)state;
  struct kb_redis *r = kbg_connect(server.addr);
  struct kb_queue q;
  kbg_campaign(r, "llm2", "{}", 10000, &q);
  struct kb_error err = {0};
  /* a killed scheduler reserved and listed a charge, and never settled it */
  assert_int_equal(kb__ledger_reserve(&q, KB_LLM_TOKENS, "llm:sum:7", 3000, "test", NULL, &err),
                   KB_OK);
  redisReply *rep = NULL;
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HSET kb:{llm2}:gen:llm:open llm:sum:7 sum"),
                   KB_OK);
  freeReplyObject(rep);
  /* and had recorded the request ahead (llm_audit.h), a prompt with no answer */
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "HSET kb:{llm2}:gen:llm:sent llm:sum:7 %s",
                                     "{\"task\":\"sum\",\"kind\":\"mutate\",\"model\":\"m1\","
                                     "\"sent_ms\":1700000000000,\"parents\":\"\","
                                     "\"prompt\":\"Task sum: the prompt sent\"}"),
                   KB_OK);
  freeReplyObject(rep);
  assert_int_equal(ledger(r, "llm2", "held"), 3000);
  struct kb_gen_llm_cfg c = cfg();
  struct kb_gen_llm *l = NULL;
  assert_int_equal(kb__gen_llm_new(&q, &c, "sk-test", 3, &l, &err), KB_OK);
  assert_int_equal(ledger(r, "llm2", "held"), 0);
  assert_int_equal(ledger(r, "llm2", "available"), 10000);
  assert_int_equal(int_reply(r, "HLEN %s", "kb:{llm2}:gen:llm:open"), 0);
  /* the record became a "lost" audit entry: its prompt, no response, no tokens */
  assert_int_equal(int_reply(r, "HLEN %s", "kb:{llm2}:gen:llm:sent"), 0);
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XRANGE kb:{llm2}:llm:sum - +"), KB_OK);
  assert_int_equal(rep->elements, 1);
  redisReply *f = rep->element[0]->element[1];
  int seen = 0;
  for (size_t k = 0; k + 1 < f->elements; k += 2) {
    const char *name = f->element[k]->str, *v = f->element[k + 1]->str;
    if (strcmp(name, "status") == 0 && strcmp(v, "lost") == 0)
      seen |= 1;
    if (strcmp(name, "model") == 0 && strcmp(v, "m1") == 0)
      seen |= 2;
    if (strcmp(name, "sent_ms") == 0 && strcmp(v, "1700000000000") == 0)
      seen |= 4;
    if (strcmp(name, "tokens_in") == 0 && strcmp(v, "0") == 0)
      seen |= 8;
    char *text = NULL;
    size_t len = 0;
    if (strcmp(name, "prompt") == 0 || strcmp(name, "response") == 0)
      assert_int_equal(kb_decompress(v, f->element[k + 1]->len, 1 << 20, &text, &len, &err),
                       KB_OK);
    if (strcmp(name, "prompt") == 0 && strcmp(text, "Task sum: the prompt sent") == 0)
      seen |= 16;
    if (strcmp(name, "response") == 0 && len == 0)
      seen |= 32;
    kb_free(text);
  }
  assert_int_equal(seen, 63);
  freeReplyObject(rep);
  /* a budget that cannot hold one request: no request, the generator says so */
  struct kb_task t;
  make_task(&t);
  struct kb_population pop;
  kb__population_init(&pop, 3);
  c.max_tokens = 20000;
  assert_int_equal(kb__gen_llm_request(l, &t, "REF", kb__population_task(&pop, "sum"), &err),
                   KB_EBUDGET);
  assert_true(kb__gen_llm_out_of_tokens(l));
  assert_int_equal(kb__gen_llm_pending(l), 0);
  assert_int_equal(ledger(r, "llm2", "available"), 10000);
  kb__gen_llm_free(l);
  kb__population_release(&pop);
  kb_redis_free(r);
}

/* What the kernelbench test's emit keeps of each candidate: stored in the catalog, as the
 * scheduler does, so a later request can load it as a parent. */
struct kept {
  struct kb_queue *q;
  int n;
  struct kb_candidate c[4];
};

static int keep(const struct kb_candidate *c, void *arg, struct kb_error *err) {
  struct kept *k = arg;
  assert_true(k->n < 4);
  struct kb_candidate *d = &k->c[k->n++];
  *d = *c;
  d->knobs = kb_strdup(c->knobs);
  d->flags = kb_strdup(c->flags);
  d->source = kb_strdup(c->source);
  return kb_catalog_put_candidate(k->q, d, err);
}

static void drive(struct kb_gen_llm *l, const struct kb_task *t, const struct kb_task_pop *tp,
                  struct kept *k) {
  struct kb_error err = {0};
  if (kb__gen_llm_request(l, t, "class Model(nn.Module): REFERENCE SOURCE TEXT", tp, &err))
    fail_msg("request: %s", err.msg);
  double t0 = kb_now_mono();
  while (kb__gen_llm_pending(l) > 0) {
    if (kb__gen_llm_poll(l, 200, keep, k, &err))
      fail_msg("poll: %s", err.msg);
    if (kb_now_mono() - t0 > 20)
      fail_msg("request still pending after 20 s");
  }
}

/* The audit entry `i` of task `task`'s stream: its status and decompressed prompt (new). */
static void audit_entry(struct kb_redis *r, const char *key, size_t i, char *status,
                        size_t size, char **prompt) {
  redisReply *rep = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb_redis_commandf(r, &rep, &err, "XRANGE %s - +", key), KB_OK);
  assert_true(i < rep->elements);
  redisReply *f = rep->element[i]->element[1];
  *prompt = NULL;
  for (size_t k = 0; k + 1 < f->elements; k += 2) {
    if (strcmp(f->element[k]->str, "status") == 0)
      snprintf(status, size, "%s", f->element[k + 1]->str);
    if (strcmp(f->element[k]->str, "prompt") == 0) {
      size_t len = 0;
      assert_int_equal(kb_decompress(f->element[k + 1]->str, f->element[k + 1]->len, 1 << 20,
                                     prompt, &len, &err),
                       KB_OK);
    }
  }
  freeReplyObject(rep);
  assert_non_null(*prompt);
}

/* "format": "kernelbench": a translate prompt in KernelBench's conventions, a ModelNew answer
 * becomes a kernelbench candidate, an answer without ModelNew is a recorded failed generation,
 * and a mutation of the kernelbench candidate is asked and answered in that format. */
static void test_kernelbench_answers(void **state) {
  (void)state;
  struct kb_redis *r = kbg_connect(server.addr);
  struct kb_queue q;
  kbg_campaign(r, "llm3", "{}", 100000, &q);
  struct kb_gen_llm_cfg c = cfg();
  c.format = KB_FORMAT_KERNELBENCH;
  struct kb_gen_llm *l = NULL;
  struct kb_error err = {0};
  if (kb__gen_llm_new(&q, &c, "sk-test", 3, &l, &err))
    fail_msg("new: %s", err.msg);
  struct kb_task t;
  make_task(&t);
  snprintf(t.id, sizeof t.id, "modelsum"); /* fixtures/llm/modelsum: a, b (no ModelNew), c */
  struct kb_population pop;
  kb__population_init(&pop, 3);
  struct kb_task_pop *tp = kb__population_task(&pop, "modelsum");
  struct kept k = {.q = &q};
  assert_int_equal(kbt_fake_script(&fake, "ok,ok,ok"), 0);
  drive(l, &t, tp, &k); /* translate */
  assert_int_equal(k.n, 1);
  assert_int_equal(k.c[0].format, KB_FORMAT_KERNELBENCH);
  assert_non_null(strstr(k.c[0].source, "class ModelNew(nn.Module):"));
  assert_non_null(strstr(k.c[0].source, "vsum_ext"));
  char status[32] = "";
  char *prompt = NULL;
  audit_entry(r, "kb:{llm3}:llm:modelsum", 0, status, sizeof status, &prompt);
  assert_string_equal(status, "ok");
  assert_non_null(strstr(prompt, "REFERENCE SOURCE TEXT"));
  assert_non_null(strstr(prompt, "ModelNew"));
  assert_non_null(strstr(prompt, "torch.utils.cpp_extension.load_inline"));
  assert_non_null(strstr(prompt, "Same constructor arguments as `Model`"));
  assert_null(strstr(prompt, "kb_forward"));
  kb_free(prompt);
  /* timed: the next requests mutate it; its result carries hardware metrics, which the
   * mutate prompt shows (gen_llm.c, profile_of) */
  kbg_result(&pop, &k.c[0], 2, 50, KB_STATUS_OK);
  struct kb_result hw;
  kb_result_init(&hw);
  snprintf(hw.task, sizeof hw.task, "modelsum");
  snprintf(hw.candidate, sizeof hw.candidate, "%s", k.c[0].id);
  hw.tier = 2;
  hw.status = KB_STATUS_OK;
  hw.dram_pct = 83.0;
  hw.sm_pct = 41.0;
  hw.occupancy_pct = 88.0;
  assert_int_equal(kb__gen_llm_observe(l, &hw, &k.c[0]), KB_OK);
  kb_result_release(&hw);
  tp = kb__population_task(&pop, "modelsum");
  drive(l, &t, tp, &k); /* mutate: answer b defines no ModelNew */
  assert_int_equal(k.n, 1);
  struct kb__gen_llm_stats st;
  kb__gen_llm_stats(l, &st);
  assert_int_equal(st.no_code, 1);
  audit_entry(r, "kb:{llm3}:llm:modelsum", 1, status, sizeof status, &prompt);
  assert_string_equal(status, "no_code");
  assert_non_null(strstr(prompt, "Current solution"));
  assert_non_null(strstr(prompt, "vsum_ext")); /* the parent's source */
  assert_non_null(strstr(prompt, "DRAM throughput: 83% of peak"));
  assert_non_null(strstr(prompt, "SM throughput: 41% of peak"));
  assert_non_null(strstr(prompt, "achieved occupancy: 88%"));
  assert_non_null(strstr(prompt, "memory-bound"));
  kb_free(prompt);
  drive(l, &t, tp, &k); /* mutate again: answer c */
  assert_int_equal(k.n, 2);
  assert_int_equal(k.c[1].format, KB_FORMAT_KERNELBENCH);
  assert_string_equal(k.c[1].name, "llm-mutate-3");
  assert_string_equal(k.c[1].parents[0], k.c[0].id);
  assert_non_null(strstr(k.c[1].source, "vsum4_ext"));
  /* the id covers the format: the same text as a native candidate has another id */
  char native[KB_CAND_ID_LEN + 1];
  assert_int_equal(kb_candidate_id("modelsum", k.c[1].source, "", "", native, &err), KB_OK);
  assert_string_not_equal(native, k.c[1].id);
  for (int i = 0; i < k.n; i++)
    kb_candidate_release(&k.c[i]);
  kb__gen_llm_free(l);
  kb__population_release(&pop);
  kb_redis_free(r);
}

static int setup(void **state) {
  (void)state;
  const char *args[] = {"--key", "sk-test", "--retry-after", "0", NULL};
  if (kbt_redis_start(&server))
    return -1;
  return kbt_fake_start(&fake, python, script, args);
}

static int teardown(void **state) {
  (void)state;
  kbt_fake_stop(&fake);
  kbt_redis_destroy(&server);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_gen_llm PYTHON FAKE_LLM_PY\n");
    return 2;
  }
  python = argv[1];
  script = argv[2];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tokens_exact_after_failures),
      cmocka_unit_test(test_unreadable_usage_never_undercharged),
      cmocka_unit_test(test_open_charges_voided_at_start),
      cmocka_unit_test(test_kernelbench_answers),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
