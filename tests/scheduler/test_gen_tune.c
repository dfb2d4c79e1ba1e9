/* The tune generator: knob parsing, evolutionary proposals that never repeat a knob set (also
 * across a restart, through Redis), exhaustion. Real redis-kbt_group_redis. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gen_fixture.h"
#include "gen_tune.h"
#include "kb/catalog.h"
#include "kb/error.h"
#include "kb/redis.h"
#include "kb/result.h"
#include "redis_group.h"


/* Two knobs, 3 x 2 = 6 knob sets; the default (BLOCK=256, UNROLL=1) is the base itself. */
static const char *SRC =
    "#include \"kb_kernel.h\"\n"
    "// kb:param BLOCK 128 256 512\n"
    "#ifndef BLOCK\n"
    "#define BLOCK 256\n"
    "#endif\n"
    "\n"
    "  // kb:param UNROLL 1 4\n"
    "\n"
    "#ifndef UNROLL\n"
    "#  define UNROLL 1\n"
    "#endif\n"
    "int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *s) {\n"
    "  return BLOCK * UNROLL * 0;\n"
    "}\n";

static void test_parse(void **state) {
  (void)state;
  struct kb_knob_space s;
  struct kb_error err = {0};
  if (kb__tune_parse(SRC, &s, &err))
    fail_msg("%s", err.msg);
  assert_int_equal(s.n, 2);
  assert_string_equal(s.knobs[0].name, "BLOCK");
  assert_int_equal(s.knobs[0].n_values, 3);
  assert_int_equal(s.knobs[0].def, 1);
  assert_string_equal(s.knobs[1].name, "UNROLL");
  assert_string_equal(s.knobs[1].values[1], "4");
  assert_int_equal(s.knobs[1].def, 0);
  assert_int_equal(kb__tune_space_size(&s), 6);
  int idx[2] = {2, 1};
  char str[64];
  assert_int_equal(kb__tune_knob_string(&s, idx, str, sizeof str), KB_OK);
  assert_string_equal(str, "-DBLOCK=512 -DUNROLL=4");
  assert_int_equal(kb__tune_knob_string(&s, idx, str, 10), KB_EINVAL);

  assert_int_equal(kb__tune_parse("int kb_forward(void);\n", &s, &err), KB_OK);
  assert_int_equal(s.n, 0);

  struct {
    const char *src, *want;
  } bad[] = {
      {"// kb:param N 1 2\nint x;\n", "line 1: \"kb:param N\" must be followed by \"#ifndef N\""},
      {"\n// kb:param N 1 2\n#ifndef N\n#define M 1\n#endif\n", "line 4: \"#ifndef N\" must be followed"},
      {"// kb:param 9N 1\n#ifndef 9N\n#define 9N 1\n#endif\n", "line 1: knob name must be a C identifier"},
      {"// kb:param N 1 1\n#ifndef N\n#define N 1\n#endif\n", "line 1: knob N lists 1 twice"},
      {"// kb:param N\n#ifndef N\n#define N 1\n#endif\n", "line 1: knob N has no values"},
      {"// kb:param N 1 $(rm)\n#ifndef N\n#define N 1\n#endif\n", "values must be integers or identifiers"},
      {"// kb:param N 1\n#ifndef N\n#define N 1\n#endif\n// kb:param N 2\n#ifndef N\n#define N 2\n#endif\n",
       "line 5: knob N is declared twice"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kb_error_clear(&err);
    assert_int_equal(kb__tune_parse(bad[i].src, &s, &err), KB_EPARSE);
    if (strstr(err.msg, bad[i].want) == NULL)
      fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, bad[i].want);
  }
}

