/* The sandbox's evaluation engine (see engine.h). */
#include "engine.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confine.h"
#include "kb/alloc.h"
#include "kb/clock.h"
#include "kb/verify.h"
#include "stats.h"
#ifdef KB_HAVE_CUPTI_TRACE
#include "cupti_trace.h"
#include "kb/error.h"
#endif

#define ALIGN 256
#define BATCH_TARGET_US 50.0  /* a batch of short calls lasts at least this long */
#define BATCH_MAX 256         /* calls per batch at most */
#define ENQUEUE_US 6.0        /* host time to queue one call, generous: the spin covers it */
#define FLUSHED_TARGET_US 600.0 /* flushed calls of a sample add up to about this much */

typedef int (*forward_fn)(const kb_tensor *in, int n_in, kb_tensor *out, int n_out,
                          void *stream);

struct kb__prepared {
  char *key;                 /* owned */
  int n_in, n_out, n_sets;
  struct kb_tensor_spec in_spec[KB_MAX_TENSORS];
  struct kb_tensor_spec out_spec[KB_MAX_TENSORS];
  struct kb_input_set sets[KB_MAX_SETS];
  double atol, rtol;
  unsigned char *base;       /* the one device allocation (owned) */
  size_t in_bytes[KB_MAX_TENSORS], out_bytes[KB_MAX_TENSORS];
  int64_t in_n[KB_MAX_TENSORS], out_n[KB_MAX_TENSORS];
  size_t *in_off, *chk_off, *ref_off, *tim_off; /* per set and tensor (owned) */
  uint64_t *in_sum, *ref_sum; /* checksums (owned) */
  unsigned char *scratch;    /* one input's worth, to find a changed element (owned) */
  int damaged;               /* the candidate changed inputs or references */
  int holds[KB_MAX_SETS];    /* input buffers of set slot b hold the data of set holds[b] */
  size_t bytes;              /* device memory held: base and scratch */
};

static size_t align_up(size_t v) { return (v + ALIGN - 1) / ALIGN * ALIGN; }

static size_t spec_bytes(const struct kb_tensor_spec *s, int64_t *numel) {
  int size = kb_dtype_size(s->dtype);
  if (size == 0 || s->ndim < 0 || s->ndim > KB_MAX_DIMS)
    return 0;
  int64_t n = 1;
  for (int d = 0; d < s->ndim; d++) {
    if (s->shape[d] <= 0 || s->shape[d] > (INT64_C(1) << 40) / n)
      return 0;
    n *= s->shape[d];
  }
  *numel = n;
  return (size_t)n * (size_t)size;
}

static void tensor(kb_tensor *t, const struct kb_tensor_spec *s, void *data) {
  memset(t, 0, sizeof *t);
  t->data = data;
  t->dtype = s->dtype;
  t->ndim = s->ndim;
  for (int i = 0; i < s->ndim; i++)
    t->shape[i] = s->shape[i];
}

static void say(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (vsnprintf(buf, size, fmt, ap) < 0 && size > 0)
    buf[0] = '\0';
  va_end(ap);
}

const char *kb__prepared_key(const struct kb__prepared *p) { return p->key; }
int kb__prepared_damaged(const struct kb__prepared *p) { return p->damaged; }
size_t kb__prepared_bytes(const struct kb__prepared *p) { return p->bytes; }

void kb__prepared_free(struct kb__dev *d, struct kb__prepared *p) {
  if (p == NULL)
    return;
  if (p->base != NULL)
    d->free(d, p->base);
  if (p->scratch != NULL)
    d->free(d, p->scratch);
  kb_free(p->key);
  kb_free(p->in_off);
  kb_free(p->chk_off);
  kb_free(p->ref_off);
  kb_free(p->tim_off);
  kb_free(p->in_sum);
  kb_free(p->ref_sum);
  kb_free(p);
}

/* Loads `path` and finds kb_forward. Returns the handle, or NULL with `why` set; `*nosym` tells
 * a library without kb_forward from one that does not load. */
static void *load(const char *path, forward_fn *fn, int *nosym, char *why, size_t size) {
  *nosym = 0;
  kb__confine_load_begin(); /* the loader's read-only opens pass (confine.h) */
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  kb__confine_load_end();
  if (lib == NULL) {
    const char *e = dlerror();
    e = e ? e : "unknown error";
    /* dlerror() starts with the path, which says nothing to whoever reads the reason */
    size_t plen = strlen(path);
    if (strncmp(e, path, plen) == 0 && strncmp(e + plen, ": ", 2) == 0)
      e += plen + 2;
    say(why, size, "%s", e);
    return NULL;
  }
  union {
    void *obj;
    forward_fn fn;
  } sym;
  sym.obj = dlsym(lib, "kb_forward");
  if (sym.obj == NULL) {
    *nosym = 1;
    say(why, size, "the library does not export kb_forward");
    dlclose(lib);
    return NULL;
  }
  *fn = sym.fn;
  return lib;
}

