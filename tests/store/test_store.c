/* Unit tests of the HDF5 store (scheduler/store.c). Each test gets its own temp dir. Rows are
 * read back with the HDF5 API directly, by member name, so these tests also pin the layout of
 * schemas/hdf5-layout.md. Structs are filled by hand (fixture.c), not by candidate.c/result.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>

#include "fixture.h"
#include "kb/alloc.h"
#include "kb/error.h"
#include "store.h"

struct t_state {
  char dir[64];
  char path[128];
};

static int setup(void **state) {
  struct t_state *t = calloc(1, sizeof *t);
  if (t == NULL || fx_mkdtemp(t->dir) != 0)
    return -1;
  snprintf(t->path, sizeof t->path, "%s/sum.h5", t->dir);
  *state = t;
  return 0;
}

static int teardown(void **state) {
  struct t_state *t = *state;
  ssize_t open_objects = H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
  kb_alloc_fail_after(-1);
  int rc = fx_rmdir(t->dir); /* first, so that a failed check below leaves nothing behind */
  free(t);
  /* No test leaves a file, group, dataset or attribute open (the store included). */
  assert_int_equal(open_objects, 0);
  return rc;
}

/* ---- helpers -------------------------------------------------------------------------------- */

static struct kb_store *open_ok(const char *path) {
  struct kb_error err = {0, ""};
  struct kb_store_task_info info = fx_info();
  struct kb_store *s = NULL;
  int rc = kb__store_open(path, &info, &s, &err);
  if (rc != KB_OK)
    fail_msg("kb__store_open: %s", err.msg);
  return s;
}

static void add_cand(struct kb_store *s, unsigned long k, int want_added) {
  struct fx_candidate fc;
  fx_candidate(&fc, k);
  struct kb_error err = {0, ""};
  int added = -1;
  int rc = kb__store_add_candidate(s, &fc.c, &added, &err);
  if (rc != KB_OK)
    fail_msg("add candidate %lu: %s", k, err.msg);
  assert_int_equal(added, want_added);
}

static void add_eval(struct kb_store *s, unsigned long i, int want_added) {
  struct kb_result r;
  char log[64];
  fx_result(&r, i, log);
  struct kb_error err = {0, ""};
  int added = -1;
  int rc = kb__store_add_evaluation(s, &r, &added, &err);
  if (rc != KB_OK)
    fail_msg("add evaluation %lu: %s", i, err.msg);
  assert_int_equal(added, want_added);
}

/* Opens the store at `path` (info-less), checks what it says, and closes it: kb__store_recovered
 * `recovered`, `n_cands` candidates, `n_evals` evaluations; -1 skips a check. */
static void assert_reopens(const char *path, int recovered, long n_cands, long n_evals) {
  struct kb_store *s = open_ok(path);
  if (recovered >= 0)
    assert_int_equal(kb__store_recovered(s), recovered);
  if (n_cands >= 0)
    assert_int_equal(kb__store_candidate_count(s), n_cands);
  if (n_evals >= 0)
    assert_int_equal(kb__store_evaluation_count(s), n_evals);
  kb__store_close(s);
}

/* Adds evaluations 0 .. n-1, three per candidate (each candidate before its first), expecting
 * each to be added when its index is `first_new` or more and a duplicate below it. */
static void add_rows(struct kb_store *s, unsigned long n, unsigned long first_new) {
  for (unsigned long i = 0; i < n; i++) {
    if (i % 3 == 0)
      add_cand(s, i / 3, i >= first_new);
    add_eval(s, i, i >= first_new);
  }
}

static void flush_ok(struct kb_store *s) {
  struct kb_error err = {0, ""};
  if (kb__store_flush(s, &err) != KB_OK)
    fail_msg("flush: %s", err.msg);
}

static hid_t t_str(size_t n) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, n);
  H5Tset_strpad(t, H5T_STR_NULLTERM);
  H5Tset_cset(t, H5T_CSET_UTF8); /* the store's strings are UTF-8; HDF5 converts no csets */
  return t;
}

struct t_cand {
  char id[65];
  char name[64];
  char generator[16];
  char parent0[65];
  char knobs[256];
  char flags[256];
  double created;
  int best_tier;
  char status[16];
  int n_evaluations;
  long long source_offset;
  long long source_len;
};

struct t_eval {
  char candidate[65];
  int tier;
  char tier_name[64];
  int attempt;
  char status[16];
  char reason[256];
  char charge_id[160];
  double max_abs_err;
  int samples;
  double median_us;
  double noise;
  int spills;
  long long cost_ms;
  long long compile_log_offset;
  long long compile_log_len;
};

