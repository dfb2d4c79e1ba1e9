/* The sandbox's evaluation engine (see engine.h). */
#include "engine.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confine.h"
#include "integrity.h"
#include "kb/alloc.h"
#include "kb/clock.h"
#include "verify.h"
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
#define CHUNK_MAX 64          /* timed samples queued before one wait, at most (chunk_size) */
#define CHUNK_PAST_MIN 4      /* past min_samples, samples queued per wait */
/* Bytes of guard after every buffer the candidate receives (and one before the first): filled
 * with the u8 poison pattern, checksummed with the inputs. A write past the end of a buffer by
 * up to this much (a kernel whose last block overruns) lands in a guard. */
#define GUARD 16384
/* Fresh samples (calls on contents the candidate never saw): at least the request's
 * fresh_min (default KB__FRESH_MIN) per timed evaluation, spread over the sampling one every
 * min_samples / fresh_min repeated samples; past them, more while they have taken under the
 * request's fresh_share (default KB__FRESH_SHARE) of the evaluation's time so far. A ratio over
 * the bound is confirmed by FRESH_MIN more pairs, 2 x FRESH_MIN in all at least. */
#define FRESH_MIN 3
#define FRESH_FLUSHED_CALLS 8 /* calls of a fresh sample in flushed-batch mode, at most */
#define FRESH_SHARE 0.25      /* of the budget the first fresh_min fresh samples may take */
/* Threshold of the fresh/repeated test. Every fresh sample is paired with a control sample taken
 * right before it, of the same shape on the same buffers holding their own (repeated) contents,
 * made by the same procedure (the draw, checksums and synchronisations around each call), so
 * that only the novelty of the contents differs:
 * same set, same distribution (host softmax is 5x slower on one of its sets, denormals), same
 * cache state (a flushed call starts from a flushed L2 either way; an unflushed fresh call
 * finds its inputs just written and checksummed, as warm as repeated ones), same moment of the
 * machine's load. The median of the ratios fresh / control must stay under 1 + max(floor,
 * FRESH_K * the ratios' relative spread), the slack capped. For honest work a ratio is 1 up to
 * sampling noise. On the H200 a flushed sample (a call of 100 us or more, or the mean of a
 * flushed batch) scatters by 0.3-3%, an unflushed one by up to 10% (bench/results/gpu, devkern
 * runs); the host scatters by whatever the machine's other load does. The floors are 5 or more
 * times those: 15% where the L2 is flushed, 30% on the GPU unflushed (smoke), 50% on the host,
 * and FRESH_K = 6 robust standard deviations (from p10..p90) of the ratios on top, so a noisy
 * run widens the bound, up to a cap (1.5x, 2x, 3x) so that noise a candidate makes itself does
 * not widen it without end. A cache gains at most that factor undetected; the caches seen so far
 * gain 1.5x (CUDA row sum) to 450x (host row sum). A ratio over the bound is confirmed by a
 * second round of FRESH_MIN pairs (2 x FRESH_MIN pairs in all at least) before it rejects: all
 * pairs together must still be over. */
#define FRESH_FLOOR_FLUSHED 0.15
#define FRESH_FLOOR_GPU 0.30
#define FRESH_FLOOR_HOST 0.50
#define FRESH_K 6.0
#define FRESH_CAP_FLUSHED 0.5 /* the bound never exceeds 1.5x (flushed GPU), 2x, 3x (host) */
#define FRESH_CAP_GPU 1.0
#define FRESH_CAP_HOST 2.0
/* Against the plain samples (timed back to back like every repeated sample) the slack is this
 * many times the cap: 2x on a flushed GPU tier, 3x unflushed, 5x on the host. */
#define FRESH_PLAIN_X 2.0
#define KB__FRESH_MAX 4096    /* fresh samples per evaluation at most */
/* Speed of light: a flushed call faster than this share of the time the probed bandwidth needs
 * for its bytes is impossible. The probe is a copy (cudaMemcpy reaches 80-90% of the peak, a
 * read-mostly kernel up to 95%): 0.5 admits twice the copy's bandwidth, more than any kernel. */
#define SOL_MARGIN 0.5

typedef kb__forward_fn forward_fn;

struct kb__prepared {
  char *key;                 /* owned */
  int n_in, n_out, n_sets;
  struct kb_tensor_spec *in_spec, *out_spec; /* n_in and n_out, copied from the request (owned) */
  struct kb_input_set sets[KB_MAX_SETS];
  double atol, rtol, must_read;
  /* What the candidate receives, one device allocation: per set its inputs, check outputs and
   * timed outputs, then the second check outputs of set 0 (determinism), each buffer followed
   * by a guard (and one guard before the first). Nothing else is in it. */
  unsigned char *cand;       /* owned */
  size_t cand_bytes;
  size_t *in_off, *chk_off, *tim_off; /* per set and tensor, into cand (owned) */
  size_t *dup_off;           /* per output: set 0's second check outputs, into cand (owned) */
  size_t *guard_off;         /* into cand (owned) */
  int n_guards;
  uint64_t guard_sum;        /* the checksum of a guard as written */
  /* The evaluator's device memory, a second allocation: the references (kept masked, unmasked
   * only around a compare), one set's worth of fresh references, scratch for one input. */
  unsigned char *priv;       /* owned */
  size_t priv_bytes;
  size_t *ref_off;           /* per set and output, into priv (owned) */
  size_t *fresh_off;         /* per output, into priv (owned) */
  size_t scratch_off;        /* into priv */
  uint64_t mask_key;         /* the references' mask */
  uint64_t *in_sum, *ref_sum; /* checksums, the references' of their masked form (owned) */
  size_t *in_bytes, *out_bytes; /* per input, per output (owned) */
  int64_t *in_n, *out_n;     /* elements, per input, per output (owned) */
  kb_tensor *in_desc, *out_desc; /* the descriptors call() builds afresh each call (owned) */
  uint64_t *sum0;            /* per input: fresh_sample's checksums before a call (owned) */
  void *oracle_lib;          /* kept loaded for the fresh references (owned) */
  forward_fn oracle;
  uint64_t oracle_sum;       /* its code's and RELRO's checksum once loaded (oracle_changed) */
  double oracle_s;           /* the slowest oracle run at prepare, seconds */
  double fill_s;             /* the slowest draw of one set's inputs at prepare, seconds */
  int damaged;               /* the candidate changed inputs or references */
  int holds[KB_MAX_SETS];    /* input buffers of set slot b hold the data of set holds[b] */
  size_t bytes;              /* device memory held: both allocations */
};

static size_t align_up(size_t v) { return (v + ALIGN - 1) / ALIGN * ALIGN; }

static size_t spec_bytes(const struct kb_tensor_spec *s, int64_t *numel) {
  int size = kb_dtype_size(s->dtype);
  if (size == 0 || s->ndim < 0 || s->ndim > KB_MAX_DIMS)
    return 0;
  int64_t n = 1;
  for (int d = 0; d < s->ndim; d++) {
    if (s->shape[d] <= 0 || s->shape[d] > KB_MAX_NUMEL / n)
      return 0;
    n *= s->shape[d];
  }
  *numel = n;
  return (size_t)n * (size_t)size;
}

