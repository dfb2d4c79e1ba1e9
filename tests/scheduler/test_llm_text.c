/* The llm generator's text handling, no network: code extraction, prompt building and
 * diagnoses, request bodies and reply parsing of both APIs, retry delays, Retry-After, and the
 * key file rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/error.h"
#include "kb/task.h"
#include "llm_api.h"
#include "llm_client.h"
#include "llm_extract.h"
#include "llm_key.h"
#include "llm_prompt.h"

#define FWD "int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *s)"

static char *extract_ok(const char *text) {
  char *code = NULL;
  struct kb_error err = {0};
  int rc = kb__llm_extract_code(text, &code, &err);
  if (rc != KB_OK)
    fail_msg("extract: %s", err.msg);
  return code;
}

static void test_extract_picks_largest_defining_block(void **state) {
  (void)state;
  const char *text = "Here you go.\n\n```python\n" FWD " {\n  return 0;\n}\n```\n"
                     "first try:\n```c\n" FWD " { return 0; }\n```\n"
                     "and the real one:\n```cuda\n#include <stdint.h>\n" FWD "\n{\n"
                     "  /* long body */\n  return 0;\n}\n```\n"
                     "helper only:\n```cpp\nstatic int helper(void) { return 1; }\n"
                     "static int padding_padding_padding_padding_padding_padding(void);\n```\n";
  char *code = extract_ok(text);
  assert_non_null(strstr(code, "long body"));
  assert_null(strstr(code, "```"));
  assert_int_equal(code[strlen(code) - 1], '\n');
  kb_free(code);
}

static void test_extract_last_of_equal_and_bare_fence(void **state) {
  (void)state;
  char *code = extract_ok("```\n" FWD " { return 1; }\n```\ntext\n~~~c\n" FWD " { return 2; }\n~~~\n");
  assert_non_null(strstr(code, "return 2"));
  kb_free(code);
}

static void test_extract_failures(void **state) {
  (void)state;
  const char *cases[] = {
      "no code at all, just words",
      "```c\nint helper(void) { return 0; }\n```\n",                 /* no kb_forward */
      "```c\n" FWD ";\n```\n",                                        /* declaration only */
      "```c\n" FWD " {\n  return 0;\n",                               /* truncated block */
      "```python\n" FWD " { return 0; }\n```\n",                      /* other language */
      "```c\nint my_kb_forward_x(int a) { return a; }\n```\n",        /* not the name */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *code = NULL;
    struct kb_error err = {0};
    int rc = kb__llm_extract_code(cases[i], &code, &err);
    if (rc != KB_ENOTFOUND)
      fail_msg("case %zu: got %d (%s), want KB_ENOTFOUND", i, rc, err.msg);
    assert_null(code);
    assert_non_null(strstr(err.msg, "kb_forward"));
  }
  assert_true(kb__llm_defines_forward("int kb_forward /* x */ (int a)\n// c\n{ }"));
  assert_false(kb__llm_defines_forward("int kb_forward(int a);"));
}

static void make_task(struct kb_task *t, int backend) {
  memset(t, 0, sizeof *t);
  snprintf(t->id, sizeof t->id, "sum");
  t->name = "sum of a vector";
  t->backend = backend;
  static struct kb_tensor_spec in[1], out[1]; /* never released: the task is not either */
  memset(in, 0, sizeof in);
  memset(out, 0, sizeof out);
  t->inputs = in;
  t->outputs = out;
  t->n_inputs = 1;
  snprintf(t->inputs[0].name, sizeof t->inputs[0].name, "x");
  t->inputs[0].dtype = KB_F32;
  t->inputs[0].ndim = 1;
  t->inputs[0].shape[0] = 1 << 20;
  t->n_outputs = 1;
  snprintf(t->outputs[0].name, sizeof t->outputs[0].name, "total");
  t->outputs[0].dtype = KB_F32;
  t->outputs[0].ndim = 1;
  t->outputs[0].shape[0] = 1;
  t->atol = 1;
  t->rtol = 1e-4;
}

