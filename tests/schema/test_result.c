/* kb/result.h: status names, the unknown values, the JSON form both ways, strictness. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/result.h"

static const char cand[] = "45bcdf048fe42e4066dc64905cdb93d2bd5ed7e7b15b81b246a757133c805d04";

/* A result with every field known. */
static void full_result(struct kb_result *r) {
  kb_result_init(r);
  snprintf(r->campaign, sizeof r->campaign, "demo");
  snprintf(r->task, sizeof r->task, "sum");
  snprintf(r->candidate, sizeof r->candidate, "%s", cand);
  r->tier = 3;
  snprintf(r->tier_name, sizeof r->tier_name, "full");
  r->attempt = 2;
  snprintf(r->charge_id, sizeof r->charge_id, "item:%.16s:3#2", cand);
  snprintf(r->runner, sizeof r->runner, "node7:4242");
  r->backend = KB_BACKEND_CUDA;
  snprintf(r->device, sizeof r->device, "NVIDIA H200");
  r->status = KB_STATUS_OK;
  r->compile_s = 1.5;
  r->compile_cached = 1;
  r->registers = 32;
  r->spills = 0;
  r->shared_bytes = 4096;
  r->compile_log = kb_strdup("ptxas info: used 32 registers\nwarning: \"x\" unused");
  r->sets_checked = 3;
  r->max_abs_err = 1.25e-6;
  r->max_rel_err = 0;
  r->timing = (struct kb_timing){.samples = 120,
                                 .warmup = 3,
                                 .median_us = 12.5,
                                 .p10_us = 12.0,
                                 .p90_us = 13.75,
                                 .mean_us = 12.625,
                                 .min_us = 11.875,
                                 .noise = 0.0078125};
  r->cost_ms = 1000;
  r->started = 1764460800.5;
  r->finished = 1764460801.75;
}

static void test_status_names(void **state) {
  (void)state;
  static const char *const names[] = {"ok",      "compile_error", "wrong_output", "crash",
                                      "timeout", "rejected",      "infra_error"};
  assert_int_equal(KB_STATUS_COUNT, 7);
  for (int i = 0; i < KB_STATUS_COUNT; i++) {
    assert_string_equal(kb_status_name(i), names[i]);
    assert_int_equal(kb_status_from_name(names[i]), i);
  }
  assert_string_equal(kb_status_name(-1), "unknown");
  assert_string_equal(kb_status_name(KB_STATUS_COUNT), "unknown");
  assert_int_equal(kb_status_from_name("fine"), -1);
  assert_int_equal(kb_status_from_name("unknown"), -1);
}

static void test_init(void **state) {
  (void)state;
  struct kb_result r;
  memset(&r, 0x5A, sizeof r);
  kb_result_init(&r);
  assert_string_equal(r.campaign, "");
  assert_string_equal(r.reason, "");
  assert_int_equal(r.tier, -1);
  assert_int_equal(r.attempt, -1);
  assert_int_equal(r.status, -1);
  assert_int_equal(r.registers, -1);
  assert_int_equal(r.spills, -1);
  assert_int_equal(r.shared_bytes, -1);
  assert_null(r.compile_log);
  assert_true(isnan(r.compile_s) && isnan(r.max_abs_err) && isnan(r.max_rel_err));
  assert_true(isnan(r.timing.median_us) && isnan(r.timing.noise));
  assert_int_equal(r.timing.samples, 0);
  assert_int_equal(r.cost_ms, 0);
  assert_true(isnan(r.started) && isnan(r.finished));
  kb_result_release(&r);
  kb_result_release(NULL);
}