/* Calls `fn` on set `s` into the outputs at `offs`. The descriptors are built fresh each call,
 * so a candidate that scribbles on them does not steer the next. */
static int call(struct kb__dev *d, const struct kb__prepared *p, forward_fn fn, int s,
                const size_t *offs) {
  kb_tensor in[KB_MAX_TENSORS], out[KB_MAX_TENSORS];
  for (int i = 0; i < p->n_in; i++)
    tensor(&in[i], &p->in_spec[i], p->base + p->in_off[s * p->n_in + i]);
  for (int o = 0; o < p->n_out; o++)
    tensor(&out[o], &p->out_spec[o], p->base + offs[s * p->n_out + o]);
  return fn(in, p->n_in, out, p->n_out, d->stream);
}

static int poison(struct kb__dev *d, const struct kb__prepared *p, int s, const size_t *offs) {
  for (int o = 0; o < p->n_out; o++) {
    int e = d->poison(d, p->base + offs[s * p->n_out + o], p->out_spec[o].dtype, p->out_n[o]);
    if (e)
      return e;
  }
  return 0;
}

int kb__prepare(struct kb__dev *d, const struct kb__prep_spec *s, struct kb__prepared **out,
                int *fatal, char *why, size_t size) {
  *out = NULL;
  *fatal = 0;
  char msg[200] = "";
  void *lib = NULL;
  struct kb__prepared *p = kb_calloc(1, sizeof *p);
  if (p == NULL) {
    say(why, size, "out of memory");
    return -1;
  }
  int ns = s->n_sets, ni = s->n_in, no = s->n_out;
  p->key = kb_strdup(s->key);
  p->n_in = ni;
  p->n_out = no;
  p->n_sets = ns;
  p->atol = s->atol;
  p->rtol = s->rtol;
  memcpy(p->in_spec, s->inputs, sizeof p->in_spec);
  memcpy(p->out_spec, s->outputs, sizeof p->out_spec);
  memcpy(p->sets, s->sets, sizeof p->sets);
  for (int k = 0; k < KB_MAX_SETS; k++)
    p->holds[k] = k;
  p->in_off = kb_calloc((size_t)ns * (size_t)ni, sizeof *p->in_off);
  p->chk_off = kb_calloc((size_t)ns * (size_t)no, sizeof *p->chk_off);
  p->ref_off = kb_calloc((size_t)ns * (size_t)no, sizeof *p->ref_off);
  p->tim_off = kb_calloc((size_t)ns * (size_t)no, sizeof *p->tim_off);
  p->in_sum = kb_calloc((size_t)ns * (size_t)ni, sizeof *p->in_sum);
  p->ref_sum = kb_calloc((size_t)ns * (size_t)no, sizeof *p->ref_sum);
  if (!p->key || !p->in_off || !p->chk_off || !p->ref_off || !p->tim_off || !p->in_sum ||
      !p->ref_sum) {
    say(why, size, "out of memory");
    goto fail;
  }
  size_t biggest_in = 0;
  for (int i = 0; i < ni + no; i++) {
    const struct kb_tensor_spec *t = i < ni ? &s->inputs[i] : &s->outputs[i - ni];
    int64_t n = 0;
    size_t bytes = spec_bytes(t, &n);
    if (bytes == 0) {
      say(why, size, "tensor \"%s\" has a bad dtype or shape", t->name);
      goto fail;
    }
    if (i < ni) {
      p->in_bytes[i] = bytes;
      p->in_n[i] = n;
      biggest_in = bytes > biggest_in ? bytes : biggest_in;
    } else {
      p->out_bytes[i - ni] = bytes;
      p->out_n[i - ni] = n;
    }
  }
  size_t off = 0;
  for (int k = 0; k < ns; k++) {
    for (int i = 0; i < ni; i++) {
      p->in_off[k * ni + i] = off;
      off = align_up(off + p->in_bytes[i]);
    }
    for (int o = 0; o < no; o++) {
      p->chk_off[k * no + o] = off;
      off = align_up(off + p->out_bytes[o]);
    }
    for (int o = 0; o < no; o++) {
      p->ref_off[k * no + o] = off;
      off = align_up(off + p->out_bytes[o]);
    }
    for (int o = 0; o < no; o++) {
      p->tim_off[k * no + o] = off;
      off = align_up(off + p->out_bytes[o]);
    }
  }
  void *mem = NULL;
  int e = d->alloc(d, off, &mem);
  if (e == 0) {
    p->base = mem;
    e = d->alloc(d, biggest_in, &mem);
    if (e == 0)
      p->scratch = mem;
  }
  p->bytes = off + biggest_in;
  if (e) {
    say(why, size, "cannot allocate %zu bytes of device memory: %s", off,
        d->describe(d, e, msg, sizeof msg));
    *fatal = d->fatal(d, e);
    goto fail;
  }
  forward_fn fn;
  int nosym = 0;
  lib = load(s->oracle, &fn, &nosym, msg, sizeof msg);
  if (lib == NULL) {
    say(why, size, "cannot load the oracle: %s", msg);
    goto fail;
  }
  for (int k = 0; k < ns; k++) {
    for (int i = 0; i < ni && e == 0; i++)
      e = d->fill(d, p->base + p->in_off[k * ni + i], p->in_spec[i].dtype, p->in_n[i],
                  &p->sets[k], i);
    if (e == 0)
      e = poison(d, p, k, p->ref_off);
    if (e) {
      say(why, size, "cannot draw input set %d: %s", k, d->describe(d, e, msg, sizeof msg));
      *fatal = d->fatal(d, e);
      goto fail;
    }
    int ret = call(d, p, fn, k, p->ref_off);
    e = d->sync(d);
    if (ret != 0 || e != 0) {
      if (e)
        say(why, size, "the oracle failed on input set %d: %s", k,
            d->describe(d, e, msg, sizeof msg));
      else
        say(why, size, "the oracle returned %d on input set %d", ret, k);
      *fatal = e ? d->fatal(d, e) : 0;
      goto fail;
    }
    for (int o = 0; o < no; o++) {
      /* a reference compared with itself passes exactly when every element is finite */
      struct kb_verify_report rep;
      int pass = 0;
      const void *ref = p->base + p->ref_off[k * no + o];
      e = d->compare(d, ref, ref, p->out_spec[o].dtype, p->out_n[o], 0, 0, &rep, &pass);
      if (e == 0 && !pass) {
        say(why, size, "the oracle's output \"%s\" of input set %d: element %lld is not finite",
            p->out_spec[o].name, k, (long long)rep.first_bad);
        goto fail;
      }
      if (e == 0)
        e = d->checksum(d, ref, p->out_bytes[o], &p->ref_sum[k * no + o]);
      if (e) {
        say(why, size, "cannot check the oracle's outputs: %s", d->describe(d, e, msg, sizeof msg));
        *fatal = d->fatal(d, e);
        goto fail;
      }
    }
    for (int i = 0; i < ni && e == 0; i++)
      e = d->checksum(d, p->base + p->in_off[k * ni + i], p->in_bytes[i], &p->in_sum[k * ni + i]);
    if (e) {
      say(why, size, "cannot checksum the inputs: %s", d->describe(d, e, msg, sizeof msg));
      *fatal = d->fatal(d, e);
      goto fail;
    }
  }
  dlclose(lib);
  *out = p;
  return 0;
fail:
  if (lib != NULL)
    dlclose(lib);
  kb__prepared_free(d, p);
  return -1;
}

