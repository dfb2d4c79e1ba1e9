/* The kernel archive: fingerprints, entries written and read back, a corrupt entry reported
 * (file and field) and skipped, a missing folder, allocation failures, two processes writing at
 * once leaving only whole entries; the archive generator's proposals (real redis-server:
 * fitting entries only, best first, one already in the catalog skipped), prompt examples and
 * crossover parents, and both in the llm generator's rendered prompts. */
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

#include "gen_archive.h"
#include "gen_fixture.h"
#include "gen_llm.h"
#include "kb/alloc.h"
#include "kb/archive.h"
#include "kb/compress.h"
#include "kb/error.h"
#include "kb/redis.h"
#include "redis_group.h"


#define TASK_JSON \
    "{\"schema\": \"kernelbrain.task/1\", \"id\": \"%s\", \"name\": \"t\", \"category\": " \
    "\"%s\", \"backend\": \"host\", \"oracle\": {\"kind\": \"c\", \"source\": \"o.c\"}, " \
    "\"reference\": \"o.c\", \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": " \
    "[%d]}], \"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [1]}], " \
    "\"tolerance\": {\"atol\": 1, \"rtol\": 0}, \"input_sets\": [{\"seed\": 1, " \
    "\"distribution\": \"uniform\", \"low\": 0, \"high\": 1}], \"seeds\": [{\"name\": " \
    "\"naive\", \"source\": \"o.c\"}], \"baseline\": \"naive\"}"

static void make_task(const char *id, const char *category, int n, struct kb_task *t) {
  char text[2048];
  snprintf(text, sizeof text, TASK_JSON, id, category, n);
  struct kb_error err = {0};
  if (kb_task_parse("task.json", text, "/tmp", 0, t, &err))
    fail_msg("%s", err.msg);
}

static void src_of(int k, char *out, size_t size) {
  snprintf(out, size,
           "#include \"kb_kernel.h\"\n/* kernel %d */\nint kb_forward(const kb_tensor *in, int "
           "n_in, kb_tensor *out, int n_out, void *s) {\n#pragma unroll\n  return %d * 0;\n}\n",
           k, k);
}

/* An entry for `t` of kernel number `k`, verified at `speedup` on `gpu`. */
static void make_entry(const struct kb_task *t, int k, double speedup, const char *gpu,
                       struct kb_archive_entry *e) {
  char src[512], name[32];
  src_of(k, src, sizeof src);
  snprintf(name, sizeof name, "k%d", k);
  struct kb_candidate c;
  struct kb_error err = {0};
  if (kb_candidate_init(&c, t->id, name, "llm", src, "", "", &err) ||
      kb_archive_entry_from(e, t, &c, &err))
    fail_msg("%s", err.msg);
  kb_candidate_release(&c);
  snprintf(e->gpu, sizeof e->gpu, "%s", gpu);
  snprintf(e->tier, sizeof e->tier, "full");
  snprintf(e->campaign, sizeof e->campaign, "c1");
  e->baseline_us = 100;
  e->median_us = speedup > 0 ? 100 / speedup : 0;
  e->speedup = speedup;
}

static void tmpdir(char *out, size_t size) {
  snprintf(out, size, "/tmp/kb-archive-XXXXXX");
  assert_non_null(mkdtemp(out));
}