void kb__tensor_describe(kb_tensor *t, const struct kb_tensor_spec *s, void *data) {
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

static uint64_t splitmix(uint64_t x) { return kb__mask_word(x, 0); }

/* A seed no input set of this process has used: a counter from a start drawn from the clock and
 * the pid, skipping the task's own seeds. */
static uint64_t fresh_seed(const struct kb__prepared *p) {
  static uint64_t base, count;
  if (base == 0) {
    double t = kb_now_mono();
    uint64_t bits;
    memcpy(&bits, &t, sizeof bits);
    base = splitmix(bits ^ ((uint64_t)getpid() << 32)) | 1;
  }
  for (;;) {
    uint64_t s = splitmix(base + count++);
    int used = s == 0;
    for (int k = 0; k < p->n_sets && !used; k++)
      used = p->sets[k].seed == s;
    if (!used)
      return s;
  }
}

const char *kb__prepared_key(const struct kb__prepared *p) { return p->key; }
int kb__prepared_damaged(const struct kb__prepared *p) { return p->damaged; }

/* 1 when the code or the function table of `p`'s oracle is no longer what was loaded (the
 * task is then damaged: prepared anew, its library loaded again), else 0. On the host the
 * oracle runs in the candidates' process, and the fresh references come from it: a candidate
 * that rewrote it could make them agree with its own outputs, or leave it wrong for the
 * candidates after it. */
int kb__prepared_oracle_changed(struct kb__prepared *p) {
  uint64_t now = 0;
  if (p->oracle_lib == NULL || (kb__integrity_object_sum((const void *)p->oracle, &now) == 0 &&
                                now == p->oracle_sum))
    return 0;
  p->damaged = 1;
  return 1;
}
size_t kb__prepared_bytes(const struct kb__prepared *p) { return p->bytes; }
double kb__prepared_oracle_s(const struct kb__prepared *p) { return p->oracle_s; }

void kb__prepared_free(struct kb__dev *d, struct kb__prepared *p) {
  if (p == NULL)
    return;
  if (p->cand != NULL)
    d->free(d, p->cand);
  if (p->priv != NULL)
    d->free(d, p->priv);
  if (p->oracle_lib != NULL)
    dlclose(p->oracle_lib);
  kb_free(p->key);
  kb_free(p->in_off);
  kb_free(p->chk_off);
  kb_free(p->ref_off);
  kb_free(p->tim_off);
  kb_free(p->guard_off);
  kb_free(p->in_sum);
  kb_free(p->ref_sum);
  kb_free(p->in_spec);
  kb_free(p->out_spec);
  kb_free(p->dup_off);
  kb_free(p->fresh_off);
  kb_free(p->in_bytes);
  kb_free(p->out_bytes);
  kb_free(p->in_n);
  kb_free(p->out_n);
  kb_free(p->in_desc);
  kb_free(p->out_desc);
  kb_free(p->sum0);
  kb_free(p);
}

void *kb__load_forward(const char *path, kb__forward_fn *fn, struct kb_error *err) {
  kb__confine_load_begin(); /* the loader's read-only opens pass (confine.h) */
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  kb__confine_load_end();
  kb__fpenv_restore(); /* its constructors ran */
  if (lib == NULL) {
    const char *e = dlerror();
    e = e ? e : "unknown error";
    /* dlerror() starts with the path, which says nothing to whoever reads the reason */
    size_t plen = strlen(path);
    if (strncmp(e, path, plen) == 0 && strncmp(e + plen, ": ", 2) == 0)
      e += plen + 2;
    kb_error_set(err, KB_ELOAD, "%s", e);
    return NULL;
  }
  union {
    void *obj;
    forward_fn fn;
  } sym;
  sym.obj = dlsym(lib, "kb_forward");
  if (sym.obj == NULL) {
    kb_error_set(err, KB_ENOTFOUND, "the library does not export kb_forward");
    dlclose(lib);
    return NULL;
  }
  *fn = sym.fn;
  return lib;
}

/* Calls `fn` on the inputs of set slot `s` into the outputs at `offs` (into cand). The
 * descriptors are built fresh each call, so a candidate that scribbles on them does not steer
 * the next. */
static int call(struct kb__dev *d, const struct kb__prepared *p, forward_fn fn, int s,
                const size_t *offs) {
  kb_tensor *in = p->in_desc, *out = p->out_desc;
  for (int i = 0; i < p->n_in; i++)
    kb__tensor_describe(&in[i], &p->in_spec[i], p->cand + p->in_off[s * p->n_in + i]);
  for (int o = 0; o < p->n_out; o++)
    kb__tensor_describe(&out[o], &p->out_spec[o], p->cand + offs[o]);
  int ret = fn(in, p->n_in, out, p->n_out, d->stream);
  kb__fpenv_restore(); /* its rounding mode and FTZ/DAZ stop here (integrity.h) */
  return ret;
}

/* The outputs of slot `s` at per-set offsets `offs` (chk_off, tim_off). */
static const size_t *outs_of(const struct kb__prepared *p, const size_t *offs, int s) {
  return offs + (size_t)s * (size_t)p->n_out;
}

/* The trusted oracle on the inputs of slot `s` into `n_out` outputs at `offs` (into priv), on
 * the oracle's stream, synchronized. Returns the oracle's value (non-zero: it failed), with a
 * device error code in `*e` (KB_OK when none) and its text in `err`. */
static int call_oracle(struct kb__dev *d, const struct kb__prepared *p, forward_fn fn, int s,
                       const size_t *offs, int *e, struct kb_error *err) {
  kb_tensor *in = p->in_desc, *out = p->out_desc;
  for (int i = 0; i < p->n_in; i++)
    kb__tensor_describe(&in[i], &p->in_spec[i], p->cand + p->in_off[s * p->n_in + i]);
  for (int o = 0; o < p->n_out; o++)
    kb__tensor_describe(&out[o], &p->out_spec[o], p->priv + offs[o]);
  *e = d->sync(d, err); /* the inputs were drawn on the candidate's stream */
  int ret = *e ? 0 : fn(in, p->n_in, out, p->n_out, d->oracle_stream);
  if (*e == 0)
    *e = d->sync(d, err);
  return ret;
}

static int poison(struct kb__dev *d, const struct kb__prepared *p, const size_t *outs,
                  struct kb_error *err) {
  for (int o = 0; o < p->n_out; o++) {
    int e = d->poison(d, p->cand + outs[o], p->out_spec[o].dtype, p->out_n[o], err);
    if (e)
      return e;
  }
  return 0;
}

/* Compares `got` (into cand) with the reference of set `set`, output `o`, unmasked for the
 * compare only. */
static int compare_ref(struct kb__dev *d, struct kb__prepared *p, const unsigned char *got,
                       int set, int o, struct kb_verify_report *rep, int *pass,
                       struct kb_error *err) {
  unsigned char *ref = p->priv + p->ref_off[set * p->n_out + o];
  int e = d->mask(d, ref, p->out_bytes[o], p->mask_key, err);
  if (e)
    return e;
  e = d->compare(d, got, ref, p->out_spec[o].dtype, p->out_n[o], p->atol, p->rtol, rep, pass, err);
  int e2 = d->mask(d, ref, p->out_bytes[o], p->mask_key, err);
  return e ? e : e2;
}

/* Preparing, phase 1: the bookkeeping of `s` into a new `*out` (kb__prepared_free), the
 * tensors' sizes. Returns KB_OK, or KB_ENOMEM / KB_EINVAL (a bad tensor spec) with `err`. */
static int prep_new(const struct kb__prep_spec *s, struct kb__prepared **out,
                    struct kb_error *err) {
  struct kb__prepared *p = kb_calloc(1, sizeof *p);
  *out = p;
  if (p == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  int ns = s->n_sets, ni = s->n_in, no = s->n_out;
  p->key = kb_strdup(s->key);
  p->n_in = ni;
  p->n_out = no;
  p->n_sets = ns;
  p->atol = s->atol;
  p->rtol = s->rtol;
  p->must_read = s->must_read;
  memcpy(p->sets, s->sets, sizeof p->sets);
  for (int k = 0; k < KB_MAX_SETS; k++)
    p->holds[k] = k;
  p->n_guards = 1 + ns * (ni + 2 * no) + no;
  p->in_off = kb_calloc((size_t)ns * (size_t)ni, sizeof *p->in_off);
  p->chk_off = kb_calloc((size_t)ns * (size_t)no, sizeof *p->chk_off);
  p->ref_off = kb_calloc((size_t)ns * (size_t)no, sizeof *p->ref_off);
  p->tim_off = kb_calloc((size_t)ns * (size_t)no, sizeof *p->tim_off);
  p->guard_off = kb_calloc((size_t)p->n_guards, sizeof *p->guard_off);
  p->in_sum = kb_calloc((size_t)ns * (size_t)ni, sizeof *p->in_sum);
  p->ref_sum = kb_calloc((size_t)ns * (size_t)no, sizeof *p->ref_sum);
  p->in_spec = kb_calloc((size_t)ni, sizeof *p->in_spec);
  p->out_spec = kb_calloc((size_t)no, sizeof *p->out_spec);
  p->dup_off = kb_calloc((size_t)no, sizeof *p->dup_off);
  p->fresh_off = kb_calloc((size_t)no, sizeof *p->fresh_off);
  p->in_bytes = kb_calloc((size_t)ni, sizeof *p->in_bytes);
  p->out_bytes = kb_calloc((size_t)no, sizeof *p->out_bytes);
  p->in_n = kb_calloc((size_t)ni, sizeof *p->in_n);
  p->out_n = kb_calloc((size_t)no, sizeof *p->out_n);
  p->in_desc = kb_calloc((size_t)ni, sizeof *p->in_desc);
  p->out_desc = kb_calloc((size_t)no, sizeof *p->out_desc);
  p->sum0 = kb_calloc((size_t)ni, sizeof *p->sum0);
  if (!p->key || !p->in_off || !p->chk_off || !p->ref_off || !p->tim_off || !p->guard_off ||
      !p->in_sum || !p->ref_sum || !p->in_spec || !p->out_spec || !p->dup_off ||
      !p->fresh_off || !p->in_bytes || !p->out_bytes || !p->in_n || !p->out_n ||
      !p->in_desc || !p->out_desc || !p->sum0)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  memcpy(p->in_spec, s->inputs, (size_t)ni * sizeof *p->in_spec);
  memcpy(p->out_spec, s->outputs, (size_t)no * sizeof *p->out_spec);
  for (int i = 0; i < ni + no; i++) {
    const struct kb_tensor_spec *t = i < ni ? &s->inputs[i] : &s->outputs[i - ni];
    int64_t n = 0;
    size_t bytes = spec_bytes(t, &n);
    if (bytes == 0)
      return kb_error_set(err, KB_EINVAL, "tensor \"%s\" has a bad dtype or shape", t->name);
    if (i < ni) {
      p->in_bytes[i] = bytes;
      p->in_n[i] = n;
    } else {
      p->out_bytes[i - ni] = bytes;
      p->out_n[i - ni] = n;
    }
  }
  return KB_OK;
}

/* Phase 2: the layout of both allocations (engine.h): the candidate's, a guard, then each buffer
 * followed by its guard; the evaluator's, the references, the fresh references, scratch. */
static void prep_layout(struct kb__prepared *p) {
  int ns = p->n_sets, ni = p->n_in, no = p->n_out;
  size_t off = 0, biggest_in = 0;
  int g = 0;
  for (int i = 0; i < ni; i++)
    biggest_in = p->in_bytes[i] > biggest_in ? p->in_bytes[i] : biggest_in;
#define PLACE(dst, bytes)                                                                        \
  do {                                                                                           \
    p->guard_off[g++] = off;                                                                     \
    off += GUARD;                                                                                \
    (dst) = off;                                                                                 \
    off = align_up(off + (bytes));                                                               \
  } while (0)
  for (int k = 0; k < ns; k++) {
    for (int i = 0; i < ni; i++)
      PLACE(p->in_off[k * ni + i], p->in_bytes[i]);
    for (int o = 0; o < no; o++)
      PLACE(p->chk_off[k * no + o], p->out_bytes[o]);
    for (int o = 0; o < no; o++)
      PLACE(p->tim_off[k * no + o], p->out_bytes[o]);
  }
  for (int o = 0; o < no; o++)
    PLACE(p->dup_off[o], p->out_bytes[o]);
#undef PLACE
  p->guard_off[g++] = off;
  off += GUARD;
  p->cand_bytes = off;
  size_t poff = 0;
  for (int k = 0; k < ns; k++)
    for (int o = 0; o < no; o++) {
      p->ref_off[k * no + o] = poff;
      poff = align_up(poff + p->out_bytes[o]);
    }
  for (int o = 0; o < no; o++) {
    p->fresh_off[o] = poff;
    poff = align_up(poff + p->out_bytes[o]);
  }
  p->scratch_off = poff;
  poff = align_up(poff + biggest_in);
  p->priv_bytes = poff;
}

/* Phase 3: both allocations on the device, the guards written and checksummed, the mask key.
 * Returns KB_OK or the device's code with `err`. */
static int prep_device(struct kb__dev *d, struct kb__prepared *p, struct kb_error *err) {
  struct kb_error de = {0};
  void *mem = NULL;
  int e = d->alloc(d, p->cand_bytes, &mem, &de);
  if (e == 0) {
    p->cand = mem;
    e = d->alloc(d, p->priv_bytes, &mem, &de);
    if (e == 0)
      p->priv = mem;
  }
  p->bytes = p->cand_bytes + p->priv_bytes;
  if (e)
    return kb_error_set(err, e, "cannot allocate %zu bytes of device memory: %s", p->bytes,
                        de.msg);
  for (int k = 0; k < p->n_guards && e == 0; k++)
    e = d->poison(d, p->cand + p->guard_off[k], KB_U8, GUARD, &de);
  if (e == 0)
    e = d->checksum(d, p->cand + p->guard_off[0], GUARD, &p->guard_sum, &de);
  if (e)
    return kb_error_set(err, e, "cannot write the guards: %s", de.msg);
  double t = kb_now_mono();
  uint64_t bits;
  memcpy(&bits, &t, sizeof bits);
  p->mask_key = splitmix(bits ^ (uint64_t)(uintptr_t)p ^ fresh_seed(p));
  return KB_OK;
}

/* Phase 4, per input set `k`: its inputs drawn, the oracle run into its references, which must
 * be finite, masked and checksummed, and the inputs' checksums. Returns KB_OK, or a code with
 * `err`. */
static int prep_set(struct kb__dev *d, struct kb__prepared *p, int k, struct kb_error *err) {
  int ni = p->n_in, no = p->n_out;
  struct kb_error de = {0};
  int e = KB_OK;
  double t0 = kb_now_mono();
  for (int i = 0; i < ni && e == 0; i++)
    e = d->fill(d, p->cand + p->in_off[k * ni + i], p->in_spec[i].dtype, p->in_n[i],
                &p->sets[k], i, &de);
  for (int o = 0; o < no && e == 0; o++)
    e = d->poison(d, p->priv + p->ref_off[k * no + o], p->out_spec[o].dtype, p->out_n[o], &de);
  if (e == 0)
    e = d->sync(d, &de);
  if (e)
    return kb_error_set(err, e, "cannot draw input set %d: %s", k, de.msg);
  double t1 = kb_now_mono();
  p->fill_s = t1 - t0 > p->fill_s ? t1 - t0 : p->fill_s;
  int ret = call_oracle(d, p, p->oracle, k, p->ref_off + (size_t)k * (size_t)no, &e, &de);
  if (e)
    return kb_error_set(err, e, "the oracle failed on input set %d: %s", k, de.msg);
  if (ret != 0)
    return kb_error_set(err, KB_EINTERNAL, "the oracle returned %d on input set %d", ret, k);
  double t2 = kb_now_mono();
  p->oracle_s = t2 - t1 > p->oracle_s ? t2 - t1 : p->oracle_s;
  for (int o = 0; o < no; o++) {
    /* a reference compared with itself passes exactly when every element is finite */
    struct kb_verify_report rep;
    int pass = 0;
    unsigned char *ref = p->priv + p->ref_off[k * no + o];
    e = d->compare(d, ref, ref, p->out_spec[o].dtype, p->out_n[o], 0, 0, &rep, &pass, &de);
    if (e == 0 && !pass)
      return kb_error_set(err, KB_EINTERNAL,
                          "the oracle's output \"%s\" of input set %d: element %lld is not finite",
                          p->out_spec[o].name, k, (long long)rep.first_bad);
    if (e == 0)
      e = d->mask(d, ref, p->out_bytes[o], p->mask_key, &de);
    if (e == 0)
      e = d->checksum(d, ref, p->out_bytes[o], &p->ref_sum[k * no + o], &de);
    if (e)
      return kb_error_set(err, e, "cannot check the oracle's outputs: %s", de.msg);
  }
  for (int i = 0; i < ni && e == 0; i++)
    e = d->checksum(d, p->cand + p->in_off[k * ni + i], p->in_bytes[i], &p->in_sum[k * ni + i],
                    &de);
  if (e)
    return kb_error_set(err, e, "cannot checksum the inputs: %s", de.msg);
  return KB_OK;
}

int kb__prepare(struct kb__dev *d, const struct kb__prep_spec *s, struct kb__prepared **out,
                int *fatal, struct kb_error *err) {
  *out = NULL;
  *fatal = 0;
  struct kb__prepared *p = NULL;
  int rc = prep_new(s, &p, err);
  if (rc == KB_OK) {
    prep_layout(p);
    rc = prep_device(d, p, err);
  }
  if (rc == KB_OK) {
    struct kb_error le = {0};
    p->oracle_lib = kb__load_forward(s->oracle, &p->oracle, &le);
    if (p->oracle_lib == NULL)
      rc = kb_error_set(err, le.code, "cannot load the oracle: %s", le.msg);
    else if (kb__integrity_object_sum((const void *)p->oracle, &p->oracle_sum) != 0)
      rc = kb_error_set(err, KB_ELOAD, "the oracle's code cannot be found in the process");
  }
  for (int k = 0; k < s->n_sets && rc == KB_OK; k++)
    rc = prep_set(d, p, k, err);
  if (rc != KB_OK) {
    *fatal = d->broken;
    kb__prepared_free(d, p);
    return rc;
  }
  *out = p;
  return KB_OK;
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
  int pad_windows;          /* 1: a baseline is interleaved under the trace: every window of a
                               sample of the candidate's alone is followed by an empty one */
  struct kb_error derr;     /* the text of the device error device_error() reports */
};

/* Records the device error in r->derr, met while doing `what`, as the verdict: a crash of the
 * candidate (its asynchronous work is what fails), fatal when it left the device broken. Clears
 * r->derr for the next one. */
static void device_error(struct run *r, const char *what) {
  r->v->status = KB_STATUS_CRASH;
  say(r->v->reason, sizeof r->v->reason, "%s: %s", what, r->derr.msg);
  r->v->fatal = r->d->broken;
  kb_error_clear(&r->derr);
}

static const char *phase_text[] = {"check", "warm-up", "timed"};

/* One call of `fn` on set `s` into `outs`, with poisoning first. Returns 0, or 1 with the
 * verdict set. */
static int one_call(struct run *r, forward_fn fn, int s, const size_t *outs, int phase,
                    const char *who) {
  int e = poison(r->d, r->p, outs, &r->derr);
  if (e) {
    device_error(r, "cannot poison the outputs");
    return 1;
  }
  int ret = call(r->d, r->p, fn, s, outs);
  if (ret != 0) {
    r->v->status = KB_STATUS_CRASH;
    say(r->v->reason, sizeof r->v->reason, "%skb_forward returned %d on input set %d (%s call)",
        who, ret, s, phase_text[phase]);
    return 1;
  }
  return 0;
}

static int sync_or_crash(struct run *r, int s, int phase) {
  int e = r->d->sync(r->d, &r->derr);
  if (e) {
    char what[96];
    say(what, sizeof what, "device error after the %s call on input set %d", phase_text[phase], s);
    device_error(r, what);
    return 1;
  }
  return 0;
}

/* Names the buffer guard `k` follows. */
static void guard_name(const struct kb__prepared *p, int k, char *out, size_t size) {
  if (k == 0) {
    say(out, size, "the guard before input \"%s\" of input set 0", p->in_spec[0].name);
    return;
  }
  int per = p->n_in + 2 * p->n_out, b = k - 1;
  if (b >= p->n_sets * per) {
    b -= p->n_sets * per;
    if (b < p->n_out)
      say(out, size, "the guard after output \"%s\" of input set 0 (determinism call)",
          p->out_spec[b].name);
    else
      say(out, size, "the guard after the last buffer");
    return;
  }
  int s = b / per, j = b % per;
  if (j < p->n_in)
    say(out, size, "the guard after input \"%s\" of input set %d", p->in_spec[j].name, s);
  else if (j < p->n_in + p->n_out)
    say(out, size, "the guard after output \"%s\" of input set %d (check call)",
        p->out_spec[j - p->n_in].name, s);
  else
    say(out, size, "the guard after output \"%s\" of input set %d (timed calls)",
        p->out_spec[j - p->n_in - p->n_out].name, s);
}

/* Checks the guards and, unless `guards_only`, every input and reference of every set against
 * its checksum. Returns 0, or 1 with the verdict set (rejected) and the prepared task marked
 * damaged. */
static int integrity(struct run *r, const char *when, int guards_only) {
  struct kb__prepared *p = r->p;
  struct kb__dev *d = r->d;
  for (int k = 0; k < p->n_guards; k++) {
    uint64_t sum = 0;
    int e = d->checksum(d, p->cand + p->guard_off[k], GUARD, &sum, &r->derr);
    if (e) {
      device_error(r, "cannot checksum the guards");
      return 1;
    }
    if (sum != p->guard_sum) {
      char name[160];
      guard_name(p, k, name, sizeof name);
      p->damaged = 1;
      /* it wrote out of bounds: what else it wrote is unknown, the process is not trusted */
      r->v->fatal = 1;
      r->v->status = KB_STATUS_REJECTED;
      say(r->v->reason, sizeof r->v->reason, "wrote outside its outputs: %s changed (%s)", name,
          when);
      return 1;
    }
  }
  for (int s = 0; s < p->n_sets && !guards_only; s++) {
    for (int i = 0; i < p->n_in; i++) {
      uint64_t sum = 0;
      unsigned char *in = p->cand + p->in_off[s * p->n_in + i];
      int e = d->checksum(d, in, p->in_bytes[i], &sum, &r->derr);
      if (e) {
        device_error(r, "cannot checksum the inputs");
        return 1;
      }
      int held = p->holds[s];
      if (sum == p->in_sum[held * p->n_in + i])
        continue;
      /* find the first changed element against a fresh copy */
      long long element = -1;
      struct kb_verify_report rep;
      int pass = 1;
      unsigned char *scratch = p->priv + p->scratch_off;
      int dtype = p->in_spec[i].dtype;
      if (d->fill(d, scratch, dtype, p->in_n[i], &p->sets[held], i, NULL) == KB_OK &&
          d->compare(d, in, scratch, dtype, p->in_n[i], 0, 0, &rep, &pass, NULL) == KB_OK && !pass)
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
      int e = d->checksum(d, p->priv + p->ref_off[s * p->n_out + o], p->out_bytes[o], &sum,
                          &r->derr);
      if (e) {
        device_error(r, "cannot checksum the reference outputs");
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
      int e = compare_ref(r->d, p, p->cand + outs_of(p, offs, s)[o], held, o, &rep, &pass,
                          &r->derr);
      if (e) {
        device_error(r, "cannot compare the outputs");
        return -1;
      }
      if (isnan(r->v->max_abs_err) || rep.max_abs_err > r->v->max_abs_err)
        r->v->max_abs_err = rep.max_abs_err;
      if (isnan(r->v->max_rel_err) || rep.max_rel_err > r->v->max_rel_err)
        r->v->max_rel_err = rep.max_rel_err;
      if (!pass && pass_all) {
        char detail[160];
        kb__verify_describe(&rep, detail, sizeof detail);
        say(why, why_size, "output \"%s\" of input set %d%s: %s", p->out_spec[o].name, held,
            held != s ? " (moved to another buffer)" : "", detail);
        pass_all = 0;
      }
    }
  }
  return pass_all;
}

/* While a baseline is interleaved under the trace, a window of the candidate's alone is
 * followed by an empty one, so that windows keep alternating candidate, baseline (see
 * kb__cupti_keep_candidate). */
static int pad_window(struct run *r) {
  if (!r->pad_windows || !r->d->end_marker)
    return 0;
  int e = r->d->spin(r->d, 0.0, &r->derr);
  if (e == 0)
    e = r->d->spin(r->d, 0.0, &r->derr);
  r->windows++;
  return e;
}

/* One sample of `fn`: `batch` calls starting at set `*next` (advanced), outputs at `offs`; the
 * outputs of the batch's sets poisoned first. Two shapes. Queued (`flushed` 0): the L2 flushed
 * when the tier asks, for a batch a spin kernel queued first, then the calls back to back between
 * one pair of timer marks. Flushed (`flushed` 1, tiers that flush): every call alone, as nvbench
 * and bench/gpu/indep_timer.cu time one: the L2 flushed, then the call between its own pair of
 * marks, nothing else in between. Before the sample (and in a flushed batch before each call's
 * flush) the L2 persistence a candidate may have set is undone, by host calls only (`first`: the
 * sample opens a chunk, the reset is done in full). While tracing, one kernel-trace window (spin
 * markers) encloses the sample in both shapes. The sample's marks are timer intervals `slot`
 * onwards (one, or `batch` when flushed); nothing is waited for here (sample_read). Returns 0
 * or 1 with the verdict set. */
static int sample_queue(struct run *r, forward_fn fn, int batch, int flushed, int slot, int first,
                        int *next, const size_t *offs, uint32_t *timed_mask, const char *who) {
  struct kb__dev *d = r->d;
  for (int b = 0; b < batch && b < r->n_check; b++) {
    int pe = poison(d, r->p, outs_of(r->p, offs, (*next + b) % r->n_check), &r->derr);
    if (pe) {
      device_error(r, "cannot poison the outputs");
      return 1;
    }
  }
  int e = d->l2_reset(d, first, &r->derr), marker = d->end_marker, bad = 0;
  if (e == 0 && !flushed) {
    e = r->e->flush_l2 ? d->flush_l2(d, &r->derr) : 0;
    if (e == 0 && batch > 1)
      e = d->spin(d, 20.0 + ENQUEUE_US * batch, &r->derr);
    else if (e == 0 && marker)
      /* the kernel trace's opening marker (the batch's spin is one too) */
      e = d->spin(d, 0.0, &r->derr);
    if (e == 0)
      e = d->timer_start(d, slot, &r->derr);
  } else if (e == 0 && marker) {
    e = d->spin(d, 0.0, &r->derr); /* opening marker; the closing one follows the last call */
    d->end_marker = 0;
  }
  if (e) {
    device_error(r, "cannot start a timed sample");
    bad = 1;
  }
  for (int b = 0; b < batch && !bad; b++) {
    int s = *next;
    if (flushed) {
      /* the flush (tens of microseconds of device work) covers queueing the call behind it */
      e = b > 0 ? d->l2_reset(d, 0, &r->derr) : 0;
      if (e == 0)
        e = d->flush_l2(d, &r->derr);
      if (e == 0)
        e = d->timer_start(d, slot + b, &r->derr);
      if (e) {
        device_error(r, "cannot start a timed call");
        bad = 1;
        break;
      }
    }
    *next = (*next + 1) % r->n_check;
    int ret = call(d, r->p, fn, s, outs_of(r->p, offs, s));
    if (ret != 0) {
      r->v->status = KB_STATUS_CRASH;
      say(r->v->reason, sizeof r->v->reason,
          "%skb_forward returned %d on input set %d (timed call)", who, ret, s);
      bad = 1;
      break;
    }
    *timed_mask |= UINT32_C(1) << s;
    if (flushed && (e = d->timer_stop(d, slot + b, &r->derr)) != 0) {
      device_error(r, "device error during a timed call");
      bad = 1;
    }
  }
  d->end_marker = marker;
  if (bad)
    return 1;
  e = flushed ? (marker ? d->spin(d, 0.0, &r->derr) : 0) : d->timer_stop(d, slot, &r->derr);
  if (e) {
    device_error(r, "device error during a timed call");
    return 1;
  }
  r->windows++;
  return 0;
}

/* The time per call of the sample queued at `slot` (sample_queue), into `*us`, once the device
 * got there. Returns 0 or 1 with the verdict set. */
static int sample_read(struct run *r, int batch, int flushed, int slot, double *us) {
  double t = 0;
  int e = r->d->timer_read(r->d, slot, flushed ? batch : 1, &t, &r->derr);
  if (e) {
    device_error(r, "device error during a timed call");
    return 1;
  }
  *us = t / batch;
  return 0;
}

/* The same sample's CPU time of the calling thread per call (the device's busy clock, which the
 * caller checked it has). Returns 0 or 1 with the verdict set. */
static int busy_read(struct run *r, int batch, int flushed, int slot, double *us) {
  double t = 0;
  if (r->d->timer_read_busy(r->d, slot, flushed ? batch : 1, &t, &r->derr)) {
    device_error(r, "cannot read the timed calls' CPU time");
    return 1;
  }
  *us = t / batch;
  return 0;
}

/* One sample (sample_queue), waited for: `*us` gets the mean time per call. Returns 0 or 1 with
 * the verdict set. */
static int sample(struct run *r, forward_fn fn, int batch, int flushed, int *next,
                  const size_t *offs, uint32_t *timed_mask, const char *who, double *us) {
  if (sample_queue(r, fn, batch, flushed, 0, 1, next, offs, timed_mask, who) ||
      sample_read(r, batch, flushed, 0, us))
    return 1;
  if (r->d->sync(r->d, &r->derr)) {
    device_error(r, "device error during a timed call");
    return 1;
  }
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
      const void *got = p->cand + outs_of(p, offs, s)[o];
      struct kb_verify_report rep;
      int pass = 1;
      /* compared with itself, an element fails exactly when it is not finite */
      if (r->d->compare(r->d, got, got, p->out_spec[o].dtype, p->out_n[o], 0, 0, &rep, &pass, NULL))
        return -1;
      if (!pass && rep.bad == rep.checked && rep.checked > 0 && isnan(rep.got)) {
        *out = o;
        return s;
      }
    }
  return -1;
}

/* Draws the inputs of set `set` into the input buffers of slot `b`. */
static int fill_slot(struct run *r, int b, const struct kb_input_set *set) {
  struct kb__prepared *p = r->p;
  for (int i = 0; i < p->n_in; i++) {
    int e = r->d->fill(r->d, p->cand + p->in_off[b * p->n_in + i], p->in_spec[i].dtype,
                       p->in_n[i], set, i, &r->derr);
    if (e)
      return e;
  }
  return 0;
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
    int e = fill_slot(r, b, &p->sets[set]);
    if (e)
      return e;
    p->holds[b] = set;
  }
  return 0;
}

/* ---- fresh samples ------------------------------------------------------------------------ */

/* Median and relative robust spread ((p90 - p10) / 2.563, a standard deviation for normal
 * noise, over the median) of `n` > 0 values (left unchanged). */
static void med_spread(const double *v, int n, double *med, double *spread) {
  double *c = kb_calloc((size_t)n, sizeof *c);
  *med = 0;
  *spread = 0;
  if (c == NULL)
    return;
  memcpy(c, v, (size_t)n * sizeof *c);
  struct kb_timing t;
  kb__timing_stats(c, n, 0, &t);
  *med = t.median_us;
  *spread = t.median_us > 0 ? (t.p90_us - t.p10_us) / 2.563 / t.median_us : 0;
  kb_free(c);
}

/* The verdict after a fresh output failed: one more call on the set's own (restored) contents
 * tells a candidate wrong only on unseen inputs (it returns results kept from earlier calls)
 * from one wrong on every call after the first few (the older reason). Returns 1. */
static int fresh_wrong(struct run *r, forward_fn fn, int s, uint32_t *timed_mask,
                       const char *detail) {
  struct kb__prepared *p = r->p;
  if (one_call(r, fn, s, outs_of(p, p->tim_off, s), 2, "") || sync_or_crash(r, s, 2))
    return 1;
  *timed_mask |= UINT32_C(1) << s;
  char msg[200];
  int pass = outputs_pass(r, p->tim_off, *timed_mask, msg, sizeof msg);
  if (pass < 0)
    return 1;
  r->v->status = KB_STATUS_REJECTED;
  if (!pass)
    say(r->v->reason, sizeof r->v->reason,
        "outputs right on the first call but wrong after repeated calls: %s", msg);
  else
    say(r->v->reason, sizeof r->v->reason, "wrong output on unseen inputs: %s", detail);
  return 1;
}

/* One fresh sample of `calls` calls, each on contents never drawn before in this process, in
 * the buffers of the next slot in the rotation (`*next`, advanced; pointers the candidate has
 * seen). Per call, outside the timed window: new contents from a new seed (same distribution),
 * their checksums, the timed outputs poisoned, L2 persistence undone; then the call timed exactly
 * as a call of a sample (`flush_l2`: the L2 flushed right before the start mark); then, outside
 * the window again: the inputs must be unchanged, the oracle makes the reference only now (so
 * none exists while the candidate runs), the outputs are compared with it, and the slot's own
 * contents are drawn back. `*us` gets the mean time per call. With `control`, the same
 * procedure up to the input check after the call on the slot's own contents (drawn again from
 * their own seed; no oracle run, no compare, nothing drawn back): the control sample of a fresh
 * one, which differs from it before and during each call only in the novelty of the contents
 * (the draws and host synchronisations between calls change what an honest kernel pays, e.g. a
 * stream-ordered allocation whose pool was trimmed at a synchronisation). Returns 0 or 1 with
 * the verdict set. */
/* Kept whole (111 lines): one fresh call's fixed sequence (draw, time, check, oracle, compare,
 * draw back), which the control sample must repeat step for step. */
static int fresh_sample(struct run *r, forward_fn fn, int calls, int control, int *next,
                        uint32_t *timed_mask, double *us) {
  struct kb__dev *d = r->d;
  struct kb__prepared *p = r->p;
  for (int k = 0; k < calls; k++) {
    int s = *next;
    *next = (s + 1) % r->n_check;
    *timed_mask &= ~(UINT32_C(1) << s); /* its timed outputs are the fresh call's now */
    struct kb_input_set fs = p->sets[p->holds[s]];
    if (!control)
      fs.seed = fresh_seed(p);
    uint64_t *sum0 = p->sum0;
    const size_t *outs = outs_of(p, p->tim_off, s);
    int e = fill_slot(r, s, &fs);
    for (int i = 0; i < p->n_in && e == 0; i++)
      e = d->checksum(d, p->cand + p->in_off[s * p->n_in + i], p->in_bytes[i], &sum0[i], &r->derr);
    if (e == 0)
      e = poison(d, p, outs, &r->derr);
    if (e == 0)
      e = d->l2_reset(d, 1, &r->derr);
    if (e == 0 && d->end_marker)
      /* the trace's opening marker; timer_stop queues the closing one */
      e = d->spin(d, 0.0, &r->derr);
    if (e == 0 && r->e->flush_l2)
      e = d->flush_l2(d, &r->derr);
    if (e == 0)
      e = d->timer_start(d, k, &r->derr);
    if (e) {
      device_error(r, "cannot start a timed call on unseen inputs");
      return 1;
    }
    int ret = call(d, p, fn, s, outs);
    if (ret != 0) {
      r->v->status = KB_STATUS_CRASH;
      say(r->v->reason, sizeof r->v->reason,
          "kb_forward returned %d on input set %d (timed call on unseen inputs)", ret, s);
      return 1;
    }
    e = d->timer_stop(d, k, &r->derr);
    if (e == 0)
      e = d->sync(d, &r->derr);
    if (e) {
      device_error(r, "device error during a timed call on unseen inputs");
      return 1;
    }
    r->windows++;
    if ((e = pad_window(r)) != 0) {
      device_error(r, "cannot mark the kernel trace");
      return 1;
    }
    for (int i = 0; i < p->n_in; i++) {
      uint64_t sum = 0;
      e = d->checksum(d, p->cand + p->in_off[s * p->n_in + i], p->in_bytes[i], &sum, &r->derr);
      if (e) {
        device_error(r, "cannot checksum the inputs");
        return 1;
      }
      if (sum != sum0[i]) {
        r->v->status = KB_STATUS_REJECTED;
        say(r->v->reason, sizeof r->v->reason,
            "modified its inputs: input \"%s\" changed during a timed call on unseen inputs (in "
            "the buffers of input set %d)", p->in_spec[i].name, s);
        p->holds[s] = -1; /* nobody's contents: drawn back at the end */
        return 1;
      }
    }
    if (control)
      continue; /* its own contents: the timed re-check judges its outputs, no oracle run */
    if (kb__prepared_oracle_changed(p)) {
      r->v->status = KB_STATUS_REJECTED;
      say(r->v->reason, sizeof r->v->reason, "changed the oracle's code (the library the "
          "references of unseen inputs come from) during its evaluation");
      p->holds[s] = -1;
      return 1;
    }
    ret = call_oracle(d, p, p->oracle, s, p->fresh_off, &e, &r->derr);
    if (e) {
      device_error(r, "device error in the oracle on unseen inputs");
      return 1;
    }
    if (ret != 0) {
      r->v->status = KB_STATUS_INFRA_ERROR;
      say(r->v->reason, sizeof r->v->reason, "the oracle returned %d on unseen inputs", ret);
      p->holds[s] = -1;
      return 1;
    }
    char detail[200] = "";
    for (int o = 0; o < p->n_out && e == 0 && detail[0] == '\0'; o++) {
      struct kb_verify_report rep;
      int pass = 0;
      e = d->compare(d, p->cand + outs[o], p->priv + p->fresh_off[o], p->out_spec[o].dtype,
                     p->out_n[o], p->atol, p->rtol, &rep, &pass, &r->derr);
      if (e == 0 && !pass) {
        char what[160];
        kb__verify_describe(&rep, what, sizeof what);
        say(detail, sizeof detail,
            "output \"%s\" for contents never seen before (in the buffers of input set %d): %s",
            p->out_spec[o].name, s, what);
      }
    }
    if (e == 0)
      e = fill_slot(r, s, &p->sets[p->holds[s]]);
    if (e) {
      p->holds[s] = -1;
      device_error(r, "cannot check a call on unseen inputs");
      return 1;
    }
    if (detail[0])
      return fresh_wrong(r, fn, s, timed_mask, detail);
  }
  int e = d->timer_read(d, 0, calls, us, &r->derr);
  if (e) {
    device_error(r, "device error during a timed call on unseen inputs");
    return 1;
  }
  *us /= calls;
  return 0;
}

/* What the fresh samples need through an evaluation. */
struct fresh {
  double *f;     /* fresh samples, microseconds per call (owned) */
  double *c;     /* their control samples (owned): c[k] taken right before f[k], of the same
                    shape on the same buffers with their own (repeated) contents */
  double *pl;    /* their plain controls (owned): pl[k] a sample timed like every repeated one
                    (calls back to back, nothing in between), right before c[k] */
  int n, cap;
  int calls;     /* calls per fresh sample */
  int flushed;   /* 1: a sample's calls are flushed and timed one by one (flushed batches) */
  int gap, offset; /* one fresh sample after repeated sample n when n % gap == offset */
  int min;       /* fresh samples at least (the request's fresh_min) */
  double share;  /* past min, more while under this share of the evaluation's time */
  double floor, cap_slack; /* of the threshold (FRESH_FLOOR_*, FRESH_CAP_*) */
  double t;      /* seconds spent in fresh and control samples */
  int cpu;       /* pairs measured in CPU time (fresh_take) */
};

/* The calling thread's CPU time per call of the sample just read from timer intervals 0..n-1
 * (`calls` calls) into `*us`, where the device has it (the host; else `*us` is left alone).
 * On a machine with more runnable processes than CPUs a wall-clock interval also holds the
 * time the evaluator waited for a CPU, and that wait does not fall on fresh and control
 * samples alike: under CI load an honest host reduction's fresh samples measured 4.17x their
 * controls over 6 pairs (the host's bound 3x) and it was rejected. A call's CPU time is its
 * own work whatever else runs; a result kept between calls still saves that work. Returns 0
 * or 1 with the verdict set. */
static int fresh_busy(struct run *r, int n, int calls, double *us) {
  if (r->d->timer_read_busy == NULL)
    return 0;
  double t = 0;
  if (r->d->timer_read_busy(r->d, 0, n, &t, &r->derr)) {
    device_error(r, "cannot read the timed calls' CPU time");
    return 1;
  }
  *us = t / calls;
  return 0;
}

/* A pair whose control takes at least this long per call (wall time) is judged by the three
 * samples' CPU time (fresh_busy); a shorter one by wall time: reading a thread's CPU clock is
 * a system call (under the filter, about a microsecond), noise that would swamp a call of a
 * few microseconds (under ASan a 1-pair ratio went over 1.5x so), and a call that short is
 * seldom preempted. */
#define FRESH_CPU_MIN_US 100.0

/* One plain control sample (timed like the repeated samples), one control sample
 * (fresh_sample's procedure on the slots' own contents), then one fresh sample, all on the same
 * slots; a pair whose control is FRESH_CPU_MIN_US or longer is measured in CPU time
 * (fresh_busy). Returns 0 or 1 with the verdict set. */
static int fresh_take(struct run *r, forward_fn fn, struct fresh *fr, int *next,
                      uint32_t *timed_mask) {
  if (fr->n >= fr->cap)
    return 0;
  double t0 = kb_now_mono();
  double cus = 0, fus = 0;
  double pus = 0;
  double cpu[3] = {-1, -1, -1}; /* plain, control, fresh; -1 = no CPU clock */
  int nx = *next;
  if (sample(r, fn, fr->calls, fr->flushed, &nx, r->p->tim_off, timed_mask, "", &pus) ||
      fresh_busy(r, fr->flushed ? fr->calls : 1, fr->calls, &cpu[0]))
    return 1;
  int e = pad_window(r);
  if (e) {
    device_error(r, "cannot mark the kernel trace");
    return 1;
  }
  nx = *next;
  if (fresh_sample(r, fn, fr->calls, 1, &nx, timed_mask, &cus) ||
      fresh_busy(r, fr->calls, fr->calls, &cpu[1]))
    return 1;
  e = pad_window(r);
  if (e) {
    device_error(r, "cannot mark the kernel trace");
    return 1;
  }
  if (fresh_sample(r, fn, fr->calls, 0, next, timed_mask, &fus) ||
      fresh_busy(r, fr->calls, fr->calls, &cpu[2]))
    return 1;
  if (cus >= FRESH_CPU_MIN_US && cpu[0] > 0 && cpu[1] > 0 && cpu[2] > 0) {
    pus = cpu[0];
    cus = cpu[1];
    fus = cpu[2];
    fr->cpu++;
  }
  fr->c[fr->n] = cus;
  fr->pl[fr->n] = pus;
  fr->f[fr->n] = fus;
  fr->n++;
  fr->t += kb_now_mono() - t0;
  return 0;
}

/* Judges pairs `from`..n-1 against the controls `ctl` (fr->c or fr->pl): 1 when the median of
 * the ratios fresh / control is over the bound 1 + max(floor, FRESH_K * spread) (at most
 * 1 + cap),
 * with the numbers in `*fm` (fresh median), `*cm` (control median), `*ratio` and `*bound`. The
 * bound widens with the ratios' own spread, but no further than cap_slack: noise a candidate
 * makes itself buys it at most that factor. */
static int fresh_over(const struct fresh *fr, const double *ctl, double floor, double cap,
                      int from, double *fm, double *cm, double *ratio, double *bound) {
  int n = fr->n - from;
  double q[KB__FRESH_MAX];
  double fs = 0, cs = 0, rs = 0;
  if (n <= 0 || n > KB__FRESH_MAX)
    return 0;
  for (int k = 0; k < n; k++)
    q[k] = ctl[from + k] > 0 ? fr->f[from + k] / ctl[from + k] : 1.0;
  med_spread(fr->f + from, n, fm, &fs);
  med_spread(ctl + from, n, cm, &cs);
  med_spread(q, n, ratio, &rs);
  double slack = FRESH_K * rs > floor ? FRESH_K * rs : floor;
  slack = slack < cap ? slack : cap;
  *bound = 1.0 + slack;
  return *ratio > *bound;
}

/* ---- plausibility ----------------------------------------------------------------------- */

/* A second call on input set 0 (right after the check calls, slot 0 holding set 0) into a
 * second poisoned buffer must agree with the first check call's outputs by kb__verify's rule: a
 * race or a read of uninitialised memory that happened to pass once shows here. Outputs left
 * untouched (still poisoned) are work skipped, not a race: with `timed` the timed calls name that
 * (their reasons say more), else it is rejected here. Returns 0, or 1 with the verdict set. */
static int determinism(struct run *r, forward_fn fn, int timed) {
  struct kb__prepared *p = r->p;
  int calls = r->n_check + 1;
  if (one_call(r, fn, 0, p->dup_off, 0, "") || sync_or_crash(r, 0, 0))
    return 1;
  for (int o = 0; o < p->n_out; o++) {
    struct kb_verify_report rep;
    int pass = 0;
    const unsigned char *got = p->cand + p->dup_off[o];
    int e = r->d->compare(r->d, got, p->cand + outs_of(p, p->chk_off, 0)[o],
                          p->out_spec[o].dtype, p->out_n[o], p->atol, p->rtol, &rep, &pass,
                          &r->derr);
    if (e) {
      device_error(r, "cannot compare the outputs");
      return 1;
    }
    if (pass)
      continue;
    struct kb_verify_report self;
    int self_pass = 1;
    e = r->d->compare(r->d, got, got, p->out_spec[o].dtype, p->out_n[o], 0, 0, &self,
                      &self_pass, NULL);
    int untouched = e == 0 && is_float(p->out_spec[o].dtype) && !self_pass &&
                    self.bad == self.checked && self.checked > 0 && isnan(self.got);
    if (untouched && timed)
      return 0;
    r->v->status = KB_STATUS_REJECTED;
    if (untouched) {
      say(r->v->reason, sizeof r->v->reason,
          "did the work on the first call only: output \"%s\" of input set 0 was right on the "
          "first call and left untouched (still poisoned) on call %d",
          p->out_spec[o].name, calls);
      return 1;
    }
    char detail[160];
    kb__verify_describe(&rep, detail, sizeof detail);
    say(r->v->reason, sizeof r->v->reason,
        "not deterministic: two calls on input set 0 disagree beyond the tolerance: output \"%s\" "
        "of the second call: %s (the first call's value as expected)",
        p->out_spec[o].name, detail);
    return 1;
  }
  return 0;
}

/* Bytes a correct call must move: the inputs' share it must read (task.json "must_read"), read
 * once, and the outputs, written once. */
static double must_move(const struct kb__prepared *p) {
  double in = 0, out = 0;
  for (int i = 0; i < p->n_in; i++)
    in += (double)p->in_bytes[i];
  for (int o = 0; o < p->n_out; o++)
    out += (double)p->out_bytes[o];
  return p->must_read * in + out;
}

/* Speed of light, where it is sound: on the GPU, with every timed call starting from a flushed
 * L2 (flush_l2 and one call per sample, or flushed batches), a median under SOL_MARGIN of the
 * time the probed bandwidth needs for must_move() bytes is impossible. Returns 0, or 1 with the
 * verdict set. */
static int speed_of_light(struct run *r, int batch, int flushed) {
  struct kb__dev *d = r->d;
  if (!(d->bandwidth > 0) || !d->gpu || !r->e->flush_l2 ||
      (batch > 1 && !flushed) || r->v->timing.samples <= 0)
    return 0;
  double bytes = must_move(r->p);
  double least_us = bytes / d->bandwidth * 1e6;
  double med = r->v->timing.median_us;
  if (!(med < SOL_MARGIN * least_us))
    return 0;
  r->v->status = KB_STATUS_REJECTED;
  say(r->v->reason, sizeof r->v->reason,
      "faster than the memory system allows: %.4g us per call for %.4g MB a correct kernel must "
      "move (inputs read once, outputs written once, the L2 flushed) is %.4g GB/s; this device "
      "moved %.4g GB/s in a copy, so no call can take under %.4g us",
      med, bytes / 1e6, bytes / (med * 1e-6) / 1e9, d->bandwidth / 1e9, SOL_MARGIN * least_us);
  return 1;
}

#ifdef KB_HAVE_CUPTI_TRACE
/* Ends the kernel trace of `windows` timed samples and cross-checks it; the verdict keeps the
 * candidate's kernel records (`period`: windows per sample when the baseline was timed
 * interleaved, else 0; see kb__cupti_keep_candidate). The oracle's kernels (fresh references, on
 * the oracle's own stream) are dropped first. Returns 0, or 1 with the verdict set (rejected,
 * or a crash for a device error). */
static int cross_check(struct run *r, int windows, int period) {
  struct kb__dev *d = r->d;
  struct kb__verdict *v = r->v;
  struct kb_cupti_kernel *recs = NULL;
  struct kb_cupti_window *w = NULL;
  size_t nrec = 0, dropped = 0, nw = 0;
  uint32_t sid = 0, osid = UINT32_MAX;
  struct kb_error te = {0};
  int e = d->sync(d, &r->derr);
  if (e) {
    struct kb_cupti_kernel *junk = NULL;
    kb__cupti_trace_stop(&junk, &nrec, NULL, &te);
    kb_free(junk);
    device_error(r, "device error during a timed call");
    return 1;
  }
  int rc = kb__cupti_trace_stop(&recs, &nrec, &dropped, &te);
  if (rc == KB_OK)
    rc = kb__cupti_stream_id(d->stream, &sid, &te);
  if (rc == KB_OK && d->oracle_stream != NULL)
    rc = kb__cupti_stream_id(d->oracle_stream, &osid, &te);
  if (rc == KB_OK && osid != UINT32_MAX && osid != sid) {
    size_t kept = 0;
    for (size_t i = 0; i < nrec; i++)
      if (recs[i].stream_id != osid)
        recs[kept++] = recs[i];
    nrec = kept;
  }
  if (rc == KB_OK) {
    w = kb_calloc((size_t)windows + 1, sizeof *w);
    rc = w == NULL ? kb_error_set(&te, KB_ENOMEM, "out of memory for %d windows", windows)
                   : kb__cupti_windows(recs, nrec, sid, NULL, w, (size_t)windows + 1, &nw, &te);
  }
  int bad = 0;
  if (rc != KB_OK) {
    say(v->trace_note, sizeof v->trace_note, "kernel trace not checked: %s", te.msg);
  } else {
    struct kb_cupti_check chk;
    int clean = kb__cupti_cross_check(recs, nrec, sid, w, nw, NULL, &chk);
    v->traced = 1;
    v->trace_kernels = (int64_t)nrec;
    v->trace_own_kernels = chk.own_kernels;
    v->trace_own_ns = chk.own_ns;
    v->trace_other_ns = chk.other_ns;
    v->trace_late_ns = chk.late_ns;
    v->trace_dropped = (int64_t)dropped;
    v->trace_recs = recs; /* the reply carries the candidate's records (serve.c) */
    v->n_trace_recs = kb__cupti_keep_candidate(recs, nrec, sid, w, nw, (size_t)period, NULL);
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
  return call(m->r->d, m->r->p, m->fn, 0, outs_of(m->r->p, m->r->p->tim_off, 0));
}

/* Before each replay pass: the outputs poisoned and the L2 flushed, as before a timed call. */
static int metric_prepare(void *arg) {
  struct metric_call *m = arg;
  struct kb__dev *d = m->r->d;
  if (poison(d, m->r->p, outs_of(m->r->p, m->r->p->tim_off, 0), NULL) != 0 ||
      d->l2_reset(d, 1, NULL) != 0)
    return 1;
  return m->r->e->flush_l2 ? d->flush_l2(d, NULL) != 0 : 0;
}

/* Reads the hardware metrics of one call into the verdict, or why not into metrics_note. */
static void read_metrics(struct run *r, forward_fn fn) {
  static int probed = 0;
  static struct kb_error unreadable; /* why the counters cannot be read; code 0 when they can */
  struct kb__verdict *v = r->v;
  if (!probed) {
    kb__cupti_metrics_probe(&unreadable);
    probed = 1;
  }
  if (unreadable.code != KB_OK) {
    say(v->metrics_note, sizeof v->metrics_note, "no hardware metrics: %s", unreadable.msg);
    return;
  }
  struct metric_call mc = {.r = r, .fn = fn};
  struct kb_cupti_metrics m;
  struct kb_error err = {0};
  if (kb__cupti_metrics_measure(metric_prepare, metric_launch, &mc, &m, &err) != KB_OK) {
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

/* ---- the evaluation, phase by phase (engine.h) ------------------------------------------- */

/* One evaluation's state across its phases. */
struct evaluation {
  struct run r;
  void *lib, *blib;         /* the candidate's and the baseline's libraries (dlclosed at the end) */
  forward_fn fn, bfn;       /* their kb_forward; bfn NULL without a baseline */
  uint64_t bsum;            /* the baseline's code's and RELRO's checksum once loaded */
  double *samples, *bsamples; /* timed samples of the candidate and the baseline (owned) */
  double *csamples;           /* the candidate's samples in the thread's CPU time where the
                                 device has that clock, else NULL (owned) */
  struct fresh fr;
  uint32_t timed_mask;      /* sets whose timed outputs hold a timed call's results */
  int next;                 /* the set the next timed call uses */
  int warm;                 /* warm-up calls (the samples the statistics skip) */
  double est;               /* the last warm-up call's time, microseconds */
  int batch, flushed;       /* calls per sample; 1: flushed batches */
  int n;                    /* samples taken */
  int tracing;              /* 1 while the kernel trace runs */
  double *calls;            /* dump_samples: each timed call's time, us (owned) */
  int n_calls, cap_calls;
  int rc;                   /* kb__evaluate's return: KB_OK, or KB_ENOMEM */
};

/* Loading: the candidate's library and the baseline's. Returns 0, or 1 with the verdict set. */
static int phase_load(struct evaluation *ev) {
  struct kb__verdict *v = ev->r.v;
  const struct kb__eval_spec *e = ev->r.e;
  double t0 = kb_now_mono();
  struct kb_error le = {0};
  ev->lib = kb__load_forward(e->library, &ev->fn, &le);
  if (ev->lib == NULL) {
    v->status = KB_STATUS_COMPILE_ERROR;
    if (le.code == KB_ENOTFOUND)
      say(v->reason, sizeof v->reason, "%s", le.msg);
    else
      say(v->reason, sizeof v->reason, "cannot load the library: %s", le.msg);
    return 1;
  }
  if (e->baseline != NULL && e->max_samples > 0) {
    ev->blib = kb__load_forward(e->baseline, &ev->bfn, &le);
    if (ev->blib == NULL) {
      v->status = KB_STATUS_INFRA_ERROR;
      say(v->reason, sizeof v->reason, "cannot load the baseline: %s", le.msg);
      return 1;
    }
    if (kb__integrity_object_sum((const void *)ev->bfn, &ev->bsum) != 0) {
      v->status = KB_STATUS_INFRA_ERROR;
      say(v->reason, sizeof v->reason, "the baseline's code cannot be found in the process");
      return 1;
    }
  }
  v->t_load = kb_now_mono() - t0;
  return 0;
}

/* The check calls, one per set, each followed by a synchronization that surfaces its errors;
 * the integrity and output checks; the determinism call. Returns 0, or 1 with the verdict set. */
static int phase_check(struct evaluation *ev) {
  struct run *r = &ev->r;
  struct kb__prepared *p = r->p;
  struct kb__verdict *v = r->v;
  double t0 = kb_now_mono();
  for (int s = 0; s < r->n_check; s++) {
    if (one_call(r, ev->fn, s, outs_of(p, p->chk_off, s), 0, "") || sync_or_crash(r, s, 0))
      return 1;
  }
  if (integrity(r, "after the check calls", 0))
    return 1;
  v->sets_checked = r->n_check;
  uint32_t all = r->n_check >= 32 ? UINT32_MAX : (UINT32_C(1) << r->n_check) - 1;
  char msg[200];
  int pass = outputs_pass(r, p->chk_off, all, msg, sizeof msg);
  if (pass < 0)
    return 1;
  if (!pass) {
    /* right on the first call and untouched on a later one: the work was skipped, a cheat
     * (a harness that reuses one output buffer would see a free kernel), not a wrong result */
    char first[8];
    int o_bad = 0, s_bad = -1;
    if (r->n_check >= 2 && outputs_pass(r, p->chk_off, 1u, first, sizeof first) == 1)
      s_bad = untouched_set(r, p->chk_off, &o_bad);
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
    return 1;
  }
  if (determinism(r, ev->fn, r->e->max_samples > 0) ||
      integrity(r, "after the determinism call", 1))
    return 1;
  v->t_check = kb_now_mono() - t0;
  return 0;
}

/* Warm-up, after the input rotation (from here on the sets' contents sit behind other pointers
 * than in the check calls); the last call, timed alone, gives ev->est, which decides about
 * batching. Returns 0, or 1 with the verdict set. */
static int phase_warmup(struct evaluation *ev) {
  struct run *r = &ev->r;
  struct kb__prepared *p = r->p;
  double t0 = kb_now_mono();
  if (r->n_check >= 2 && rotate_inputs(r, 1) != KB_OK) {
    device_error(r, "cannot rotate the input sets");
    return 1;
  }
  ev->warm = r->e->warmup > 0 ? r->e->warmup : 0;
  for (int w = 0; w < ev->warm + 1; w++) {
    double us = 0;
    if (w < ev->warm) {
      int s = w % r->n_check;
      if (one_call(r, ev->fn, s, outs_of(p, p->tim_off, s), 1, "") || sync_or_crash(r, s, 1))
        return 1;
      ev->timed_mask |= UINT32_C(1) << s;
      if (ev->bfn != NULL &&
          (one_call(r, ev->bfn, s, outs_of(p, p->chk_off, s), 1, "the baseline's ") ||
           sync_or_crash(r, s, 1)))
        return 1;
      continue;
    }
    int probe = 0;
    if (sample(r, ev->fn, 1, 0, &probe, p->tim_off, &ev->timed_mask, "", &us))
      return 1;
    ev->est = us;
  }
  r->v->t_warmup = kb_now_mono() - t0;
  return 0;
}

/* The shape of the timed samples (batch, flushed batches) from the warm-up's estimate, the
 * fresh samples' plan and the sample arrays. Returns 0, or 1 with the verdict set (out of
 * memory: ev->rc KB_ENOMEM). */
static int phase_plan(struct evaluation *ev) {
  struct run *r = &ev->r;
  const struct kb__eval_spec *e = r->e;
  struct kb__prepared *p = r->p;
  struct fresh *fr = &ev->fr;
  double est = ev->est;
  ev->batch = 1;
  if (r->d->batch_short && est < KB__SHORT_US) {
    ev->batch = (int)ceil(BATCH_TARGET_US / (est > 0.5 ? est : 0.5));
    ev->batch = ev->batch < 2 ? 2 : ev->batch > BATCH_MAX ? BATCH_MAX : ev->batch;
  } else if (r->d->batch_short && e->flush_l2 && est < KB__FLUSHED_US) {
    /* one flushed call of some ten microseconds scatters by a few percent from call to call (its
     * DRAM traffic, the write-back of the flush's dirty lines): a sample is then the mean of
     * enough flushed calls, each still timed cold and alone */
    ev->flushed = 1;
    ev->batch = (int)ceil(FLUSHED_TARGET_US / est);
    ev->batch = ev->batch < 2 ? 2 : ev->batch > KB__TIMER_SLOTS ? KB__TIMER_SLOTS : ev->batch;
  }
  r->v->batch = ev->batch;
  r->v->batch_flushed = ev->flushed;

  /* Fresh samples, each after a control sample of the same shape on the same buffers (see
   * FRESH_K). Flushed batches: a fresh sample is the mean of up to FRESH_FLUSHED_CALLS flushed
   * calls, each on its own new contents (fewer when the oracle is slow: FRESH_MIN of them must
   * fit FRESH_SHARE of the budget); one call per sample: one fresh call; queued batches of
   * short calls (back to back, which fresh contents cannot be without a draw and an oracle run
   * between calls): one call timed alone, its control too. */
  fr->min = e->fresh_min > 0 ? e->fresh_min : KB__FRESH_MIN;
  fr->min = fr->min < KB__FRESH_MAX - FRESH_MIN ? fr->min : KB__FRESH_MAX - FRESH_MIN;
  fr->share = e->fresh_share >= 0 ? e->fresh_share : KB__FRESH_SHARE;
  int most = e->max_samples + fr->min + 2 * FRESH_MIN;
  fr->cap = most < KB__FRESH_MAX ? most : KB__FRESH_MAX;
  fr->f = kb_calloc((size_t)fr->cap, sizeof *fr->f);
  fr->c = kb_calloc((size_t)fr->cap, sizeof *fr->c);
  fr->pl = kb_calloc((size_t)fr->cap, sizeof *fr->pl);
  fr->flushed = ev->flushed;
  fr->calls = ev->flushed ? (ev->batch < FRESH_FLUSHED_CALLS ? ev->batch : FRESH_FLUSHED_CALLS)
                          : 1;
  double per_call = p->oracle_s + 3.0 * p->fill_s + est * 1e-6;
  double budget = e->budget_s < 1e8 ? e->budget_s : 60.0;
  /* sized for the full schedule's FRESH_MIN whatever fr->min is: a fresh sample has the same
   * calls at every tier, so one costs a third of three */
  int fit = per_call > 0 ? (int)floor(FRESH_SHARE * budget / (FRESH_MIN * per_call)) : fr->calls;
  fr->calls = fit < 1 ? 1 : fit < fr->calls ? fit : fr->calls;
  fr->gap = e->min_samples / fr->min > 1 ? e->min_samples / fr->min : 1;
  fr->offset = (int)(fresh_seed(p) % (uint64_t)fr->gap);
  int gpu = r->d->gpu;
  fr->floor = !gpu ? FRESH_FLOOR_HOST : e->flush_l2 ? FRESH_FLOOR_FLUSHED : FRESH_FLOOR_GPU;
  fr->cap_slack = !gpu ? FRESH_CAP_HOST : e->flush_l2 ? FRESH_CAP_FLUSHED : FRESH_CAP_GPU;
  ev->samples = kb_calloc((size_t)e->max_samples, sizeof *ev->samples);
  ev->bsamples = ev->bfn ? kb_calloc((size_t)e->max_samples, sizeof *ev->bsamples) : NULL;
  ev->csamples = r->d->timer_read_busy != NULL
                     ? kb_calloc((size_t)e->max_samples, sizeof *ev->csamples)
                     : NULL;
  if (ev->samples == NULL || (ev->bfn != NULL && ev->bsamples == NULL) || fr->f == NULL ||
      fr->c == NULL || fr->pl == NULL) {
    r->v->status = KB_STATUS_INFRA_ERROR;
    say(r->v->reason, sizeof r->v->reason, "sandbox: out of memory for %d samples",
        e->max_samples);
    ev->rc = KB_ENOMEM;
    return 1;
  }
  return 0;
}

/* Why no kernel trace will be recorded although one was asked, into the verdict's trace_note:
 * the device has none, or this build has no CUPTI module. */
static void trace_unavailable(struct run *r) {
  if (!r->e->trace)
    return;
  if (!r->d->gpu)
    say(r->v->trace_note, sizeof r->v->trace_note,
        "kernel trace not recorded: the %s device has none", r->d->backend);
#ifndef KB_HAVE_CUPTI_TRACE
  else
    say(r->v->trace_note, sizeof r->v->trace_note,
        "kernel trace not recorded: this kb-sandbox was built without the CUPTI module");
#endif
}

/* Starts the kernel trace when asked and the device has one (its failure goes to the
 * verdict's trace_note). */
static void trace_begin(struct evaluation *ev) {
#ifdef KB_HAVE_CUPTI_TRACE
  struct run *r = &ev->r;
  if (!r->e->trace || !r->d->gpu)
    return;
  struct kb_error te = {0};
  if (kb__cupti_trace_start(&te) == KB_OK) {
    ev->tracing = 1;
    r->d->end_marker = 1;
    r->windows = 0;
    r->pad_windows = ev->bfn != NULL;
  } else {
    say(r->v->trace_note, sizeof r->v->trace_note, "kernel trace not recorded: %s", te.msg);
  }
#else
  (void)ev;
#endif
}

/* dump_samples: appends the time of each call of the sample read at `slot` (one entry per
 * call when flushed, else the sample's mean per call) to ev->calls. Returns 0, or 1 with the
 * verdict set. */
static int keep_calls(struct evaluation *ev, int slot, double us) {
  struct run *r = &ev->r;
  int n = ev->flushed ? ev->batch : 1;
  if (ev->n_calls + n > ev->cap_calls) {
    int cap = ev->cap_calls ? 2 * ev->cap_calls + n : 256 + n;
    double *c = kb_reallocarray(ev->calls, (size_t)cap, sizeof *c);
    if (c == NULL) {
      r->v->status = KB_STATUS_INFRA_ERROR;
      say(r->v->reason, sizeof r->v->reason, "sandbox: out of memory for the calls' times");
      ev->rc = KB_ENOMEM;
      return 1;
    }
    ev->calls = c;
    ev->cap_calls = cap;
  }
  for (int b = 0; b < n; b++) {
    double t = us;
    if (ev->flushed && r->d->timer_read(r->d, slot + b, 1, &t, &r->derr)) {
      device_error(r, "device error during a timed call");
      return 1;
    }
    ev->calls[ev->n_calls++] = t;
  }
  return 0;
}

/* How many timed samples the next chunk queues before the host waits once for all of them:
 * up to min_samples (all of them counted), past it a few at a time (the stop rule looks at each;
 * the ones queued past a stop are run but not counted), never past the next fresh sample when
 * one is due (host work between samples; one that becomes due while a chunk runs is taken after
 * it), max_samples or the timer pool (`room` samples); 1 when the request asks for a wait per
 * sample (sample_chunk 1) or after the L2 reset found persistence set. */
static int chunk_size(const struct evaluation *ev, int room) {
  const struct kb__eval_spec *e = ev->r.e;
  const struct fresh *fr = &ev->fr;
  int n = ev->n;
  int k = n < e->min_samples ? e->min_samples - n : CHUNK_PAST_MIN;
  /* one wait per sample unless the request asks for chunks: with chunks by default the host
   * catalogue's deferred_work (each call finishes the previous call's rows) came out ok where
   * one wait per sample rejects it; until that is understood, chunks are opt-in */
  int cap = e->sample_chunk > 0 ? e->sample_chunk : 1;
  k = k < cap ? k : cap;
  k = k < room ? k : room;
  k = k < e->max_samples - n ? k : e->max_samples - n;
  if (ev->r.d->l2_persist_seen)
    k = 1;
  /* stop after the sample a fresh one will follow (phase_samples' rule, judged now): sample
   * n + j is the (n + j + 1)-th */
  int fresh_due = fr->n < fr->min || fr->t < fr->share * (kb_now_mono() - ev->r.start);
  for (int j = 0; j < k && fresh_due; j++)
    if ((n + j + 1) % fr->gap == fr->offset % fr->gap)
      return j + 1;
  return k < 1 ? 1 : k;
}

/* 1 with the verdict set when the same-run baseline's code or function table is no longer what
 * was loaded, else 0. It runs in the candidate's process, between the candidate's samples:
 * tests/runner/candidates/slows_baseline.c put a jump to a slow function of its own at the start
 * of the baseline's kb_forward (the page made writable and protected again) and was ok at the
 * full tier, its same-run speedup 4.03 for the 1.00 of the same code without the jump, before
 * 2026-12-07. Checked after every chunk of samples (its last call's state is what the baseline
 * ran with) and before the libraries are closed (their destructors run then). */
static int baseline_changed(struct evaluation *ev) {
  uint64_t now = 0;
  if (ev->bfn == NULL ||
      (kb__integrity_object_sum((const void *)ev->bfn, &now) == 0 && now == ev->bsum))
    return 0;
  struct kb__verdict *v = ev->r.v;
  v->status = KB_STATUS_REJECTED;
  say(v->reason, sizeof v->reason, "changed the same-run baseline's code (the library its "
      "speed is compared with, loaded in its process)");
  return 1;
}

/* Queues the `k` samples of one chunk (each followed by the baseline's when there is one) and
 * waits once. Returns 0, or 1 with the verdict set. */
static int chunk_queue(struct evaluation *ev, int k, int per, int *bnext, uint32_t *bmask) {
  struct run *r = &ev->r;
  struct kb__prepared *p = r->p;
  int stride = ev->bfn != NULL ? 2 * per : per;
  for (int i = 0; i < k; i++) {
    if (sample_queue(r, ev->fn, ev->batch, ev->flushed, i * stride, i == 0, &ev->next,
                     p->tim_off, &ev->timed_mask, ""))
      return 1;
    if (ev->bfn != NULL && sample_queue(r, ev->bfn, ev->batch, ev->flushed, i * stride + per, 0,
                                        bnext, p->chk_off, bmask, "the baseline's "))
      return 1;
  }
  if (r->d->sync(r->d, &r->derr)) {
    device_error(r, "device error during a timed call");
    return 1;
  }
  return 0;
}

/* The timed samples (under the trace when one was asked), each followed by the baseline's when
 * there is one, queued in chunks with one wait each (chunk_size), with the fresh samples spread
 * among them, until min_samples are in and the noise target, the timed-time cap or the budget
 * is reached, or max_samples; then the fresh samples still missing. Returns 0, or 1 with the
 * verdict set. */
static int phase_samples(struct evaluation *ev) {
  struct run *r = &ev->r;
  const struct kb__eval_spec *e = r->e;
  struct fresh *fr = &ev->fr;
  double t0 = kb_now_mono();
  trace_begin(ev);
  int bnext = 0, per = ev->flushed ? ev->batch : 1, stride = ev->bfn != NULL ? 2 * per : per;
  int room = KB__TIMER_POOL / stride;
  uint32_t bmask = 0;
  double timed = 0, sum = 0, sumsq = 0;
  int stop = 0;
  while (ev->n < e->max_samples && !stop) {
    int k = chunk_size(ev, room);
    if (chunk_queue(ev, k, per, &bnext, &bmask) || baseline_changed(ev))
      return 1;
    r->v->chunks++;
    /* every sample of the chunk read first (a fresh sample below reuses the timer slots) into
     * its place in the arrays, counted below up to a stop */
    for (int i = 0; i < k; i++) {
      double *bus = ev->bsamples ? &ev->bsamples[ev->n + i] : NULL;
      if (sample_read(r, ev->batch, ev->flushed, i * stride, &ev->samples[ev->n + i]) ||
          (bus != NULL && sample_read(r, ev->batch, ev->flushed, i * stride + per, bus)) ||
          (ev->csamples != NULL &&
           busy_read(r, ev->batch, ev->flushed, i * stride, &ev->csamples[ev->n + i])) ||
          (e->dump_samples && keep_calls(ev, i * stride, ev->samples[ev->n + i])))
        return 1;
    }
    for (int i = 0; i < k && !stop; i++) {
      double us = ev->samples[ev->n];
      int n = ++ev->n;
      timed += us * ev->batch * 1e-6;
      sum += us;
      sumsq += us * us;
      /* past the first fr->min, fresh samples keep their place while they take under
       * fr->share of the time spent (chunk_size ends a chunk there) */
      if (n % fr->gap == fr->offset % fr->gap &&
          (fr->n < fr->min || fr->t < fr->share * (kb_now_mono() - r->start)) &&
          fresh_take(r, ev->fn, fr, &ev->next, &ev->timed_mask))
        return 1;
      if (n < e->min_samples)
        continue;
      if (timed >= e->max_seconds || kb_now_mono() - r->start >= e->budget_s) {
        stop = 1;
        break;
      }
      double mean = sum / n;
      double var = n > 1 ? (sumsq - sum * mean) / (n - 1) : 0;
      if (n > 1 && mean > 0 && sqrt(var > 0 ? var : 0) / mean < e->noise)
        stop = 1;
    }
  }
  /* a short ladder (max_samples under the spacing) or the budget ended sampling early */
  while (fr->n < fr->min)
    if (fresh_take(r, ev->fn, fr, &ev->next, &ev->timed_mask))
      return 1;
  r->v->t_samples = kb_now_mono() - t0 - fr->t;
  return 0;
}

/* The kernel trace's cross-check. Returns 0, or 1 with the verdict set. */
static int phase_trace(struct evaluation *ev) {
  double t0 = kb_now_mono();
#ifdef KB_HAVE_CUPTI_TRACE
  if (ev->tracing) {
    ev->r.d->end_marker = 0;
    ev->tracing = 0;
    if (cross_check(&ev->r, ev->r.windows, ev->bfn != NULL ? 1 : 0))
      return 1;
  }
#endif
  ev->r.v->t_trace = kb_now_mono() - t0;
  return 0;
}

/* Fresh against repeated samples; over the bound, FRESH_MIN more pairs (2 x FRESH_MIN in all at
 * least), and all pairs together must still be over. Returns 0, or 1 with the verdict set. */
static int phase_fresh(struct evaluation *ev) {
  struct run *r = &ev->r;
  struct fresh *fr = &ev->fr;
  double t0 = kb_now_mono();
  double fm = 0, cm = 0, ratio = 0, bound = 0;
  /* against the controls made the same way (tight), and against the plain samples (loose:
   * the procedure between fresh calls may cost an honest kernel a little; a candidate that
   * computes only after a pause or a synchronisation and answers back-to-back calls from a
   * cache is caught here) */
  double pf = fr->cap_slack * FRESH_PLAIN_X;
  for (int round = 0; round < 2; round++) {
    int over = fresh_over(fr, fr->c, fr->floor, fr->cap_slack, 0, &fm, &cm, &ratio, &bound) ||
               fresh_over(fr, fr->pl, pf, pf, 0, &fm, &cm, &ratio, &bound);
    if (!over)
      break;
    if (round == 1) {
      r->v->status = KB_STATUS_REJECTED;
      say(r->v->reason, sizeof r->v->reason,
          "times on unseen inputs (median %.4g us%s over %d samples) are %.3gx those on "
          "repeated inputs (%.4g us over %d samples): results kept between calls (honest noise "
          "allows %.3gx)",
          fm, fr->cpu == fr->n ? " of CPU time" : fr->cpu > 0 ? " (CPU time where long)" : "",
          fr->n, ratio, cm, fr->n, bound);
      return 1;
    }
    /* FRESH_MIN more, and 2 x FRESH_MIN in all at least: the verdict rests on as many pairs
     * whatever fresh_min was (one pair over the bound from a noise spike is not a verdict) */
    int more = 2 * FRESH_MIN - fr->n > FRESH_MIN ? 2 * FRESH_MIN - fr->n : FRESH_MIN;
    for (int k = 0; k < more; k++)
      if (fresh_take(r, ev->fn, fr, &ev->next, &ev->timed_mask))
        return 1;
  }
  r->v->t_fresh = fr->t + (kb_now_mono() - t0);
  return 0;
}

/* The integrity checks after timing and the re-check of the timed outputs. Returns 0, or 1
 * with the verdict set. */
static int phase_recheck(struct evaluation *ev) {
  struct run *r = &ev->r;
  double t0 = kb_now_mono();
  if (integrity(r, "after the timed calls", 0))
    return 1;
  if (r->e->recheck) {
    char msg[200];
    int pass = outputs_pass(r, r->p->tim_off, ev->timed_mask, msg, sizeof msg);
    if (pass < 0)
      return 1;
    if (!pass) {
      r->v->status = KB_STATUS_REJECTED;
      say(r->v->reason, sizeof r->v->reason,
          "outputs right on the first call but wrong after repeated calls: %s", msg);
      return 1;
    }
  }
  r->v->t_recheck = kb_now_mono() - t0;
  return 0;
}

/* The timing statistics, the speed-of-light bound and, when asked, the hardware metrics.
 * Returns 0, or 1 with the verdict set. */
static int phase_metrics(struct evaluation *ev) {
  struct run *r = &ev->r;
  struct kb__verdict *v = r->v;
  double t0 = kb_now_mono();
  kb__timing_stats(ev->samples, ev->n, ev->warm, &v->timing);
  if (ev->csamples != NULL && ev->n > 0) {
    struct kb_timing cpu;
    kb__timing_stats(ev->csamples, ev->n, ev->warm, &cpu);
    v->cpu_median_us = cpu.median_us;
  }
  if (ev->bsamples != NULL)
    kb__timing_stats(ev->bsamples, ev->n, ev->warm, &v->baseline);
  if (speed_of_light(r, ev->batch, ev->flushed))
    return 1;
  /* a candidate slower than the task's best so far is not profiled (docs/search.md) */
  int want = r->e->metrics && (!(r->e->metrics_below_us > 0) ||
                               (v->status == KB_STATUS_OK && v->timing.samples > 0 &&
                                v->timing.median_us < r->e->metrics_below_us));
  if (want && !r->d->gpu)
    say(v->metrics_note, sizeof v->metrics_note, "no hardware metrics on the %s device",
        r->d->backend);
#ifdef KB_HAVE_CUPTI_TRACE
  else if (want)
    read_metrics(r, ev->fn);
#else
  else if (want)
    say(v->metrics_note, sizeof v->metrics_note, "no hardware metrics: this kb-sandbox was built "
        "without CUPTI");
#endif
  v->t_metrics = kb_now_mono() - t0;
  return 0;
}

/* A verdict made after timing keeps no timing: a rejected candidate's numbers are not reported. */
static void clear_timing(struct evaluation *ev) {
  memset(&ev->r.v->timing, 0, sizeof ev->r.v->timing);
  ev->r.v->cpu_median_us = NAN;
  memset(&ev->r.v->baseline, 0, sizeof ev->r.v->baseline);
}

/* What every evaluation ends with, however far it got: a trace still running is ended (its
 * records dropped), the inputs put back, the arrays freed, the libraries closed (unless the
 * process is not to be trusted any more). */
static void evaluation_end(struct evaluation *ev) {
  struct run *r = &ev->r;
#ifdef KB_HAVE_CUPTI_TRACE
  if (ev->tracing) {
    r->d->end_marker = 0;
    struct kb_cupti_kernel *recs = NULL;
    size_t nrec = 0;
    struct kb_error te = {0};
    r->d->sync(r->d, NULL);
    kb__cupti_trace_stop(&recs, &nrec, NULL, &te);
    kb_free(recs);
  }
#endif
  if (r->v->t_fresh == 0 && ev->fr.t > 0)
    r->v->t_fresh = ev->fr.t;
  r->v->fresh_samples = ev->fr.n;
  if (!r->v->fatal && rotate_inputs(r, 0) != 0)
    r->p->damaged = 1; /* cannot put the inputs back: make the task again next time */
  if (r->e->dump_samples && ev->samples != NULL) {
    r->v->samples = ev->samples; /* the caller's now */
    r->v->n_samples = ev->n;
    ev->samples = NULL;
    r->v->calls = ev->calls;
    r->v->n_calls = ev->n_calls;
    ev->calls = NULL;
  }
  kb_free(ev->calls);
  kb_free(ev->samples);
  kb_free(ev->bsamples);
  kb_free(ev->csamples);
  kb_free(ev->fr.f);
  kb_free(ev->fr.c);
  kb_free(ev->fr.pl);
  if (r->v->status == KB_STATUS_OK && baseline_changed(ev))
    clear_timing(ev);
  if (ev->lib != NULL && !r->v->fatal)
    dlclose(ev->lib);
  if (ev->blib != NULL && !r->v->fatal)
    dlclose(ev->blib);
  kb__fpenv_restore(); /* their destructors ran */
  /* after the candidate's destructors too: a rewritten oracle would make the fresh references
   * of the candidates after it (serve.c checks every prepared task's after each evaluation) */
  if (kb__prepared_oracle_changed(r->p) && r->v->status == KB_STATUS_OK) {
    r->v->status = KB_STATUS_REJECTED;
    say(r->v->reason, sizeof r->v->reason, "changed the oracle's code (the library the "
        "references of unseen inputs come from) during its evaluation");
    clear_timing(ev);
  }
}

int kb__evaluate(struct kb__dev *d, struct kb__prepared *p, const struct kb__eval_spec *e,
                 struct kb__verdict *v) {
  memset(v, 0, sizeof *v);
  v->status = KB_STATUS_OK;
  v->cpu_median_us = NAN;
  v->max_abs_err = NAN;
  v->max_rel_err = NAN;
  v->batch = 1;
  struct evaluation ev;
  memset(&ev, 0, sizeof ev);
  ev.r = (struct run){.d = d, .p = p, .e = e, .v = v, .start = kb_now_mono()};
  ev.r.n_check = e->sets <= 0 || e->sets > p->n_sets ? p->n_sets : e->sets;
  ev.rc = KB_OK;
  trace_unavailable(&ev.r);
  /* each phase returns 1 once the verdict is final */
  if (phase_load(&ev) == 0 && phase_check(&ev) == 0 && e->max_samples > 0 &&
      phase_warmup(&ev) == 0 && phase_plan(&ev) == 0 && phase_samples(&ev) == 0 &&
      phase_trace(&ev) == 0 && phase_fresh(&ev) == 0 && phase_recheck(&ev) == 0)
    phase_metrics(&ev);
  evaluation_end(&ev);
  return ev.rc;
}