#define INS_STR(t, st, m) \
  do { hid_t s_ = t_str(sizeof(((struct st *)0)->m)); \
       H5Tinsert(t, #m, offsetof(struct st, m), s_); H5Tclose(s_); } while (0)
#define INS(t, st, m, ty) H5Tinsert(t, #m, offsetof(struct st, m), ty)

static hid_t cand_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct t_cand));
  INS_STR(t, t_cand, id);
  INS_STR(t, t_cand, name);
  INS_STR(t, t_cand, generator);
  INS_STR(t, t_cand, parent0);
  INS_STR(t, t_cand, knobs);
  INS_STR(t, t_cand, flags);
  INS(t, t_cand, created, H5T_NATIVE_DOUBLE);
  INS(t, t_cand, best_tier, H5T_NATIVE_INT);
  INS_STR(t, t_cand, status);
  INS(t, t_cand, n_evaluations, H5T_NATIVE_INT);
  INS(t, t_cand, source_offset, H5T_NATIVE_LLONG);
  INS(t, t_cand, source_len, H5T_NATIVE_LLONG);
  return t;
}

static hid_t eval_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct t_eval));
  INS_STR(t, t_eval, candidate);
  INS(t, t_eval, tier, H5T_NATIVE_INT);
  INS_STR(t, t_eval, tier_name);
  INS(t, t_eval, attempt, H5T_NATIVE_INT);
  INS_STR(t, t_eval, status);
  INS_STR(t, t_eval, reason);
  INS_STR(t, t_eval, charge_id);
  INS(t, t_eval, max_abs_err, H5T_NATIVE_DOUBLE);
  INS(t, t_eval, samples, H5T_NATIVE_INT);
  INS(t, t_eval, median_us, H5T_NATIVE_DOUBLE);
  INS(t, t_eval, noise, H5T_NATIVE_DOUBLE);
  INS(t, t_eval, spills, H5T_NATIVE_INT);
  INS(t, t_eval, cost_ms, H5T_NATIVE_LLONG);
  INS(t, t_eval, compile_log_offset, H5T_NATIVE_LLONG);
  INS(t, t_eval, compile_log_len, H5T_NATIVE_LLONG);
  return t;
}

/* Reads all rows of table `name` (at most `max`) into `out`; returns the row count. */
static int read_table(const char *path, const char *name, hid_t type, void *out, int max) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  assert_true(ds >= 0);
  hid_t sp = H5Dget_space(ds);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(sp, &n, NULL);
  H5Sclose(sp);
  assert_true(n <= (hsize_t)max);
  if (n > 0)
    assert_true(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0);
  H5Dclose(ds);
  H5Fclose(f);
  H5Tclose(type);
  return (int)n;
}

/* Reads `len` bytes at `off` of 1-D uint8 dataset `name` into `out` (NUL-terminated). */
static void read_heap(const char *path, const char *name, long long off, long long len,
                      char *out) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  assert_true(f >= 0 && ds >= 0);
  if (len > 0) {
    hsize_t start[1] = {(hsize_t)off}, count[1] = {(hsize_t)len};
    hid_t fsp = H5Dget_space(ds);
    hid_t msp = H5Screate_simple(1, count, NULL);
    H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, NULL, count, NULL);
    assert_true(H5Dread(ds, H5T_NATIVE_UINT8, msp, fsp, H5P_DEFAULT, out) >= 0);
    H5Sclose(msp);
    H5Sclose(fsp);
  }
  out[len] = '\0';
  H5Dclose(ds);
  H5Fclose(f);
}

static void read_str_attr(hid_t loc, const char *name, char *out, size_t cap) {
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  assert_true(a >= 0);
  hid_t ft = H5Aget_type(a);
  size_t size = H5Tget_size(ft);
  assert_true(size < cap);
  hid_t mt = t_str(size);
  memset(out, 0, cap);
  assert_true(H5Aread(a, mt, out) >= 0);
  H5Tclose(mt);
  H5Tclose(ft);
  H5Aclose(a);
}

static double read_num_attr(hid_t loc, const char *name) {
  double v = 0;
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  assert_true(a >= 0);
  assert_true(H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0);
  H5Aclose(a);
  return v;
}

/* Starts a child that opens the store, adds evaluations 0..flushed-1 and flushes, adds more
 * without flushing, and dies of SIGKILL, leaving the SWMR status flags set. */