static void assert_same(const struct kb_result *a, const struct kb_result *b) {
  assert_string_equal(a->campaign, b->campaign);
  assert_string_equal(a->task, b->task);
  assert_string_equal(a->candidate, b->candidate);
  assert_int_equal(a->tier, b->tier);
  assert_string_equal(a->tier_name, b->tier_name);
  assert_int_equal(a->attempt, b->attempt);
  assert_string_equal(a->charge_id, b->charge_id);
  assert_string_equal(a->runner, b->runner);
  assert_int_equal(a->backend, b->backend);
  assert_string_equal(a->device, b->device);
  assert_int_equal(a->status, b->status);
  assert_string_equal(a->reason, b->reason);
  assert_int_equal(a->compile_cached, b->compile_cached);
  assert_int_equal(a->registers, b->registers);
  assert_int_equal(a->spills, b->spills);
  assert_int_equal(a->shared_bytes, b->shared_bytes);
  if (a->compile_log == NULL || b->compile_log == NULL)
    assert_ptr_equal(a->compile_log, b->compile_log);
  else
    assert_string_equal(a->compile_log, b->compile_log);
  assert_int_equal(a->sets_checked, b->sets_checked);
  assert_int_equal(a->timing.samples, b->timing.samples);
  assert_int_equal(a->timing.warmup, b->timing.warmup);
  assert_int_equal(a->cost_ms, b->cost_ms);
  const double x[] = {a->compile_s,     a->max_abs_err,    a->max_rel_err,    a->timing.median_us,
                      a->timing.p10_us, a->timing.p90_us,  a->timing.mean_us, a->timing.min_us,
                      a->timing.noise,  a->started,        a->finished};
  const double y[] = {b->compile_s,     b->max_abs_err,    b->max_rel_err,    b->timing.median_us,
                      b->timing.p10_us, b->timing.p90_us,  b->timing.mean_us, b->timing.min_us,
                      b->timing.noise,  b->started,        b->finished};
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
    if (!(x[i] == y[i] || (isnan(x[i]) && isnan(y[i]))))
      fail_msg("double %zu: %.17g != %.17g", i, x[i], y[i]);
}

/* to_json, from_json, to_json: the same struct and the same text. Returns the text (new). */
static char *round_trip(const struct kb_result *r) {
  struct kb_error err = {0};
  char *text = NULL;
  if (kb_result_to_json(r, &text, &err) != KB_OK)
    fail_msg("to_json: %s", err.msg);
  assert_null(strchr(text, '\n'));
  struct kb_result back;
  if (kb_result_from_json(text, "stream", &back, &err) != KB_OK)
    fail_msg("from_json: %s\n%s", err.msg, text);
  assert_same(r, &back);
  char *again = NULL;
  assert_int_equal(kb_result_to_json(&back, &again, &err), KB_OK);
  assert_string_equal(text, again);
  kb_free(again);
  kb_result_release(&back);
  return text;
}

static void test_round_trip_full(void **state) {
  (void)state;
  struct kb_result r;
  full_result(&r);
  char *text = round_trip(&r);
  assert_non_null(strstr(text, "{\"schema\":\"kernelbrain.result/1\",\"campaign\":\"demo\""));
  assert_non_null(strstr(text, "\"timing\":{\"median_us\":12.5,"));
  kb_free(text);
  kb_result_release(&r);
}

