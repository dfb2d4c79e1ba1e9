/* The margin of a host task's honest seeds under its tolerance, on inputs drawn from fresh seeds
 * of each input set's distribution.
 *
 * The witness (runner/witness.c) checks a full-tier candidate on inputs drawn from a seed the
 * runner picks then, and every campaign may draw others; a seed whose rounding error lies near
 * its tolerance passes the task's own input sets and fails now and then on other draws (the host
 * "sum" task's sequential f32 sum under rtol 1e-4: 227 off where 210 was allowed, witness call 3
 * of 11 in one CI run of e2e_suspend; over 3,000 draws its largest error was 0.91 of that
 * tolerance). Each element's use of its tolerance, u = |got - want| / (atol + rtol |want|)
 * (verify.h's max_tol_use, over 1 fails), is measured on every draw, and for each input set:
 *   tail   the root mean square of u over the set's draws and elements, times the deviations
 *          that the largest of a million calls' elements reaches when errors are normal,
 *          sqrt(2 ln(1e6 E)) for E output elements a call: under 1. A one-element output (a
 *          sum) is checked this way though a few draws never show its tail.
 *   worst  the largest u seen: at most KB_MARGIN_MAX, for errors that are not normal (a few
 *          elements off by much where most are exact).
 *
 * usage: test_seed_margin [--draws N] TASK_DIR...
 * Each seed and the oracle are built by the runner's compile path (the seeds as candidates, with
 * their flags; the oracle trusted) and called in this process, as the host sandbox calls them,
 * on N draws of every input set (the set's own seed and N - 1 others; default 4, more for an
 * output of fewer than KB_MARGIN_SAMPLES / N elements). Prints one row
 * per seed and fails when one is over either bound, or fails outright. Draws are deterministic:
 * a run's verdict is the next run's. */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compile.h"
#include "compile_util.h"
#include "inputs.h"
#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/task.h"
#include "kb_kernel.h"
#include "verify.h"

#define ABI_DIR KB_SOURCE_DIR "/common/include"
#define KB_MARGIN_MAX (1.0 / 3.0) /* the most of its tolerance an honest seed may use */
#define KB_MARGIN_SAMPLES 64   /* elements whose u a set's tail bound takes, at least ... */
#define KB_MARGIN_MAX_DRAWS 64 /* ... as long as the draws for them are no more than this */
#define MAX_TASKS 64

typedef int (*forward_fn)(const kb_tensor *in, int n_in, kb_tensor *out, int n_out,
                          void *stream);

static int n_dirs;
static char **dirs;
static int draws = 4;
static struct kb__compiler cc;
static char cache[] = "/tmp/kb-margin.XXXXXX";

/* A library built from the source at `path` (trusted: the oracle) and its kb_forward; fails the test when it
 * does not build or load. `*handle` is dlclose'd by the caller. */
static forward_fn load(const char *path, const char *flags, int trusted, void **handle) {
  char *source = tu_slurp(path);
  struct kb__compile_req req = {.source = source, .flags = flags, .trusted = trusted};
  struct kb__build b;
  struct kb_error err = {0};
  kb__build_init(&b);
  if (kb__compile_req(&cc, &req, &b, &err) != KB_OK)
    fail_msg("%s: %s", path, err.msg);
  if (!b.ok)
    fail_msg("%s: %s", path, b.reason);
  *handle = dlopen(b.lib_path, RTLD_NOW | RTLD_LOCAL);
  if (*handle == NULL)
    fail_msg("%s: %s", path, dlerror());
  kb__build_release(&b);
  kb_free(source);
  forward_fn f;
  void *sym = dlsym(*handle, "kb_forward");
  if (sym == NULL)
    fail_msg("%s: no kb_forward", path);
  memcpy(&f, &sym, sizeof f);
  return f;
}

/* Tensors of `specs` (n of them) with new buffers. */
static void alloc_tensors(const struct kb_tensor_spec *specs, int n, kb_tensor *t) {
  for (int i = 0; i < n; i++) {
    t[i].dtype = specs[i].dtype;
    t[i].ndim = specs[i].ndim;
    memcpy(t[i].shape, specs[i].shape, sizeof t[i].shape);
    size_t bytes = (size_t)kb_tensor_spec_numel(&specs[i]) * (size_t)kb_dtype_size(t[i].dtype);
    t[i].data = kb_malloc(bytes > 0 ? bytes : 1);
    assert_non_null(t[i].data);
  }
}

static void free_tensors(kb_tensor *t, int n) {
  for (int i = 0; i < n; i++)
    kb_free(t[i].data);
}

/* One seed's use of its tolerance: the largest over every set and draw, with where it was, and
 * the tail bound of its worst set. */
struct margin {
  double use;  /* largest u seen */
  int set;     /* on this set (1-based) ... */
  int draw;    /* ... and draw (0: the set's own seed) */
  double tail; /* the worst set's root mean square of u times the deviations of a million calls */
  int tail_set; /* that set (1-based) */
};

