/* The archive generator (gen_archive.h) over a real archive folder and redis-server: fitting
 * entries only, best first, one already in the catalog skipped; prompt examples and crossover
 * parents, and both in the llm generator's rendered prompts. The archive itself is tested in
 * tests/common/test_archive.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "archive_fixture.h"
#include "gen_archive.h"
#include "gen_fixture.h"
#include "gen_llm.h"
#include "kb/alloc.h"
#include "kb/archive.h"
#include "kb/compress.h"
#include "kb/error.h"
#include "kb/fs.h"
#include "kb/redis.h"
#include "redis_group.h"

/* The generator: proposals, examples, crossover parents. */
static void test_generator(void **state) {
  (void)state;
  char dir[64];
  kbt_archive_tmpdir(dir, sizeof dir);
  struct kb_task sum, sum2, other, gemm;
  kbt_archive_task("sum", "reduction", 1024, &sum);
  kbt_archive_task("sum", "reduction", 2048, &sum2); /* same id, another shape: does not fit */
  kbt_archive_task("norm", "reduction", 512, &other);
  kbt_archive_task("mm", "gemm", 64, &gemm);
  struct kb_archive_entry e;
  struct kb_error err = {0};
  struct { const struct kb_task *t; int k; double s; const char *gpu; } put[] = {
      {&sum, 1, 1.5, "cpu"}, {&sum, 2, 3.0, "cpu"}, {&sum, 2, 2.0, "other-cpu"},
      {&sum, 3, 1.2, "cpu"}, {&sum2, 4, 9.0, "cpu"}, {&other, 5, 4.0, "cpu"},
      {&gemm, 6, 8.0, "cpu"}};
  for (size_t i = 0; i < sizeof put / sizeof put[0]; i++) {
    kbt_archive_entry(put[i].t, put[i].k, put[i].s, put[i].gpu, &e);
    assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
    kb_archive_entry_release(&e);
  }
  struct kb_redis *r = kbg_connect(kbt_group_redis.addr);
  struct kb_queue q;
  kbg_campaign(r, "arch1", "{}", 0, &q);
  /* kernel 3 is already a candidate of this campaign (as a seed would be) */
  char src3[512];
  kbt_archive_source(3, src3, sizeof src3);
  struct kb_candidate seed;
  kbg_candidate(&q, "sum", "k3", "seed", src3, "", &seed);
  struct kb_gen_archive_cfg cfg = {.enabled = 1, .propose = 10, .examples = 2, .save = 3};
  struct kb_gen_archive *a = NULL;
  if (kb__gen_archive_new(&q, &cfg, dir, &a, &err))
    fail_msg("%s", err.msg);
  assert_int_equal(kb__gen_archive_size(a), 7);
  /* fitting: kernels 2 (best, once for two GPUs), 1; 3 is known; 4 has another shape */
  const char *want[] = {"archive-k2", "archive-k1"};
  for (int i = 0; i < 2; i++) {
    assert_true(kb__gen_archive_can_propose(a, &sum));
    struct kb_candidate c;
    if (kb__gen_archive_propose(a, &sum, &c, &err))
      fail_msg("%s", err.msg);
    assert_string_equal(c.name, want[i]);
    assert_string_equal(c.generator, "archive");
    assert_string_equal(c.task, "sum");
    kb_candidate_release(&c);
  }
  struct kb_candidate c;
  assert_int_equal(kb__gen_archive_propose(a, &sum, &c, &err), KB_EEMPTY);
  assert_false(kb__gen_archive_can_propose(a, &sum));
  assert_true(kb__gen_archive_can_propose(a, &gemm)); /* its own kernel 6 fits it */

  /* examples: the category's best per task, best first, at most 2; not gemm's */
  char *text = NULL;
  assert_int_equal(kb__gen_archive_examples(a, &other, &text, &err), KB_OK);
  assert_non_null(text);
  assert_non_null(strstr(text, "Archive example 1: task \"sum\", \"k4\", 9.00x"));
  assert_non_null(strstr(text, "Archive example 2: task \"norm\", \"k5\", 4.00x"));
  assert_null(strstr(text, "Archive example 3"));
  assert_null(strstr(text, "kernel 6"));
  assert_non_null(strstr(text, "/* kernel 4 */"));
  kb_free(text);
  struct kb_task lonely;
  kbt_archive_task("fft", "fft", 8, &lonely);
  assert_int_equal(kb__gen_archive_examples(a, &lonely, &text, &err), KB_OK);
  assert_null(text);
  kb_task_release(&lonely);

  /* crossover parent: the best fitting entry not in the population */
  struct kb_population pop;
  kb__population_init(&pop, 3);
  char src2[512];
  kbt_archive_source(2, src2, sizeof src2);
  struct kb_candidate k2;
  kbg_candidate(&q, "sum", "archive-k2", "archive", src2, "", &k2);
  kbg_result(&pop, &k2, 2, 10, KB_STATUS_OK);
  struct kb_task_pop *tp = kb__population_task(&pop, "sum");
  char summary[256];
  int found = 0;
  assert_int_equal(kb__gen_archive_parent(a, tp, &c, summary, sizeof summary, &found, &err),
                   KB_OK);
  assert_int_equal(found, 1);
  assert_string_equal(c.name, "archive-k1");
  assert_non_null(strstr(summary, "from the archive: 1.50x"));
  kb_candidate_release(&c);
  kb_candidate_release(&k2);
  kb_candidate_release(&seed);
  kb__population_release(&pop);
  kb__gen_archive_free(a);
  kb_redis_free(r);
  kb_task_release(&sum);
  kb_task_release(&sum2);
  kb_task_release(&other);
  kb_task_release(&gemm);
  kb_remove_tree(dir, NULL);
}