static void test_prompts_every_kind(void **state) {
  (void)state;
  struct kb_task t;
  make_task(&t, KB_BACKEND_HOST);
  struct kb_prompt_vars v = {.task = &t, .reference = "REFERENCE_TEXT", .parent_name = "naive",
                             .parent_source = "PARENT_SOURCE", .parent_knobs = "-DACC=8",
                             .diagnosis = "memory-bound: DIAG", .metrics = "- median: 1 us",
                             .parent2_name = "other", .parent2_source = "SECOND_SOURCE",
                             .metrics2 = "median 2 us", .failed_tier = "smoke",
                             .failure_status = "wrong_output", .failure = "FAILURE_REASON"};
  const char *want[KB_PROMPT_KINDS][2] = {{"REFERENCE_TEXT", "Task sum:"},
                                          {"PARENT_SOURCE", "memory-bound: DIAG"},
                                          {"SECOND_SOURCE", "median 2 us"},
                                          {"FAILURE_REASON", "wrong_output"}};
  for (int k = 0; k < KB_PROMPT_KINDS; k++) {
    char *sys = NULL, *user = NULL;
    struct kb_error err = {0};
    if (kb__prompt_render(k, &v, &sys, &user, &err))
      fail_msg("%s: %s", kb__prompt_kind_name(k), err.msg);
    assert_non_null(strstr(sys, "kb_forward"));
    assert_non_null(strstr(sys, "KB_ABI_VERSION")); /* the ABI header is embedded */
    assert_non_null(strstr(sys, "C11"));
    assert_null(strstr(sys, "{{"));
    assert_null(strstr(user, "{{"));
    for (int w = 0; w < 2; w++)
      if (strstr(user, want[k][w]) == NULL)
        fail_msg("%s prompt lacks \"%s\":\n%s", kb__prompt_kind_name(k), want[k][w], user);
    assert_non_null(strstr(user, "- input x: f32 [1048576]"));
    assert_non_null(strstr(user, "- output total: f32 [1]"));
    if (k == KB_PROMPT_MUTATE)
      assert_non_null(strstr(user, "(built with -DACC=8)"));
    kb_free(sys);
    kb_free(user);
  }
  /* a placeholder the kind needs but was not given is an error, not an empty hole */
  struct kb_prompt_vars none = {.task = &t};
  char *sys = NULL, *user = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__prompt_render(KB_PROMPT_REPAIR, &none, &sys, &user, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "{{"));
  assert_null(sys);
  /* CUDA wording */
  make_task(&t, KB_BACKEND_CUDA);
  kb_error_clear(&err);
  assert_int_equal(kb__prompt_render(KB_PROMPT_TRANSLATE, &v, &sys, &user, &err), KB_OK);
  assert_non_null(strstr(sys, "CUDA C++"));
  assert_non_null(strstr(sys, "```cuda"));
  kb_free(sys);
  kb_free(user);
}

static void diagnose(const struct kb_profile *p, const char *want) {
  char diag[256], metrics[1024];
  kb__profile_diagnose(p, diag, sizeof diag, metrics, sizeof metrics);
  if (strncmp(diag, want, strlen(want)) != 0)
    fail_msg("diagnosis \"%s\", want \"%s...\"; metrics:\n%s", diag, want, metrics);
}

static void test_diagnoses(void **state) {
  (void)state;
  struct kb_profile p;
  kb__profile_init(&p);
  diagnose(&p, "unknown");
  /* 16 MiB in 1 ms on the host: 16.8 GB/s of a nominal 20 */
  p.bytes = 16777216;
  p.median_us = 1000;
  diagnose(&p, "memory-bound");
  p.median_us = 10000; /* 1.7 GB/s: far below peak */
  diagnose(&p, "compute-bound");
  p.bytes = 64;
  p.median_us = 2;
  diagnose(&p, "latency-bound");
  p.spills = 16;
  diagnose(&p, "occupancy-bound");
  /* CUPTI metrics win when present */
  p.spills = 0;
  p.dram_util = 0.8;
  p.sm_util = 0.3;
  diagnose(&p, "memory-bound");
  p.dram_util = 0.2;
  p.sm_util = 0.9;
  diagnose(&p, "compute-bound");
  p.sm_util = 0.3;
  p.occupancy = 0.1;
  diagnose(&p, "occupancy-bound");
  p.occupancy = 0.7;
  diagnose(&p, "latency-bound");
  char diag[256], metrics[1024];
  kb__profile_diagnose(&p, diag, sizeof diag, metrics, sizeof metrics);
  assert_non_null(strstr(metrics, "- median time: 2.000 us"));
  assert_non_null(strstr(metrics, "- DRAM throughput: 20% of peak"));
}

