/* kb/campaign.h: loading campaigns, the default ladder, deadlines, task folders. */
#include <limits.h>
#include <stdlib.h>

#include "fixture.h"
#include "kb/campaign.h"
#include "kb/error.h"

#define CAMPAIGN_JSON                                                                          \
  "{\n"                                                                                        \
  "  \"schema\": \"kernelbrain.campaign/1\",\n"                                                \
  "  \"id\": \"c1\",\n"                                                                        \
  "  \"backend\": \"host\",\n"                                                                 \
  "  \"tasks\": [\"tasks/t1\"],\n"                                                             \
  "  \"budget\": {\"gpu_seconds\": 120}\n"                                                     \
  "}\n"

struct fx {
  char dir[PATH_MAX]; /* temporary folder: campaign.json, tasks/t1, tasks/t2 (first: fx_teardown) */
  char path[PATH_MAX + 16]; /* its campaign.json */
};

static int setup(void **state) {
  struct fx *x = calloc(1, sizeof *x);
  fx_tmpdir(x->dir);
  snprintf(x->path, sizeof x->path, "%s/campaign.json", x->dir);
  fx_bundle(x->dir, "tasks/t1", FX_TASK_JSON);
  fx_bundle(x->dir, "tasks/t2", FX_TASK_JSON);
  fx_write(x->dir, "tasks/empty/readme", "no task.json here\n");
  fx_write(x->dir, "campaign.json", CAMPAIGN_JSON);
  *state = x;
  return 0;
}

static int load_edit(struct fx *x, const char *from, const char *to, struct kb_campaign *c,
                     struct kb_error *err) {
  fx_write_edit(x->dir, "campaign.json", CAMPAIGN_JSON, from, to);
  return kb_campaign_load(x->path, c, err);
}

/* Each edit of `cases` (`n` of them) must fail to load with its message. */
static void expect_errors(struct fx *x, const struct fx_edit *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    struct kb_campaign c;
    struct kb_error err = {0};
    int rc = load_edit(x, cases[i].from, cases[i].to, &c, &err);
    fx_expect_parse_error(rc, err.msg, &cases[i]);
    assert_null(c.name);
    kb_campaign_release(&c);
  }
}

static void assert_tier(const struct kb_tier *t, const char *name, int64_t cost, int sets,
                        int warmup, int min_s, int max_s, double max_seconds, double noise,
                        double timeout) {
  assert_string_equal(t->name, name);
  assert_int_equal(t->cost_ms, cost);
  assert_int_equal(t->input_sets, sets);
  assert_int_equal(t->warmup, warmup);
  assert_int_equal(t->min_samples, min_s);
  assert_int_equal(t->max_samples, max_s);
  assert_true(t->max_seconds == max_seconds);
  assert_true(t->noise == noise);
  assert_true(t->timeout_s == timeout);
}

static void assert_default_ladder(const struct kb_campaign *c) {
  assert_int_equal(c->n_tiers, 4);
  assert_tier(&c->tiers[0], "compile", 0, 0, 0, 0, 0, 0, 0, 120);
  assert_tier(&c->tiers[1], "smoke", 50, 1, 1, 3, 5, 0.5, 1.0, 10);
  assert_tier(&c->tiers[2], "screen", 200, 0, 2, 10, 50, 1.0, 0.05, 30);
  assert_tier(&c->tiers[3], "full", 1000, 0, 3, 20, 200, 3.0, 0.01, 60);
}

static void test_defaults(void **state) {
  struct fx *x = *state;
  struct kb_campaign c;
  struct kb_error err = {0};
  assert_int_equal(kb_campaign_load(x->path, &c, &err), KB_OK);
  char real[PATH_MAX];
  assert_non_null(realpath(x->dir, real));
  char want[PATH_MAX + 32];
  assert_string_equal(c.id, "c1");
  assert_string_equal(c.name, "c1"); /* the id when not given */
  snprintf(want, sizeof want, "%s/campaign.json", real);
  assert_string_equal(c.path, want);
  assert_string_equal(c.dir, real);
  assert_int_equal(c.backend, KB_BACKEND_HOST);
  assert_int_equal(c.n_tasks, 1);
  snprintf(want, sizeof want, "%s/tasks/t1", real);
  assert_string_equal(c.task_dirs[0], want);
  assert_int_equal(c.budget_gpu_ms, 120000);
  assert_int_equal(c.budget_llm_tokens, 0);
  assert_int_equal(c.deadline, 0);
  assert_int_equal(c.max_attempts, 3);
  assert_int_equal(c.lease_seconds, 120);
  snprintf(want, sizeof want, "%s/results", real);
  assert_string_equal(c.results_dir, want);
  assert_true(c.target_speedup == 0);
  assert_string_equal(c.spec_json, CAMPAIGN_JSON);
  assert_default_ladder(&c);
  kb_campaign_release(&c);
  kb_campaign_release(&c);
  kb_campaign_release(NULL);

  struct kb_campaign d;
  memset(&d, 0, sizeof d);
  kb_campaign_default_ladder(&d);
  assert_default_ladder(&d);
}

