/* kb/task.h: loading task bundles, defaults, paths, and the checks beyond the schema. */
#include <limits.h>
#include <stdlib.h>

#include "fixture.h"
#include "kb/alloc.h"
#include "kb/candidate.h"
#include "kb/error.h"
#include "kb/task.h"

struct fx {
  char dir[PATH_MAX];      /* temporary folder holding bundle "t1" (first: fx_teardown) */
  char t1[PATH_MAX + 8];   /* its bundle folder */
};

static int setup(void **state) {
  struct fx *x = calloc(1, sizeof *x);
  fx_tmpdir(x->dir);
  snprintf(x->t1, sizeof x->t1, "%s/t1", x->dir);
  fx_bundle(x->dir, "t1", FX_TASK_JSON);
  *state = x;
  return 0;
}

/* Loads bundle t1 after replacing `from` by `to` in FX_TASK_JSON; returns the code. */
static int load_edit(struct fx *x, const char *from, const char *to, struct kb_task *t,
                     struct kb_error *err) {
  fx_write_edit(x->t1, "task.json", FX_TASK_JSON, from, to);
  return kb_task_load(x->t1, t, err);
}

/* Each edit of `cases` (`n` of them) must fail to load with its message. */
static void expect_errors(struct fx *x, const struct fx_edit *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    struct kb_task t;
    struct kb_error err = {0};
    int rc = load_edit(x, cases[i].from, cases[i].to, &t, &err);
    fx_expect_parse_error(rc, err.msg, &cases[i]);
    /* released on failure: nothing left to free, and release again is harmless */
    assert_null(t.name);
    kb_task_release(&t);
  }
}

static void test_defaults(void **state) {
  struct fx *x = *state;
  struct kb_task t;
  struct kb_error err = {0};
  assert_int_equal(kb_task_load(x->t1, &t, &err), KB_OK);
  char real[PATH_MAX];
  assert_non_null(realpath(x->t1, real));
  assert_string_equal(t.id, "t1");
  assert_string_equal(t.name, "test task");
  assert_string_equal(t.category, "other");
  assert_string_equal(t.dir, real);
  char want[PATH_MAX + 32];
  snprintf(want, sizeof want, "%s/task.json", real);
  assert_string_equal(t.json_path, want);
  assert_int_equal(t.backend, KB_BACKEND_HOST);
  assert_int_equal(t.oracle_kind, KB_ORACLE_C);
  snprintf(want, sizeof want, "%s/oracle.c", real);
  assert_string_equal(t.oracle_path, want);
  assert_string_equal(t.reference_path, want); /* defaults to the oracle source */
  assert_int_equal(t.n_inputs, 1);
  assert_string_equal(t.inputs[0].name, "x");
  assert_int_equal(t.inputs[0].dtype, KB_F32);
  assert_int_equal(t.inputs[0].ndim, 1);
  assert_int_equal(t.inputs[0].shape[0], 16);
  assert_int_equal(t.n_outputs, 1);
  assert_true(t.atol == 1e-4 && t.rtol == 1e-4);
  assert_int_equal(t.n_sets, 1);
  assert_int_equal(t.sets[0].seed, 1);
  assert_int_equal(t.sets[0].dist, KB_DIST_UNIFORM);
  assert_true(t.sets[0].low == -1 && t.sets[0].high == 1);
  assert_int_equal(t.n_seeds, 1);
  assert_string_equal(t.seeds[0].name, "naive");
  snprintf(want, sizeof want, "%s/seeds/naive.c", real);
  assert_string_equal(t.seeds[0].path, want);
  assert_string_equal(t.seeds[0].flags, "");
  assert_int_equal(t.baseline, -1);
  assert_string_equal(t.spec_json, FX_TASK_JSON);
  kb_task_release(&t);
  kb_task_release(&t);
  kb_task_release(NULL);
}