/* KernelBench solutions in the archive: proposed (as kernelbench candidates, best first) only
 * to a task with a pytorch oracle, never to a task of the same spec with a C oracle; never an
 * llm prompt example. */
static void test_kernelbench_only_for_pytorch(void **state) {
  (void)state;
  char dir[64];
  kbt_archive_tmpdir(dir, sizeof dir);
  struct kb_task csum, tsum;
  kbt_archive_task("sum", "reduction", 1024, &csum);
  kbt_archive_task("sum", "reduction", 1024, &tsum);
  tsum.oracle_kind = KB_ORACLE_PYTORCH; /* the generator reads only the kind */
  struct kb_archive_entry e;
  struct kb_error err = {0};
  kbt_archive_modelnew(&csum, 1, 5, &e);
  assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
  kb_archive_entry_release(&e);
  kbt_archive_entry(&csum, 1, 1.5, "cpu", &e);
  assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
  kb_archive_entry_release(&e);
  struct kb_redis *r = kbg_connect(kbt_group_redis.addr);
  struct kb_gen_archive_cfg cfg = {.enabled = 1, .propose = 10, .examples = 2, .save = 3};
  const char *cids[2] = {"arch3", "arch4"};
  const struct kb_task *tasks[2] = {&csum, &tsum};
  for (int k = 0; k < 2; k++) {
    struct kb_queue q;
    kbg_campaign(r, cids[k], "{}", 0, &q);
    struct kb_gen_archive *a = NULL;
    if (kb__gen_archive_new(&q, &cfg, dir, &a, &err))
      fail_msg("%s", err.msg);
    const char *want[2][3] = {{"archive-k1", NULL}, {"archive-kb1", "archive-k1", NULL}};
    for (int i = 0; want[k][i]; i++) {
      struct kb_candidate c;
      if (kb__gen_archive_propose(a, tasks[k], &c, &err))
        fail_msg("%s: %s", cids[k], err.msg);
      assert_string_equal(c.name, want[k][i]);
      assert_int_equal(c.format, i == 0 && k == 1 ? KB_FORMAT_KERNELBENCH : KB_FORMAT_NATIVE);
      kb_candidate_release(&c);
    }
    struct kb_candidate c;
    assert_int_equal(kb__gen_archive_propose(a, tasks[k], &c, &err), KB_EEMPTY);
    char *text = NULL;
    assert_int_equal(kb__gen_archive_examples(a, tasks[k], &text, &err), KB_OK);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"k1\""));
    assert_null(strstr(text, "ModelNew"));
    kb_free(text);
    kb__gen_archive_free(a);
  }
  kb_redis_free(r);
  kb_task_release(&csum);
  kb_task_release(&tsum);
  kb_remove_tree(dir, NULL);
}

/* The llm generator's hooks into the archive, through gen_llm's real request path (the API
 * endpoint refuses connections: each request fails at once, and its prompt is audited). */
static int hook_examples(void *arg, const struct kb_task *task, char **out,
                         struct kb_error *err) {
  return kb__gen_archive_examples(arg, task, out, err);
}

static int hook_parent(void *arg, const struct kb_task_pop *pop, struct kb_candidate *c,
                       char *summary, size_t size, int *found, struct kb_error *err) {
  return kb__gen_archive_parent(arg, pop, c, summary, size, found, err);
}

static int no_emit(const struct kb_candidate *c, void *arg, struct kb_error *err) {
  (void)c;
  (void)arg;
  (void)err;
  fail_msg("no candidate expected");
  return KB_OK;
}

