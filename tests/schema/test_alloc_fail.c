/* Allocation-failure walks: for n = 0, 1, 2, ... make the allocation after the first n fail and
 * run the function; every run must return KB_ENOMEM (or the input's own error) and free what it
 * took, or succeed with the complete, correct output. Each walk runs a second time with jansson
 * allocating through kb_malloc, so its failures are part of it. Run under valgrind (ctest
 * test_schema_alloc_fail_valgrind) to see leaks on the failure paths.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include <jansson.h>

#include "fixture.h"
#include "kb/alloc.h"
#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/error.h"
#include "kb/result.h"
#include "kb/task.h"

/* One step of a walk: runs the operation; on success checks and frees its output. */
typedef int (*step_fn)(void *arg, struct kb_error *err);

/* Walks `fn` until it gives what it gives without injected failures (success, or for a bad
 * input its own error), then 20 more runs past that point must give the same (an earlier
 * arrival means a failure was swallowed; the step's own checks catch a success with missing
 * parts). Before that, every run must fail with KB_ENOMEM. With `lenient`, any error is
 * accepted before that: jansson reports some of its own allocation failures as syntax errors
 * ("string or '}' expected"), which no caller can tell apart. */
static void walk_once(const char *what, step_fn fn, void *arg, int lenient) {
  struct kb_error want = {0};
  int want_rc = fn(arg, &want);
  long first_ok = -1;
  for (long n = 0; n < 100000; n++) {
    struct kb_error err = {0};
    kb_alloc_fail_after(n);
    int rc = fn(arg, &err);
    kb_alloc_fail_after(-1);
    if (rc == want_rc && strcmp(err.msg, want.msg) == 0) {
      if (first_ok < 0)
        first_ok = n;
      if (n >= first_ok + 20)
        return;
      continue;
    }
    if (rc == KB_OK || err.code != rc || err.msg[0] == '\0')
      fail_msg("%s: failing allocation %ld: returned %d, recorded %d \"%s\"", what, n, rc,
               err.code, err.msg);
    if (lenient)
      continue;
    if (rc != KB_ENOMEM)
      fail_msg("%s: failing allocation %ld gave %s: %s", what, n, kb_err_name(rc), err.msg);
    if (first_ok >= 0)
      fail_msg("%s: allocation %ld failed after %ld gave the final answer", what, n, first_ok);
  }
  fail_msg("%s: never gave the final answer", what);
}

/* Walks `fn` with jansson on the plain allocator (every failure is ours, so must be KB_ENOMEM),
 * then with jansson on kb_malloc too (its failures join the walk). */
static void walk(const char *what, step_fn fn, void *arg) {
  json_set_alloc_funcs(malloc, free);
  walk_once(what, fn, arg, 0);
  /* kb_malloc is malloc and kb_free is free, so switching with live objects is safe */
  json_set_alloc_funcs(kb_malloc, kb_free);
  walk_once(what, fn, arg, 1);
  json_set_alloc_funcs(malloc, free);
}

/* --- results ------------------------------------------------------------------------------ */

static void sample_result(struct kb_result *r) {
  kb_result_init(r);
  snprintf(r->campaign, sizeof r->campaign, "demo");
  snprintf(r->task, sizeof r->task, "sum");
  memset(r->candidate, 'c', 64);
  r->candidate[64] = '\0';
  r->tier = 1;
  snprintf(r->tier_name, sizeof r->tier_name, "smoke");
  r->attempt = 1;
  snprintf(r->charge_id, sizeof r->charge_id, "item#1");
  snprintf(r->runner, sizeof r->runner, "host:1");
  r->backend = KB_BACKEND_HOST;
  snprintf(r->device, sizeof r->device, "cpu");
  r->status = KB_STATUS_WRONG_OUTPUT;
  snprintf(r->reason, sizeof r->reason, "output y[3]: 2.5 vs 2.0");
  r->compile_s = 0.25;
  r->compile_log = kb_strdup("warning: unused variable");
  r->sets_checked = 1;
  r->max_abs_err = 0.5;
  r->timing.samples = 3;
  r->timing.median_us = 10;
  r->cost_ms = 50;
  r->started = 1764460800;
  r->finished = 1764460801;
}