static void test_all_fields(void **state) {
  struct fx *x = *state;
  static const char json[] =
      "{\"schema\": \"kernelbrain.task/1\", \"id\": \"mm.v2-x_1\", \"name\": \"n\",\n"
      " \"category\": \"gemm\", \"backend\": \"cuda\",\n"
      " \"oracle\": {\"kind\": \"pytorch\", \"source\": \"./oracle.c\"},\n"
      " \"reference\": \"reference.c\",\n"
      " \"inputs\": [{\"name\": \"A\", \"dtype\": \"bf16\", \"shape\": [2, 3.0, 4]},\n"
      "            {\"name\": \"_s\", \"dtype\": \"i64\", \"shape\": []}],\n"
      " \"outputs\": [{\"name\": \"C\", \"dtype\": \"f16\", \"shape\": [2, 4]},\n"
      "             {\"name\": \"idx\", \"dtype\": \"i32\", \"shape\": [2]}],\n"
      " \"tolerance\": {\"atol\": 0.5},\n"
      " \"input_sets\": [{\"seed\": 0, \"distribution\": \"normal\", \"low\": 3, \"high\": 0.5},\n"
      "                {\"seed\": 9, \"distribution\": \"integers\", \"low\": -4, \"high\": 4}],\n"
      " \"seeds\": [{\"name\": \"naive\", \"source\": \"seeds/naive.c\"},\n"
      "           {\"name\": \"fast\", \"source\": \"seeds//fast.c\", \"flags\": \"-O3\"}],\n"
      " \"baseline\": \"fast\"}\n";
  fx_write(x->t1, "task.json", json);
  struct kb_task t;
  struct kb_error err = {0};
  assert_int_equal(kb_task_load(x->t1, &t, &err), KB_OK);
  assert_string_equal(t.id, "mm.v2-x_1");
  assert_string_equal(t.category, "gemm");
  assert_int_equal(t.backend, KB_BACKEND_CUDA);
  assert_int_equal(t.oracle_kind, KB_ORACLE_PYTORCH);
  assert_non_null(strstr(t.oracle_path, "/t1/oracle.c"));
  assert_non_null(strstr(t.reference_path, "/t1/reference.c"));
  assert_int_equal(t.n_inputs, 2);
  assert_int_equal(t.inputs[0].dtype, KB_BF16);
  assert_int_equal(t.inputs[0].ndim, 3);
  assert_int_equal(t.inputs[0].shape[1], 3);
  assert_int_equal(t.inputs[1].ndim, 0);
  /* atol given, rtol from the loosest output dtype (f16) */
  assert_true(t.atol == 0.5);
  assert_true(t.rtol == 1e-2);
  assert_int_equal(t.sets[0].dist, KB_DIST_NORMAL);
  assert_int_equal(t.sets[1].dist, KB_DIST_INTEGERS);
  assert_int_equal(t.n_seeds, 2);
  assert_string_equal(t.seeds[1].flags, "-O3");
  assert_non_null(strstr(t.seeds[1].path, "/t1/seeds/fast.c"));
  assert_int_equal(t.baseline, 1);
  kb_task_release(&t);
}