/* ---- evaluation ------------------------------------------------------------------------- */

struct run {
  struct kb__dev *d;
  struct kb__prepared *p;
  const struct kb__eval_spec *e;
  struct kb__verdict *v;
  int n_check;
  double start;
  int windows;              /* timed samples (trace windows) since the kernel trace began */
};

/* Records a device error `code` met while doing `what` as the verdict: a crash of the
 * candidate (its asynchronous work is what fails), fatal when the device says so. */
static void device_error(struct run *r, int code, const char *what) {
  char msg[160];
  r->v->status = KB_STATUS_CRASH;
  say(r->v->reason, sizeof r->v->reason, "%s: %s", what,
      r->d->describe(r->d, code, msg, sizeof msg));
  r->v->fatal = r->d->fatal(r->d, code);
}

static const char *phase_text[] = {"check", "warm-up", "timed"};

/* One call of `fn` on set `s` into `offs`, with poisoning first. Returns 0, or 1 with the
 * verdict set. */
static int one_call(struct run *r, forward_fn fn, int s, const size_t *offs, int phase,
                    const char *who) {
  int e = poison(r->d, r->p, s, offs);
  if (e) {
    device_error(r, e, "cannot poison the outputs");
    return 1;
  }
  int ret = call(r->d, r->p, fn, s, offs);
  if (ret != 0) {
    r->v->status = KB_STATUS_CRASH;
    say(r->v->reason, sizeof r->v->reason, "%skb_forward returned %d on input set %d (%s call)",
        who, ret, s, phase_text[phase]);
    return 1;
  }
  return 0;
}

static int sync_or_crash(struct run *r, int s, int phase) {
  int e = r->d->sync(r->d);
  if (e) {
    char what[96];
    say(what, sizeof what, "device error after the %s call on input set %d", phase_text[phase], s);
    device_error(r, e, what);
    return 1;
  }
  return 0;
}

/* Checks every input and reference of every set against its checksum. Returns 0, or 1 with
 * the verdict set (rejected) and the prepared task marked damaged. */