static void write_and_die(const char *path, unsigned long flushed, unsigned long unflushed) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct kb_error err = {0, ""};
    struct kb_store_task_info info = fx_info();
    struct kb_store *s = NULL;
    if (kb__store_open(path, &info, &s, &err) != KB_OK)
      _exit(3);
    for (unsigned long i = 0; i < flushed + unflushed; i++) {
      if (i % 3 == 0) {
        struct fx_candidate fc;
        fx_candidate(&fc, i / 3);
        if (kb__store_add_candidate(s, &fc.c, NULL, &err) != KB_OK)
          _exit(4);
      }
      struct kb_result r;
      char log[64];
      fx_result(&r, i, log);
      if (kb__store_add_evaluation(s, &r, NULL, &err) != KB_OK)
        _exit(5);
      if (i + 1 == flushed && kb__store_flush(s, &err) != KB_OK)
        _exit(6);
    }
    raise(SIGKILL);
    _exit(7);
  }
  int st = 0;
  assert_true(waitpid(pid, &st, 0) == pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_create(void **state) {
  struct t_state *t = *state;
  assert_reopens(t->path, 0, 0, 0);

  struct stat st;
  char lock[160], tmp[160];
  snprintf(lock, sizeof lock, "%s.lock", t->path);
  snprintf(tmp, sizeof tmp, "%s.tmp", t->path);
  assert_int_equal(stat(lock, &st), 0);
  assert_int_not_equal(stat(tmp, &st), 0); /* renamed into place */

  hid_t f = H5Fopen(t->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  char buf[128];
  read_str_attr(f, "format", buf, sizeof buf);
  assert_string_equal(buf, "kernelbrain.h5/3");
  read_str_attr(f, "campaign", buf, sizeof buf);
  assert_string_equal(buf, FX_CAMPAIGN);
  read_str_attr(f, "task", buf, sizeof buf);
  assert_string_equal(buf, FX_TASK);
  assert_true(read_num_attr(f, "created") > 1.6e9);
  const char *groups[] = {"task", "sources", "compile_logs", "profiles", "best"};
  for (size_t i = 0; i < 5; i++) {
    H5O_info_t oi;
    assert_true(H5Oget_info_by_name2(f, groups[i], &oi, H5O_INFO_BASIC, H5P_DEFAULT) >= 0);
    assert_int_equal(oi.type, H5O_TYPE_GROUP);
  }
  hid_t best = H5Gopen2(f, "best", H5P_DEFAULT);
  read_str_attr(best, "candidate", buf, sizeof buf);
  assert_string_equal(buf, "");
  assert_true(read_num_attr(best, "tier") == -1);
  assert_true(isnan(read_num_attr(best, "median_us")));
  H5Gclose(best);
  H5Fclose(f);
  char text[256];
  read_heap(t->path, "task/spec_json", 0, (long long)strlen(FX_SPEC), text);
  assert_string_equal(text, FX_SPEC);
  read_heap(t->path, "task/reference", 0, (long long)strlen(FX_REFERENCE), text);
  assert_string_equal(text, FX_REFERENCE);
}

static void test_add_and_read_back(void **state) {
  struct t_state *t = *state;
  struct kb_store *s = open_ok(t->path);
  add_rows(s, 6, 0);
  assert_int_equal(kb__store_candidate_count(s), 2);
  assert_int_equal(kb__store_evaluation_count(s), 6);
  char id[65];
  fx_id(id, 1);
  assert_true(kb__store_has_candidate(s, id));
  assert_true(kb__store_has_evaluation(s, id, 2, 1));
  assert_false(kb__store_has_evaluation(s, id, 2, 2));
  fx_id(id, 7);
  assert_false(kb__store_has_candidate(s, id));
  flush_ok(s);
  kb__store_close(s);

  struct t_cand c[4];
  assert_int_equal(read_table(t->path, "candidates", cand_type(), c, 4), 2);
  for (unsigned long k = 0; k < 2; k++) {
    struct fx_candidate fc;
    fx_candidate(&fc, k);
    assert_string_equal(c[k].id, fc.c.id);
    assert_string_equal(c[k].name, fc.c.name);
    assert_string_equal(c[k].generator, fc.c.generator);
    assert_string_equal(c[k].parent0, fc.c.parents[0]);
    assert_string_equal(c[k].knobs, fc.knobs);
    assert_string_equal(c[k].flags, "-O3");
    assert_true(c[k].created == fc.c.created);
    assert_int_equal(c[k].best_tier, 2);
    assert_int_equal(c[k].n_evaluations, 3);
    assert_int_equal(c[k].source_len, (long long)strlen(fc.source));
    char src[1024];
    read_heap(t->path, "sources/data", c[k].source_offset, c[k].source_len, src);
    assert_string_equal(src, fc.source);
  }
  assert_int_equal(c[1].source_offset, c[0].source_len);
  assert_string_equal(c[0].status, "ok");          /* evaluation 2 */
  assert_string_equal(c[1].status, "ok");          /* evaluation 5 */

  struct t_eval e[8];
  assert_int_equal(read_table(t->path, "evaluations", eval_type(), e, 8), 6);
  for (unsigned long i = 0; i < 6; i++) {
    struct kb_result r;
    char log[64];
    fx_result(&r, i, log);
    assert_string_equal(e[i].candidate, r.candidate);
    assert_int_equal(e[i].tier, r.tier);
    assert_string_equal(e[i].tier_name, r.tier_name);
    assert_int_equal(e[i].attempt, 1);
    assert_string_equal(e[i].status, i == 3 ? "wrong_output" : "ok");
    assert_string_equal(e[i].reason, r.reason);
    assert_string_equal(e[i].charge_id, r.charge_id);
    assert_int_equal(e[i].samples, r.timing.samples);
    assert_int_equal(e[i].spills, r.spills);
    assert_int_equal(e[i].cost_ms, (long long)r.cost_ms);
    if (r.compile_log != NULL) {
      char text[64];
      assert_int_equal(e[i].compile_log_len, (long long)strlen(log));
      read_heap(t->path, "compile_logs/data", e[i].compile_log_offset, e[i].compile_log_len,
                text);
      assert_string_equal(text, log);
    } else {
      assert_int_equal(e[i].compile_log_len, 0);
    }
  }
}

static void test_duplicates_are_noops(void **state) {
  struct t_state *t = *state;
  struct kb_store *s = open_ok(t->path);
  add_cand(s, 0, 1);
  add_cand(s, 0, 0);
  add_eval(s, 0, 1);
  add_eval(s, 0, 0);
  add_eval(s, 1, 1);
  add_eval(s, 1, 0);
  add_cand(s, 0, 0);
  assert_int_equal(kb__store_candidate_count(s), 1);
  assert_int_equal(kb__store_evaluation_count(s), 2);
  /* A later attempt of the same (candidate, tier) is a new evaluation. */
  struct kb_result r;
  char log[64];
  fx_result(&r, 1, log);
  r.attempt = 2;
  int added = -1;
  assert_int_equal(kb__store_add_evaluation(s, &r, &added, NULL), KB_OK);
  assert_int_equal(added, 1);
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_OK); /* added may be NULL */
  assert_int_equal(kb__store_evaluation_count(s), 3);
  kb__store_close(s);
  struct t_eval e[8];
  assert_int_equal(read_table(t->path, "evaluations", eval_type(), e, 8), 3);
  struct t_cand c[2];
  assert_int_equal(read_table(t->path, "candidates", cand_type(), c, 2), 1);
  assert_int_equal(c[0].n_evaluations, 3);
}

static void test_reopen_keeps_dedup_state(void **state) {
  struct t_state *t = *state;
  struct kb_store *s = open_ok(t->path);
  add_rows(s, 9, 0);
  kb__store_close(s); /* close flushes */

  struct kb_error err = {0, ""};
  assert_int_equal(kb__store_open(t->path, NULL, &s, &err), KB_OK); /* info is optional */
  assert_int_equal(kb__store_recovered(s), 0);
  assert_int_equal(kb__store_candidate_count(s), 3);
  assert_int_equal(kb__store_evaluation_count(s), 9);
  char id[65];
  fx_id(id, 2);
  assert_true(kb__store_has_candidate(s, id));
  assert_true(kb__store_has_evaluation(s, id, 1, 1));
  add_rows(s, 9, 9);
  add_cand(s, 3, 1);
  add_eval(s, 9, 1);
  add_eval(s, 9, 0);
  assert_int_equal(kb__store_evaluation_count(s), 10);
  kb__store_close(s);

  assert_reopens(t->path, -1, 4, 10);
  struct t_eval e[16];
  assert_int_equal(read_table(t->path, "evaluations", eval_type(), e, 16), 10);
  struct t_cand c[8];
  assert_int_equal(read_table(t->path, "candidates", cand_type(), c, 8), 4);
  assert_int_equal(c[3].n_evaluations, 1);
  assert_int_equal(c[3].best_tier, 0);
}

static void test_best_attributes(void **state) {
  struct t_state *t = *state;
  struct kb_store *s = open_ok(t->path);
  add_cand(s, 0, 1);
  add_cand(s, 1, 1);
  struct kb_error err = {0, ""};
  char id[65];
  fx_id(id, 1);
  assert_int_equal(kb__store_set_best(s, id, "cand-1", 2, 12.5, 3.25, &err), KB_OK);
  fx_id(id, 9);
  assert_int_equal(kb__store_set_best(s, id, "cand-9", 2, 1, 1, &err), KB_ENOTFOUND);
  assert_non_null(strstr(err.msg, t->path));
  fx_id(id, 0);
  assert_int_equal(kb__store_set_best(s, id, NULL, 3, 10.0, 4.0, NULL), KB_OK);
  kb__store_close(s);

  hid_t f = H5Fopen(t->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t g = H5Gopen2(f, "best", H5P_DEFAULT);
  char buf[128];
  read_str_attr(g, "candidate", buf, sizeof buf);
  assert_string_equal(buf, id);
  read_str_attr(g, "name", buf, sizeof buf);
  assert_string_equal(buf, "");
  assert_true(read_num_attr(g, "tier") == 3);
  assert_true(read_num_attr(g, "median_us") == 10.0);
  assert_true(read_num_attr(g, "speedup") == 4.0);
  assert_true(read_num_attr(g, "updated") > 1.6e9);
  H5Gclose(g);
  H5Fclose(f);
}

static void test_nan_round_trip(void **state) {
  struct t_state *t = *state;
  struct kb_store *s = open_ok(t->path);
  add_cand(s, 0, 1);
  struct kb_result r;
  char log[64];
  fx_result(&r, 0, log); /* tier 0: errors and timings NaN */
  r.timing.noise = -NAN;
  r.spills = -1;
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_OK);
  fx_result(&r, 1, log);
  r.timing.median_us = INFINITY;
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_OK);
  kb__store_close(s);
  struct t_eval e[2];
  assert_int_equal(read_table(t->path, "evaluations", eval_type(), e, 2), 2);
  assert_true(isnan(e[0].max_abs_err));
  assert_true(isnan(e[0].median_us));
  assert_true(isnan(e[0].noise));
  assert_int_equal(e[0].spills, -1);
  assert_true(isinf(e[1].median_us));
  assert_true(e[1].max_abs_err == 1e-6);
}