static void test_request_bodies(void **state) {
  (void)state;
  char *body = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__llm_request_body(KB_LLM_OPENAI, "m1", "SYS", "USER \"q\"", 100, 0.5, &body,
                                       &err),
                   KB_OK);
  assert_non_null(strstr(body, "\"messages\":[{\"role\":\"system\",\"content\":\"SYS\"},"
                               "{\"role\":\"user\",\"content\":\"USER \\\"q\\\"\"}]"));
  assert_non_null(strstr(body, "\"max_tokens\":100"));
  kb_free(body);
  assert_int_equal(kb__llm_request_body(KB_LLM_ANTHROPIC, "m2", "SYS", "USER", 7, 0, &body, &err),
                   KB_OK);
  assert_non_null(strstr(body, "\"system\":\"SYS\""));
  assert_non_null(strstr(body, "\"messages\":[{\"role\":\"user\",\"content\":\"USER\"}]"));
  kb_free(body);
  char h[128];
  assert_int_equal(kb__llm_auth_header(KB_LLM_OPENAI, "sk-1", h, sizeof h, &err), KB_OK);
  assert_string_equal(h, "Authorization: Bearer sk-1");
  assert_int_equal(kb__llm_auth_header(KB_LLM_ANTHROPIC, "sk-2", h, sizeof h, &err), KB_OK);
  assert_string_equal(h, "x-api-key: sk-2");
  assert_int_equal(kb__llm_auth_header(KB_LLM_ANTHROPIC, "sk\r\nX: y", h, sizeof h, &err),
                   KB_EINVAL);
}

static int parse(int api, const char *body, struct kb_llm_reply *r) {
  struct kb_error err = {0};
  return kb__llm_parse_reply(api, body, strlen(body), r, &err);
}

static void test_reply_parsing(void **state) {
  (void)state;
  struct kb_llm_reply r;
  assert_int_equal(parse(KB_LLM_OPENAI,
                         "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},"
                         "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":12,"
                         "\"completion_tokens\":5}}",
                         &r),
                   KB_OK);
  assert_string_equal(r.text, "hi");
  assert_int_equal(r.tokens_in, 12);
  assert_int_equal(r.tokens_out, 5);
  assert_int_equal(r.truncated, 1);
  kb__llm_reply_release(&r);
  assert_int_equal(parse(KB_LLM_ANTHROPIC,
                         "{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"tool_use\"},"
                         "{\"type\":\"text\",\"text\":\"b\"}],\"stop_reason\":\"end_turn\","
                         "\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}",
                         &r),
                   KB_OK);
  assert_string_equal(r.text, "ab");
  assert_int_equal(r.tokens_in + r.tokens_out, 7);
  kb__llm_reply_release(&r);
  /* truncated json, an error object (usage still read), no text */
  assert_int_equal(parse(KB_LLM_OPENAI, "{\"choices\":[{\"mess", &r), KB_EPARSE);
  assert_int_equal(parse(KB_LLM_ANTHROPIC,
                         "{\"error\":{\"message\":\"overloaded\"},\"usage\":{\"input_tokens\":9}}",
                         &r),
                   KB_EPARSE);
  assert_int_equal(r.tokens_in, 9);
  assert_int_equal(r.unreported, 0);
  assert_null(r.text);
  assert_int_equal(parse(KB_LLM_OPENAI, "{\"choices\":[{\"mess", &r), KB_EPARSE);
  assert_int_equal(r.unreported, 1); /* billed all the same */
  /* an answer whose usage cannot be read: counts 0, unreported (charged its reservation) */
  const char *unusable[] = {"", ",\"usage\":null", ",\"usage\":{\"prompt_tokens\":7}",
                            ",\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":3}",
                            ",\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":\"3\"}",
                            ",\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0}",
                            ",\"usage\":{\"prompt_tokens\":7.5,\"completion_tokens\":3}"};
  for (size_t i = 0; i < sizeof unusable / sizeof unusable[0]; i++) {
    char body[300];
    snprintf(body, sizeof body, "{\"choices\":[{\"message\":{\"content\":\"hi\"}}]%s}",
             unusable[i]);
    assert_int_equal(parse(KB_LLM_OPENAI, body, &r), KB_OK);
    if (r.unreported != 1 || r.tokens_in != 0 || r.tokens_out != 0)
      fail_msg("%s: unreported %d, %lld + %lld tokens", body, r.unreported,
               (long long)r.tokens_in, (long long)r.tokens_out);
    kb__llm_reply_release(&r);
  }
  /* counts beyond any request are capped, so their sum cannot overflow */
  assert_int_equal(parse(KB_LLM_ANTHROPIC,
                         "{\"content\":\"x\",\"usage\":{\"input_tokens\":9223372036854775807,"
                         "\"output_tokens\":9223372036854775807}}",
                         &r),
                   KB_OK);
  assert_int_equal(r.tokens_in, KB_LLM_TOKENS_MAX);
  assert_int_equal(r.tokens_out, KB_LLM_TOKENS_MAX);
  assert_int_equal(r.unreported, 0);
  kb__llm_reply_release(&r);
  assert_int_equal(kb__llm_tokens_add(KB_LLM_TOKENS_MAX, KB_LLM_TOKENS_MAX), KB_LLM_TOKENS_MAX);
  assert_int_equal(parse(KB_LLM_OPENAI, "{\"choices\":[]}", &r), KB_EPARSE);
  assert_int_equal(parse(KB_LLM_OPENAI, "[1,2]", &r), KB_EPARSE);
}