static void test_all_fields(void **state) {
  struct fx *x = *state;
  struct kb_campaign c;
  struct kb_error err = {0};
  int rc = load_edit(x, "\"budget\": {\"gpu_seconds\": 120}",
                     "\"budget\": {\"gpu_seconds\": 0.25, \"llm_tokens\": 500000},\n"
                     "  \"name\": \"All fields\",\n"
                     "  \"deadline\": \"2026-12-01T08:00:00Z\",\n"
                     "  \"max_attempts\": 5, \"lease_seconds\": 30,\n"
                     "  \"results_dir\": \"../out/./r\",\n"
                     "  \"generators\": {\"seed\": true},\n"
                     "  \"target_speedup\": 2.5,\n"
                     "  \"ladder\": [{\"name\": \"compile\", \"timeout_seconds\": 300},\n"
                     "             {\"name\": \"smoke\", \"noise\": 0.5},\n"
                     "             {\"name\": \"quick\", \"cost_ms\": 10, \"input_sets\": 2,\n"
                     "              \"warmup\": 0, \"min_samples\": 1, \"max_samples\": 1,\n"
                     "              \"max_seconds\": 0.1, \"noise\": 2, \"timeout_seconds\": 5}]",
                     &c, &err);
  assert_int_equal(rc, KB_OK);
  assert_string_equal(c.name, "All fields");
  assert_int_equal(c.budget_gpu_ms, 250);
  assert_int_equal(c.budget_llm_tokens, 500000);
  assert_int_equal(c.deadline, 1796112000);
  assert_int_equal(c.max_attempts, 5);
  assert_int_equal(c.lease_seconds, 30);
  char real[PATH_MAX];
  assert_non_null(realpath(x->dir, real));
  char want[PATH_MAX + 32];
  snprintf(want, sizeof want, "%s", real);
  char *slash = strrchr(want, '/');
  snprintf(slash, sizeof want - (size_t)(slash - want), "/out/r");
  assert_string_equal(c.results_dir, want);
  assert_true(c.target_speedup == 2.5);
  assert_int_equal(c.n_tiers, 3);
  assert_tier(&c.tiers[0], "compile", 0, 0, 0, 0, 0, 0, 0, 300);
  /* named like a default tier: the fields left out come from it */
  assert_tier(&c.tiers[1], "smoke", 50, 1, 1, 3, 5, 0.5, 0.5, 10);
  assert_tier(&c.tiers[2], "quick", 10, 2, 0, 1, 1, 0.1, 2, 5);
  kb_campaign_release(&c);
}

static void test_budget_rounding(void **state) {
  struct fx *x = *state;
  struct kb_campaign c;
  struct kb_error err = {0};
  assert_int_equal(load_edit(x, "120}", "0.0001}", &c, &err), KB_OK);
  assert_int_equal(c.budget_gpu_ms, 1); /* positive never rounds down to nothing */
  kb_campaign_release(&c);
  assert_int_equal(load_edit(x, "120}", "1e9}", &c, &err), KB_OK);
  assert_int_equal(c.budget_gpu_ms, 1000000000000);
  kb_campaign_release(&c);
}