static void test_long_texts_truncated_safely(void **state) {
  struct t_state *t = *state;
  struct kb_store *s = open_ok(t->path);
  struct fx_candidate fc;
  fx_candidate(&fc, 0);
  char knobs[1000];
  memset(knobs, 'k', sizeof knobs);
  memcpy(knobs + 253, "\xe2\x82\xac", 3); /* "€" across the 255-byte cut */
  knobs[sizeof knobs - 1] = '\0';
  fc.c.knobs = knobs;
  memset(fc.c.name, 'n', sizeof fc.c.name); /* no NUL at all */
  assert_int_equal(kb__store_add_candidate(s, &fc.c, NULL, NULL), KB_OK);

  struct kb_result r;
  char log[64];
  fx_result(&r, 0, log);
  r.status = KB_STATUS_CRASH;
  memset(r.reason, 'a', sizeof r.reason); /* 256 bytes, no NUL, "é" at the end */
  memcpy(r.reason + 254, "\xc3\xa9", 2);
  memset(r.tier_name, 't', sizeof r.tier_name);
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_OK);
  fx_result(&r, 1, log);
  memset(r.reason, 'b', sizeof r.reason - 1); /* exactly 255: kept whole */
  r.reason[sizeof r.reason - 1] = '\0';
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_OK);
  kb__store_close(s);

  struct t_cand c[1];
  assert_int_equal(read_table(t->path, "candidates", cand_type(), c, 1), 1);
  assert_int_equal(strlen(c[0].knobs), 253);
  assert_int_equal(strspn(c[0].knobs, "k"), 253);
  assert_int_equal(strlen(c[0].name), 63);
  struct t_eval e[2];
  assert_int_equal(read_table(t->path, "evaluations", eval_type(), e, 2), 2);
  assert_int_equal(strlen(e[0].reason), 254);
  assert_int_equal(strspn(e[0].reason, "a"), 254);
  assert_int_equal(strlen(e[0].tier_name), 63);
  assert_int_equal(strlen(e[1].reason), 255);
}

