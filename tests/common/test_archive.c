/* The kernel archive (kb/archive.h): fingerprints, entries written and read back, a corrupt
 * entry reported (file and field) and skipped, a missing folder, allocation failures, two
 * processes writing at once leaving only whole entries. The archive generator's tests are in
 * tests/scheduler/test_gen_archive.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "archive_fixture.h"
#include "kb/alloc.h"
#include "kb/archive.h"
#include "kb/error.h"
#include "kb/fs.h"

/* A folder for the archive and a task "sum" whose kernels go in it. */
struct fx {
  char dir[64];        /* temporary archive folder */
  struct kb_task task; /* "sum", category "reduction", 1024 floats in */
};

static int setup(void **state) {
  struct fx *x = calloc(1, sizeof *x);
  assert_non_null(x);
  kbt_archive_tmpdir(x->dir, sizeof x->dir);
  kbt_archive_task("sum", "reduction", 1024, &x->task);
  *state = x;
  return 0;
}

static int teardown(void **state) {
  struct fx *x = *state;
  kb_task_release(&x->task);
  kb_remove_tree(x->dir, NULL);
  free(x);
  return 0;
}

static void test_fingerprint(void **state) {
  (void)state;
  struct kb_task a, b, c, d;
  kbt_archive_task("sum", "reduction", 1024, &a);
  kbt_archive_task("other", "gemm", 1024, &b);  /* same tensors: same fingerprint */
  kbt_archive_task("sum", "reduction", 2048, &c); /* another shape: another */
  kbt_archive_task("sum", "reduction", 1024, &d);
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

static void test_roundtrip(void **state) {
  struct fx *x = *state;
  const char *dir = x->dir;
  const struct kb_task *task = &x->task;
  struct kb_archive_entry e;
  kbt_archive_entry(task, 1, 2.5, "NVIDIA H200", &e);
  struct kb_error err = {0};
  assert_int_equal(kb_archive_entry_add_tag(&e, "Tiled Loop", &err), KB_OK);
  char path[4200];
  if (kb_archive_put(dir, &e, path, sizeof path, &err))
    fail_msg("%s", err.msg);
  struct kb_archive a;
  assert_int_equal(kb_archive_load(dir, &a, NULL, NULL, &err), KB_OK);
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
  assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
  snprintf(e.gpu, sizeof e.gpu, "NVIDIA A100");
  assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
  assert_int_equal(kb_archive_load(dir, &a, NULL, NULL, &err), KB_OK);
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
}

/* A kernelbench entry keeps its format through the folder, its JSON says so (a native one's
 * does not), its candidate is a kernelbench candidate with the original id, and the format is
 * covered by the candidate id: an entry that loses it is refused. */
static void test_kernelbench_entry(void **state) {
  struct fx *x = *state;
  struct kb_archive_entry e, n;
  kbt_archive_modelnew(&x->task, 1, 4, &e);
  kbt_archive_entry(&x->task, 1, 2, "cpu", &n);
  struct kb_error err = {0};
  assert_int_equal(kb_archive_put(x->dir, &e, NULL, 0, &err), KB_OK);
  assert_int_equal(kb_archive_put(x->dir, &n, NULL, 0, &err), KB_OK);
  struct kb_archive a;
  assert_int_equal(kb_archive_load(x->dir, &a, NULL, NULL, &err), KB_OK);
  assert_int_equal(a.n, 2);
  assert_int_equal(a.skipped, 0);
  assert_string_equal(a.entries[0].id, e.id); /* best first */
  assert_int_equal(a.entries[0].format, KB_FORMAT_KERNELBENCH);
  assert_int_equal(a.entries[1].format, KB_FORMAT_NATIVE);
  struct kb_candidate c;
  assert_int_equal(kb_archive_entry_candidate(&a.entries[0], "sum", &c, &err), KB_OK);
  assert_int_equal(c.format, KB_FORMAT_KERNELBENCH);
  assert_string_equal(c.id, e.candidate);
  kb_candidate_release(&c);
  kb_archive_release(&a);
  char *text = NULL, *ntext = NULL;
  assert_int_equal(kb_archive_entry_to_json(&e, 0, &text, &err), KB_OK);
  assert_int_equal(kb_archive_entry_to_json(&n, 0, &ntext, &err), KB_OK);
  assert_null(strstr(ntext, "\"format\""));
  char *at = strstr(text, ",\"format\":\"kernelbench\"");
  assert_non_null(at);
  memmove(at, at + strlen(",\"format\":\"kernelbench\""),
          strlen(at + strlen(",\"format\":\"kernelbench\"")) + 1);
  struct kb_archive_entry bad;
  assert_int_equal(kb_archive_entry_parse(text, "x.json", &bad, &err), KB_EPARSE);
  assert_non_null(strstr(err.msg, "\"candidate\" does not match"));
  kb_free(text);
  kb_free(ntext);
  kb_archive_entry_release(&e);
  kb_archive_entry_release(&n);
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
  struct fx *x = *state;
  const char *dir = x->dir;
  const struct kb_task *task = &x->task;
  struct kb_archive_entry e;
  kbt_archive_entry(task, 1, 2, "cpu", &e);
  struct kb_error err = {0};
  assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
  /* a file with an entry's name whose "gpu" is a number; a half-written one; a temp file */
  char bad[256], cut[256], tmp[256];
  snprintf(bad, sizeof bad, "%s/%064d.json", dir, 0);
  snprintf(cut, sizeof cut, "%s/%063d1.json", dir, 0);
  snprintf(tmp, sizeof tmp, "%s/.%s.json.host.1.0.tmp", dir, e.id);
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
  assert_int_equal(kb_archive_load(dir, &a, on_warn, &w, &err), KB_OK);
  assert_int_equal(a.n, 1);
  assert_int_equal(a.skipped, 2);
  assert_int_equal(w.n, 2);
  kb_archive_release(&a);
  /* the message names the file and the field */
  w.n = 0;
  unlink(cut);
  assert_int_equal(kb_archive_load(dir, &a, on_warn, &w, &err), KB_OK);
  assert_int_equal(w.n, 1);
  assert_non_null(strstr(w.last, bad));
  assert_non_null(strstr(w.last, "\"gpu\" must be a string"));
  kb_archive_release(&a);

  char missing[128];
  snprintf(missing, sizeof missing, "%s/nope", dir);
  assert_int_equal(kb_archive_load(missing, &a, NULL, NULL, &err), KB_ENOTFOUND);
  assert_non_null(strstr(err.msg, missing));
  assert_int_equal(kb_archive_put(missing, &e, NULL, 0, &err), KB_ENOTFOUND);
  kb_archive_entry_release(&e);
}

/* Allocation failures while reading a folder: each run fails with KB_ENOMEM (nothing skipped
 * as if it were corrupt, nothing leaked under ASan) or reads every entry. */
static void test_alloc_failures(void **state) {
  struct fx *x = *state;
  const char *dir = x->dir;
  const struct kb_task *task = &x->task;
  struct kb_error err = {0};
  for (int k = 0; k < 3; k++) {
    struct kb_archive_entry e;
    kbt_archive_entry(task, k, 1 + k, "cpu", &e);
    assert_int_equal(kb_archive_put(dir, &e, NULL, 0, &err), KB_OK);
    kb_archive_entry_release(&e);
  }
  long ok_runs = 0, n;
  for (n = 0; n < 100000 && ok_runs < 20; n++) {
    struct kb_archive a;
    struct warned w = {0};
    struct kb_error ferr = {0};
    kb_alloc_fail_after(n);
    int rc = kb_archive_load(dir, &a, on_warn, &w, &ferr);
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
}

/* Two processes write 60 entries each, 30 of them the same ones, while this one reads the
 * folder over and over: every entry it sees is whole, and the end holds exactly 90. */
static void test_concurrent_writers(void **state) {
  struct fx *x = *state;
  const char *dir = x->dir;
  const struct kb_task *task = &x->task;
  pid_t kids[2];
  for (int w = 0; w < 2; w++) {
    kids[w] = fork();
    assert_true(kids[w] >= 0);
    if (kids[w] == 0) {
      int bad = 0;
      for (int i = 0; i < 60; i++) {
        int k = i < 30 ? i : 1000 * (w + 1) + i; /* 0..29 shared */
        struct kb_archive_entry e;
        kbt_archive_entry(task, k, 1 + k % 7, "cpu", &e);
        struct kb_error err = {0};
        bad |= kb_archive_put(dir, &e, NULL, 0, &err) != KB_OK;
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
    assert_int_equal(kb_archive_load(dir, &a, on_warn, &wn, &err), KB_OK);
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
  assert_int_equal(kb_archive_load(dir, &a, NULL, NULL, &err), KB_OK);
  assert_int_equal(a.n, 90);
  assert_int_equal(a.skipped, 0);
  kb_archive_release(&a);
  /* no temp file left behind */
  DIR *d = opendir(dir);
  struct dirent *de;
  int files = 0;
  while ((de = readdir(d)) != NULL)
    if (de->d_name[0] != '.' || strstr(de->d_name, ".tmp"))
      files++;
  closedir(d);
  assert_int_equal(files, 90);
  fprintf(stderr, "concurrent writers: %d reads of the folder while writing, all whole\n",
          reads);
}


int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fingerprint),
      cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_and_missing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernelbench_entry, setup, teardown),
      cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
