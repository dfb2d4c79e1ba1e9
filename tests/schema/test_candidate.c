/* kb/hash.h and kb/candidate.h: SHA-256, source normalization, ids, the JSON form. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "kb/alloc.h"
#include "kb/candidate.h"
#include "kb/error.h"
#include "kb/hash.h"

static void test_sha256(void **state) {
  (void)state;
  char hex[65];
  struct kb_error err = {0};
  assert_int_equal(kb_sha256_hex("abc", 3, hex, &err), KB_OK);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert_int_equal(kb_sha256_hex("", 0, hex, &err), KB_OK);
  assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  struct kb_sha256 *h = kb_sha256_new();
  assert_non_null(h);
  assert_int_equal(kb_sha256_update(h, "a", 1), KB_OK);
  assert_int_equal(kb_sha256_update(h, "", 0), KB_OK);
  assert_int_equal(kb_sha256_update(h, "bc", 2), KB_OK);
  assert_int_equal(kb_sha256_final_hex(h, hex), KB_OK);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  kb_sha256_free(kb_sha256_new());
  kb_sha256_free(NULL);
}

static void expect_norm(const char *in, const char *want) {
  char *out = kb_source_normalize(in);
  assert_non_null(out);
  if (strcmp(out, want) != 0)
    fail_msg("normalize(\"%s\") = \"%s\", want \"%s\"", in, out, want);
  kb_free(out);
}

static void test_normalize(void **state) {
  (void)state;
  expect_norm("", "");
  expect_norm("\n\n \t\n", "");
  expect_norm("x", "x\n");
  expect_norm("a \r\nb\t\r\n\r\n\n", "a\nb\n");
  expect_norm("a\n\n  b  \n", "a\n\n  b\n");
  expect_norm("  lead\tkept\n", "  lead\tkept\n");
  expect_norm("a\rb\n", "a\rb\n"); /* a lone CR inside a line is content */
}

static const char src[] = "int kb_forward(void) {\n  return 0;\n}\n";

static void id_of(const char *task, const char *source, const char *knobs, const char *flags,
                  char out[65]) {
  struct kb_error err = {0};
  assert_int_equal(kb_candidate_id(task, source, knobs, flags, out, &err), KB_OK);
  assert_true(kb_candidate_id_valid(out));
}

static void test_id(void **state) {
  (void)state;
  char a[65];
  char b[65];
  /* pinned: ids are stored in Redis and HDF5, so the recipe must never change */
  id_of("sum", "int x;\n", "", "", a);
  assert_string_equal(a, "45bcdf048fe42e4066dc64905cdb93d2bd5ed7e7b15b81b246a757133c805d04");
  id_of("t1", src, "-DBLOCK=128", "-O3", a);
  /* whitespace-only edits keep the id */
  id_of("t1", "int kb_forward(void) {  \r\n  return 0;\t\r\n}", "-DBLOCK=128", "-O3", b);
  assert_string_equal(a, b);
  id_of("t1", "int kb_forward(void) {\n  return 0;\n}\n\n\n   \n", "-DBLOCK=128", "-O3", b);
  assert_string_equal(a, b);
  /* anything else changes it */
  id_of("t1", "int kb_forward(void) {\n  return 1;\n}\n", "-DBLOCK=128", "-O3", b);
  assert_string_not_equal(a, b);
  id_of("t1", "int kb_forward(void) {\n    return 0;\n}\n", "-DBLOCK=128", "-O3", b);
  assert_string_not_equal(a, b); /* leading indentation is content */
  id_of("t1", src, "-DBLOCK=256", "-O3", b);
  assert_string_not_equal(a, b);
  id_of("t1", src, "-DBLOCK=128", "-O2", b);
  assert_string_not_equal(a, b);
  id_of("t2", src, "-DBLOCK=128", "-O3", b);
  assert_string_not_equal(a, b);
  /* parts are separated: moving text between knobs and flags changes the id */
  id_of("t1", src, "-DBLOCK=128 -O3", "", b);
  assert_string_not_equal(a, b);
}

static void test_init(void **state) {
  (void)state;
  struct kb_candidate c;
  struct kb_error err = {0};
  assert_int_equal(kb_candidate_init(&c, "t1", "naive", "seed", "int x;  \r\n", NULL, NULL, &err),
                   KB_OK);
  assert_string_equal(c.task, "t1");
  assert_string_equal(c.name, "naive");
  assert_string_equal(c.generator, "seed");
  assert_string_equal(c.source, "int x;\n");
  assert_string_equal(c.knobs, "");
  assert_string_equal(c.flags, "");
  assert_string_equal(c.parents[0], "");
  assert_true(c.created > 1.7e9);
  char want[65];
  id_of("t1", "int x;\n", "", "", want);
  assert_string_equal(c.id, want);
  kb_candidate_release(&c);
  kb_candidate_release(&c);
  kb_candidate_release(NULL);

  assert_int_equal(kb_candidate_init(&c, "T1", "n", "seed", "", "", "", &err), KB_EINVAL);
  assert_string_equal(err.msg, "candidate: invalid task id \"T1\"");
  kb_error_clear(&err);
  assert_int_equal(kb_candidate_init(&c, "t1", "n", "magic", "", "", "", &err), KB_EINVAL);
  assert_string_equal(err.msg, "candidate: unknown generator \"magic\"");
  kb_error_clear(&err);
  assert_int_equal(kb_candidate_init(&c, "t1", "", "seed", "", "", "", &err), KB_EINVAL);
  kb_error_clear(&err);
  assert_int_equal(kb_candidate_init(&c, "t1", "n", "seed", "caf\xe9\n", "", "", &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "utf-8"));
}

