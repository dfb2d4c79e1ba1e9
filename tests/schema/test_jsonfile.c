/* kb/jsonfile.h: positions of values by path, syntax errors, getters and their messages. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/jsonfile.h"

/* Line numbers below refer to this text; columns count UTF-8 characters from 1. */
static const char doc[] = "{\n"
                          "  \"a\": 1,\n"
                          "  \"b\": {\"c\": [10, {\"d\": \"x\"}]},\n"
                          "  \"\xc3\xa9\": \"\xc3\xbc\", \"k\\\"q\": 2,\n"
                          "  \"n\": {\"s\": \"str\", \"f\": 2.5, \"i\": 3.0, \"t\": true}\n"
                          "}\n";

static void assert_pos(const struct kb_jsonfile *f, const char *path, int at_key, int line,
                       int col, int exact) {
  int l = -1;
  int c = -1;
  int found = kb_jsonfile_position(f, path, at_key, &l, &c);
  if (l != line || c != col || found != exact)
    fail_msg("\"%s\"%s: got %d:%d (exact %d), want %d:%d (exact %d)", path,
             at_key ? " key" : "", l, c, found, line, col, exact);
}

static void test_positions(void **state) {
  (void)state;
  struct kb_jsonfile f;
  struct kb_error err = {0};
  assert_int_equal(kb_jsonfile_parse(&f, "t.json", doc, &err), KB_OK);
  assert_pos(&f, "", 0, 1, 1, 1);
  assert_pos(&f, "a", 0, 2, 8, 1);
  assert_pos(&f, "a", 1, 2, 3, 1);
  assert_pos(&f, "b", 0, 3, 8, 1);
  assert_pos(&f, "b.c", 0, 3, 14, 1);
  assert_pos(&f, "b.c[0]", 0, 3, 15, 1);
  assert_pos(&f, "b.c[1]", 0, 3, 19, 1);
  assert_pos(&f, "b.c[1].d", 0, 3, 25, 1);
  assert_pos(&f, "b.c[1].d", 1, 3, 20, 1);
  /* a UTF-8 key and value count as one column each; escapes in keys are decoded */
  assert_pos(&f, "\xc3\xa9", 0, 4, 8, 1);
  assert_pos(&f, "k\"q", 1, 4, 13, 1);
  assert_pos(&f, "k\"q", 0, 4, 21, 1);
  /* missing paths fall back to the closest parent's value, never to a key */
  assert_pos(&f, "b.c[1].zz", 1, 3, 19, 0);
  assert_pos(&f, "b.c[7]", 0, 3, 14, 0);
  assert_pos(&f, "nope.deeper", 0, 1, 1, 0);
  kb_jsonfile_release(&f);
  kb_jsonfile_release(&f); /* released twice is fine: it is zeroed */
}

static void test_crlf_and_tabs(void **state) {
  (void)state;
  struct kb_jsonfile f;
  struct kb_error err = {0};
  assert_int_equal(kb_jsonfile_parse(&f, "t.json", "{\r\n\t\"a\":\r\n\t[1,\t2]}", &err), KB_OK);
  assert_pos(&f, "a", 1, 2, 2, 1);
  assert_pos(&f, "a", 0, 3, 2, 1);
  assert_pos(&f, "a[1]", 0, 3, 6, 1);
  kb_jsonfile_release(&f);
}

static void test_fail_message(void **state) {
  (void)state;
  struct kb_jsonfile f;
  struct kb_error err = {0};
  assert_int_equal(kb_jsonfile_parse(&f, "dir/t.json", doc, &err), KB_OK);
  assert_int_equal(kb_jsonfile_fail(&f, &err, "b.c[1].d", "\"%s\" is wrong", "b.c[1].d"),
                   KB_EPARSE);
  assert_int_equal(err.code, KB_EPARSE);
  assert_string_equal(err.msg, "dir/t.json:3:25: \"b.c[1].d\" is wrong");
  /* the first error stays */
  assert_int_equal(kb_jsonfile_fail(&f, &err, "a", "second"), KB_EPARSE);
  assert_string_equal(err.msg, "dir/t.json:3:25: \"b.c[1].d\" is wrong");
  kb_error_clear(&err);
  kb_jsonfile_fail_key(&f, &err, "b.c[1].d", "unknown");
  assert_string_equal(err.msg, "dir/t.json:3:20: unknown");
  kb_jsonfile_release(&f);
}

static void expect_syntax(const char *text, const char *want) {
  struct kb_jsonfile f;
  struct kb_error err = {0};
  int rc = kb_jsonfile_parse(&f, "s.json", text, &err);
  assert_int_equal(rc, KB_EPARSE);
  if (strstr(err.msg, want) == NULL)
    fail_msg("%s: message \"%s\" lacks \"%s\"", text, err.msg, want);
  assert_null(f.root);
  assert_null(f.text);
}