static void test_tolerance_defaults(void **state) {
  struct fx *x = *state;
  struct kb_task t;
  struct kb_error err = {0};
  static const struct {
    const char *dtype;
    double tol;
  } cases[] = {{"f32", 1e-4}, {"f64", 1e-4}, {"f16", 1e-2}, {"bf16", 1e-2},
               {"i32", 0},    {"i64", 0},    {"u8", 0},     {"bool", 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char to[128];
    snprintf(to, sizeof to, "{\"name\": \"y\", \"dtype\": \"%s\"", cases[i].dtype);
    assert_int_equal(load_edit(x, "{\"name\": \"y\", \"dtype\": \"f32\"", to, &t, &err), KB_OK);
    if (t.atol != cases[i].tol || t.rtol != cases[i].tol)
      fail_msg("%s: atol %g rtol %g, want %g", cases[i].dtype, t.atol, t.rtol, cases[i].tol);
    kb_task_release(&t);
  }
}

static void test_bad_fields(void **state) {
  struct fx *x = *state;
  static const struct fx_edit cases[] = {
      {"\"name\": \"test task\",", "\"name\": \"test task\", \"inptus\": 1,",
       "task.json:4:24: unknown field \"inptus\""},
      {"\"kernelbrain.task/1\"", "\"kernelbrain.task/2\"",
       "task.json:2:13: \"schema\" must be \"kernelbrain.task/1\""},
      {"\"id\": \"t1\"", "\"id\": \"T1\"", "task.json:3:9: \"id\" must be 1 to 63"},
      {"\"name\": \"test task\",", "", "task.json:1:1: \"name\" is required"},
      {"\"dtype\": \"f32\", \"shape\": [16]}]", "\"dtype\": \"f31\", \"shape\": [16]}]",
       "task.json:7:37: \"inputs[0].dtype\" must be one of \"f32\", \"f16\", \"bf16\", "
       "\"f64\", \"i32\", \"i64\", \"u8\", \"bool\""},
      {"\"shape\": [16]", "\"shape\": [16, 0]",
       "task.json:7:58: \"inputs[0].shape[1]\" must be a positive integer"},
      {"\"shape\": [16]", "\"shape\": [-2]",
       "\"inputs[0].shape[0]\" must be a positive integer"},
      {"\"shape\": [16]", "\"shape\": [1,1,1,1,1,1,1,1,1]",
       "task.json:7:53: \"inputs[0].shape\" must have at most 8 items"},
      {"\"shape\": [16]", "\"shape\": [2147483647,2147483647,2147483647]",
       "\"inputs[0].shape\" is too large"},
      {"\"uniform\"", "\"gaussian\"",
       "\"input_sets[0].distribution\" must be one of \"uniform\", \"normal\", "
       "\"integers\""},
      {"\"low\": -1, \"high\": 1", "\"low\": 1, \"high\": 1",
       "\"input_sets[0].high\" must be greater than \"input_sets[0].low\""},
      {"\"uniform\", \"low\": -1, \"high\": 1", "\"normal\", \"low\": -1, \"high\": 0",
       "\"input_sets[0].high\" must be a positive number"},
      {"\"seed\": 1,", "\"seed\": -1,", "\"input_sets[0].seed\" must be a non-negative"},
      {"\"inputs\": [{\"name\": \"x\"", "\"inputs\": [{\"name\": \"y\"",
       "\"outputs[0].name\" repeats the tensor name \"y\""},
      {"\"inputs\": [{\"name\": \"x\"", "\"inputs\": [{\"name\": \"1x\"",
       "\"inputs[0].name\" must be a C identifier"},
      {"\"outputs\": [{", "\"outputs\": [], \"x\": [{", "unknown field \"x\""},
      {"\"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [16]}]",
       "\"outputs\": []", "\"outputs\" must have at least 1 item"},
      {"\"source\": \"seeds/naive.c\"}]",
       "\"source\": \"seeds/naive.c\"}], \"baseline\": \"turbo\"",
       "\"baseline\" must name one of \"seeds\": no seed \"turbo\""},
      {"\"source\": \"seeds/naive.c\"}]",
       "\"source\": \"seeds/naive.c\"}, {\"name\": \"naive\", \"source\": \"oracle.c\"}]",
       "\"seeds[1].name\" repeats the seed name \"naive\""},
      {"\"backend\": \"host\"", "\"backend\": \"gpu\"",
       "task.json:5:14: \"backend\" must be one of \"host\", \"cuda\""},
      {"\"kind\": \"c\"", "\"kind\": \"python\"", "\"oracle.kind\" must be one of"},
      {"\"seeds\": [", "\"tolerance\": {\"atol\": -1}, \"seeds\": [",
       "\"tolerance.atol\" must be a non-negative number"},
      {"\"seeds\": [", "\"tolerance\": {\"abs\": 1}, \"seeds\": [",
       "unknown field \"tolerance.abs\""},
  };
  expect_errors(x, cases, sizeof cases / sizeof cases[0]);
}

static void test_paths_stay_inside(void **state) {
  struct fx *x = *state;
  static const struct fx_edit cases[] = {
      {"\"source\": \"oracle.c\"", "\"source\": \"../oracle.c\"",
       "task.json:6:37: \"oracle.source\" must be a relative path inside the task "
       "bundle, without \"..\": \"../oracle.c\""},
      {"\"source\": \"oracle.c\"", "\"source\": \"seeds/../oracle.c\"",
       "\"oracle.source\" must be a relative path inside the task bundle"},
      {"\"source\": \"oracle.c\"", "\"source\": \"/etc/hostname\"",
       "\"oracle.source\" must be a relative path inside the task bundle"},
      {"\"source\": \"seeds/naive.c\"", "\"source\": \"seeds/..\"",
       "\"seeds[0].source\" must be a relative path inside the task bundle"},
      {"\"source\": \"oracle.c\"", "\"source\": \"\"",
       "\"oracle.source\" must be a relative path inside the task bundle"},
      {"\"source\": \"oracle.c\"", "\"source\": \"oracle.c\\n\"",
       "task.json:6:37: \"oracle.source\" must not contain control characters"},
  };
  expect_errors(x, cases, sizeof cases / sizeof cases[0]);
  /* ".." inside a name is no parent folder */
  struct kb_task t;
  struct kb_error err = {0};
  fx_write(x->t1, "a..b.c", "/* odd name */\n");
  assert_int_equal(load_edit(x, "\"source\": \"oracle.c\"", "\"source\": \"a..b.c\"", &t, &err),
                   KB_OK);
  kb_task_release(&t);
}

/* A ".py" seed is a KernelBench-format candidate: refused without a pytorch oracle, marked with
 * one. */
static void test_kernelbench_seed(void **state) {
  struct fx *x = *state;
  fx_write(x->t1, "seeds/model_new.py", "class ModelNew: pass\n");
  static const char from[] = "\"source\": \"seeds/naive.c\"}]";
  static const char to[] =
      "\"source\": \"seeds/naive.c\"}, {\"name\": \"mn\", \"source\": \"seeds/model_new.py\"}]";
  static const struct fx_edit cases[] = {
      {from, to,
       "\"seeds[1].source\" is a KernelBench solution (.py, class ModelNew): only a task with a "
       "\"pytorch\" oracle can evaluate one"},
  };
  expect_errors(x, cases, 1);
  char *json = fx_replace(FX_TASK_JSON, "\"kind\": \"c\"", "\"kind\": \"pytorch\"");
  struct kb_task t;
  struct kb_error err = {0};
  fx_write_edit(x->t1, "task.json", json, from, to);
  free(json);
  assert_int_equal(kb_task_load(x->t1, &t, &err), KB_OK);
  assert_int_equal(t.n_seeds, 2);
  assert_int_equal(t.seeds[0].format, KB_FORMAT_NATIVE);
  assert_int_equal(t.seeds[1].format, KB_FORMAT_KERNELBENCH);
  kb_task_release(&t);
}

static void test_missing_files(void **state) {
  struct fx *x = *state;
  static const struct fx_edit cases[] = {
      {"\"source\": \"seeds/naive.c\"", "\"source\": \"seeds/gone.c\"",
       "task.json:10:41: \"seeds[0].source\": cannot read \"seeds/gone.c\": No such file"},
      {"\"source\": \"oracle.c\"", "\"source\": \"seeds\"",
       "\"oracle.source\": cannot read \"seeds\": not a regular file"},
  };
  expect_errors(x, cases, sizeof cases / sizeof cases[0]);
  /* without checking files, kb_task_parse takes the spec alone */
  struct kb_task t;
  struct kb_error err = {0};
  char *json = fx_replace(FX_TASK_JSON, "\"seeds/naive.c\"", "\"seeds/gone.c\"");
  assert_int_equal(kb_task_parse("spec", json, "/nowhere/t1", 0, &t, &err), KB_OK);
  assert_string_equal(t.dir, "/nowhere/t1");
  assert_string_equal(t.seeds[0].path, "/nowhere/t1/seeds/gone.c");
  kb_task_release(&t);
  assert_int_equal(kb_task_parse("spec", json, x->t1, 1, &t, &err), KB_EPARSE);
  assert_non_null(strstr(err.msg, "spec:10:"));
  free(json);
  /* no task.json at all is an I/O error, not a parse error */
  kb_error_clear(&err);
  assert_int_equal(kb_task_load(x->dir, &t, &err), KB_EIO);
  assert_non_null(strstr(err.msg, "task.json"));
}

static void test_messages_name_path_as_given(void **state) {
  struct fx *x = *state;
  char *json = fx_replace(FX_TASK_JSON, "\"id\": \"t1\"", "\"id\": \"\"");
  fx_write(x->t1, "task.json", json);
  free(json);
  char given[PATH_MAX + 8];
  snprintf(given, sizeof given, "%s/./t1/", x->dir);
  struct kb_task t;
  struct kb_error err = {0};
  assert_int_equal(kb_task_load(given, &t, &err), KB_EPARSE);
  char want[PATH_MAX + 64];
  snprintf(want, sizeof want, "%s/./t1/task.json:3:9: \"id\" must be", x->dir);
  assert_non_null(strstr(err.msg, want));
}

static void test_names(void **state) {
  (void)state;
  static const char *const dtypes[] = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8", "bool"};
  for (int i = 0; i < 8; i++) {
    assert_string_equal(kb_dtype_name(i), dtypes[i]);
    assert_int_equal(kb_dtype_from_name(dtypes[i]), i);
  }
  assert_int_equal(KB_BOOL, 7);
  assert_null(kb_dtype_name(8));
  assert_null(kb_dtype_name(-1));
  assert_int_equal(kb_dtype_from_name("f8"), -1);
  assert_string_equal(kb_backend_name(KB_BACKEND_HOST), "host");
  assert_string_equal(kb_backend_name(KB_BACKEND_CUDA), "cuda");
  assert_null(kb_backend_name(2));
  assert_int_equal(kb_backend_from_name("cuda"), KB_BACKEND_CUDA);
  assert_int_equal(kb_backend_from_name("rocm"), -1);
}

static void test_ids(void **state) {
  (void)state;
  assert_true(kb_id_valid("a"));
  assert_true(kb_id_valid("0a.b-c_d"));
  assert_false(kb_id_valid(""));
  assert_false(kb_id_valid("-a"));
  assert_false(kb_id_valid(".a"));
  assert_false(kb_id_valid("A"));
  assert_false(kb_id_valid("a b"));
  char longest[64];
  memset(longest, 'a', 63);
  longest[63] = '\0';
  assert_true(kb_id_valid(longest));
  char too_long[65];
  memset(too_long, 'a', 64);
  too_long[64] = '\0';
  assert_false(kb_id_valid(too_long));
}

static void test_path_resolve(void **state) {
  (void)state;
  static const struct {
    const char *base, *rel, *want;
  } cases[] = {
      {"/a/b", "c", "/a/b/c"},       {"/a/b", "../c", "/a/c"},     {"/a/b/", "./c//d/", "/a/b/c/d"},
      {"/a", "../../..", "/"},       {"/a", "/x/./y/../z", "/x/z"}, {"/", ".", "/"},
      {"/a/b", "..", "/a"},          {"/a", "b/..c", "/a/b/..c"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *p = kb_path_resolve(cases[i].base, cases[i].rel);
    assert_non_null(p);
    if (strcmp(p, cases[i].want) != 0)
      fail_msg("resolve(%s, %s) = %s, want %s", cases[i].base, cases[i].rel, p, cases[i].want);
    kb_free(p);
  }
  char cwd[PATH_MAX];
  assert_non_null(getcwd(cwd, sizeof cwd));
  char *p = kb_path_resolve(NULL, "x");
  char want[PATH_MAX + 4];
  snprintf(want, sizeof want, "%s/x", strcmp(cwd, "/") == 0 ? "" : cwd);
  assert_string_equal(p, want);
  kb_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_defaults, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_all_fields, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_tolerance_defaults, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_bad_fields, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_paths_stay_inside, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_missing_files, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_kernelbench_seed, setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_messages_name_path_as_given, setup, fx_teardown),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_ids),
      cmocka_unit_test(test_path_resolve),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