static void test_unknowns_are_omitted(void **state) {
  (void)state;
  struct kb_result r;
  full_result(&r);
  r.status = KB_STATUS_COMPILE_ERROR;
  snprintf(r.reason, sizeof r.reason, "nvcc exited with 1");
  r.compile_s = NAN;
  r.registers = -1;
  r.spills = -1;
  r.shared_bytes = -1;
  r.compile_cached = 0;
  r.sets_checked = 0;
  r.max_abs_err = NAN;
  r.max_rel_err = INFINITY; /* JSON has no infinity either */
  r.timing.noise = NAN;
  r.started = NAN;
  struct kb_error err = {0};
  char *text = NULL;
  assert_int_equal(kb_result_to_json(&r, &text, &err), KB_OK);
  assert_null(strstr(text, "max_rel_err"));
  kb_free(text);
  r.max_rel_err = NAN;
  text = round_trip(&r);
  assert_null(strstr(text, ":nan"));
  assert_null(strstr(text, ":NaN"));
  assert_null(strstr(text, ":inf"));
  assert_null(strstr(text, ":Infinity"));
  assert_null(strstr(text, "\"registers\""));
  assert_null(strstr(text, "\"seconds\""));
  assert_null(strstr(text, "\"started\""));
  assert_null(strstr(text, "\"noise\""));
  assert_non_null(strstr(text, "\"compile\":{\"cached\":false,\"log\":"));
  assert_null(strstr(text, "\"check\""));
  kb_free(text);
  kb_result_release(&r);

  /* nothing known about compiling, checking or timing: those objects are absent */
  full_result(&r);
  kb_free(r.compile_log);
  r.compile_log = NULL;
  r.compile_s = NAN;
  r.compile_cached = 0;
  r.registers = r.spills = r.shared_bytes = -1;
  r.sets_checked = 0;
  r.max_abs_err = r.max_rel_err = NAN;
  r.timing = (struct kb_timing){0, 0, NAN, NAN, NAN, NAN, NAN, NAN};
  r.status = KB_STATUS_INFRA_ERROR;
  text = round_trip(&r);
  assert_null(strstr(text, "compile"));
  assert_null(strstr(text, "check"));
  assert_null(strstr(text, "timing"));
  kb_free(text);
}

static void test_free_text(void **state) {
  (void)state;
  struct kb_result r;
  full_result(&r);
  r.status = KB_STATUS_CRASH;
  /* a runner's snprintf cut a character in half, and the compiler printed Latin-1 */
  memset(r.reason, 'x', sizeof r.reason);
  memcpy(r.reason + 252, "\xc3\xa9\xc3", 3);
  r.reason[255] = '\0';
  kb_free(r.compile_log);
  r.compile_log = kb_strdup("caf\xe9");
  struct kb_error err = {0};
  char *text = NULL;
  assert_int_equal(kb_result_to_json(&r, &text, &err), KB_OK);
  struct kb_result back;
  assert_int_equal(kb_result_from_json(text, "s", &back, &err), KB_OK);
  assert_string_equal(back.compile_log, "caf?");
  assert_int_equal(strlen(back.reason), 255);
  assert_memory_equal(back.reason + 252, "\xc3\xa9?", 3);
  kb_result_release(&back);
  kb_free(text);

  /* a longer reason from elsewhere is cut to 255 bytes on a character boundary */
  char *good = NULL;
  assert_int_equal(kb_result_to_json(&r, &good, &err), KB_OK);
  json_t *o = json_loads(good, 0, NULL);
  kb_free(good);
  char longer[400];
  memset(longer, 'y', 254);
  memcpy(longer + 254, "\xc3\xa9zzz", 6);
  longer[260] = '\0';
  json_object_set_new(o, "reason", json_string(longer));
  char *edited = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  assert_int_equal(kb_result_from_json(edited, "s", &back, &err), KB_OK);
  assert_int_equal(strlen(back.reason), 254);
  free(edited);
  kb_result_release(&back);
  kb_result_release(&r);
}

static void test_encode_refuses_unset(void **state) {
  (void)state;
  struct kb_result r;
  struct kb_error err = {0};
  char *text = NULL;
  kb_result_init(&r);
  assert_int_equal(kb_result_to_json(&r, &text, &err), KB_EINVAL);
  assert_null(text);
  assert_non_null(strstr(err.msg, "cannot encode result"));
  full_result(&r);
  r.status = -1;
  kb_error_clear(&err);
  assert_int_equal(kb_result_to_json(&r, &text, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "\"status\" must be one of"));
  r.status = KB_STATUS_OK;
  r.tier = 8;
  kb_error_clear(&err);
  assert_int_equal(kb_result_to_json(&r, &text, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "\"tier\" must be an integer between 0 and 7"));
  kb_result_release(&r);
}

/* Sets `key` ("a" or "a.b") of the encoded full result to the JSON `value` (NULL deletes it)
 * and expects from_json to fail with `want` in its message. */
