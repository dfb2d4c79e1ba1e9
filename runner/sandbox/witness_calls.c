/* The witness's calls in kb-sandbox (see witness_calls.h). */
#include "witness_calls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/result.h"
#include "verify.h"

/* The request's buffers: one call's inputs and outputs on the device, every call's kept
 * outputs on the host. */
struct calls {
  const struct kb__witness_spec *w;
  const struct kb__prep_spec *t;
  void **in, **out;         /* device buffers, per input and per output (owned) */
  void **base;              /* on the host: per input, the draw its calls' inputs are rotations
                               of (owned); NULL on a GPU */
  int64_t *in_n, *out_n;    /* elements */
  size_t *keep;             /* bytes kept of each output per call (whole, or its blocks) */
  size_t *slot;             /* the same rounded up to 8 bytes: each output's room per call */
  int64_t *starts;          /* per output, KB__WITNESS_BLOCKS block starts; -1: kept whole */
  kb_tensor *in_desc, *out_desc;
  size_t per_call;          /* bytes kept per call (the slots) */
  unsigned char *host;      /* calls * per_call (owned) */
};

static void say(struct kb__witness_reply *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(struct kb__witness_reply *r, int status, const char *fmt, ...) {
  r->status = status;
  va_list ap;
  va_start(ap, fmt);
  if (vsnprintf(r->reason, sizeof r->reason, fmt, ap) < 0)
    r->reason[0] = '\0';
  va_end(ap);
}

/* Seconds on the reply's clock (witness_calls.h): a thread's CPU time on the host, the
 * monotonic clock on a GPU. */
static double now_s(const struct kb__dev *d) {
  struct timespec ts;
  clock_gettime(d->gpu ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t numel(const struct kb_tensor_spec *s) {
  int64_t n = 1;
  for (int i = 0; i < s->ndim; i++)
    n *= s->shape[i];
  return n;
}

static void calls_free(struct kb__dev *d, struct calls *c) {
  for (int i = 0; c->in != NULL && i < c->t->n_in; i++)
    d->free(d, c->in[i]);
  for (int o = 0; c->out != NULL && o < c->t->n_out; o++)
    d->free(d, c->out[o]);
  for (int i = 0; c->base != NULL && i < c->t->n_in; i++)
    d->free(d, c->base[i]);
  kb_free(c->base);
  kb_free(c->in);
  kb_free(c->out);
  kb_free(c->in_n);
  kb_free(c->out_n);
  kb_free(c->keep);
  kb_free(c->slot);
  kb_free(c->starts);
  kb_free(c->in_desc);
  kb_free(c->out_desc);
  kb_free(c->host);
}

/* What is kept of each output: all of it while one call's outputs take at most a third of
 * KB__WITNESS_OUT_BYTES, else KB__WITNESS_BLOCKS blocks at starts drawn from the seed (an
 * output smaller than the blocks is kept whole). */
static void plan_keep(struct calls *c, int *sampled) {
  const struct kb__prep_spec *t = c->t;
  size_t whole = 0;
  for (int o = 0; o < t->n_out; o++)
    whole += (size_t)c->out_n[o] * (size_t)kb_dtype_size(t->outputs[o].dtype);
  *sampled = 0;
  c->per_call = 0;
  for (int o = 0; o < t->n_out; o++) {
    int64_t n = c->out_n[o];
    size_t size = (size_t)kb_dtype_size(t->outputs[o].dtype);
    int64_t *st = c->starts + (size_t)o * KB__WITNESS_BLOCKS;
    st[0] = -1;
    c->keep[o] = (size_t)n * size;
    if (whole * 3 > KB__WITNESS_OUT_BYTES && n > (int64_t)KB__WITNESS_BLOCKS * KB__WITNESS_BLOCK) {
      for (int j = 0; j < KB__WITNESS_BLOCKS; j++)
        st[j] = (int64_t)(kb__mask_word(c->w->seed + 31u * (uint64_t)(o + 1), (uint64_t)j) %
                          (uint64_t)(n - KB__WITNESS_BLOCK + 1));
      c->keep[o] = (size_t)KB__WITNESS_BLOCKS * KB__WITNESS_BLOCK * size;
      (*sampled)++;
    }
    c->slot[o] = (c->keep[o] + 7) / 8 * 8;
    c->per_call += c->slot[o];
  }
}

/* The buffers of `c` for `w`; the number of calls into r->calls. */
static int calls_new(struct kb__dev *d, const struct kb__witness_spec *w, struct calls *c,
                     struct kb__witness_reply *r) {
  const struct kb__prep_spec *t = w->task;
  struct kb_error err = {0};
  memset(c, 0, sizeof *c);
  c->w = w;
  c->t = t;
  c->in = kb_calloc((size_t)t->n_in, sizeof *c->in);
  c->out = kb_calloc((size_t)t->n_out, sizeof *c->out);
  c->in_n = kb_calloc((size_t)t->n_in, sizeof *c->in_n);
  c->out_n = kb_calloc((size_t)t->n_out, sizeof *c->out_n);
  c->keep = kb_calloc((size_t)t->n_out, sizeof *c->keep);
  c->slot = kb_calloc((size_t)t->n_out, sizeof *c->slot);
  c->starts = kb_calloc((size_t)t->n_out * KB__WITNESS_BLOCKS, sizeof *c->starts);
  c->in_desc = kb_calloc((size_t)t->n_in, sizeof *c->in_desc);
  c->out_desc = kb_calloc((size_t)t->n_out, sizeof *c->out_desc);
  if (!c->in || !c->out || !c->in_n || !c->out_n || !c->keep || !c->slot || !c->starts ||
      !c->in_desc || !c->out_desc) {
    say(r, KB_STATUS_INFRA_ERROR, "the witness calls: out of host memory");
    return KB_ENOMEM;
  }
  int rc = KB_OK;
  c->base = d->gpu ? NULL : kb_calloc((size_t)t->n_in, sizeof *c->base);
  if (!d->gpu && c->base == NULL) {
    say(r, KB_STATUS_INFRA_ERROR, "the witness calls: out of host memory");
    return KB_ENOMEM;
  }
  for (int i = 0; rc == KB_OK && i < t->n_in; i++) {
    c->in_n[i] = numel(&t->inputs[i]);
    size_t bytes = (size_t)c->in_n[i] * (size_t)kb_dtype_size(t->inputs[i].dtype);
    rc = d->alloc(d, bytes, &c->in[i], &err);
    if (rc == KB_OK && c->base != NULL)
      rc = d->alloc(d, bytes, &c->base[i], &err);
  }
  for (int o = 0; rc == KB_OK && o < t->n_out; o++) {
    c->out_n[o] = numel(&t->outputs[o]);
    rc = d->alloc(d, (size_t)c->out_n[o] * (size_t)kb_dtype_size(t->outputs[o].dtype),
                  &c->out[o], &err);
  }
  if (rc) {
    say(r, KB_STATUS_INFRA_ERROR, "the witness calls' buffers: %s", err.msg);
    return rc == KB_ENOMEM ? KB_ENOMEM : KB_OK;
  }
  int sampled = 0;
  plan_keep(c, &sampled);
  r->sampled = sampled;
  size_t fit = c->per_call > 0 ? KB__WITNESS_OUT_BYTES / c->per_call : (size_t)w->calls;
  r->calls = fit < (size_t)w->calls ? (int)fit : w->calls;
  if (r->calls < 1)
    r->calls = 1;
  c->host = kb_malloc((size_t)r->calls * c->per_call);
  if (c->host == NULL) {
    say(r, KB_STATUS_INFRA_ERROR, "the witness calls: out of host memory");
    return KB_ENOMEM;
  }
  r->bytes = (int64_t)((size_t)r->calls * c->per_call);
  return KB_OK;
}

/* The draw of call `i` (or, on the host, of the base of its input set): input set i's
 * distribution, cycling, under a seed made of the runner's. */
static struct kb_input_set call_set(const struct calls *c, int i) {
  struct kb_input_set set = c->t->sets[i % c->t->n_sets];
  set.seed = kb__mask_word(c->w->seed, (uint64_t)(c->base != NULL ? i % c->t->n_sets : i));
  return set;
}

/* On the host, the bases of input set `s`'s calls drawn (each call's inputs are rotations of
 * them: the generator takes some 7 ns an element for a normal draw, which over a call's inputs
 * would make each witness call mostly a draw, and its noise the rounds' noise). No-op on a GPU,
 * where each call's inputs are drawn whole. */
static int draw_bases(struct kb__dev *d, struct calls *c, int s, struct kb_error *err) {
  struct kb_input_set set = call_set(c, s);
  int e = KB_OK;
  for (int k = 0; c->base != NULL && e == KB_OK && k < c->t->n_in; k++)
    e = d->fill(d, c->base[k], c->t->inputs[k].dtype, c->in_n[k], &set, k, err);
  return e;
}

/* Input `k` of call `i`: drawn (GPU), or its base rotated by an offset drawn from the seed, so
 * that every element moves (host). */
static int call_input(struct kb__dev *d, struct calls *c, int i, int k, struct kb_error *err) {
  const struct kb_tensor_spec *spec = &c->t->inputs[k];
  if (c->base == NULL) {
    struct kb_input_set set = call_set(c, i);
    return d->fill(d, c->in[k], spec->dtype, c->in_n[k], &set, k, err);
  }
  int64_t n = c->in_n[k];
  size_t size = (size_t)kb_dtype_size(spec->dtype);
  uint64_t x = kb__mask_word(c->w->seed ^ UINT64_C(0x5bd1e9955bd1e995),
                             (uint64_t)i * KB_MAX_TENSORS + (uint64_t)k);
  int64_t off = n > 1 ? 1 + (int64_t)(x % (uint64_t)(n - 1)) : 0;
  unsigned char *dst = c->in[k];
  const unsigned char *src = c->base[k];
  int e = d->copy(d, dst, src + (size_t)off * size, (size_t)(n - off) * size, err);
  if (e == KB_OK && off > 0)
    e = d->copy(d, dst + (size_t)(n - off) * size, src, (size_t)off * size, err);
  return e;
}

/* Call `i` of `fn` (the candidate's, or the oracle's when `oracle`): draws, poison, flush,
 * wait, the call and a wait (timed into *module_s), the kept outputs into the host buffer. */
static void one_call(struct kb__dev *d, struct calls *c, kb__forward_fn fn, int oracle, int i,
                     double *module_s, struct kb__witness_reply *r) {
  const struct kb__prep_spec *t = c->t;
  struct kb_error err = {0};
  int e = KB_OK;
  for (int k = 0; e == KB_OK && k < t->n_in; k++)
    e = call_input(d, c, i, k, &err);
  for (int o = 0; e == KB_OK && o < t->n_out; o++)
    e = d->poison(d, c->out[o], t->outputs[o].dtype, c->out_n[o], &err);
  if (e == KB_OK && c->w->flush_l2)
    e = d->flush_l2(d, &err);
  if (e == KB_OK)
    e = d->sync(d, &err);
  if (e) {
    say(r, oracle ? KB_STATUS_INFRA_ERROR : KB_STATUS_CRASH,
        "before witness call %d: %s", i + 1, err.msg);
    return;
  }
  for (int k = 0; k < t->n_in; k++)
    kb__tensor_describe(&c->in_desc[k], &t->inputs[k], c->in[k]);
  for (int o = 0; o < t->n_out; o++)
    kb__tensor_describe(&c->out_desc[o], &t->outputs[o], c->out[o]);
  double a = now_s(d);
  int ret = fn(c->in_desc, t->n_in, c->out_desc, t->n_out, d->stream);
  e = d->sync(d, &err);
  *module_s += now_s(d) - a;
  if (ret != 0 || e) {
    if (ret != 0)
      say(r, oracle ? KB_STATUS_INFRA_ERROR : KB_STATUS_CRASH,
          "%s returned %d on witness call %d", oracle ? "the oracle" : "kb_forward", ret, i + 1);
    else
      say(r, oracle ? KB_STATUS_INFRA_ERROR : KB_STATUS_CRASH, "witness call %d: %s", i + 1,
          err.msg);
    return;
  }
  unsigned char *at = c->host + (size_t)i * c->per_call;
  for (int o = 0; e == KB_OK && o < t->n_out; o++) {
    const int64_t *st = c->starts + (size_t)o * KB__WITNESS_BLOCKS;
    const unsigned char *src = c->out[o];
    size_t size = (size_t)kb_dtype_size(t->outputs[o].dtype);
    if (st[0] < 0) {
      e = d->read(d, at, src, c->keep[o], &err);
    } else {
      for (int j = 0; e == KB_OK && j < KB__WITNESS_BLOCKS; j++)
        e = d->read(d, at + (size_t)j * KB__WITNESS_BLOCK * size, src + (size_t)st[j] * size,
                    (size_t)KB__WITNESS_BLOCK * size, &err);
    }
    at += c->slot[o];
  }
  if (e)
    say(r, oracle ? KB_STATUS_INFRA_ERROR : KB_STATUS_CRASH,
        "copying the outputs of witness call %d: %s", i + 1, err.msg);
}

/* Writes `n` bytes at `p` to `fd` from offset 0. Returns 0 or an errno value. */
static int write_all(int fd, const unsigned char *p, size_t n) {
  off_t at = 0;
  while (n > 0) {
    ssize_t k = pwrite(fd, p, n, at);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return k < 0 ? errno : EIO;
    p += k;
    n -= (size_t)k;
    at += k;
  }
  return 0;
}

/* The first `want` bytes of the regular file at `path` into new *out (kb_free), read without
 * following a link or blocking on a FIFO: the folder is the candidate's process's. NULL with the
 * reason in `why` when they are not there. */
static unsigned char *read_file(const char *path, size_t want, char *why, size_t size) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    snprintf(why, size, "the witness calls' outputs cannot be read: %s", strerror(errno));
    return NULL;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, size, "the witness calls' outputs are not a regular file");
    close(fd);
    return NULL;
  }
  unsigned char *buf = kb_malloc(want ? want : 1);
  size_t got = 0;
  while (buf != NULL && got < want) {
    ssize_t k = pread(fd, buf + got, want - got, (off_t)got);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
    got += (size_t)k;
  }
  close(fd);
  if (buf == NULL) {
    snprintf(why, size, "the witness calls' outputs: out of host memory");
    return NULL;
  }
  if (got != want) {
    snprintf(why, size, "the witness calls' outputs are %zu bytes, %zu expected", got, want);
    kb_free(buf);
    return NULL;
  }
  return buf;
}