static void test_candidate_columns(void **state) {
  struct t_state *t = *state;
  struct kb_store *s = open_ok(t->path);
  add_cand(s, 0, 1);
  struct kb_result r;
  char log[64];
  /* Out of order: tier 2, then tier 1, then tier 2 again at attempt 2. */
  fx_result(&r, 2, log);
  r.status = KB_STATUS_OK;
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_OK);
  fx_result(&r, 1, log);
  r.status = KB_STATUS_WRONG_OUTPUT;
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_OK);
  flush_ok(s);
  kb__store_close(s);
  struct t_cand c[1];
  read_table(t->path, "candidates", cand_type(), c, 1);
  assert_int_equal(c[0].best_tier, 2);
  assert_string_equal(c[0].status, "ok");
  assert_int_equal(c[0].n_evaluations, 2);

  s = open_ok(t->path);
  assert_int_equal(kb__store_recovered(s), 0); /* nothing to repair */
  fx_result(&r, 2, log);
  r.attempt = 2;
  r.status = KB_STATUS_TIMEOUT;
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_OK);
  kb__store_close(s);
  read_table(t->path, "candidates", cand_type(), c, 1);
  assert_int_equal(c[0].best_tier, 2);
  assert_string_equal(c[0].status, "timeout");
  assert_int_equal(c[0].n_evaluations, 3);
}