static void test_llm_prompts(void **state) {
  (void)state;
  char dir[64];
  kbt_archive_tmpdir(dir, sizeof dir);
  struct kb_task sum, norm;
  kbt_archive_task("sum", "reduction", 1024, &sum);
  kbt_archive_task("norm", "reduction", 512, &norm);
  struct kb_archive_entry e;
  struct kb_error err = {0};
  kbt_archive_entry(&sum, 2, 3.0, "NVIDIA H200", &e);
  assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
  kb_archive_entry_release(&e);
  kbt_archive_entry(&norm, 5, 4.0, "cpu", &e);
  assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
  kb_archive_entry_release(&e);

  struct kb_redis *r = kbg_connect(kbt_group_redis.addr);
  struct kb_queue q;
  kbg_campaign(r, "arch2", "{}", 1000000, &q);
  /* propose 0: the archived kernel stays out of the population, so it can be a parent */
  struct kb_gen_archive_cfg acfg = {.enabled = 1, .propose = 0, .examples = 2, .save = 0};
  struct kb_gen_archive *a = NULL;
  if (kb__gen_archive_new(&q, &acfg, dir, &a, &err))
    fail_msg("%s", err.msg);
  assert_false(kb__gen_archive_can_propose(a, &sum)); /* binds sum's entries, proposes none */
  struct kb_gen_llm_cfg lcfg = {.enabled = 1, .weight = 1, .api = KB_LLM_OPENAI,
                                .endpoint = "http://127.0.0.1:1/v1/chat/completions",
                                .model = "m", .concurrency = 1, .max_tokens = 100,
                                .temperature = 0.5, .timeout_s = 5, .max_retries = 0,
                                .backoff_s = 0.01, .backoff_max_s = 0.01};
  struct kb_gen_llm *l = NULL;
  if (kb__gen_llm_new(&q, &lcfg, "sk-unused", 12345, &l, &err))
    fail_msg("%s", err.msg);
  struct kb_gen_llm_archive h = {.examples = hook_examples, .parent = hook_parent, .arg = a};
  kb__gen_llm_set_archive(l, &h);

  struct kb_population pop;
  kb__population_init(&pop, 3);
  char src9[512];
  kbt_archive_source(9, src9, sizeof src9);
  struct kb_candidate mine;
  kbg_candidate(&q, "sum", "llm-translate-1", "llm", src9, "", &mine);
  kbg_result(&pop, &mine, 2, 50, KB_STATUS_OK);
  struct kb_task_pop *tp = kb__population_task(&pop, "sum");
  int crossovers = 0, mutates = 0;
  for (int i = 0; i < 40 && (crossovers == 0 || mutates == 0); i++) {
    if (kb__gen_llm_request(l, &sum, "REFERENCE", tp, &err))
      fail_msg("request: %s", err.msg);
    while (kb__gen_llm_pending(l) > 0)
      if (kb__gen_llm_poll(l, 200, no_emit, NULL, &err))
        fail_msg("poll: %s", err.msg);
    redisReply *rep = NULL;
    assert_int_equal(kb_redis_commandf(r, &rep, &err, "XREVRANGE kb:{arch2}:llm:sum + - COUNT 1"),
                     KB_OK);
    assert_int_equal(rep->elements, 1);
    redisReply *f = rep->element[0]->element[1];
    char *prompt = NULL, kind[32] = "";
    for (size_t k = 0; k + 1 < f->elements; k += 2) {
      if (strcmp(f->element[k]->str, "kind") == 0)
        snprintf(kind, sizeof kind, "%s", f->element[k + 1]->str);
      if (strcmp(f->element[k]->str, "prompt") == 0) {
        size_t len = 0;
        assert_int_equal(kb_decompress(f->element[k + 1]->str, f->element[k + 1]->len, 1 << 20,
                                       &prompt, &len, &err),
                         KB_OK);
      }
    }
    freeReplyObject(rep);
    assert_non_null(prompt);
    if (strcmp(kind, "crossover") == 0) {
      /* kernel A: our best member; kernel B: the archived one, with where it was verified */
      crossovers++;
      assert_non_null(strstr(prompt, "Kernel A, \"llm-translate-1\""));
      assert_non_null(strstr(prompt, "Kernel B, \"archive-k2\" (from the archive: 3.00x over "
                                     "its baseline at tier full on NVIDIA H200"));
      assert_non_null(strstr(prompt, "/* kernel 2 */"));
      assert_null(strstr(prompt, "Archive example"));
    } else {
      assert_string_equal(kind, "mutate");
      mutates++;
      assert_non_null(strstr(prompt, "Archive example 1: task \"norm\", \"k5\", 4.00x"));
      assert_non_null(strstr(prompt, "Archive example 2: task \"sum\", \"k2\", 3.00x"));
      assert_non_null(strstr(prompt, "/* kernel 5 */"));
    }
    kb_free(prompt);
  }
  assert_true(crossovers > 0);
  assert_true(mutates > 0);
  kb__gen_llm_free(l);
  kb__gen_archive_free(a);
  kb_candidate_release(&mine);
  kb__population_release(&pop);
  kb_redis_free(r);
  kb_task_release(&sum);
  kb_task_release(&norm);
  kb_remove_tree(dir, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_generator),
      cmocka_unit_test(test_kernelbench_only_for_pytorch),
      cmocka_unit_test(test_llm_prompts),
  };
  return cmocka_run_group_tests(tests, kbt_redis_group_setup, kbt_redis_group_teardown);
}