/* Compares the confined sandbox's file with the calls' outputs in `c` (r->calls of them). */
static void compare_file(const struct calls *c, const char *path, struct kb__witness_reply *r) {
  char why[256];
  size_t want = (size_t)r->calls * c->per_call;
  unsigned char *got = read_file(path, want, why, sizeof why);
  if (got == NULL) {
    say(r, KB_STATUS_REJECTED, "%s", why);
    return;
  }
  const struct kb__prep_spec *t = c->t;
  size_t at = 0;
  for (int i = 0; i < r->calls && r->status == KB_STATUS_OK; i++) {
    for (int o = 0; o < t->n_out; o++) {
      int dtype = t->outputs[o].dtype;
      int64_t n = (int64_t)(c->keep[o] / (size_t)kb_dtype_size(dtype));
      struct kb_verify_report rep;
      if (!kb__verify(dtype, got + at, c->host + at, n, t->atol, t->rtol, &rep)) {
        char what[160];
        kb__verify_describe(&rep, what, sizeof what);
        say(r, KB_STATUS_REJECTED,
            "wrong on inputs drawn after the runner asked, read outside its process: output "
            "\"%s\" of witness call %d of %d: %s (%lld of %lld bad)",
            t->outputs[o].name, i + 1, r->calls, what, (long long)rep.bad,
            (long long)rep.checked);
        break;
      }
      at += c->slot[o];
    }
  }
  kb_free(got);
}