static void test_retry_delays(void **state) {
  (void)state;
  assert_float_equal(kb__llm_retry_delay(1, 1, 60, 1.0, -1), 1, 1e-9);
  assert_float_equal(kb__llm_retry_delay(3, 1, 60, 1.0, -1), 4, 1e-9);
  assert_float_equal(kb__llm_retry_delay(10, 1, 60, 1.0, -1), 60, 1e-9);  /* capped */
  assert_float_equal(kb__llm_retry_delay(10, 1, 60, 0.5, -1), 30, 1e-9);  /* jitter */
  assert_float_equal(kb__llm_retry_delay(1, 1, 60, 0.5, 7), 7, 1e-9);     /* Retry-After wins */
  assert_float_equal(kb__llm_retry_delay(1, 1, 60, 1, 5000), 600, 1e-9);  /* ... up to 600 s */
  assert_float_equal(kb__llm_parse_retry_after(" 3\r\n", 0), 3, 1e-9);
  /* an HTTP date 10 s after "now" */
  assert_float_equal(kb__llm_parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", 1445412480), 10,
                     1e-9);
  assert_true(kb__llm_parse_retry_after("soon", 0) < 0);
}

static void test_key_rules(void **state) {
  (void)state;
  char dir[] = "/tmp/kb-key-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[128];
  snprintf(path, sizeof path, "%s/key", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("  sk-file-key  \nsecond line\n", f);
  fclose(f);
  char key[64];
  struct kb_error err = {0};
  chmod(path, 0644);
  assert_int_equal(kb__llm_key_read(NULL, path, key, sizeof key, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "readable by group or others (mode 0644)"));
  assert_string_equal(key, "");
  chmod(path, 0600);
  kb_error_clear(&err);
  assert_int_equal(kb__llm_key_read(NULL, path, key, sizeof key, &err), KB_OK);
  assert_string_equal(key, "sk-file-key");
  chmod(path, 0640);
  assert_int_equal(kb__llm_key_read(NULL, path, key, sizeof key, &err), KB_EINVAL);
  unlink(path);
  kb_error_clear(&err);
  assert_int_equal(kb__llm_key_read(NULL, path, key, sizeof key, &err), KB_ENOTFOUND);
  rmdir(dir);
  setenv("KB_TEST_LLM_KEY", "sk-env", 1);
  assert_int_equal(kb__llm_key_read("KB_TEST_LLM_KEY", NULL, key, sizeof key, &err), KB_OK);
  assert_string_equal(key, "sk-env");
  unsetenv("KB_TEST_LLM_KEY");
  kb_error_clear(&err);
  assert_int_equal(kb__llm_key_read("KB_TEST_LLM_KEY", NULL, key, sizeof key, &err),
                   KB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "KB_TEST_LLM_KEY is not set"));
}

/* KernelBench answers: the python block that defines ModelNew, never a C block or a python
 * block without it */