static int step_result_from_json(void *arg, struct kb_error *err) {
  struct kb_result r;
  int rc = kb_result_from_json(arg, "stream", &r, err);
  if (rc)
    return rc;
  assert_string_equal(r.reason, "output y[3]: 2.5 vs 2.0");
  assert_non_null(r.compile_log);
  assert_string_equal(r.compile_log, "warning: unused variable");
  assert_int_equal(r.timing.samples, 3);
  assert_true(r.max_abs_err == 0.5);
  kb_result_release(&r);
  return KB_OK;
}

static int step_result_to_json(void *arg, struct kb_error *err) {
  char *text = NULL;
  int rc = kb_result_to_json(arg, &text, err);
  if (rc)
    return rc;
  assert_non_null(strstr(text, "\"log\":\"warning: unused variable\""));
  kb_free(text);
  return KB_OK;
}

static void test_result(void **state) {
  (void)state;
  struct kb_result r;
  sample_result(&r);
  char *text = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb_result_to_json(&r, &text, &err), KB_OK);
  walk("kb_result_from_json", step_result_from_json, text);
  walk("kb_result_to_json", step_result_to_json, &r);
  /* a bad document: the parse error or ENOMEM, nothing else */
  char *bad = fx_replace(text, "\"smoke\"", "\"Smoke\"");
  assert_int_equal(step_result_from_json(bad, &(struct kb_error){0}), KB_EPARSE);
  walk("kb_result_from_json (bad)", step_result_from_json, bad);
  free(bad);
  kb_free(text);
  kb_result_release(&r);
}

/* --- candidates --------------------------------------------------------------------------- */

static const char src[] = "int kb_forward(void) {  \r\n  return 0;\r\n}\r\n\r\n";

static int step_candidate_init(void *arg, struct kb_error *err) {
  (void)arg;
  struct kb_candidate c;
  int rc = kb_candidate_init(&c, "t1", "naive", "seed", src, "-DB=1", "-O2", err);
  if (rc)
    return rc;
  assert_string_equal(c.source, "int kb_forward(void) {\n  return 0;\n}\n");
  assert_string_equal(c.knobs, "-DB=1");
  assert_string_equal(c.flags, "-O2");
  assert_true(kb_candidate_id_valid(c.id));
  kb_candidate_release(&c);
  return KB_OK;
}

static int step_candidate_to_json(void *arg, struct kb_error *err) {
  char *text = NULL;
  int rc = kb_candidate_to_json(arg, &text, err);
  if (rc)
    return rc;
  assert_non_null(strstr(text, "\"knobs\":\"-DB=1\""));
  kb_free(text);
  return KB_OK;
}

static int step_candidate_from_json(void *arg, struct kb_error *err) {
  struct kb_candidate c;
  int rc = kb_candidate_from_json(arg, "cand", &c, err);
  if (rc)
    return rc;
  assert_string_equal(c.source, "int kb_forward(void) {\n  return 0;\n}\n");
  assert_string_equal(c.flags, "-O2");
  kb_candidate_release(&c);
  return KB_OK;
}

static void test_candidate(void **state) {
  (void)state;
  walk("kb_candidate_init", step_candidate_init, NULL);
  struct kb_candidate c;
  struct kb_error err = {0};
  assert_int_equal(kb_candidate_init(&c, "t1", "naive", "seed", src, "-DB=1", "-O2", &err), KB_OK);
  walk("kb_candidate_to_json", step_candidate_to_json, &c);
  char *text = NULL;
  assert_int_equal(kb_candidate_to_json(&c, &text, &err), KB_OK);
  walk("kb_candidate_from_json", step_candidate_from_json, text);
  kb_free(text);
  kb_candidate_release(&c);
}

/* --- campaigns and tasks ------------------------------------------------------------------ */