static int integrity(struct run *r, const char *when) {
  struct kb__prepared *p = r->p;
  struct kb__dev *d = r->d;
  for (int s = 0; s < p->n_sets; s++) {
    for (int i = 0; i < p->n_in; i++) {
      uint64_t sum = 0;
      unsigned char *in = p->base + p->in_off[s * p->n_in + i];
      int e = d->checksum(d, in, p->in_bytes[i], &sum);
      if (e) {
        device_error(r, e, "cannot checksum the inputs");
        return 1;
      }
      int held = p->holds[s];
      if (sum == p->in_sum[held * p->n_in + i])
        continue;
      /* find the first changed element against a fresh copy */
      long long element = -1;
      struct kb_verify_report rep;
      int pass = 1;
      if (d->fill(d, p->scratch, p->in_spec[i].dtype, p->in_n[i], &p->sets[held], i) == 0 &&
          d->compare(d, in, p->scratch, p->in_spec[i].dtype, p->in_n[i], 0, 0, &rep, &pass) == 0 &&
          !pass)
        element = (long long)rep.first_bad;
      p->damaged = 1;
      r->v->status = KB_STATUS_REJECTED;
      if (element >= 0)
        say(r->v->reason, sizeof r->v->reason,
            "modified its inputs: element %lld of input \"%s\" of input set %d changed (%s)",
            element, p->in_spec[i].name, held, when);
      else
        say(r->v->reason, sizeof r->v->reason,
            "modified its inputs: input \"%s\" of input set %d changed (%s)", p->in_spec[i].name,
            held, when);
      return 1;
    }
    for (int o = 0; o < p->n_out; o++) {
      uint64_t sum = 0;
      int e = d->checksum(d, p->base + p->ref_off[s * p->n_out + o], p->out_bytes[o], &sum);
      if (e) {
        device_error(r, e, "cannot checksum the reference outputs");
        return 1;
      }
      if (sum != p->ref_sum[s * p->n_out + o]) {
        p->damaged = 1;
        /* it wrote where it should not: this process's memory cannot be trusted any more */
        r->v->fatal = 1;
        r->v->status = KB_STATUS_REJECTED;
        say(r->v->reason, sizeof r->v->reason,
            "wrote outside its outputs: the evaluator's reference for output \"%s\" of input "
            "set %d changed (%s)",
            p->out_spec[o].name, s, when);
        return 1;
      }
    }
  }
  return 0;
}

/* Compares the outputs at `offs` of the first `n_sets` sets in `mask` with the references.
 * Returns 1 when all pass; else describes the first failure into `why`. Device errors set the
 * verdict and return -1. */
static int outputs_pass(struct run *r, const size_t *offs, uint32_t mask, char *why,
                        size_t why_size) {
  struct kb__prepared *p = r->p;
  int pass_all = 1;
  for (int s = 0; s < r->n_check; s++) {
    if (!(mask & (UINT32_C(1) << s)))
      continue;
    for (int o = 0; o < p->n_out; o++) {
      struct kb_verify_report rep;
      int pass = 0;
      int held = p->holds[s];
      int e = r->d->compare(r->d, p->base + offs[s * p->n_out + o],
                            p->base + p->ref_off[held * p->n_out + o], p->out_spec[o].dtype,
                            p->out_n[o], p->atol, p->rtol, &rep, &pass);
      if (e) {
        device_error(r, e, "cannot compare the outputs");
        return -1;
      }
      if (isnan(r->v->max_abs_err) || rep.max_abs_err > r->v->max_abs_err)
        r->v->max_abs_err = rep.max_abs_err;
      if (isnan(r->v->max_rel_err) || rep.max_rel_err > r->v->max_rel_err)
        r->v->max_rel_err = rep.max_rel_err;
      if (!pass && pass_all) {
        char detail[160];
        kb_verify_describe(&rep, detail, sizeof detail);
        say(why, why_size, "output \"%s\" of input set %d%s: %s", p->out_spec[o].name, held,
            held != s ? " (moved to another buffer)" : "", detail);
        pass_all = 0;
      }
    }
  }
  return pass_all;
}

/* One sample of `fn`: `batch` calls starting at set `*next` (advanced), outputs at `offs`; the
 * outputs of the batch's sets poisoned first. Two shapes. Queued (`flushed` 0): the L2 flushed
 * when the tier asks, for a batch a spin kernel queued first, then the calls back to back between
 * one pair of timer marks. Flushed (`flushed` 1, tiers that flush): every call alone, as nvbench
 * and bench/gpu/indep_timer.cu time one: the L2 flushed, then the call between its own pair of
 * marks, nothing else in between; the host waits once for the whole batch. While tracing, one
 * kernel-trace window (spin markers) encloses the sample in both shapes. `*us` gets the mean time
 * per call. Returns 0 or 1 with the verdict set. */