static void test_syntax_errors(void **state) {
  (void)state;
  expect_syntax("{\"a\": 1,}", "s.json:1:9: ");
  expect_syntax("{\n  \"a\": 1,\n  \"a\": 2\n}", "s.json:3:5: duplicate object key");
  expect_syntax("{\"a\": 1} x", "end of file expected");
  expect_syntax("{\"a\" 1}", "':' expected");
  expect_syntax("{\"a\": NaN}", "s.json:1:");
  expect_syntax("", "s.json:1:0: ");
  expect_syntax("\"just a string\"", "'[' or '{' expected");
  expect_syntax("{\"a\": \"\\u0000\"}", "s.json:1:");
}

static void test_load_file(void **state) {
  (void)state;
  struct kb_jsonfile f;
  struct kb_error err = {0};
  assert_int_equal(kb_jsonfile_load(&f, "/nonexistent/kb/t.json", &err), KB_EIO);
  assert_non_null(strstr(err.msg, "/nonexistent/kb/t.json"));
  assert_null(f.root);
}

static void test_getters(void **state) {
  (void)state;
  struct kb_jsonfile f;
  struct kb_error err = {0};
  assert_int_equal(kb_jsonfile_parse(&f, "g.json", doc, &err), KB_OK);
  json_t *n = NULL;
  assert_int_equal(kb_json_get_object(&f, f.root, "", "n", 1, &n, &err), KB_OK);
  const char *s = NULL;
  assert_int_equal(kb_json_get_string(&f, n, "n", "s", 1, &s, &err), KB_OK);
  assert_string_equal(s, "str");
  double d = 0;
  assert_int_equal(kb_json_get_number(&f, n, "n", "f", 1, DBL_MIN, DBL_MAX, &d, &err), KB_OK);
  assert_true(d == 2.5);
  int64_t i = 0;
  /* 3.0 is an integer, as in JSON Schema */
  assert_int_equal(kb_json_get_int(&f, n, "n", "i", 1, 0, 10, &i, &err), KB_OK);
  assert_int_equal(i, 3);
  int b = 0;
  assert_int_equal(kb_json_get_bool(&f, n, "n", "t", 1, &b, &err), KB_OK);
  assert_int_equal(b, 1);
  /* absent and optional: untouched */
  i = 42;
  assert_int_equal(kb_json_get_int(&f, n, "n", "zz", 0, 0, 10, &i, &err), KB_OK);
  assert_int_equal(i, 42);
  assert_int_equal(err.code, KB_OK);

  assert_int_equal(kb_json_get_int(&f, n, "n", "f", 1, 0, 10, &i, &err), KB_EPARSE);
  assert_string_equal(err.msg, "g.json:5:26: \"n.f\" must be an integer between 0 and 10");
  kb_error_clear(&err);
  assert_int_equal(kb_json_get_int(&f, n, "n", "i", 1, 5, INT64_MAX, &i, &err), KB_EPARSE);
  assert_string_equal(err.msg, "g.json:5:36: \"n.i\" must be an integer >= 5");
  kb_error_clear(&err);
  kb_json_get_int(&f, n, "n", "i", 1, 0, 2, &i, &err);
  assert_string_equal(err.msg, "g.json:5:36: \"n.i\" must be an integer between 0 and 2");
  kb_error_clear(&err);
  kb_json_get_int(&f, n, "n", "i", 1, 1, INT32_MAX, &i, &err);
  assert_int_equal(err.code, KB_OK);
  kb_json_get_number(&f, n, "n", "s", 1, DBL_MIN, DBL_MAX, &d, &err);
  assert_string_equal(err.msg, "g.json:5:14: \"n.s\" must be a positive number");
  kb_error_clear(&err);
  kb_json_get_number(&f, n, "n", "f", 1, 0, 1, &d, &err);
  assert_string_equal(err.msg, "g.json:5:26: \"n.f\" must be at most 1");
  kb_error_clear(&err);
  kb_json_get_number(&f, n, "n", "f", 1, 3, 4, &d, &err);
  assert_string_equal(err.msg, "g.json:5:26: \"n.f\" must be a number between 3 and 4");
  kb_error_clear(&err);
  kb_json_get_string(&f, n, "n", "f", 1, &s, &err);
  assert_string_equal(err.msg, "g.json:5:26: \"n.f\" must be a string");
  kb_error_clear(&err);
  kb_json_get_bool(&f, n, "n", "s", 1, &b, &err);
  assert_string_equal(err.msg, "g.json:5:14: \"n.s\" must be true or false");
  kb_error_clear(&err);
  /* a missing required member is reported at its object */
  kb_json_get_string(&f, n, "n", "missing", 1, &s, &err);
  assert_string_equal(err.msg, "g.json:5:8: \"n.missing\" is required");
  kb_error_clear(&err);
  kb_json_get_string(&f, f.root, "", "missing", 1, &s, &err);
  assert_string_equal(err.msg, "g.json:1:1: \"missing\" is required");
  kb_error_clear(&err);
  json_t *arr = NULL;
  kb_json_get_array(&f, f.root, "", "b", 1, 0, 5, &arr, &err);
  assert_string_equal(err.msg, "g.json:3:8: \"b\" must be an array");
  kb_error_clear(&err);
  json_t *b_obj = json_object_get(f.root, "b");
  kb_json_get_array(&f, b_obj, "b", "c", 1, 3, 5, &arr, &err);
  assert_string_equal(err.msg, "g.json:3:14: \"b.c\" must have at least 3 items");
  kb_error_clear(&err);
  kb_json_get_array(&f, b_obj, "b", "c", 1, 0, 1, &arr, &err);
  assert_string_equal(err.msg, "g.json:3:14: \"b.c\" must have at most 1 item");
  kb_error_clear(&err);
  assert_int_equal(kb_json_get_array(&f, b_obj, "b", "c", 1, 2, 2, &arr, &err), KB_OK);
  assert_int_equal(json_array_size(arr), 2);
  kb_json_get_object(&f, f.root, "", "a", 1, &n, &err);
  assert_string_equal(err.msg, "g.json:2:8: \"a\" must be an object");
  kb_error_clear(&err);
  static const char *const kinds[] = {"uniform", "normal", NULL};
  int k = -1;
  kb_json_get_enum(&f, json_object_get(f.root, "n"), "n", "s", 1, kinds, &k, &err);
  assert_string_equal(err.msg, "g.json:5:14: \"n.s\" must be one of \"uniform\", \"normal\"");
  kb_error_clear(&err);
  static const char *const strs[] = {"x", "str", NULL};
  assert_int_equal(kb_json_get_enum(&f, json_object_get(f.root, "n"), "n", "s", 1, strs, &k, &err),
                   KB_OK);
  assert_int_equal(k, 1);
  kb_jsonfile_release(&f);
}

