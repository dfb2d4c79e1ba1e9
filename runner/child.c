/* The evaluation child (see child.h). Runs in the sandboxed process only. */
#include "child.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb/clock.h"
#include "kb/alloc.h"
#include "kb/task.h"
#include "kb/verify.h"
#include "proc.h"

typedef int (*forward_fn)(const kb_tensor *in, int n_in, kb_tensor *out, int n_out,
                          void *stream);

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Value at quantile `q` of sorted `v` (n > 0), interpolating between neighbours. */
static double quantile(const double *v, int n, double q) {
  double pos = q * (double)(n - 1);
  int lo = (int)floor(pos);
  int hi = lo + 1 < n ? lo + 1 : lo;
  double frac = pos - (double)lo;
  return v[lo] + (v[hi] - v[lo]) * frac;
}

void kb__timing_stats(double *samples, int n, int warmup, struct kb_timing *t) {
  memset(t, 0, sizeof *t);
  t->warmup = warmup;
  if (n <= 0)
    return;
  qsort(samples, (size_t)n, sizeof *samples, cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += samples[i];
  double mean = sum / n;
  double ss = 0;
  for (int i = 0; i < n; i++)
    ss += (samples[i] - mean) * (samples[i] - mean);
  t->samples = n;
  t->median_us = quantile(samples, n, 0.5);
  t->p10_us = quantile(samples, n, 0.1);
  t->p90_us = quantile(samples, n, 0.9);
  t->mean_us = mean;
  t->min_us = samples[0];
  t->noise = n > 1 && mean > 0 ? sqrt(ss / (n - 1)) / mean : 0;
}

/* Sends `rep` to the parent and ends the child. */
static void finish(struct kb__eval_report *rep) {
  rep->magic = KB__EVAL_MAGIC;
  const char *p = (const char *)rep;
  size_t left = sizeof *rep;
  while (left > 0) {
    ssize_t n = write(KB__PROC_REPORT_FD, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      _exit(126);
    p += n;
    left -= (size_t)n;
  }
  _exit(0);
}

/* One call of the candidate on set `s`, into `outs` (n_sets * n_out). The tensor descriptors
 * are copied fresh each call, so a candidate that scribbles on them does not steer the next. */
static int call(forward_fn f, const struct kb__eval_job *job, int s, const kb_tensor *outs) {
  kb_tensor in[KB_MAX_TENSORS];
  kb_tensor out[KB_MAX_TENSORS];
  memcpy(in, job->in + (size_t)s * job->n_in, sizeof in[0] * (size_t)job->n_in);
  memcpy(out, outs + (size_t)s * job->n_out, sizeof out[0] * (size_t)job->n_out);
  return f(in, job->n_in, out, job->n_out, NULL);
}

static void poison_outputs(const struct kb__eval_job *job, int s, const kb_tensor *outs) {
  for (int o = 0; o < job->n_out; o++) {
    const kb_tensor *t = &outs[(size_t)s * job->n_out + o];
    kb_poison(t->dtype, t->data, kb_tensor_numel(t));
  }
}

static double now(void) { return kb_now_mono(); }

void kb__eval_child(void *arg) {
  const struct kb__eval_job *job = arg;
  struct kb__eval_report rep;
  memset(&rep, 0, sizeof rep);
  double start = now();

  double *samples = NULL;
  if (job->timed) {
    samples = kb_calloc((size_t)job->max_samples, sizeof *samples);
    if (samples == NULL) {
      rep.outcome = KB__EVAL_NOMEM;
      finish(&rep);
    }
  }

  void *lib = dlopen(job->lib_path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char *why = dlerror();
    rep.outcome = KB__EVAL_LOAD;
    memcpy(rep.msg, why ? why : "unknown error",
           strnlen(why ? why : "unknown error", sizeof rep.msg - 1));
    finish(&rep);
  }
  /* POSIX dlsym returns void *; converting through a union avoids the object-to-function
   * pointer cast that ISO C leaves undefined */
  union {
    void *obj;
    forward_fn fn;
  } sym;
  sym.obj = dlsym(lib, "kb_forward");
  if (sym.obj == NULL) {
    rep.outcome = KB__EVAL_NOSYM;
    finish(&rep);
  }
  forward_fn f = sym.fn;

  for (int s = 0; s < job->n_sets; s++) {
    int rc = call(f, job, s, job->out_check);
    if (rc != 0) {
      rep.outcome = KB__EVAL_FAILED;
      rep.rc = rc;
      rep.set = s;
      rep.phase = KB__PHASE_CHECK;
      finish(&rep);
    }
  }

  int n = 0;
  if (job->timed) {
    for (int w = 0; w < job->warmup; w++) {
      int s = w % job->n_sets;
      poison_outputs(job, s, job->out_time);
      int rc = call(f, job, s, job->out_time);
      if (rc != 0) {
        rep.outcome = KB__EVAL_FAILED;
        rep.rc = rc;
        rep.set = s;
        rep.phase = KB__PHASE_WARMUP;
        finish(&rep);
      }
      rep.sets_timed |= UINT32_C(1) << s;
    }
    double timed = 0, sum = 0, sumsq = 0;
    while (n < job->max_samples) {
      int s = n % job->n_sets;
      poison_outputs(job, s, job->out_time);
      double t0 = now();
      int rc = call(f, job, s, job->out_time);
      double t1 = now();
      if (rc != 0) {
        rep.outcome = KB__EVAL_FAILED;
        rep.rc = rc;
        rep.set = s;
        rep.phase = KB__PHASE_TIMING;
        finish(&rep);
      }
      rep.sets_timed |= UINT32_C(1) << s;
      double us = (t1 - t0) * 1e6;
      samples[n++] = us;
      timed += t1 - t0;
      sum += us;
      sumsq += us * us;
      if (n < job->min_samples)
        continue;
      if (timed >= job->max_seconds || t1 - start >= job->budget_s)
        break;
      double mean = sum / n;
      double var = n > 1 ? (sumsq - sum * mean) / (n - 1) : 0;
      if (n > 1 && mean > 0 && sqrt(var > 0 ? var : 0) / mean < job->noise)
        break;
    }
  }
  kb__timing_stats(samples, n, job->timed ? job->warmup : 0, &rep.timing);
  kb_free(samples);
  rep.outcome = KB__EVAL_DONE;
  finish(&rep);
}