static void expect_reject(const char *key, const char *value, const char *want) {
  struct kb_result r;
  struct kb_error err = {0};
  full_result(&r);
  char *text = NULL;
  assert_int_equal(kb_result_to_json(&r, &text, &err), KB_OK);
  kb_result_release(&r);
  json_t *o = json_loads(text, 0, NULL);
  kb_free(text);
  char parent[32] = "";
  const char *leaf = key;
  const char *dot = strchr(key, '.');
  json_t *obj = o;
  if (dot != NULL) {
    snprintf(parent, sizeof parent, "%.*s", (int)(dot - key), key);
    obj = json_object_get(o, parent);
    leaf = dot + 1;
  }
  if (value == NULL)
    json_object_del(obj, leaf);
  else
    json_object_set_new(obj, leaf, json_loads(value, JSON_DECODE_ANY, NULL));
  char *edited = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  int rc = kb_result_from_json(edited, "stream", &r, &err);
  if (rc != KB_EPARSE || strstr(err.msg, want) == NULL)
    fail_msg("%s=%s: rc %d \"%s\", want \"%s\"", key, value ? value : "(deleted)", rc, err.msg,
             want);
  assert_null(r.compile_log);
  free(edited);
}

/* One field of a good result set to a bad value (NULL: deleted), and the message it must get. */
struct reject {
  const char *key;   /* field path, "timing.samples" */
  const char *value; /* JSON text of the new value, or NULL to delete the field */
  const char *want;  /* part of the expected KB_EPARSE message */
};

static void test_decode_rejects(void **state) {
  (void)state;
  static const struct reject cases[] = {
      {"status", "\"fine\"", "stream:1:"},
      {"status", "\"fine\"", "\"status\" must be one of \"ok\", \"compile_error\""},
      {"extra", "1", "unknown field \"extra\""},
      {"timing.extra", "1", "unknown field \"timing.extra\""},
      {"cost_ms", NULL, "stream:1:1: \"cost_ms\" is required"},
      {"cost_ms", "-1", "\"cost_ms\" must be a non-negative integer"},
      {"tier", "8", "\"tier\" must be an integer between 0 and 7"},
      {"attempt", "0", "\"attempt\" must be an integer between 1 and 1000"},
      {"campaign", "\"Demo\"", "\"campaign\" must be 1 to 63 characters"},
      {"candidate", "\"abc\"", "\"candidate\" must be 64 lowercase hex digits"},
      {"runner", "\"\"", "\"runner\" must be 1 to 63 printable ascii characters"},
      {"device", "\"tab\\there\"", "\"device\" must be 0 to 63 printable"},
      {"backend", "\"tpu\"", "\"backend\" must be one of \"host\", \"cuda\""},
      {"timing.samples", "0", "\"timing.samples\" must be a positive integer"},
      {"timing.warmup", NULL, "\"timing.warmup\" is required"},
      {"timing.noise", "-0.5", "\"timing.noise\" must be a non-negative number"},
      {"check.sets", NULL, "\"check.sets\" is required"},
      {"check.sets", "33", "\"check.sets\" must be an integer between 0 and 32"},
      {"compile.cached", "1", "\"compile.cached\" must be true or false"},
      {"compile.registers", "-1", "\"compile.registers\" must be a non-negative"},
      {"compile.log", "null", "\"compile.log\" must be a string"},
      {"started", "\"now\"", "\"started\" must be a non-negative number"},
      {"schema", "\"kernelbrain.result/2\"",
       "\"schema\" must be \"kernelbrain.result/1\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect_reject(cases[i].key, cases[i].value, cases[i].want);
  struct kb_result r;
  struct kb_error err = {0};
  assert_int_equal(kb_result_from_json("[]", "stream", &r, &err), KB_EPARSE);
  assert_string_equal(err.msg, "stream:1:1: a result must be a JSON object");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_names),         cmocka_unit_test(test_init),
      cmocka_unit_test(test_round_trip_full),      cmocka_unit_test(test_unknowns_are_omitted),
      cmocka_unit_test(test_free_text),            cmocka_unit_test(test_encode_refuses_unset),
      cmocka_unit_test(test_decode_rejects),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