/* Proposes until `n` proposals were made (each committed), appending their knob strings. */
static int propose_n(struct kb_tune *t, struct kb_task_pop *tp, int n, char seen[][64],
                     int *n_seen, struct kb_tune_proposal *last) {
  struct kb_error err = {0};
  int made = 0;
  for (; made < n; made++) {
    struct kb_tune_proposal p;
    int rc = kb__tune_propose(t, tp, &p, &err);
    if (rc == KB_EEMPTY)
      break;
    if (rc)
      fail_msg("propose: %s", err.msg);
    assert_string_equal(p.cand.generator, "tune");
    assert_non_null(strstr(p.cand.knobs, "-DBLOCK="));
    assert_true(p.cand.parents[0][0] != '\0');
    for (int i = 0; i < *n_seen; i++)
      if (strcmp(seen[i], p.cand.knobs) == 0)
        fail_msg("knob set \"%s\" proposed twice", p.cand.knobs);
    assert_string_not_equal(p.cand.knobs, "-DBLOCK=256 -DUNROLL=1"); /* the base itself */
    snprintf(seen[(*n_seen)++], 64, "%s", p.cand.knobs);
    if (kb__tune_commit(t, &p, &err))
      fail_msg("commit: %s", err.msg);
    if (last) {
      kb_candidate_release(&last->cand);
      *last = p;
    } else {
      kb_candidate_release(&p.cand);
    }
  }
  return made;
}

static void test_no_repeats_across_restart_then_exhausted(void **state) {
  (void)state;
  struct kb_redis *r = kbg_connect(kbt_group_redis.addr);
  struct kb_queue q;
  kbg_campaign(r, "tune1", "{}", 0, &q);
  struct kb_candidate base, plain;
  kbg_candidate(&q, "t", "blocked", "seed", SRC, "", &base);
  kbg_candidate(&q, "t", "plain", "seed", "int kb_forward(void) { return 0; }\n", "", &plain);
  struct kb_population pop;
  kb__population_init(&pop, 3);
  kbg_result(&pop, &plain, 1, 50, KB_STATUS_OK);
  kbg_result(&pop, &base, 1, 100, KB_STATUS_OK);
  struct kb_task_pop *tp = kb__population_task(&pop, "t");

  char seen[16][64];
  int n_seen = 0;
  struct kb_tune *t = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__tune_new(&q, 7, &t, &err), KB_OK);
  assert_int_equal(propose_n(t, tp, 2, seen, &n_seen, NULL), 2);
  kb__tune_free(t);

  /* a restarted scheduler: new generator, same Redis */
  assert_int_equal(kb__tune_new(&q, 7, &t, &err), KB_OK);
  assert_int_equal(propose_n(t, tp, 10, seen, &n_seen, NULL), 3); /* 6 sets - base - 2 */
  assert_int_equal(n_seen, 5);
  struct kb_tune_proposal p;
  assert_int_equal(kb__tune_propose(t, tp, &p, &err), KB_EEMPTY);
  assert_true(kb__tune_exhausted(t, tp));
  /* a new member with knobs is a new base: no longer exhausted */
  struct kb_candidate other;
  kbg_candidate(&q, "t", "other", "llm",
                "// kb:param W 1 2\n#ifndef W\n#define W 1\n#endif\nint kb_forward(void);\n", "",
                &other);
  kbg_result(&pop, &other, 0, 0, KB_STATUS_OK);
  assert_false(kb__tune_exhausted(t, tp));
  assert_int_equal(kb__tune_propose(t, tp, &p, &err), KB_OK);
  assert_string_equal(p.cand.knobs, "-DW=2");
  assert_string_equal(p.cand.parents[0], other.id);
  kb_candidate_release(&p.cand);
  kb__tune_free(t);
  kb_candidate_release(&other);
  kb__population_release(&pop);
  kb_candidate_release(&base);
  kb_candidate_release(&plain);
  kb_redis_free(r);
}

static int differing_knobs(const char *a, const char *b) {
  struct kb_knob_space s;
  struct kb_error err = {0};
  kb__tune_parse(SRC, &s, &err);
  int n = 0;
  for (int k = 0; k < s.n; k++) {
    char want[KB_ID_MAX + 4];
    snprintf(want, sizeof want, "-D%s=", s.knobs[k].name);
    const char *x = strstr(a, want), *y = strstr(b, want);
    assert_non_null(x);
    assert_non_null(y);
    n += strcspn(x, " ") != strcspn(y, " ") || strncmp(x, y, strcspn(x, " ")) != 0;
  }
  return n;
}