static void test_deadlines(void **state) {
  struct fx *x = *state;
  static const struct {
    const char *text;
    int64_t want; /* -1: rejected */
  } cases[] = {
      {"2026-12-01T08:00:00Z", 1796112000},   {"2026-12-01T08:00:00.123456789Z", 1796112000},
      {"2028-02-29T23:59:59Z", 1835481599},   {"2026-02-29T00:00:00Z", -1},
      {"2026-12-01T08:00:00", -1},            {"2026-12-01 08:00:00Z", -1},
      {"2026-12-01T08:00:00+01:00", -1},      {"2026-13-01T08:00:00Z", -1},
      {"2026-12-01T24:00:00Z", -1},           {"2026-12-01T08:00:00.Z", -1},
      {"2026-12-01T08:00:00.1234567890Z", -1}, {"26-12-01T08:00:00Z", -1},
      {"2026-12-01t08:00:00z", -1},           {"", -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char to[160];
    snprintf(to, sizeof to, "\"budget\": {\"gpu_seconds\": 120}, \"deadline\": \"%s\"",
             cases[i].text);
    struct kb_campaign c;
    struct kb_error err = {0};
    int rc = load_edit(x, "\"budget\": {\"gpu_seconds\": 120}", to, &c, &err);
    if (cases[i].want < 0) {
      if (rc != KB_EPARSE || strstr(err.msg, "campaign.json:6:47: \"deadline\" must be an RFC "
                                             "3339 UTC time like \"2026-12-01T08:00:00Z\"") == NULL)
        fail_msg("deadline \"%s\": rc %d \"%s\"", cases[i].text, rc, err.msg);
      continue;
    }
    if (rc != KB_OK || c.deadline != cases[i].want)
      fail_msg("deadline \"%s\": rc %d \"%s\" deadline %lld", cases[i].text, rc, err.msg,
               (long long)c.deadline);
    kb_campaign_release(&c);
  }
}

static void test_bad_fields(void **state) {
  struct fx *x = *state;
  static const struct fx_edit cases[] = {
      {"\"id\": \"c1\",", "\"id\": \"c1\", \"dedline\": 1,",
       "campaign.json:3:15: unknown field \"dedline\""},
      {"\"gpu_seconds\": 120", "\"gpu_seconds\": -5",
       "campaign.json:6:29: \"budget.gpu_seconds\" must be a positive number"},
      {"\"gpu_seconds\": 120", "\"gpu_seconds\": 0",
       "\"budget.gpu_seconds\" must be a positive number"},
      {"\"gpu_seconds\": 120", "\"gpu_seconds\": \"120\"",
       "\"budget.gpu_seconds\" must be a positive number"},
      {"\"gpu_seconds\": 120", "\"gpu_seconds\": 2e9",
       "\"budget.gpu_seconds\" must be at most 1e+09"},
      {"\"gpu_seconds\": 120", "\"gpu_secs\": 120",
       "campaign.json:6:14: unknown field \"budget.gpu_secs\""},
      {"{\"gpu_seconds\": 120}", "{\"llm_tokens\": 1}",
       "campaign.json:6:13: \"budget.gpu_seconds\" is required"},
      {"  \"backend\": \"host\",\n", "", "campaign.json:1:1: \"backend\" is required"},
      {"\"c1\"", "\"C 1\"", "campaign.json:3:9: \"id\" must be 1 to 63 characters"},
      {"[\"tasks/t1\"]", "[]", "campaign.json:5:12: \"tasks\" must have at least 1 item"},
      {"[\"tasks/t1\"]", "\"tasks/t1\"", "\"tasks\" must be an array"},
      {"[\"tasks/t1\"]", "[\"tasks/t1\", 3]", "\"tasks[1]\" must be a non-empty string"},
      {"[\"tasks/t1\"]", "[\"tasks/t1\", \"tasks/t1\"]",
       "campaign.json:5:25: \"tasks[1]\" names the same task folder as \"tasks[0]\""},
      {"[\"tasks/t1\"]", "[\"tasks/t2\", \"tasks/../tasks/./t2/\"]",
       "\"tasks[1]\" names the same task folder as \"tasks[0]\""},
      {"[\"tasks/t1\"]", "[\"tasks/t1\", \"tasks/t9\"]",
       "campaign.json:5:25: \"tasks[1]\": no task folder \"tasks/t9\": No such file"},
      {"[\"tasks/t1\"]", "[\"tasks/t1/task.json\"]",
       "\"tasks[0]\": no task folder \"tasks/t1/task.json\": not a folder"},
      {"[\"tasks/t1\"]", "[\"tasks/empty\"]",
       "\"tasks[0]\": task folder \"tasks/empty\" has no readable task.json"},
      {"\"host\"", "\"rocm\"", "\"backend\" must be one of \"host\", \"cuda\""},
      {"\"kernelbrain.campaign/1\"", "\"kernelbrain.campaign\"",
       "\"schema\" must be \"kernelbrain.campaign/1\""},
      {"120}", "120}, \"max_attempts\": 0",
       "\"max_attempts\" must be an integer between 1 and 20"},
      {"120}", "120}, \"lease_seconds\": 1.5",
       "\"lease_seconds\" must be an integer between 5 and 86400"},
      {"120}", "120}, \"results_dir\": \"\"", "\"results_dir\" must be a non-empty"},
      {"120}", "120}, \"name\": \"\"", "\"name\" must be a non-empty string"},
      {"120}", "120}, \"generators\": {\"evolve\": true}",
       "unknown field \"generators.evolve\""},
      {"120}", "120}, \"generators\": {\"archive\": true}",
       "\"generators.archive\" must be an object"},
      {"120}", "120}, \"target_speedup\": 0",
       "\"target_speedup\" must be a positive number"},
      {"120}", "120}, \"budget\": {}", "duplicate object key"},
      /* text checks come before the file system: a bad budget with a missing folder */
      {"[\"tasks/t1\"]", "[\"tasks/t9\"], \"max_attempts\": 99",
       "\"max_attempts\" must be"},
  };
  expect_errors(x, cases, sizeof cases / sizeof cases[0]);
}

static void test_bad_ladders(void **state) {
  struct fx *x = *state;
  static const struct fx_edit cases[] = {
      {"120}", "120}, \"ladder\": []", "\"ladder\" must have at least 1 item"},
      {"120}",
       "120}, \"ladder\": [{\"name\": \"compile\"}, {\"name\": \"screen\", \"noise\": 0}]",
       "campaign.json:6:95: \"ladder[1].noise\" must be a positive number"},
      {"120}", "120}, \"ladder\": [{\"name\": \"smoke\"}]",
       "\"ladder[0].name\" must be \"compile\": the first tier is the compile tier"},
      {"120}", "120}, \"ladder\": [{\"name\": \"compile\"}, {\"name\": \"compile\"}]",
       "\"ladder[1].name\" repeats the tier name \"compile\""},
      {"120}", "120}, \"ladder\": [{\"name\": \"compile\"}, {\"name\": \"mine\"}]",
       "\"ladder[1].cost_ms\" is required"},
      {"120}",
       "120}, \"ladder\": [{\"name\": \"compile\"}, {\"name\": \"full\", \"min_samples\": "
       "300}]",
       "\"ladder[1].min_samples\" (300) must not exceed \"ladder[1].max_samples\" (200)"},
      {"120}", "120}, \"ladder\": [{\"name\": \"compile\", \"colour\": 1}]",
       "unknown field \"ladder[0].colour\""},
      {"120}", "120}, \"ladder\": [{\"name\": \"compile\", \"input_sets\": 33}]",
       "\"ladder[0].input_sets\" must be an integer between 0 and 32"},
      {"120}", "120}, \"ladder\": [{\"name\": \"compile\"}, 3]",
       "\"ladder[1]\" must be an object"},
  };
  expect_errors(x, cases, sizeof cases / sizeof cases[0]);
  char nine[512] = "120}, \"ladder\": [{\"name\": \"compile\"}";
  for (int i = 0; i < 8; i++) {
    size_t len = strlen(nine);
    snprintf(nine + len, sizeof nine - len, ", {\"name\": \"smoke%d\"}", i);
  }
  size_t len = strlen(nine);
  snprintf(nine + len, sizeof nine - len, "]");
  const struct fx_edit too_many = {"120}", nine, "\"ladder\" must have at most 8 items"};
  expect_errors(x, &too_many, 1);
}

static void test_unreadable(void **state) {
  struct fx *x = *state;
  struct kb_campaign c;
  struct kb_error err = {0};
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/none.json", x->dir);
  assert_int_equal(kb_campaign_load(path, &c, &err), KB_EIO);
  assert_non_null(strstr(err.msg, "none.json"));
  kb_error_clear(&err);
  fx_write(x->dir, "campaign.json", "[1, 2]");
  assert_int_equal(kb_campaign_load(x->path, &c, &err), KB_EPARSE);
  assert_non_null(strstr(err.msg, "campaign.json:1:1: a campaign must be a JSON object"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_defaults, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_all_fields, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_budget_rounding, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_deadlines, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_bad_fields, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_bad_ladders, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_unreadable, setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