int kb__witness_calls(struct kb__dev *d, const struct kb__witness_spec *w,
                      struct kb__witness_reply *r) {
  memset(r, 0, sizeof *r);
  r->status = KB_STATUS_OK;
  int oracle = w->oracle;
  kb__forward_fn fn = w->fn;
  struct kb_error err = {0};
  struct calls c;
  int rc = calls_new(d, w, &c, r);
  double module_s = 0;
  /* calls grouped by input set (s, s + sets, ...), each group after its set's bases */
  int sets = w->task->n_sets < r->calls ? w->task->n_sets : r->calls;
  for (int s = 0; rc == KB_OK && r->status == KB_STATUS_OK && s < sets; s++) {
    if (draw_bases(d, &c, s, &err) != KB_OK)
      say(r, oracle ? KB_STATUS_INFRA_ERROR : KB_STATUS_CRASH, "the witness's draw: %s",
          err.msg);
    for (int i = s; r->status == KB_STATUS_OK && i < r->calls; i += sets)
      one_call(d, &c, fn, oracle, i, &module_s, r);
  }
  r->fatal = d->broken;
  if (rc == KB_OK && r->status == KB_STATUS_OK) {
    r->module_us = module_s * 1e6 / r->calls;
    int e = w->out_fd >= 0 ? write_all(w->out_fd, c.host, (size_t)r->bytes) : 0;
    if (e)
      say(r, KB_STATUS_INFRA_ERROR, "the witness file cannot be written: %s", strerror(e));
  }
  if (rc == KB_OK && r->status == KB_STATUS_OK && w->check_path != NULL) {
    double v0 = now_s(d);
    compare_file(&c, w->check_path, r);
    r->verify_s = now_s(d) - v0;
  }
  calls_free(d, &c);
  return rc;
}