static void test_extract_python_modelnew(void **state) {
  (void)state;
  const char *text = "Plan.\n```c\nint kb_forward(const kb_tensor *in, int n, kb_tensor *o, "
                     "int m, void *s) { return 0; }\n```\n"
                     "```python\nimport torch\nclass Helper:\n    pass\n```\n"
                     "```python\nimport torch\nclass ModelNew(nn.Module):\n    pass\n```\n"
                     "```text\nclass ModelNew(nn.Module): a longer block, but not python\n```\n";
  char *code = NULL;
  struct kb_error err = {0};
  if (kb__llm_extract_python(text, &code, &err))
    fail_msg("%s", err.msg);
  assert_string_equal(code, "import torch\nclass ModelNew(nn.Module):\n    pass\n");
  kb_free(code);
  const char *bad[] = {
      "```python\nclass Model(nn.Module):\n    pass\n```\n",        /* no ModelNew */
      "```python\nclass ModelNewer(nn.Module):\n    pass\n```\n",    /* another name */
      "```python\n# class ModelNew(nn.Module)\n```\n",                /* a comment */
      "```c\nclass ModelNew(nn.Module):\n```\n",                      /* not python */
      "```python\nclass ModelNew(nn.Module):\n    pass\n",             /* unterminated */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kb_error_clear(&err);
    code = NULL;
    assert_int_equal(kb__llm_extract_python(bad[i], &code, &err), KB_ENOTFOUND);
    assert_null(code);
    assert_non_null(strstr(err.msg, "class ModelNew"));
  }
  /* the native extractor never takes a python block */
  kb_error_clear(&err);
  assert_int_equal(kb__llm_extract_code("```python\nint kb_forward(void) { return 0; }\n```\n",
                                        &code, &err),
                   KB_ENOTFOUND);
  assert_true(kb_source_defines_modelnew("class ModelNew:\n"));
  assert_false(kb_source_defines_modelnew("  class ModelNew(nn.Module):\n"));
}

/* KernelBench prompts: every kind shows the reference Model and asks for a ModelNew built with
 * load_inline in one python block; nothing of the C ABI */
static void test_prompts_kernelbench(void **state) {
  (void)state;
  struct kb_task t;
  make_task(&t, KB_BACKEND_CUDA);
  struct kb_prompt_vars v = {.task = &t, .reference = "class Model(nn.Module): REFERENCE_TEXT",
                             .parent_name = "naive", .parent_source = "PARENT_SOURCE",
                             .parent_knobs = "", .diagnosis = "memory-bound: DIAG",
                             .metrics = "- median: 1 us", .parent2_name = "other",
                             .parent2_source = "SECOND_SOURCE", .metrics2 = "median 2 us",
                             .failed_tier = "smoke", .failure_status = "compile_error",
                             .failure = "FAILURE_REASON", .format = KB_FORMAT_KERNELBENCH};
  const char *want[KB_PROMPT_KINDS] = {"Same constructor arguments as `Model`",
                                       "PARENT_SOURCE", "SECOND_SOURCE", "FAILURE_REASON"};
  for (int backend = 0; backend < 2; backend++) {
    make_task(&t, backend ? KB_BACKEND_CUDA : KB_BACKEND_HOST);
    for (int k = 0; k < KB_PROMPT_KINDS; k++) {
      char *sys = NULL, *user = NULL;
      struct kb_error err = {0};
      if (kb__prompt_render(k, &v, &sys, &user, &err))
        fail_msg("%s: %s", kb__prompt_kind_name(k), err.msg);
      assert_non_null(strstr(sys, "class ModelNew(nn.Module)"));
      assert_non_null(strstr(sys, "torch.utils.cpp_extension.load_inline"));
      assert_non_null(strstr(sys, "```python"));
      assert_non_null(strstr(sys, backend ? "cuda_sources=add_src" : "cpp_sources=add_src"));
      assert_null(strstr(sys, "kb_forward"));
      assert_null(strstr(sys, "{{"));
      assert_null(strstr(user, "{{"));
      assert_null(strstr(user, "kb_forward"));
      if (strstr(user, "REFERENCE_TEXT") == NULL || strstr(user, want[k]) == NULL)
        fail_msg("%s prompt lacks the reference or \"%s\":\n%s", kb__prompt_kind_name(k),
                 want[k], user);
      kb_free(sys);
      kb_free(user);
    }
  }
  /* an unknown format is refused */
  v.format = 7;
  char *sys = NULL, *user = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__prompt_render(KB_PROMPT_TRANSLATE, &v, &sys, &user, &err), KB_EINVAL);
  assert_null(sys);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_extract_picks_largest_defining_block),
      cmocka_unit_test(test_extract_last_of_equal_and_bare_fence),
      cmocka_unit_test(test_extract_failures),
      cmocka_unit_test(test_prompts_every_kind),
      cmocka_unit_test(test_extract_python_modelnew),
      cmocka_unit_test(test_prompts_kernelbench),
      cmocka_unit_test(test_diagnoses),
      cmocka_unit_test(test_request_bodies),
      cmocka_unit_test(test_reply_parsing),
      cmocka_unit_test(test_retry_delays),
      cmocka_unit_test(test_key_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