static void test_json_round_trip(void **state) {
  (void)state;
  struct kb_candidate c;
  struct kb_error err = {0};
  assert_int_equal(kb_candidate_init(&c, "mm", "llm-7: tile \"64\"", "llm",
                                     "// caf\xc3\xa9 \\ \"q\"\n\tint x;\n", "-DT=64", "-O3", &err),
                   KB_OK);
  memset(c.parents[0], 'a', 64);
  memset(c.parents[1], '0', 64);
  c.created = 1764460800.25;
  char *text = NULL;
  assert_int_equal(kb_candidate_to_json(&c, &text, &err), KB_OK);
  assert_null(strchr(text, '\n'));
  assert_non_null(strstr(text, "{\"schema\":\"kernelbrain.candidate/1\",\"id\":\""));
  struct kb_candidate d;
  assert_int_equal(kb_candidate_from_json(text, "redis cand", &d, &err), KB_OK);
  assert_string_equal(d.id, c.id);
  assert_string_equal(d.task, c.task);
  assert_string_equal(d.name, c.name);
  assert_string_equal(d.generator, c.generator);
  assert_string_equal(d.parents[0], c.parents[0]);
  assert_string_equal(d.parents[1], c.parents[1]);
  assert_string_equal(d.knobs, c.knobs);
  assert_string_equal(d.flags, c.flags);
  assert_string_equal(d.source, c.source);
  assert_true(d.created == c.created);
  char *again = NULL;
  assert_int_equal(kb_candidate_to_json(&d, &again, &err), KB_OK);
  assert_string_equal(text, again);
  kb_free(again);
  kb_free(text);
  kb_candidate_release(&d);

  /* a candidate whose id does not match its content is not encoded */
  c.id[0] = c.id[0] == 'a' ? 'b' : 'a';
  assert_int_equal(kb_candidate_to_json(&c, &text, &err), KB_EINVAL);
  assert_null(text);
  assert_non_null(strstr(err.msg, "\"id\" does not match"));
  kb_candidate_release(&c);
}

/* Encodes a fresh candidate, edits its JSON with `edit`, and expects from_json to fail with
 * `want` in the message. */
static void expect_reject(void (*edit)(json_t *), const char *want) {
  struct kb_candidate c;
  struct kb_error err = {0};
  assert_int_equal(kb_candidate_init(&c, "t1", "naive", "seed", src, "", "", &err), KB_OK);
  char *text = NULL;
  assert_int_equal(kb_candidate_to_json(&c, &text, &err), KB_OK);
  kb_candidate_release(&c);
  json_t *o = json_loads(text, 0, NULL);
  kb_free(text);
  edit(o);
  char *edited = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  int rc = kb_candidate_from_json(edited, "cand", &c, &err);
  if (rc != KB_EPARSE || strstr(err.msg, want) == NULL)
    fail_msg("%s: rc %d \"%s\", want \"%s\"", edited, rc, err.msg, want);
  free(edited);
  assert_null(c.source);
}

static void edit_source(json_t *o) { json_object_set_new(o, "source", json_string("int y;\n")); }
static void edit_id(json_t *o) { json_object_set_new(o, "id", json_string("ABC")); }
static void edit_extra(json_t *o) { json_object_set_new(o, "score", json_integer(1)); }
static void edit_gen(json_t *o) { json_object_set_new(o, "generator", json_string("magic")); }
static void edit_no_knobs(json_t *o) { json_object_del(o, "knobs"); }
static void edit_created(json_t *o) { json_object_set_new(o, "created", json_real(-1)); }
static void edit_schema(json_t *o) { json_object_set_new(o, "schema", json_string("x/1")); }
static void edit_parents(json_t *o) {
  const char *id = json_string_value(json_object_get(o, "id"));
  json_object_set_new(o, "parents", json_pack("[s,s,s]", id, id, id));
}
static void edit_parent_bad(json_t *o) {
  json_object_set_new(o, "parents", json_pack("[s]", "xyz"));
}