static void check_task(const char *dir, int *failed) {
  struct kb_task t;
  struct kb_error err = {0};
  if (kb_task_load(dir, &t, &err) != KB_OK)
    fail_msg("%s", err.msg);
  assert_int_equal(t.backend, KB_BACKEND_HOST);
  void *oh = NULL;
  forward_fn oracle = load(t.oracle_path, NULL, 1, &oh);
  void *sh[KB_MAX_SEEDS] = {0};
  forward_fn seed[KB_MAX_SEEDS];
  struct margin m[KB_MAX_SEEDS];
  for (int s = 0; s < t.n_seeds; s++) {
    seed[s] = load(t.seeds[s].path, t.seeds[s].flags, 0, &sh[s]);
    m[s] = (struct margin){0, -1, -1, 0, -1};
  }
  kb_tensor in[KB_MAX_TENSORS], want[KB_MAX_TENSORS], got[KB_MAX_TENSORS];
  alloc_tensors(t.inputs, t.n_inputs, in);
  alloc_tensors(t.outputs, t.n_outputs, want);
  alloc_tensors(t.outputs, t.n_outputs, got);
  int64_t elems = 0; /* output elements a call */
  for (int o = 0; o < t.n_outputs; o++)
    elems += kb_tensor_numel(&got[o]);
  double devs = sqrt(2 * log(1e6 * (double)elems));
  /* enough draws for KB_MARGIN_SAMPLES elements a set: a root mean square of a sum's few
   * draws is itself too noisy to bound its tail */
  int n_draws = draws;
  while (n_draws < KB_MARGIN_MAX_DRAWS && (int64_t)n_draws * elems < KB_MARGIN_SAMPLES)
    n_draws++;
  for (int k = 0; k < t.n_sets; k++) {
    double sum_sq[KB_MAX_SEEDS] = {0};
    for (int d = 0; d < n_draws; d++) {
      struct kb_input_set set = t.sets[k];
      if (d > 0) /* others than the task's own, as a witness or another campaign draws */
        set.seed = kb__rand_mix(set.seed + (uint64_t)d * UINT64_C(0x9e3779b97f4a7c15));
      for (int i = 0; i < t.n_inputs; i++)
        if (kb__inputs_fill(&set, i, in[i].dtype, in[i].data, kb_tensor_numel(&in[i]), &err))
          fail_msg("%s: set %d: %s", t.json_path, k + 1, err.msg);
      if (oracle(in, t.n_inputs, want, t.n_outputs, NULL) != 0)
        fail_msg("%s: the oracle failed on set %d draw %d", t.json_path, k + 1, d);
      for (int s = 0; s < t.n_seeds; s++) {
        for (int o = 0; o < t.n_outputs; o++)
          kb__poison(got[o].dtype, got[o].data, kb_tensor_numel(&got[o]));
        double use = INFINITY;
        if (seed[s](in, t.n_inputs, got, t.n_outputs, NULL) == 0) {
          use = 0;
          for (int o = 0; o < t.n_outputs; o++) {
            struct kb_verify_report rep;
            kb__verify(got[o].dtype, got[o].data, want[o].data, kb_tensor_numel(&got[o]),
                       t.atol, t.rtol, &rep);
            /* a bad element that is not finite has no use: then it is infinite */
            double u = rep.bad > 0 && rep.max_tol_use <= 1 ? INFINITY : rep.max_tol_use;
            if (u > use)
              use = u;
            sum_sq[s] += rep.sum_sq_tol_use;
          }
        }
        if (use > m[s].use || m[s].set < 0) {
          m[s].use = use;
          m[s].set = k + 1;
          m[s].draw = d;
        }
        if (!(use < INFINITY))
          sum_sq[s] = INFINITY;
      }
    }
    for (int s = 0; s < t.n_seeds; s++) {
      double tail = sqrt(sum_sq[s] / ((double)n_draws * (double)elems)) * devs;
      if (!(tail <= m[s].tail) || m[s].tail_set < 0) {
        m[s].tail = tail;
        m[s].tail_set = k + 1;
      }
    }
  }
  for (int s = 0; s < t.n_seeds; s++) {
    int bad = !(m[s].use <= KB_MARGIN_MAX) || !(m[s].tail <= 1);
    printf("%-14s %-10s %7.3f (set %d draw %d) %7.3f (set %d)%s\n", t.id, t.seeds[s].name,
           m[s].use, m[s].set, m[s].draw, m[s].tail, m[s].tail_set,
           bad ? "   <- over the margin" : "");
    *failed += bad;
    dlclose(sh[s]);
  }
  dlclose(oh);
  free_tensors(in, t.n_inputs);
  free_tensors(want, t.n_outputs);
  free_tensors(got, t.n_outputs);
  kb_task_release(&t);
}

static void test_margins(void **state) {
  (void)state;
  printf("%-14s %-10s %-22s %s   (%d draws a set; worst at most %.3f, tail under 1)\n",
         "task", "seed", "worst u", "tail", draws, KB_MARGIN_MAX);
  int failed = 0;
  for (int i = 0; i < n_dirs; i++)
    check_task(dirs[i], &failed);
  if (failed)
    fail_msg("%d seed(s) too near their task's tolerance: a draw of other inputs (the "
             "witness's, another campaign's) would fail them now and then", failed);
}

static int setup(void **state) {
  (void)state;
  return tu_compiler_setup(&cc, cache, sizeof cache, "/tmp/kb-margin.XXXXXX", NULL, ABI_DIR);
}

static int teardown(void **state) {
  (void)state;
  return tu_compiler_teardown(&cc, cache);
}

int main(int argc, char **argv) {
  int i = 1;
  if (argc > 2 && strcmp(argv[1], "--draws") == 0) {
    char *end;
    long v = strtol(argv[2], &end, 10);
    if (*end != '\0' || v < 1 || v > 1000) {
      fprintf(stderr, "test_seed_margin: --draws: \"%s\" is not a count of 1 to 1000\n",
              argv[2]);
      return 2;
    }
    draws = (int)v;
    i = 3;
  }
  if (argc - i < 1 || argc - i > MAX_TASKS) {
    fprintf(stderr, "usage: test_seed_margin [--draws N] TASK_DIR...\n");
    return 2;
  }
  n_dirs = argc - i;
  dirs = argv + i;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_margins)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