static void test_invalid_input(void **state) {
  struct t_state *t = *state;
  struct kb_store *s = open_ok(t->path);
  struct kb_error err = {0, ""};
  struct fx_candidate fc;
  fx_candidate(&fc, 0);
  snprintf(fc.c.id, sizeof fc.c.id, "not-hex");
  assert_int_equal(kb__store_add_candidate(s, &fc.c, NULL, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "not 64 hex digits"));
  assert_non_null(strstr(err.msg, t->path));
  fx_candidate(&fc, 0);
  snprintf(fc.c.task, sizeof fc.c.task, "other");
  kb_error_clear(&err);
  assert_int_equal(kb__store_add_candidate(s, &fc.c, NULL, &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "\"other\""));
  fx_candidate(&fc, 0);
  fc.c.source = NULL;
  assert_int_equal(kb__store_add_candidate(s, &fc.c, NULL, NULL), KB_EINVAL);
  assert_int_equal(kb__store_add_candidate(s, NULL, NULL, NULL), KB_EINVAL);
  assert_int_equal(kb__store_candidate_count(s), 0);

  struct kb_result r;
  char log[64];
  fx_result(&r, 0, log);
  kb_error_clear(&err);
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, &err), KB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "not stored"));
  add_cand(s, 0, 1);
  r.status = KB_STATUS_COUNT;
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_EINVAL);
  fx_result(&r, 0, log);
  r.attempt = 0;
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_EINVAL);
  fx_result(&r, 0, log);
  r.tier = -1;
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_EINVAL);
  fx_result(&r, 0, log);
  snprintf(r.task, sizeof r.task, "other");
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, NULL), KB_EINVAL);
  assert_int_equal(kb__store_evaluation_count(s), 0);
  /* Errors above left the store usable. */
  add_eval(s, 0, 1);
  kb__store_close(s);
  kb__store_close(NULL);
  assert_int_equal(kb__store_flush(NULL, NULL), KB_EINVAL);
  assert_int_equal(kb__store_evaluation_count(NULL), 0);
  assert_int_equal(kb__store_has_candidate(NULL, "x"), 0);
}

static void test_open_absent_without_info(void **state) {
  struct t_state *t = *state;
  struct kb_error err = {0, ""};
  struct kb_store *s = NULL;
  assert_int_equal(kb__store_open(t->path, NULL, &s, &err), KB_ENOTFOUND);
  assert_null(s);
  assert_true(strncmp(err.msg, t->path, strlen(t->path)) == 0);
  struct stat st;
  assert_int_not_equal(stat(t->path, &st), 0);
}

static void test_open_other_task(void **state) {
  struct t_state *t = *state;
  struct kb_error err = {0, ""};
  struct kb_store *s = open_ok(t->path);
  kb__store_close(s);
  struct kb_store_task_info other = fx_info();
  other.task = "matmul";
  assert_int_equal(kb__store_open(t->path, &other, &s, &err), KB_EINVAL);
  assert_null(s);
  char want[256];
  snprintf(want, sizeof want, "%s: holds task \"sum\", not \"matmul\"", t->path);
  assert_string_equal(err.msg, want);
}

static void test_not_hdf5(void **state) {
  struct t_state *t = *state;
  FILE *f = fopen(t->path, "w");
  assert_non_null(f);
  fputs("this is not an hdf5 file\n", f);
  fclose(f);
  /* HDF5 prints nothing, and its printing is restored afterwards. */
  H5E_auto2_t before_func = NULL, after_func = NULL;
  void *before_data = NULL, *after_data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &before_func, &before_data);
  char errpath[160];
  snprintf(errpath, sizeof errpath, "%s/stderr", t->dir);
  fflush(stderr);
  int saved = dup(2);
  int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 2);
  close(fd);
  struct kb_error err = {0, ""};
  struct kb_store *s = NULL;
  struct kb_store_task_info info = fx_info();
  int rc = kb__store_open(t->path, &info, &s, &err);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  assert_int_equal(rc, KB_EHDF5);
  assert_null(s);
  assert_true(strncmp(err.msg, t->path, strlen(t->path)) == 0);
  assert_non_null(strstr(err.msg, "cannot open for writing"));
  struct stat st;
  assert_int_equal(stat(errpath, &st), 0);
  assert_int_equal(st.st_size, 0);
  H5Eget_auto2(H5E_DEFAULT, &after_func, &after_data);
  assert_true(after_func == before_func && after_data == before_data);
}

