/* The worked examples of docs/candidate-abi.md cannot rot: the copies on the page are the
 * files in examples/candidates/; every example builds with its default and with every value of
 * its `// kb:param` knobs (cc for .c, nvcc for .cu when nvcc was found at configure time) and
 * passes the import allow-list; the host example gives the right outputs for its task. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "compile.h"
#include "compile_pool.h"
#include "compile_util.h"
#include "host_backend.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/error.h"
#include "kb/result.h"
#include "kb/task.h"

#define ABI_DIR KB_SOURCE_DIR "/common/include"
#define EXAMPLES "examples/candidates"
#define EXAMPLES_DIR KB_SOURCE_DIR "/" EXAMPLES
#define DOC KB_SOURCE_DIR "/docs/candidate-abi.md"

static char cache[64];

static int group_setup(void **state) {
  (void)state;
  snprintf(cache, sizeof cache, "/tmp/kb-test-examples.XXXXXX");
  return mkdtemp(cache) == NULL ? -1 : 0;
}

static int group_teardown(void **state) {
  (void)state;
  kb_remove_tree(cache, NULL);
  return 0;
}

static char *example_source(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/%s", KB_SOURCE_DIR, EXAMPLES, name);
  return tu_slurp(path);
}

/* The knob settings to build `source` with: "" (the defaults), then "-DNAME=v" for every value
 * of every `// kb:param NAME v1 v2 ...` line. New array of `*n` new strings. */
static char **knob_settings(const char *source, int *n) {
  char **out = kb_calloc(1, sizeof *out);
  assert_non_null(out);
  out[0] = kb_strdup("");
  *n = 1;
  for (const char *p = strstr(source, "// kb:param "); p != NULL;
       p = strstr(p + 1, "// kb:param ")) {
    /* the words after "// kb:param ": the name, then its values */
    const char *w = p + strlen("// kb:param ");
    const char *eol = w + strcspn(w, "\n");
    char name[64] = "";
    for (int word = 0; w < eol; word++) {
      while (w < eol && *w == ' ')
        w++;
      size_t len = strcspn(w, " \n");
      if (len == 0)
        break;
      if (word == 0) {
        assert_true(len < sizeof name);
        memcpy(name, w, len);
        name[len] = '\0';
      } else {
        out = kb_reallocarray(out, (size_t)*n + 1, sizeof *out);
        assert_non_null(out);
        struct kb_buf b;
        kb_buf_init(&b);
        assert_int_equal(kb_buf_addf(&b, "-D%s=%.*s", name, (int)len, w), KB_OK);
        out[(*n)++] = kb_buf_detach(&b);
      }
      w += len;
    }
  }
  return out;
}

/* Each "<!-- file: PATH -->" in the doc is followed by a fenced block holding exactly PATH's
 * contents, and every example is shown. */
static void test_doc_shows_the_files(void **state) {
  (void)state;
  char *doc = tu_slurp(DOC);
  int shown = 0;
  for (const char *p = strstr(doc, "<!-- file: "); p != NULL; p = strstr(p + 1, "<!-- file: ")) {
    const char *path = p + strlen("<!-- file: ");
    const char *end = strstr(path, " -->");
    assert_non_null(end);
    char rel[256];
    snprintf(rel, sizeof rel, "%.*s", (int)(end - path), path);
    const char *fence = strstr(end, "\n```");
    assert_non_null(fence);
    const char *body = strchr(fence + 1, '\n');
    assert_non_null(body);
    body++;
    const char *close = strstr(body, "\n```\n");
    assert_non_null(close);
    char full[512];
    snprintf(full, sizeof full, "%s/%s", KB_SOURCE_DIR, rel);
    char *file = tu_slurp(full);
    size_t len = (size_t)(close - body) + 1; /* with the file's last newline */
    if (strlen(file) != len || memcmp(file, body, len) != 0)
      fail_msg("docs/candidate-abi.md: the copy of %s differs from the file", rel);
    kb_free(file);
    shown++;
  }
  int n_c = 0, n_cu = 0;
  char **c = tu_list_files(EXAMPLES_DIR, ".c", &n_c);
  char **cu = tu_list_files(EXAMPLES_DIR, ".cu", &n_cu);
  for (int i = 0; i < n_c + n_cu; i++) {
    char marker[256];
    snprintf(marker, sizeof marker, "<!-- file: %s/%s -->", EXAMPLES, i < n_c ? c[i] : cu[i - n_c]);
    if (strstr(doc, marker) == NULL)
      fail_msg("docs/candidate-abi.md does not show %s", marker + 11);
  }
  assert_int_equal(shown, n_c + n_cu);
  assert_true(n_c >= 1 && n_cu >= 2);
  tu_free_names(c, n_c);
  tu_free_names(cu, n_cu);
  kb_free(doc);
}