struct files {
  char dir[PATH_MAX];        /* temporary folder */
  char campaign[PATH_MAX + 16]; /* its campaign.json */
  char task[PATH_MAX + 16];  /* its tasks/t1 */
};

static int step_campaign(void *arg, struct kb_error *err) {
  struct files *x = arg;
  struct kb_campaign c;
  int rc = kb_campaign_load(x->campaign, &c, err);
  if (rc)
    return rc;
  assert_string_equal(c.name, "walk");
  assert_int_equal(c.n_tasks, 2);
  assert_non_null(strstr(c.task_dirs[1], "/tasks/t2"));
  assert_non_null(strstr(c.results_dir, "/out"));
  assert_int_equal(c.n_tiers, 2);
  assert_true(c.tiers[1].noise == 0.5);
  assert_non_null(c.spec_json);
  kb_campaign_release(&c);
  return KB_OK;
}

static int step_task(void *arg, struct kb_error *err) {
  struct files *x = arg;
  struct kb_task t;
  int rc = kb_task_load(x->task, &t, err);
  if (rc)
    return rc;
  assert_string_equal(t.category, "other");
  assert_int_equal(t.n_seeds, 2);
  assert_string_equal(t.seeds[1].flags, "-O3");
  assert_non_null(t.reference_path);
  assert_non_null(t.spec_json);
  assert_int_equal(t.baseline, 1);
  kb_task_release(&t);
  return KB_OK;
}

static void test_campaign_and_task(void **state) {
  (void)state;
  struct files x;
  fx_tmpdir(x.dir);
  snprintf(x.campaign, sizeof x.campaign, "%s/campaign.json", x.dir);
  snprintf(x.task, sizeof x.task, "%s/tasks/t1", x.dir);
  char *task = fx_replace(FX_TASK_JSON, "\"source\": \"seeds/naive.c\"}]",
                          "\"source\": \"seeds/naive.c\"},\n"
                          "            {\"name\": \"fast\", \"source\": \"seeds/fast.c\", "
                          "\"flags\": \"-O3\"}],\n"
                          "  \"baseline\": \"fast\"");
  fx_bundle(x.dir, "tasks/t1", task);
  fx_bundle(x.dir, "tasks/t2", FX_TASK_JSON);
  free(task);
  fx_write(x.dir, "campaign.json",
           "{\"schema\": \"kernelbrain.campaign/1\", \"id\": \"c\", \"name\": \"walk\",\n"
           " \"backend\": \"host\", \"tasks\": [\"tasks/t1\", \"tasks/./t2\"],\n"
           " \"budget\": {\"gpu_seconds\": 10, \"llm_tokens\": 5},\n"
           " \"deadline\": \"2030-01-01T00:00:00Z\", \"results_dir\": \"out\",\n"
           " \"ladder\": [{\"name\": \"compile\"}, {\"name\": \"smoke\", \"noise\": 0.5}]}\n");
  walk("kb_campaign_load", step_campaign, &x);
  walk("kb_task_load", step_task, &x);
  /* failure paths of bad inputs under allocation failure */
  fx_write(x.dir, "campaign.json",
           "{\"schema\": \"kernelbrain.campaign/1\", \"id\": \"c\", \"name\": \"walk\",\n"
           " \"backend\": \"host\", \"tasks\": [\"tasks/t1\", \"tasks/t9\"],\n"
           " \"budget\": {\"gpu_seconds\": 10}}\n");
  assert_int_equal(step_campaign(&x, &(struct kb_error){0}), KB_EPARSE);
  walk("kb_campaign_load (missing folder)", step_campaign, &x);
  fx_write(x.dir, "tasks/t1/task.json", FX_TASK_JSON "x");
  assert_int_equal(step_task(&x, &(struct kb_error){0}), KB_EPARSE);
  walk("kb_task_load (syntax error)", step_task, &x);
  kb_remove_tree(x.dir, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_result),
      cmocka_unit_test(test_candidate),
      cmocka_unit_test(test_campaign_and_task),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