static void test_lock(void **state) {
  struct t_state *t = *state;
  struct kb_store *s = open_ok(t->path);
  struct kb_store *s2 = NULL;
  struct kb_error err = {0, ""};
  struct kb_store_task_info info = fx_info();
  assert_int_equal(kb__store_open(t->path, &info, &s2, &err), KB_ESTATE);
  assert_null(s2);
  assert_non_null(strstr(err.msg, "already open"));
  kb__store_close(s);
  s2 = open_ok(t->path);
  kb__store_close(s2);
}

static void test_recover_killed_writer(void **state) {
  struct t_state *t = *state;
  write_and_die(t->path, 8, 5);
  /* HDF5 alone refuses the file: the status flags are set. */
  H5E_auto2_t func = NULL;
  void *data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  hid_t f = H5Fopen(t->path, H5F_ACC_RDWR, fapl);
  H5Pclose(fapl);
  H5Eset_auto2(H5E_DEFAULT, func, data);
  assert_true(f < 0);

  struct kb_store *s = open_ok(t->path);
  assert_true(kb__store_recovered(s) & KB_STORE_RECOVERED_FLAGS);
  assert_int_equal(kb__store_evaluation_count(s), 8); /* exactly what was flushed */
  assert_int_equal(kb__store_candidate_count(s), 3);
  add_rows(s, 13, 8);
  kb__store_close(s);
  assert_reopens(t->path, 0, -1, 13);
  struct t_eval e[16];
  assert_int_equal(read_table(t->path, "evaluations", eval_type(), e, 16), 13);
  for (int i = 0; i < 13; i++)
    assert_int_equal(e[i].cost_ms, 10 * i);
}

static void test_recover_without_h5clear(void **state) {
  struct t_state *t = *state;
  write_and_die(t->path, 2, 0);
  const char *old = getenv("PATH");
  char *saved = strdup(old != NULL ? old : "/usr/bin:/bin");
  setenv("PATH", t->dir, 1);
  struct kb_error err = {0, ""};
  struct kb_store *s = NULL;
  struct kb_store_task_info info = fx_info();
  int rc = kb__store_open(t->path, &info, &s, &err);
  setenv("PATH", saved, 1);
  free(saved);
  assert_int_equal(rc, KB_EHDF5);
  assert_null(s);
  assert_true(strncmp(err.msg, t->path, strlen(t->path)) == 0);
  assert_non_null(strstr(err.msg, "h5clear is not on PATH"));
  assert_reopens(t->path, -1, -1, 2);
}