static void test_host_examples_build(void **state) {
  (void)state;
  struct kb__compiler cc;
  struct kb_error err = {0};
  char dir[128];
  snprintf(dir, sizeof dir, "%s/cc", cache);
  if (kb__compiler_init(&cc, dir, NULL, ABI_DIR, &err) != KB_OK)
    fail_msg("%s", err.msg);
  int n = 0;
  char **names = tu_list_files(EXAMPLES_DIR, ".c", &n);
  for (int i = 0; i < n; i++) {
    char *source = example_source(names[i]);
    int n_knobs = 0;
    char **knobs = knob_settings(source, &n_knobs);
    for (int k = 0; k < n_knobs; k++) {
      struct kb__build b;
      /* the examples must build cleanly: warnings are errors here */
      tu_build(&cc, source, knobs[k], "-Wall -Wextra -Werror", NULL, &b);
      if (!b.ok)
        fail_msg("%s %s: %s\n%s", names[i], knobs[k], b.reason, b.log ? b.log : "");
      kb__build_release(&b);
      kb_free(knobs[k]);
    }
    print_message("%s: built with %d knob settings\n", names[i], n_knobs);
    kb_free(knobs);
    kb_free(source);
  }
  tu_free_names(names, n);
  kb__compiler_release(&cc);
}

/* The host example computes its task: smoke tier on every input set, for every knob value. */
static void test_host_example_is_right(void **state) {
  (void)state;
  struct kb_error err = {0};
  struct kb_host_backend *hb = NULL;
  struct kb_task task;
  struct kb_campaign ladder;
  char dir[128];
  snprintf(dir, sizeof dir, "%s/host", cache);
  setenv("KB_INCLUDE_DIR", ABI_DIR, 1);
  if (kb_host_backend_new(dir, NULL, &hb, &err) != KB_OK)
    fail_msg("%s", err.msg);
  if (kb_task_load(KB_SOURCE_DIR "/tasks/host/matmul", &task, &err) != KB_OK)
    fail_msg("%s", err.msg);
  kb_campaign_default_ladder(&ladder);
  char *source = example_source("matmul_tiled.c");
  int n_knobs = 0;
  char **knobs = knob_settings(source, &n_knobs);
  for (int k = 0; k < n_knobs; k++) {
    struct kb_candidate c;
    struct kb_result r;
    assert_int_equal(kb_candidate_init(&c, task.id, "example", "seed", source, knobs[k], "",
                                       &err),
                     KB_OK);
    kb_result_init(&r);
    struct kb_tier smoke = ladder.tiers[1];
    smoke.input_sets = 0; /* all of them */
    if (kb_host_backend_evaluate(hb, &task, &c, &smoke, 1, &r, &err) != KB_OK)
      fail_msg("evaluate: %s", err.msg);
    if (r.status != KB_STATUS_OK)
      fail_msg("matmul_tiled.c %s: %s: %s", knobs[k], kb_status_name(r.status), r.reason);
    assert_int_equal(r.sets_checked, task.n_sets);
    kb_result_release(&r);
    kb_candidate_release(&c);
    kb_free(knobs[k]);
  }
  kb_free(knobs);
  kb_free(source);
  kb_task_release(&task);
  kb_host_backend_free(hb);
}

static void test_cuda_examples_build(void **state) {
  (void)state;
#ifndef KB_NVCC
  skip();
#else
  struct kb__compiler nvcc;
  struct kb_error err = {0};
  if (kb__compiler_init_cuda(&nvcc, KB_TEST_NVCC_CACHE, KB_NVCC, ABI_DIR, "sm_90", &err) !=
      KB_OK)
    fail_msg("%s", err.msg);
  int n = 0;
  char **names = tu_list_files(EXAMPLES_DIR, ".cu", &n);
  struct kb__compile_pool *p = NULL;
  assert_int_equal(kb__compile_pool_new(&nvcc, 2, 64, &p, &err), KB_OK);
  char *labels[64];
  int jobs = 0;
  for (int i = 0; i < n; i++) {
    char *source = example_source(names[i]);
    int n_knobs = 0;
    char **knobs = knob_settings(source, &n_knobs);
    for (int k = 0; k < n_knobs; k++) {
      assert_true(jobs < 64);
      struct kb__compile_req req = {.source = source, .knobs = knobs[k],
                                    .flags = "-Xcompiler -Wall,-Wextra,-Werror"};
      assert_int_equal(kb__compile_pool_submit(p, (uint64_t)jobs, &req, &err), KB_OK);
      struct kb_buf label;
      kb_buf_init(&label);
      assert_int_equal(kb_buf_addf(&label, "%s %s", names[i], knobs[k]), KB_OK);
      labels[jobs++] = kb_buf_detach(&label);
      kb_free(knobs[k]);
    }
    kb_free(knobs);
    kb_free(source);
  }
  for (int k = 0; k < jobs; k++) {
    struct kb__compiled done;
    kb__compiled_init(&done);
    int got = 0;
    assert_int_equal(kb__compile_pool_wait(p, 300, &done, &got, &err), KB_OK);
    assert_true(got);
    assert_int_equal(done.rc, KB_OK);
    const struct kb__build *b = &done.build;
    if (!b->ok)
      fail_msg("%s: %s\n%s", labels[done.tag], b->reason, b->log ? b->log : "");
    assert_int_equal(b->kernels, 1);
    assert_true(b->registers > 0);
    assert_int_equal(b->spill_store_bytes, 0);
    print_message("%-26s %d registers, %d B shared%s\n", labels[done.tag], b->registers,
                  b->shared_bytes, b->cached ? " (cached)" : "");
    kb__compiled_release(&done);
  }
  kb__compile_pool_free(p);
  for (int k = 0; k < jobs; k++)
    kb_free(labels[k]);
  tu_free_names(names, n);
  kb__compiler_release(&nvcc);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_doc_shows_the_files),
      cmocka_unit_test(test_host_examples_build),
      cmocka_unit_test(test_host_example_is_right),
      cmocka_unit_test(test_cuda_examples_build),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