static void rmtree(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    unlink(p);
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

static void test_fingerprint(void **state) {
  (void)state;
  struct kb_task a, b, c, d;
  make_task("sum", "reduction", 1024, &a);
  make_task("other", "gemm", 1024, &b);  /* same tensors: same fingerprint */
  make_task("sum", "reduction", 2048, &c); /* another shape: another */
  make_task("sum", "reduction", 1024, &d);
  d.backend = KB_BACKEND_CUDA;            /* another backend: another */
  char fa[65], fb[65], fc[65], fd[65];
  struct kb_error err = {0};
  assert_int_equal(kb_task_fingerprint(&a, fa, &err), KB_OK);
  assert_int_equal(kb_task_fingerprint(&b, fb, &err), KB_OK);
  assert_int_equal(kb_task_fingerprint(&c, fc, &err), KB_OK);
  assert_int_equal(kb_task_fingerprint(&d, fd, &err), KB_OK);
  assert_string_equal(fa, fb);
  assert_string_not_equal(fa, fc);
  assert_string_not_equal(fa, fd);
  kb_task_release(&a);
  kb_task_release(&b);
  kb_task_release(&c);
  kb_task_release(&d);
}

/* A temp folder and the task "sum" (category reduction), as most tests start. */
struct sum_dir {
  char dir[64];
  struct kb_task t;
};

static void sum_dir_open(struct sum_dir *fx) {
  tmpdir(fx->dir, sizeof fx->dir);
  make_task("sum", "reduction", 1024, &fx->t);
}

static void sum_dir_close(struct sum_dir *fx) {
  kb_task_release(&fx->t);
  rmtree(fx->dir);
}

static void test_roundtrip(void **state) {
  (void)state;
  struct sum_dir fx;
  sum_dir_open(&fx);
  struct kb_archive_entry e;
  make_entry(&fx.t, 1, 2.5, "NVIDIA H200", &e);
  struct kb_error err = {0};
  assert_int_equal(kb_archive_entry_add_tag(&e, "Tiled Loop", &err), KB_OK);
  char path[4200];
  if (kb_archive_put(fx.dir, &e, path, sizeof path, &err))
    fail_msg("%s", err.msg);
  struct kb_archive a;
  assert_int_equal(kb_archive_load(fx.dir, &a, NULL, NULL, &err), KB_OK);
  assert_int_equal(a.n, 1);
  assert_int_equal(a.skipped, 0);
  const struct kb_archive_entry *b = &a.entries[0];
  assert_string_equal(b->id, e.id);
  assert_string_equal(b->task, "sum");
  assert_string_equal(b->fingerprint, e.fingerprint);
  assert_string_equal(b->candidate, e.candidate);
  assert_string_equal(b->source, e.source);
  assert_string_equal(b->gpu, "NVIDIA H200");
  assert_string_equal(b->category, "reduction");
  assert_true(b->speedup == 2.5);
  /* category, generator, the technique seen in the source, the user tag */
  assert_int_equal(b->n_tags, 4);
  assert_string_equal(b->tags[0], "reduction");
  assert_string_equal(b->tags[1], "llm");
  assert_string_equal(b->tags[2], "unrolled");
  assert_string_equal(b->tags[3], "tiled-loop");
  assert_ptr_equal(kb_archive_find(&a, "zzzz", NULL), NULL);
  assert_ptr_equal(kb_archive_find(&a, e.id, NULL), &a.entries[0]);
  kb_archive_release(&a);

  /* the same kernel on the same GPU replaces its entry; on another GPU it is another entry */
  e.speedup = 3;
  assert_int_equal(kb_archive_put(fx.dir, &e, NULL, 0, &err), KB_OK);
  snprintf(e.gpu, sizeof e.gpu, "NVIDIA A100");
  assert_int_equal(kb_archive_put(fx.dir, &e, NULL, 0, &err), KB_OK);
  assert_int_equal(kb_archive_load(fx.dir, &a, NULL, NULL, &err), KB_OK);
  assert_int_equal(a.n, 2);
  kb_archive_release(&a);

  /* a hand-edited source no longer matches its candidate id: refused, naming the field */
  char *text = NULL;
  assert_int_equal(kb_archive_entry_to_json(&e, 0, &text, &err), KB_OK);
  char *at = strstr(text, "kernel 1");
  assert_non_null(at);
  at[7] = '9';
  struct kb_archive_entry bad;
  assert_int_equal(kb_archive_entry_parse(text, "x.json", &bad, &err), KB_EPARSE);
  assert_non_null(strstr(err.msg, "x.json:1:"));
  assert_non_null(strstr(err.msg, "\"candidate\" does not match"));
  kb_free(text);
  kb_archive_entry_release(&e);
  sum_dir_close(&fx);
}

struct warned {
  int n;
  char last[512];
};

static void on_warn(const char *msg, void *arg) {
  struct warned *w = arg;
  w->n++;
  snprintf(w->last, sizeof w->last, "%s", msg);
}

static void test_corrupt_and_missing(void **state) {
  (void)state;
  struct sum_dir fx;
  sum_dir_open(&fx);
  struct kb_archive_entry e;
  make_entry(&fx.t, 1, 2, "cpu", &e);
  struct kb_error err = {0};
  assert_int_equal(kb_archive_put(fx.dir, &e, NULL, 0, &err), KB_OK);
  /* a file with an entry's name whose "gpu" is a number; a half-written one; a temp file */
  char bad[256], cut[256], tmp[256];
  snprintf(bad, sizeof bad, "%s/%064d.json", fx.dir, 0);
  snprintf(cut, sizeof cut, "%s/%063d1.json", fx.dir, 0);
  snprintf(tmp, sizeof tmp, "%s/.%s.json.host.1.0.tmp", fx.dir, e.id);
  char *text = NULL;
  assert_int_equal(kb_archive_entry_to_json(&e, 1, &text, &err), KB_OK);
  char *gpu = strstr(text, "\"gpu\": \"cpu\"");
  assert_non_null(gpu);
  memcpy(gpu, "\"gpu\": 12345", 12);
  FILE *f = fopen(bad, "w");
  fputs(text, f);
  fclose(f);
  f = fopen(cut, "w");
  fwrite(text, 1, strlen(text) / 2, f);
  fclose(f);
  f = fopen(tmp, "w");
  fwrite(text, 1, 10, f);
  fclose(f);
  kb_free(text);
  struct warned w = {0};
  struct kb_archive a;
  assert_int_equal(kb_archive_load(fx.dir, &a, on_warn, &w, &err), KB_OK);
  assert_int_equal(a.n, 1);
  assert_int_equal(a.skipped, 2);
  assert_int_equal(w.n, 2);
  kb_archive_release(&a);
  /* the message names the file and the field */
  w.n = 0;
  unlink(cut);
  assert_int_equal(kb_archive_load(fx.dir, &a, on_warn, &w, &err), KB_OK);
  assert_int_equal(w.n, 1);
  assert_non_null(strstr(w.last, bad));
  assert_non_null(strstr(w.last, "\"gpu\" must be a string"));
  kb_archive_release(&a);

  char missing[128];
  snprintf(missing, sizeof missing, "%s/nope", fx.dir);
  assert_int_equal(kb_archive_load(missing, &a, NULL, NULL, &err), KB_ENOTFOUND);
  assert_non_null(strstr(err.msg, missing));
  assert_int_equal(kb_archive_put(missing, &e, NULL, 0, &err), KB_ENOTFOUND);
  kb_archive_entry_release(&e);
  sum_dir_close(&fx);
}

/* Allocation failures while reading a folder: each run fails with KB_ENOMEM (nothing skipped
 * as if it were corrupt, nothing leaked under ASan) or reads every entry. */
static void test_alloc_failures(void **state) {
  (void)state;
  struct sum_dir fx;
  sum_dir_open(&fx);
  struct kb_error err = {0};
  for (int k = 0; k < 3; k++) {
    struct kb_archive_entry e;
    make_entry(&fx.t, k, 1 + k, "cpu", &e);
    assert_int_equal(kb_archive_put(fx.dir, &e, NULL, 0, &err), KB_OK);
    kb_archive_entry_release(&e);
  }
  long ok_runs = 0, n;
  for (n = 0; n < 100000 && ok_runs < 20; n++) {
    struct kb_archive a;
    struct warned w = {0};
    struct kb_error ferr = {0};
    kb_alloc_fail_after(n);
    int rc = kb_archive_load(fx.dir, &a, on_warn, &w, &ferr);
    kb_alloc_fail_after(-1);
    if (rc == KB_OK) {
      if (a.n != 3 || w.n != 0)
        fail_msg("failing allocation %ld: %d entries read, %d skipped (%s)", n, a.n, w.n,
                 w.last);
      ok_runs++;
      kb_archive_release(&a);
    } else {
      assert_int_equal(rc, KB_ENOMEM);
      assert_int_equal(ok_runs, 0);
    }
  }
  assert_true(ok_runs == 20);
  sum_dir_close(&fx);
}

/* Two processes write 60 entries each, 30 of them the same ones, while this one reads the
 * folder over and over: every entry it sees is whole, and the end holds exactly 90. */
static void test_concurrent_writers(void **state) {
  (void)state;
  struct sum_dir fx;
  sum_dir_open(&fx);
  pid_t kids[2];
  for (int w = 0; w < 2; w++) {
    kids[w] = fork();
    assert_true(kids[w] >= 0);
    if (kids[w] == 0) {
      int bad = 0;
      for (int i = 0; i < 60; i++) {
        int k = i < 30 ? i : 1000 * (w + 1) + i; /* 0..29 shared */
        struct kb_archive_entry e;
        make_entry(&fx.t, k, 1 + k % 7, "cpu", &e);
        struct kb_error err = {0};
        bad |= kb_archive_put(fx.dir, &e, NULL, 0, &err) != KB_OK;
        kb_archive_entry_release(&e);
      }
      _exit(bad);
    }
  }
  int reads = 0, running = 2;
  while (running > 0) {
    struct kb_archive a;
    struct warned wn = {0};
    struct kb_error err = {0};
    assert_int_equal(kb_archive_load(fx.dir, &a, on_warn, &wn, &err), KB_OK);
    if (a.skipped)
      fail_msg("a partial entry was visible: %s", wn.last);
    kb_archive_release(&a);
    reads++;
    running = 0;
    for (int w = 0; w < 2; w++) {
      int st = 0;
      if (kids[w] > 0) {
        pid_t p = waitpid(kids[w], &st, WNOHANG);
        if (p == 0) {
          running++;
        } else {
          assert_true(WIFEXITED(st));
          assert_int_equal(WEXITSTATUS(st), 0);
          kids[w] = 0;
        }
      }
    }
  }
  struct kb_archive a;
  struct kb_error err = {0};
  assert_int_equal(kb_archive_load(fx.dir, &a, NULL, NULL, &err), KB_OK);
  assert_int_equal(a.n, 90);
  assert_int_equal(a.skipped, 0);
  kb_archive_release(&a);
  /* no temp file left behind */
  DIR *d = opendir(fx.dir);
  struct dirent *de;
  int files = 0;
  while ((de = readdir(d)) != NULL)
    if (de->d_name[0] != '.' || strstr(de->d_name, ".tmp"))
      files++;
  closedir(d);
  assert_int_equal(files, 90);
  fprintf(stderr, "concurrent writers: %d reads of the folder while writing, all whole\n",
          reads);
  sum_dir_close(&fx);
}

/* The generator: proposals, examples, crossover parents. */
static void test_generator(void **state) {
  (void)state;
  char dir[64];
  tmpdir(dir, sizeof dir);
  struct kb_task sum, sum2, other, gemm;
  make_task("sum", "reduction", 1024, &sum);
  make_task("sum", "reduction", 2048, &sum2); /* same id, another shape: does not fit */
  make_task("norm", "reduction", 512, &other);
  make_task("mm", "gemm", 64, &gemm);
  struct kb_archive_entry e;
  struct kb_error err = {0};
  struct { const struct kb_task *t; int k; double s; const char *gpu; } put[] = {
      {&sum, 1, 1.5, "cpu"}, {&sum, 2, 3.0, "cpu"}, {&sum, 2, 2.0, "other-cpu"},
      {&sum, 3, 1.2, "cpu"}, {&sum2, 4, 9.0, "cpu"}, {&other, 5, 4.0, "cpu"},
      {&gemm, 6, 8.0, "cpu"}};
  for (size_t i = 0; i < sizeof put / sizeof put[0]; i++) {
    make_entry(put[i].t, put[i].k, put[i].s, put[i].gpu, &e);
    assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
    kb_archive_entry_release(&e);
  }
  struct kb_redis *r = kbg_connect(kbt_group_redis.addr);
  struct kb_queue q;
  kbg_campaign(r, "arch1", "{}", 0, &q);
  /* kernel 3 is already a candidate of this campaign (as a seed would be) */
  char src3[512];
  src_of(3, src3, sizeof src3);
  struct kb_candidate seed;
  kbg_candidate(&q, "sum", "k3", "seed", src3, "", &seed);
  struct kb_gen_archive_cfg cfg = {.enabled = 1, .propose = 10, .examples = 2, .save = 3};
  struct kb_gen_archive *a = NULL;
  if (kb_gen_archive_new(&q, &cfg, dir, &a, &err))
    fail_msg("%s", err.msg);
  assert_int_equal(kb_gen_archive_size(a), 7);
  /* fitting: kernels 2 (best, once for two GPUs), 1; 3 is known; 4 has another shape */
  const char *want[] = {"archive-k2", "archive-k1"};
  for (int i = 0; i < 2; i++) {
    assert_true(kb_gen_archive_can_propose(a, &sum));
    struct kb_candidate c;
    if (kb_gen_archive_propose(a, &sum, &c, &err))
      fail_msg("%s", err.msg);
    assert_string_equal(c.name, want[i]);
    assert_string_equal(c.generator, "archive");
    assert_string_equal(c.task, "sum");
    kb_candidate_release(&c);
  }
  struct kb_candidate c;
  assert_int_equal(kb_gen_archive_propose(a, &sum, &c, &err), KB_EEMPTY);
  assert_false(kb_gen_archive_can_propose(a, &sum));
  assert_true(kb_gen_archive_can_propose(a, &gemm)); /* its own kernel 6 fits it */

  /* examples: the category's best per task, best first, at most 2; not gemm's */
  char *text = NULL;
  assert_int_equal(kb_gen_archive_examples(a, &other, &text, &err), KB_OK);
  assert_non_null(text);
  assert_non_null(strstr(text, "Archive example 1: task \"sum\", \"k4\", 9.00x"));
  assert_non_null(strstr(text, "Archive example 2: task \"norm\", \"k5\", 4.00x"));
  assert_null(strstr(text, "Archive example 3"));
  assert_null(strstr(text, "kernel 6"));
  assert_non_null(strstr(text, "/* kernel 4 */"));
  kb_free(text);
  struct kb_task lonely;
  make_task("fft", "fft", 8, &lonely);
  assert_int_equal(kb_gen_archive_examples(a, &lonely, &text, &err), KB_OK);
  assert_null(text);
  kb_task_release(&lonely);

  /* crossover parent: the best fitting entry not in the population */
  struct kb_population pop;
  kb_population_init(&pop, 3);
  char src2[512];
  src_of(2, src2, sizeof src2);
  struct kb_candidate k2;
  kbg_candidate(&q, "sum", "archive-k2", "archive", src2, "", &k2);
  kbg_result(&pop, &k2, 2, 10, KB_STATUS_OK);
  struct kb_task_pop *tp = kb_population_task(&pop, "sum");
  char summary[256];
  int found = 0;
  assert_int_equal(kb_gen_archive_parent(a, tp, &c, summary, sizeof summary, &found, &err),
                   KB_OK);
  assert_int_equal(found, 1);
  assert_string_equal(c.name, "archive-k1");
  assert_non_null(strstr(summary, "from the archive: 1.50x"));
  kb_candidate_release(&c);
  kb_candidate_release(&k2);
  kb_candidate_release(&seed);
  kb_population_release(&pop);
  kb_gen_archive_free(a);
  kb_redis_free(r);
  kb_task_release(&sum);
  kb_task_release(&sum2);
  kb_task_release(&other);
  kb_task_release(&gemm);
  rmtree(dir);
}

/* The llm generator's hooks into the archive, through gen_llm's real request path (the API
 * endpoint refuses connections: each request fails at once, and its prompt is audited). */
static int hook_examples(void *arg, const struct kb_task *task, char **out,
                         struct kb_error *err) {
  return kb_gen_archive_examples(arg, task, out, err);
}

static int hook_parent(void *arg, const struct kb_task_pop *pop, struct kb_candidate *c,
                       char *summary, size_t size, int *found, struct kb_error *err) {
  return kb_gen_archive_parent(arg, pop, c, summary, size, found, err);
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
  tmpdir(dir, sizeof dir);
  struct kb_task sum, norm;
  make_task("sum", "reduction", 1024, &sum);
  make_task("norm", "reduction", 512, &norm);
  struct kb_archive_entry e;
  struct kb_error err = {0};
  make_entry(&sum, 2, 3.0, "NVIDIA H200", &e);
  assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
  kb_archive_entry_release(&e);
  make_entry(&norm, 5, 4.0, "cpu", &e);
  assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
  kb_archive_entry_release(&e);

  struct kb_redis *r = kbg_connect(kbt_group_redis.addr);
  struct kb_queue q;
  kbg_campaign(r, "arch2", "{}", 1000000, &q);
  /* propose 0: the archived kernel stays out of the population, so it can be a parent */
  struct kb_gen_archive_cfg acfg = {.enabled = 1, .propose = 0, .examples = 2, .save = 0};
  struct kb_gen_archive *a = NULL;
  if (kb_gen_archive_new(&q, &acfg, dir, &a, &err))
    fail_msg("%s", err.msg);
  assert_false(kb_gen_archive_can_propose(a, &sum)); /* binds sum's entries, proposes none */
  struct kb_gen_llm_cfg lcfg = {.enabled = 1, .weight = 1, .api = KB_LLM_OPENAI,
                                .endpoint = "http://127.0.0.1:1/v1/chat/completions",
                                .model = "m", .concurrency = 1, .max_tokens = 100,
                                .temperature = 0.5, .timeout_s = 5, .max_retries = 0,
                                .backoff_s = 0.01, .backoff_max_s = 0.01};
  struct kb_gen_llm *l = NULL;
  if (kb_gen_llm_new(&q, &lcfg, "sk-unused", 12345, &l, &err))
    fail_msg("%s", err.msg);
  struct kb_gen_llm_archive h = {.examples = hook_examples, .parent = hook_parent, .arg = a};
  kb_gen_llm_set_archive(l, &h);

  struct kb_population pop;
  kb_population_init(&pop, 3);
  char src9[512];
  src_of(9, src9, sizeof src9);
  struct kb_candidate mine;
  kbg_candidate(&q, "sum", "llm-translate-1", "llm", src9, "", &mine);
  kbg_result(&pop, &mine, 2, 50, KB_STATUS_OK);
  struct kb_task_pop *tp = kb_population_task(&pop, "sum");
  int crossovers = 0, mutates = 0;
  for (int i = 0; i < 40 && (crossovers == 0 || mutates == 0); i++) {
    if (kb_gen_llm_request(l, &sum, "REFERENCE", tp, &err))
      fail_msg("request: %s", err.msg);
    while (kb_gen_llm_pending(l) > 0)
      if (kb_gen_llm_poll(l, 200, no_emit, NULL, &err))
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
  kb_gen_llm_free(l);
  kb_gen_archive_free(a);
  kb_candidate_release(&mine);
  kb_population_release(&pop);
  kb_redis_free(r);
  kb_task_release(&sum);
  kb_task_release(&norm);
  rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fingerprint),        cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_corrupt_and_missing), cmocka_unit_test(test_concurrent_writers),
      cmocka_unit_test(test_alloc_failures),      cmocka_unit_test(test_generator),
      cmocka_unit_test(test_llm_prompts),
  };
  return cmocka_run_group_tests(tests, kbt_redis_group_setup, kbt_redis_group_teardown);
}