static void test_json_rejects(void **state) {
  (void)state;
  expect_reject(edit_source, "cand:1:42: \"id\" does not match the candidate's task, source");
  expect_reject(edit_id, "cand:1:");
  expect_reject(edit_id, "\"id\" must be 64 lowercase hex digits");
  expect_reject(edit_extra, "unknown field \"score\"");
  expect_reject(edit_gen, "\"generator\" must be one of \"seed\", \"tune\", \"llm\", "
                          "\"crossover\", \"archive\"");
  expect_reject(edit_no_knobs, "cand:1:1: \"knobs\" is required");
  expect_reject(edit_created, "\"created\" must be a non-negative number");
  expect_reject(edit_schema, "\"schema\" must be \"kernelbrain.candidate/1\"");
  expect_reject(edit_parents, "\"parents\" must have at most 2 items");
  expect_reject(edit_parent_bad, "\"parents[0]\" must be 64 lowercase hex digits");
  struct kb_candidate c;
  struct kb_error err = {0};
  assert_int_equal(kb_candidate_from_json("{\"schema\": ", "cand", &c, &err), KB_EPARSE);
  assert_non_null(strstr(err.msg, "cand:1:"));
}

static void edit_format_bad(json_t *o) { json_object_set_new(o, "format", json_string("cu")); }
/* a native candidate's JSON relabelled kernelbench: its id no longer matches */
static void edit_format_kb(json_t *o) {
  json_object_set_new(o, "format", json_string("kernelbench"));
}

/* The candidate format: native ids and JSON unchanged, kernelbench hashed and written. */
static void test_format(void **state) {
  (void)state;
  struct kb_error err = {0};
  assert_string_equal(kb_cand_format_name(KB_FORMAT_KERNELBENCH), "kernelbench");
  assert_null(kb_cand_format_name(7));
  assert_int_equal(kb_cand_format_from_name("native"), KB_FORMAT_NATIVE);
  assert_int_equal(kb_cand_format_from_name("KernelBench"), -1);
  assert_int_equal(kb_cand_format_of_path("/b/seeds/model_new.py"), KB_FORMAT_KERNELBENCH);
  assert_int_equal(kb_cand_format_of_path("naive.cu"), KB_FORMAT_NATIVE);
  assert_int_equal(kb_cand_format_of_path(".py"), KB_FORMAT_NATIVE);
  char native[65], kb[65];
  assert_int_equal(kb_candidate_id_format("t1", src, "", "", KB_FORMAT_NATIVE, native, &err),
                   KB_OK);
  char plain[65];
  id_of("t1", src, "", "", plain);
  assert_string_equal(native, plain);
  assert_int_equal(kb_candidate_id_format("t1", src, "", "", KB_FORMAT_KERNELBENCH, kb, &err),
                   KB_OK);
  assert_string_not_equal(native, kb);
  assert_int_equal(kb_candidate_id_format("t1", src, "", "", 9, kb, &err), KB_EINVAL);

  struct kb_candidate c, back;
  assert_int_equal(kb_candidate_init(&c, "t1", "model_new", "seed", src, "", "", &err), KB_OK);
  assert_int_equal(c.format, KB_FORMAT_NATIVE);
  char *text = NULL;
  assert_int_equal(kb_candidate_to_json(&c, &text, &err), KB_OK);
  assert_null(strstr(text, "\"format\"")); /* native: written as before */
  kb_free(text);
  assert_int_equal(kb_candidate_set_format(&c, 9, &err), KB_EINVAL);
  assert_string_equal(c.id, native);
  assert_int_equal(kb_candidate_set_format(&c, KB_FORMAT_KERNELBENCH, &err), KB_OK);
  assert_int_equal(kb_candidate_id_format("t1", src, "", "", KB_FORMAT_KERNELBENCH, kb, &err),
                   KB_OK);
  assert_string_equal(c.id, kb);
  assert_int_equal(kb_candidate_to_json(&c, &text, &err), KB_OK);
  assert_non_null(strstr(text, "\"format\":\"kernelbench\""));
  assert_int_equal(kb_candidate_from_json(text, "cand", &back, &err), KB_OK);
  assert_int_equal(back.format, KB_FORMAT_KERNELBENCH);
  assert_string_equal(back.id, c.id);
  kb_candidate_release(&back);
  kb_free(text);
  kb_candidate_release(&c);
  expect_reject(edit_format_bad, "\"format\" must be one of \"native\", \"kernelbench\"");
  expect_reject(edit_format_kb, "\"id\" does not match");
}

static void test_valid_helpers(void **state) {
  (void)state;
  assert_false(kb_candidate_id_valid(""));
  assert_false(kb_candidate_id_valid(
      "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
  assert_true(kb_candidate_name_valid("tune: BLOCK=128 ~ok"));
  assert_false(kb_candidate_name_valid("tab\there"));
  assert_false(kb_candidate_name_valid("caf\xc3\xa9"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sha256),         cmocka_unit_test(test_normalize),
      cmocka_unit_test(test_id),             cmocka_unit_test(test_init),
      cmocka_unit_test(test_json_round_trip), cmocka_unit_test(test_json_rejects),
      cmocka_unit_test(test_valid_helpers),  cmocka_unit_test(test_format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