static int sample(struct run *r, forward_fn fn, int batch, int flushed, int *next,
                  const size_t *offs, uint32_t *timed_mask, const char *who, double *us) {
  struct kb__dev *d = r->d;
  for (int b = 0; b < batch && b < r->n_check; b++) {
    int pe = poison(d, r->p, (*next + b) % r->n_check, offs);
    if (pe) {
      device_error(r, pe, "cannot poison the outputs");
      return 1;
    }
  }
  int e = 0, marker = d->end_marker, bad = 0;
  if (!flushed) {
    e = r->e->flush_l2 ? d->flush_l2(d) : 0;
    if (e == 0 && batch > 1)
      e = d->spin(d, 20.0 + ENQUEUE_US * batch);
    else if (e == 0 && marker)
      e = d->spin(d, 0.0); /* the kernel trace's opening marker (the batch's spin is one too) */
    if (e == 0)
      e = d->timer_start(d, 0);
  } else if (marker) {
    e = d->spin(d, 0.0); /* opening marker; the closing one follows the last call */
    d->end_marker = 0;
  }
  if (e) {
    device_error(r, e, "cannot start a timed sample");
    bad = 1;
  }
  for (int b = 0; b < batch && !bad; b++) {
    int s = *next;
    if (flushed) {
      /* the flush (tens of microseconds of device work) covers queueing the call behind it */
      e = d->flush_l2(d);
      if (e == 0)
        e = d->timer_start(d, b);
      if (e) {
        device_error(r, e, "cannot start a timed call");
        bad = 1;
        break;
      }
    }
    *next = (*next + 1) % r->n_check;
    int ret = call(d, r->p, fn, s, offs);
    if (ret != 0) {
      r->v->status = KB_STATUS_CRASH;
      say(r->v->reason, sizeof r->v->reason,
          "%skb_forward returned %d on input set %d (timed call)", who, ret, s);
      bad = 1;
      break;
    }
    *timed_mask |= UINT32_C(1) << s;
    if (flushed && (e = d->timer_stop(d, b)) != 0) {
      device_error(r, e, "device error during a timed call");
      bad = 1;
    }
  }
  d->end_marker = marker;
  if (bad)
    return 1;
  double t = 0;
  e = flushed ? (marker ? d->spin(d, 0.0) : 0) : d->timer_stop(d, 0);
  if (e == 0)
    e = d->timer_read(d, flushed ? batch : 1, &t);
  if (e == 0)
    e = d->sync(d);
  if (e) {
    device_error(r, e, "device error during a timed call");
    return 1;
  }
  r->windows++;
  *us = t / batch;
  return 0;
}

static int is_float(int dtype) {
  return dtype == KB_F32 || dtype == KB_F64 || dtype == KB_F16 || dtype == KB_BF16;
}

/* The first checked set after set 0 one of whose (floating-point) outputs at `offs` was left
 * untouched: every element still NaN, as poisoned. Returns the set and its output in `*out`,
 * or -1 when there is none (or a device error, which the verdict then does not need). */
static int untouched_set(struct run *r, const size_t *offs, int *out) {
  struct kb__prepared *p = r->p;
  for (int s = 1; s < r->n_check; s++)
    for (int o = 0; o < p->n_out; o++) {
      if (!is_float(p->out_spec[o].dtype))
        continue;
      const void *got = p->base + offs[s * p->n_out + o];
      struct kb_verify_report rep;
      int pass = 1;
      /* compared with itself, an element fails exactly when it is not finite */
      if (r->d->compare(r->d, got, got, p->out_spec[o].dtype, p->out_n[o], 0, 0, &rep, &pass))
        return -1;
      if (!pass && rep.bad == rep.checked && rep.checked > 0 && isnan(rep.got)) {
        *out = o;
        return s;
      }
    }
  return -1;
}

/* Puts the data of set (b + shift) % n_check into the input buffers of set slot b, for every
 * checked slot (shift 0 puts everything back). A candidate that keeps results keyed by the input
 * pointers (an output cache) then returns the old set's answer for the new contents. Returns 0
 * or a device error code. */
static int rotate_inputs(struct run *r, int shift) {
  struct kb__prepared *p = r->p;
  for (int b = 0; b < r->n_check; b++) {
    int set = (b + shift) % r->n_check;
    if (p->holds[b] == set)
      continue;
    for (int i = 0; i < p->n_in; i++) {
      int e = r->d->fill(r->d, p->base + p->in_off[b * p->n_in + i], p->in_spec[i].dtype,
                         p->in_n[i], &p->sets[set], i);
      if (e)
        return e;
    }
    p->holds[b] = set;
  }
  return 0;
}

#ifdef KB_HAVE_CUPTI_TRACE
/* Ends the kernel trace of `windows` timed samples and cross-checks it; the verdict keeps the
 * candidate's kernel records (`period`: windows per sample when the baseline was timed
 * interleaved, else 0; see kb_cupti_keep_candidate). Returns 0, or 1 with the
 * verdict set (rejected, or a crash for a device error). */