static void test_check_unknown(void **state) {
  (void)state;
  struct kb_jsonfile f;
  struct kb_error err = {0};
  const char *text = "{\n"
                     "  \"schema\": 1,\n"
                     "    \"zeta\": 2,\n"
                     "  \"inptus\": 3,\n"
                     "  \"sub\": {\"ok\": 1, \"bad\": 2}\n"
                     "}";
  assert_int_equal(kb_jsonfile_parse(&f, "task.json", text, &err), KB_OK);
  static const char *const allowed[] = {"schema", "sub", NULL};
  assert_int_equal(kb_jsonfile_check_unknown(&f, f.root, "", allowed, &err), KB_EPARSE);
  /* the first unknown key in the file, pointed at by its key */
  assert_string_equal(err.msg, "task.json:3:5: unknown field \"zeta\"");
  kb_error_clear(&err);
  static const char *const sub_allowed[] = {"ok", NULL};
  kb_jsonfile_check_unknown(&f, json_object_get(f.root, "sub"), "sub", sub_allowed, &err);
  assert_string_equal(err.msg, "task.json:5:20: unknown field \"sub.bad\"");
  kb_error_clear(&err);
  static const char *const all[] = {"schema", "zeta", "inptus", "sub", NULL};
  assert_int_equal(kb_jsonfile_check_unknown(&f, f.root, "", all, &err), KB_OK);
  kb_jsonfile_release(&f);
}

static void test_paths(void **state) {
  (void)state;
  char out[32];
  kb_json_path(out, sizeof out, "", "a");
  assert_string_equal(out, "a");
  kb_json_path(out, sizeof out, "x[2]", "a");
  assert_string_equal(out, "x[2].a");
  kb_json_index_path(out, sizeof out, "tasks", 12);
  assert_string_equal(out, "tasks[12]");
}

static void test_utf8(void **state) {
  (void)state;
  static const char good[] = "plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  assert_true(kb_json_utf8_valid(good, strlen(good)));
  assert_false(kb_json_utf8_valid("\xc3", 1));          /* cut short */
  assert_false(kb_json_utf8_valid("\xc0\xaf", 2));      /* overlong */
  assert_false(kb_json_utf8_valid("\xed\xa0\x80", 3));  /* surrogate */
  assert_false(kb_json_utf8_valid("a\0b", 3));          /* NUL */
  char *s = kb_json_utf8_sanitize("ok \xff\xc3\xa9 \xe2\x82");
  assert_non_null(s);
  assert_string_equal(s, "ok ?\xc3\xa9 ??");
  kb_free(s);
}

static void test_dump(void **state) {
  (void)state;
  json_t *o = json_pack("{s:i, s:s, s:[i,i]}", "b", 1, "a", "x\ny", "c", 1, 2);
  char *text = NULL;
  assert_int_equal(kb_json_dump_compact(o, &text), KB_OK);
  /* one line, keys in insertion order */
  assert_string_equal(text, "{\"b\":1,\"a\":\"x\\ny\",\"c\":[1,2]}");
  kb_free(text);
  json_decref(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_positions),     cmocka_unit_test(test_crlf_and_tabs),
      cmocka_unit_test(test_fail_message),  cmocka_unit_test(test_syntax_errors),
      cmocka_unit_test(test_load_file),     cmocka_unit_test(test_getters),
      cmocka_unit_test(test_check_unknown), cmocka_unit_test(test_paths),
      cmocka_unit_test(test_utf8),          cmocka_unit_test(test_dump),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