/* Simulates a writer that died after appending and updating in place, but before the commit. */
static void test_drop_uncommitted(void **state) {
  struct t_state *t = *state;
  struct kb_store *s = open_ok(t->path);
  add_cand(s, 0, 1);
  add_eval(s, 0, 1);
  add_eval(s, 1, 1);
  kb__store_close(s);

  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  hid_t f = H5Fopen(t->path, H5F_ACC_RDWR, fapl);
  H5Pclose(fapl);
  assert_true(f >= 0);
  /* An extra evaluation row and source bytes, past the commit. */
  hid_t ds = H5Dopen2(f, "evaluations", H5P_DEFAULT);
  hsize_t three[1] = {3};
  assert_true(H5Dset_extent(ds, three) >= 0);
  H5Dclose(ds);
  ds = H5Dopen2(f, "sources/data", H5P_DEFAULT);
  hsize_t big[1] = {100000};
  assert_true(H5Dset_extent(ds, big) >= 0);
  H5Dclose(ds);
  /* The candidate's in-place columns ran ahead, and /best names an uncommitted candidate. */
  ds = H5Dopen2(f, "candidates", H5P_DEFAULT);
  hid_t nt = H5Tcreate(H5T_COMPOUND, sizeof(int));
  H5Tinsert(nt, "n_evaluations", 0, H5T_NATIVE_INT);
  int ninety_nine = 99;
  hsize_t one[1] = {1}, zero[1] = {0};
  hid_t fsp = H5Dget_space(ds), msp = H5Screate_simple(1, one, NULL);
  H5Sselect_hyperslab(fsp, H5S_SELECT_SET, zero, NULL, one, NULL);
  assert_true(H5Dwrite(ds, nt, msp, fsp, H5P_DEFAULT, &ninety_nine) >= 0);
  H5Sclose(msp);
  H5Sclose(fsp);
  H5Tclose(nt);
  H5Dclose(ds);
  hid_t g = H5Gopen2(f, "best", H5P_DEFAULT);
  hid_t a = H5Aopen(g, "candidate", H5P_DEFAULT);
  hid_t st = t_str(65);
  char ghost[65];
  fx_id(ghost, 77);
  assert_true(H5Awrite(a, st, ghost) >= 0);
  H5Tclose(st);
  H5Aclose(a);
  H5Gclose(g);
  H5Fclose(f);

  s = open_ok(t->path);
  assert_int_equal(kb__store_recovered(s),
                   KB_STORE_RECOVERED_DROPPED | KB_STORE_RECOVERED_REPAIRED);
  assert_int_equal(kb__store_evaluation_count(s), 2);
  add_cand(s, 1, 1); /* lands right after the committed source bytes */
  kb__store_close(s);
  struct t_eval e[4];
  assert_int_equal(read_table(t->path, "evaluations", eval_type(), e, 4), 2);
  struct t_cand c[2];
  assert_int_equal(read_table(t->path, "candidates", cand_type(), c, 2), 2);
  assert_int_equal(c[0].n_evaluations, 2);
  assert_int_equal(c[1].source_offset, c[0].source_len);
  struct fx_candidate fc;
  fx_candidate(&fc, 1);
  char src[1024];
  read_heap(t->path, "sources/data", c[1].source_offset, c[1].source_len, src);
  assert_string_equal(src, fc.source);
  f = H5Fopen(t->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  g = H5Gopen2(f, "best", H5P_DEFAULT);
  char buf[80];
  read_str_attr(g, "candidate", buf, sizeof buf);
  assert_string_equal(buf, "");
  H5Gclose(g);
  H5Fclose(f);
}

static void test_allocation_failures(void **state) {
  struct t_state *t = *state;
  struct kb_store_task_info info = fx_info();
  /* Creating: every allocation can fail; the result is ENOMEM and nothing is left open. */
  int n, rc = KB_ENOMEM;
  struct kb_store *s = NULL;
  for (n = 0; rc == KB_ENOMEM && n < 1000; n++) {
    struct kb_error err = {0, ""};
    kb_alloc_fail_after(n);
    rc = kb__store_open(t->path, &info, &s, &err);
    kb_alloc_fail_after(-1);
    if (rc == KB_ENOMEM) {
      assert_null(s);
      assert_int_equal(H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
    }
  }
  assert_int_equal(rc, KB_OK);
  assert_true(n > 3);
  add_rows(s, 30, 0);
  /* Adding: a failed allocation leaves the store as it was, and usable. */
  for (n = 0; n < 5; n++) {
    struct fx_candidate fc;
    fx_candidate(&fc, 100 + (unsigned long)n);
    kb_alloc_fail_after(0);
    rc = kb__store_add_candidate(s, &fc.c, NULL, NULL);
    kb_alloc_fail_after(-1);
    if (rc == KB_OK)
      break;
    assert_int_equal(rc, KB_ENOMEM);
    assert_false(kb__store_has_candidate(s, fc.c.id));
  }
  kb__store_close(s);
  /* Opening an existing file. */
  rc = KB_ENOMEM;
  for (n = 0; rc == KB_ENOMEM && n < 1000; n++) {
    kb_alloc_fail_after(n);
    rc = kb__store_open(t->path, &info, &s, NULL);
    kb_alloc_fail_after(-1);
  }
  assert_int_equal(rc, KB_OK);
  assert_int_equal(kb__store_evaluation_count(s), 30);
  kb__store_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_create, setup, teardown),
      cmocka_unit_test_setup_teardown(test_add_and_read_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_duplicates_are_noops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reopen_keeps_dedup_state, setup, teardown),
      cmocka_unit_test_setup_teardown(test_best_attributes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nan_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_long_texts_truncated_safely, setup, teardown),
      cmocka_unit_test_setup_teardown(test_candidate_columns, setup, teardown),
      cmocka_unit_test_setup_teardown(test_invalid_input, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open_absent_without_info, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open_other_task, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_hdf5, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
      cmocka_unit_test_setup_teardown(test_recover_killed_writer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_recover_without_h5clear, setup, teardown),
      cmocka_unit_test_setup_teardown(test_drop_uncommitted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_allocation_failures, setup, teardown),
  };
  return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