static int cross_check(struct run *r, int windows, int period) {
  struct kb__dev *d = r->d;
  struct kb__verdict *v = r->v;
  struct kb_cupti_kernel *recs = NULL;
  struct kb_cupti_window *w = NULL;
  size_t nrec = 0, dropped = 0, nw = 0;
  uint32_t sid = 0;
  struct kb_error te = {0};
  int e = d->sync(d);
  if (e) {
    struct kb_cupti_kernel *junk = NULL;
    kb_cupti_trace_stop(&junk, &nrec, NULL, &te);
    kb_free(junk);
    device_error(r, e, "device error during a timed call");
    return 1;
  }
  int rc = kb_cupti_trace_stop(&recs, &nrec, &dropped, &te);
  if (rc == KB_OK)
    rc = kb_cupti_stream_id(d->stream, &sid, &te);
  if (rc == KB_OK) {
    w = kb_calloc((size_t)windows + 1, sizeof *w);
    rc = w == NULL ? kb_error_set(&te, KB_ENOMEM, "out of memory for %d windows", windows)
                   : kb_cupti_windows(recs, nrec, sid, NULL, w, (size_t)windows + 1, &nw, &te);
  }
  int bad = 0;
  if (rc != KB_OK) {
    say(v->trace_note, sizeof v->trace_note, "kernel trace not checked: %s", te.msg);
  } else {
    struct kb_cupti_check chk;
    int clean = kb_cupti_cross_check(recs, nrec, sid, w, nw, NULL, &chk);
    v->traced = 1;
    v->trace_kernels = (int64_t)nrec;
    v->trace_own_kernels = chk.own_kernels;
    v->trace_own_ns = chk.own_ns;
    v->trace_other_ns = chk.other_ns;
    v->trace_late_ns = chk.late_ns;
    v->trace_dropped = (int64_t)dropped;
    v->trace_recs = recs; /* the reply carries the candidate's records (serve.c) */
    v->n_trace_recs = kb_cupti_keep_candidate(recs, nrec, sid, w, nw, (size_t)period, NULL);
    if (period > 0) {
      /* the baseline ran on the same stream inside windows too: count the candidate's alone */
      v->trace_own_kernels = 0;
      v->trace_own_ns = 0;
      for (size_t i = 0; i < v->n_trace_recs; i++) {
        if (recs[i].stream_id != sid)
          continue;
        v->trace_own_kernels++;
        v->trace_own_ns += recs[i].end - recs[i].start;
      }
    }
    recs = NULL;
    if (!clean) {
      v->status = KB_STATUS_REJECTED;
      say(v->reason, sizeof v->reason, "work the timer did not see: %s", chk.reason);
      bad = 1;
    }
  }
  kb_free(w);
  kb_free(recs);
  return bad;
}
#endif

#ifdef KB_HAVE_CUPTI_TRACE
struct metric_call {
  struct run *r;
  forward_fn fn;
};

/* The profiled launch: one call of the candidate on set 0 into its timed outputs. */
static int metric_launch(void *arg) {
  struct metric_call *m = arg;
  return call(m->r->d, m->r->p, m->fn, 0, m->r->p->tim_off);
}

/* Before each replay pass: the outputs poisoned and the L2 flushed, as before a timed call. */
static int metric_prepare(void *arg) {
  struct metric_call *m = arg;
  struct kb__dev *d = m->r->d;
  if (poison(d, m->r->p, 0, m->r->p->tim_off) != 0)
    return 1;
  return m->r->e->flush_l2 ? d->flush_l2(d) != 0 : 0;
}

/* Reads the hardware metrics of one call into the verdict, or why not into metrics_note. */
static void read_metrics(struct run *r, forward_fn fn) {
  static int probed = 0, readable = 0;
  static char why[256];
  struct kb__verdict *v = r->v;
  if (!probed) {
    readable = kb_cupti_metrics_probe(why, sizeof why);
    probed = 1;
  }
  if (!readable) {
    say(v->metrics_note, sizeof v->metrics_note, "no hardware metrics: %s", why);
    return;
  }
  struct metric_call mc = {.r = r, .fn = fn};
  struct kb_cupti_metrics m;
  struct kb_error err = {0};
  if (kb_cupti_metrics_measure(metric_prepare, metric_launch, &mc, &m, &err) != KB_OK) {
    say(v->metrics_note, sizeof v->metrics_note, "no hardware metrics: %s", err.msg);
    return;
  }
  v->has_metrics = 1;
  v->duration_ns = m.main.duration_ns;
  v->dram_pct = m.main.dram_pct;
  v->sm_pct = m.main.sm_pct;
  v->occupancy_pct = m.main.occupancy_pct;
  v->l2_hit_pct = m.main.l2_hit_pct;
  v->metric_passes = m.passes;
}
#endif