static void test_mutates_the_best(void **state) {
  (void)state;
  struct kb_redis *r = kbg_connect(kbt_group_redis.addr);
  struct kb_queue q;
  kbg_campaign(r, "tune2", "{}", 0, &q);
  struct kb_candidate base;
  kbg_candidate(&q, "t", "blocked", "seed", SRC, "", &base);
  struct kb_population pop;
  kb__population_init(&pop, 3);
  kbg_result(&pop, &base, 1, 100, KB_STATUS_OK);
  struct kb_task_pop *tp = kb__population_task(&pop, "t");
  struct kb_tune *t = NULL;
  struct kb_error err = {0};
  assert_int_equal(kb__tune_new(&q, 11, &t, &err), KB_OK);
  char seen[16][64];
  int n_seen = 0;
  struct kb_tune_proposal first;
  memset(&first, 0, sizeof first);
  assert_int_equal(propose_n(t, tp, 1, seen, &n_seen, &first), 1);
  /* with only the base timed, a proposal mutates one knob of the base */
  assert_string_equal(first.cand.parents[0], base.id);
  assert_int_equal(differing_knobs(first.cand.knobs, "-DBLOCK=256 -DUNROLL=1"), 1);
  /* the first proposal turns out 10x faster: the next one breeds from it */
  kb_catalog_put_candidate(&q, &first.cand, &err);
  kbg_result(&pop, &first.cand, 1, 10, KB_STATUS_OK);
  int from_best = 0;
  for (int i = 0; i < 3; i++) {
    struct kb_tune_proposal p;
    memset(&p, 0, sizeof p);
    if (propose_n(t, tp, 1, seen, &n_seen, &p) != 1)
      break;
    from_best += strcmp(p.cand.parents[0], first.cand.id) == 0 ||
                 strcmp(p.cand.parents[1], first.cand.id) == 0;
    kb_candidate_release(&p.cand);
  }
  assert_true(from_best >= 1);
  kb_candidate_release(&first.cand);
  kb__tune_free(t);
  kb__population_release(&pop);
  kb_candidate_release(&base);
  kb_redis_free(r);
}

/* A kernelbench (ModelNew) candidate is never a base, even with knob lines in its CUDA string:
 * its build takes no -D flags. A native base next to it is still tuned. */
static void test_kernelbench_not_tuned(void **state) {
  (void)state;
  struct kb_redis *r = kbg_connect(kbt_group_redis.addr);
  struct kb_queue q;
  kbg_campaign(r, "tune3", "{}", 0, &q);
  char py[2048];
  snprintf(py, sizeof py,
           "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
           "src = r\"\"\"\n%s\"\"\"\n"
           "class ModelNew(torch.nn.Module):\n    pass\n",
           SRC);
  struct kb_candidate kbc;
  struct kb_error err = {0};
  assert_int_equal(kb_candidate_init(&kbc, "t", "modelnew", "seed", py, "", "", &err), KB_OK);
  struct kb_knob_space space;
  assert_int_equal(kb__tune_parse(kbc.source, &space, &err), KB_OK);
  assert_int_equal(space.n, 2); /* the knob lines are there */
  assert_int_equal(kb_candidate_set_format(&kbc, KB_FORMAT_KERNELBENCH, &err), KB_OK);
  assert_int_equal(kb_catalog_put_candidate(&q, &kbc, &err), KB_OK);
  struct kb_population pop;
  kb__population_init(&pop, 3);
  kbg_result(&pop, &kbc, 1, 10, KB_STATUS_OK);
  struct kb_task_pop *tp = kb__population_task(&pop, "t");
  struct kb_tune *t = NULL;
  assert_int_equal(kb__tune_new(&q, 5, &t, &err), KB_OK);
  struct kb_tune_proposal p;
  assert_int_equal(kb__tune_propose(t, tp, &p, &err), KB_EEMPTY);
  struct kb_candidate base;
  kbg_candidate(&q, "t", "blocked", "seed", SRC, "", &base);
  kbg_result(&pop, &base, 1, 100, KB_STATUS_OK);
  tp = kb__population_task(&pop, "t");
  assert_int_equal(kb__tune_propose(t, tp, &p, &err), KB_OK);
  assert_string_equal(p.base, base.id);
  assert_int_equal(p.cand.format, KB_FORMAT_NATIVE);
  kb_candidate_release(&p.cand);
  kb__tune_free(t);
  kb__population_release(&pop);
  kb_candidate_release(&kbc);
  kb_candidate_release(&base);
  kb_redis_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_no_repeats_across_restart_then_exhausted),
      cmocka_unit_test(test_mutates_the_best),
      cmocka_unit_test(test_kernelbench_not_tuned),
  };
  return cmocka_run_group_tests(tests, kbt_redis_group_setup, kbt_redis_group_teardown);
}