int kb__evaluate(struct kb__dev *d, struct kb__prepared *p, const struct kb__eval_spec *e,
                 struct kb__verdict *v) {
  memset(v, 0, sizeof *v);
  v->status = KB_STATUS_OK;
  v->max_abs_err = NAN;
  v->max_rel_err = NAN;
  v->batch = 1;
  struct run r = {.d = d, .p = p, .e = e, .v = v, .start = kb_now_mono()};
  r.n_check = e->sets <= 0 || e->sets > p->n_sets ? p->n_sets : e->sets;
  char msg[200];
  void *lib = NULL, *blib = NULL;
  double *samples = NULL, *bsamples = NULL;
  int rc = 0;
  forward_fn fn = NULL, bfn = NULL;
  int nosym = 0;
  int tracing = 0;
  if (e->trace && strcmp(d->backend, "cuda") != 0)
    say(v->trace_note, sizeof v->trace_note, "kernel trace not recorded: the %s device has "
        "none", d->backend);
#ifndef KB_HAVE_CUPTI_TRACE
  else if (e->trace)
    say(v->trace_note, sizeof v->trace_note, "kernel trace not recorded: this kb-sandbox was "
        "built without the CUPTI module");
#endif

  double t0 = kb_now_mono();
  lib = load(e->library, &fn, &nosym, msg, sizeof msg);
  if (lib == NULL) {
    v->status = KB_STATUS_COMPILE_ERROR;
    if (nosym)
      say(v->reason, sizeof v->reason, "%s", msg);
    else
      say(v->reason, sizeof v->reason, "cannot load the library: %s", msg);
    goto out;
  }
  if (e->baseline != NULL && e->max_samples > 0) {
    blib = load(e->baseline, &bfn, &nosym, msg, sizeof msg);
    if (blib == NULL) {
      v->status = KB_STATUS_INFRA_ERROR;
      say(v->reason, sizeof v->reason, "cannot load the baseline: %s", msg);
      goto out;
    }
  }

  v->t_load = kb_now_mono() - t0;
  t0 = kb_now_mono();
  /* the check calls, one per set, each followed by a synchronization that surfaces its errors */
  for (int s = 0; s < r.n_check; s++) {
    if (one_call(&r, fn, s, p->chk_off, 0, "") || sync_or_crash(&r, s, 0))
      goto out;
  }
  if (integrity(&r, "after the check calls"))
    goto out;
  v->sets_checked = r.n_check;
  uint32_t all = r.n_check >= 32 ? UINT32_MAX : (UINT32_C(1) << r.n_check) - 1;
  int pass = outputs_pass(&r, p->chk_off, all, msg, sizeof msg);
  if (pass < 0)
    goto out;
  if (!pass) {
    /* right on the first call and untouched on a later one: the work was skipped, a cheat
     * (a harness that reuses one output buffer would see a free kernel), not a wrong result */
    char first[8];
    int o_bad = 0, s_bad = -1;
    if (r.n_check >= 2 && outputs_pass(&r, p->chk_off, 1u, first, sizeof first) == 1)
      s_bad = untouched_set(&r, p->chk_off, &o_bad);
    if (s_bad > 0) {
      v->status = KB_STATUS_REJECTED;
      say(v->reason, sizeof v->reason,
          "did the work on the first call only: output \"%s\" of input set %d was right on the "
          "first call and left untouched (still poisoned) on call %d",
          p->out_spec[o_bad].name, s_bad, s_bad + 1);
    } else {
      v->status = KB_STATUS_WRONG_OUTPUT;
      say(v->reason, sizeof v->reason, "%s", msg);
    }
    goto out;
  }
  if (e->max_samples <= 0)
    goto out;

  v->t_check = kb_now_mono() - t0;
  t0 = kb_now_mono();
  /* from here on the sets' contents sit behind other pointers than in the check calls */
  if (r.n_check >= 2) {
    int re = rotate_inputs(&r, 1);
    if (re) {
      device_error(&r, re, "cannot rotate the input sets");
      goto out;
    }
  }
  /* warm-up; the last call, timed alone, decides about batching */
  int warm = e->warmup > 0 ? e->warmup : 0;
  uint32_t timed_mask = 0;
  int next = 0;
  double est = 0;
  for (int w = 0; w < warm + 1; w++) {
    double us = 0;
    if (w < warm) {
      int s = w % r.n_check;
      if (one_call(&r, fn, s, p->tim_off, 1, "") || sync_or_crash(&r, s, 1))
        goto out;
      timed_mask |= UINT32_C(1) << s;
      if (bfn != NULL && (one_call(&r, bfn, s, p->chk_off, 1, "the baseline's ") ||
                          sync_or_crash(&r, s, 1)))
        goto out;
      continue;
    }
    int probe = 0;
    if (sample(&r, fn, 1, 0, &probe, p->tim_off, &timed_mask, "", &us))
      goto out;
    est = us;
  }
  v->t_warmup = kb_now_mono() - t0;
  t0 = kb_now_mono();
  int batch = 1, flushed = 0;
  if (d->batch_short && est < KB__SHORT_US) {
    batch = (int)ceil(BATCH_TARGET_US / (est > 0.5 ? est : 0.5));
    batch = batch < 2 ? 2 : batch > BATCH_MAX ? BATCH_MAX : batch;
  } else if (d->batch_short && e->flush_l2 && est < KB__FLUSHED_US) {
    /* one flushed call of some ten microseconds scatters by a few percent from call to call (its
     * DRAM traffic, the write-back of the flush's dirty lines): a sample is then the mean of
     * enough flushed calls, each still timed cold and alone */
    flushed = 1;
    batch = (int)ceil(FLUSHED_TARGET_US / est);
    batch = batch < 2 ? 2 : batch > KB__TIMER_SLOTS ? KB__TIMER_SLOTS : batch;
  }
  v->batch = batch;
  v->batch_flushed = flushed;

  samples = kb_calloc((size_t)e->max_samples, sizeof *samples);
  bsamples = bfn ? kb_calloc((size_t)e->max_samples, sizeof *bsamples) : NULL;
  if (samples == NULL || (bfn != NULL && bsamples == NULL)) {
    v->status = KB_STATUS_INFRA_ERROR;
    say(v->reason, sizeof v->reason, "sandbox: out of memory for %d samples", e->max_samples);
    rc = -1;
    goto out;
  }
#ifdef KB_HAVE_CUPTI_TRACE
  if (e->trace && strcmp(d->backend, "cuda") == 0) {
    struct kb_error te = {0};
    if (kb_cupti_trace_start(&te) == KB_OK) {
      tracing = 1;
      d->end_marker = 1;
      r.windows = 0;
    } else {
      say(v->trace_note, sizeof v->trace_note, "kernel trace not recorded: %s", te.msg);
    }
  }
#endif
  int n = 0, bnext = 0;
  uint32_t bmask = 0;
  double timed = 0, sum = 0, sumsq = 0;
  while (n < e->max_samples) {
    double us = 0, bus = 0;
    if (sample(&r, fn, batch, flushed, &next, p->tim_off, &timed_mask, "", &us))
      goto out;
    if (bfn != NULL &&
        sample(&r, bfn, batch, flushed, &bnext, p->chk_off, &bmask, "the baseline's ", &bus))
      goto out;
    samples[n] = us;
    if (bsamples)
      bsamples[n] = bus;
    n++;
    timed += us * batch * 1e-6;
    sum += us;
    sumsq += us * us;
    if (n < e->min_samples)
      continue;
    if (timed >= e->max_seconds || kb_now_mono() - r.start >= e->budget_s)
      break;
    double mean = sum / n;
    double var = n > 1 ? (sumsq - sum * mean) / (n - 1) : 0;
    if (n > 1 && mean > 0 && sqrt(var > 0 ? var : 0) / mean < e->noise)
      break;
  }
  v->t_samples = kb_now_mono() - t0;
  t0 = kb_now_mono();
#ifdef KB_HAVE_CUPTI_TRACE
  if (tracing) {
    d->end_marker = 0;
    tracing = 0;
    if (cross_check(&r, r.windows, bfn != NULL ? 1 : 0))
      goto out;
  }
#endif
  v->t_trace = kb_now_mono() - t0;
  t0 = kb_now_mono();
  if (integrity(&r, "after the timed calls"))
    goto out;
  if (e->recheck) {
    pass = outputs_pass(&r, p->tim_off, timed_mask, msg, sizeof msg);
    if (pass < 0)
      goto out;
    if (!pass) {
      v->status = KB_STATUS_REJECTED;
      say(v->reason, sizeof v->reason,
          "outputs right on the first call but wrong after repeated calls: %s", msg);
      goto out;
    }
  }
  v->t_recheck = kb_now_mono() - t0;
  t0 = kb_now_mono();
  kb__timing_stats(samples, n, warm, &v->timing);
  if (bsamples != NULL)
    kb__timing_stats(bsamples, n, warm, &v->baseline);
  if (e->metrics && strcmp(d->backend, "cuda") != 0)
    say(v->metrics_note, sizeof v->metrics_note, "no hardware metrics on the %s device",
        d->backend);
#ifdef KB_HAVE_CUPTI_TRACE
  else if (e->metrics)
    read_metrics(&r, fn);
#else
  else if (e->metrics)
    say(v->metrics_note, sizeof v->metrics_note, "no hardware metrics: this kb-sandbox was built "
        "without CUPTI");
#endif
  v->t_metrics = kb_now_mono() - t0;
out:
#ifdef KB_HAVE_CUPTI_TRACE
  if (tracing) {
    /* left early (a crash, a failed call): end the trace, keep nothing */
    d->end_marker = 0;
    struct kb_cupti_kernel *recs = NULL;
    size_t nrec = 0;
    struct kb_error te = {0};
    d->sync(d);
    kb_cupti_trace_stop(&recs, &nrec, NULL, &te);
    kb_free(recs);
  }
#else
  (void)tracing;
#endif
  if (!v->fatal && rotate_inputs(&r, 0) != 0)
    p->damaged = 1; /* cannot put the inputs back: make the task again next time */
  kb_free(samples);
  kb_free(bsamples);
  if (lib != NULL && !v->fatal)
    dlclose(lib);
  if (blib != NULL && !v->fatal)
    dlclose(blib);
  return rc;
}
