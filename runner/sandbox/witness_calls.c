/* The witness's calls in kb-sandbox (see witness_calls.h). */
#include "witness_calls.h"
#include "integrity.h"
#include "reflect.h"

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
#include "kb/task.h"
#include "verify.h"

/* The witness's buffers, kept between its requests (kb__witness_bufs_free): each call's inputs
 * and outputs on the device, every call's kept outputs on the host. Kept, a round after the
 * first writes to pages it already touched in both processes, whose first touch would
 * otherwise land, unevenly, in every round's time. */
struct kb__witness_bufs {
  const struct kb__witness_spec *w; /* the request's (borrowed, set for each) */
  const struct kb__prep_spec *t;
  int n_in, n_out;          /* the shapes the buffers were made for */
  int *in_dtype, *out_dtype;
  void **in, **out;         /* per input and per output (owned); on the host an input's buffer
                               holds its draw twice over, and each call's input is a window
                               into it at an offset drawn from the seed */
  void **cur;               /* each input of the call under way (borrowed, in `in`) */
  int64_t *in_n, *out_n;    /* elements */
  size_t *keep;             /* bytes kept of each output per call (whole, or its blocks) */
  size_t *slot;             /* the same rounded up to 8 bytes: each output's room per call */
  int64_t *starts;          /* per output, KB__WITNESS_BLOCKS block starts of the call under
                               way (drawn after it returned); starts[0] -1: kept whole */
  kb_tensor *in_desc, *out_desc;
  size_t per_call;          /* bytes kept per call (the slots) */
  unsigned char *host;      /* host_bytes of room for calls * per_call (owned) */
  size_t host_bytes;
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

void kb__witness_bufs_free(struct kb__dev *d, struct kb__witness_bufs *c) {
  if (c == NULL)
    return;
  for (int i = 0; c->in != NULL && i < c->n_in; i++)
    d->free(d, c->in[i]);
  for (int o = 0; c->out != NULL && o < c->n_out; o++)
    d->free(d, c->out[o]);
  kb_free(c->in_dtype);
  kb_free(c->out_dtype);
  kb_free(c->in);
  kb_free(c->out);
  kb_free(c->cur);
  kb_free(c->in_n);
  kb_free(c->out_n);
  kb_free(c->keep);
  kb_free(c->slot);
  kb_free(c->starts);
  kb_free(c->in_desc);
  kb_free(c->out_desc);
  kb_free(c->host);
  kb_free(c);
}

/* What is kept of each output: all of it while one call's outputs take at most a third of
 * KB__WITNESS_OUT_BYTES, else KB__WITNESS_BLOCKS blocks at starts drawn after each call
 * (call_starts; an output smaller than the blocks is kept whole). */
static void plan_keep(struct kb__witness_bufs *c, int *sampled) {
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
      st[0] = 0; /* sampled: its starts are drawn after each call */
      c->keep[o] = (size_t)KB__WITNESS_BLOCKS * KB__WITNESS_BLOCK * size;
      (*sampled)++;
    }
    c->slot[o] = (c->keep[o] + 7) / 8 * 8;
    c->per_call += c->slot[o];
  }
}

/* 1 when `c` was made for the tensors of `t`. */
static int bufs_fit(const struct kb__witness_bufs *c, const struct kb__prep_spec *t) {
  if (c->n_in != t->n_in || c->n_out != t->n_out)
    return 0;
  for (int i = 0; i < t->n_in; i++)
    if (c->in_n[i] != kb_tensor_spec_numel(&t->inputs[i]) ||
        c->in_dtype[i] != t->inputs[i].dtype)
      return 0;
  for (int o = 0; o < t->n_out; o++)
    if (c->out_n[o] != kb_tensor_spec_numel(&t->outputs[o]) ||
        c->out_dtype[o] != t->outputs[o].dtype)
      return 0;
  return 1;
}

/* New buffers for the tensors of `t` into *out; KB_ENOMEM (`err` says which) when there is no
 * room. On the host each input gets room for its draw twice (the calls' windows). */
static int bufs_new(struct kb__dev *d, const struct kb__prep_spec *t,
                    struct kb__witness_bufs **out, struct kb_error *err) {
  struct kb__witness_bufs *c = kb_calloc(1, sizeof *c);
  *out = NULL;
  if (c == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of host memory");
  c->n_in = t->n_in;
  c->n_out = t->n_out;
  c->in_dtype = kb_calloc((size_t)t->n_in, sizeof *c->in_dtype);
  c->out_dtype = kb_calloc((size_t)t->n_out, sizeof *c->out_dtype);
  c->in = kb_calloc((size_t)t->n_in, sizeof *c->in);
  c->cur = kb_calloc((size_t)t->n_in, sizeof *c->cur);
  c->out = kb_calloc((size_t)t->n_out, sizeof *c->out);
  c->in_n = kb_calloc((size_t)t->n_in, sizeof *c->in_n);
  c->out_n = kb_calloc((size_t)t->n_out, sizeof *c->out_n);
  c->keep = kb_calloc((size_t)t->n_out, sizeof *c->keep);
  c->slot = kb_calloc((size_t)t->n_out, sizeof *c->slot);
  c->starts = kb_calloc((size_t)t->n_out * KB__WITNESS_BLOCKS, sizeof *c->starts);
  c->in_desc = kb_calloc((size_t)t->n_in, sizeof *c->in_desc);
  c->out_desc = kb_calloc((size_t)t->n_out, sizeof *c->out_desc);
  if (!c->in_dtype || !c->out_dtype || !c->in || !c->cur || !c->out || !c->in_n || !c->out_n ||
      !c->keep || !c->slot || !c->starts || !c->in_desc || !c->out_desc) {
    kb__witness_bufs_free(d, c);
    return kb_error_set(err, KB_ENOMEM, "out of host memory");
  }
  int rc = KB_OK;
  for (int i = 0; rc == KB_OK && i < t->n_in; i++) {
    c->in_n[i] = kb_tensor_spec_numel(&t->inputs[i]);
    c->in_dtype[i] = t->inputs[i].dtype;
    size_t bytes = (size_t)c->in_n[i] * (size_t)kb_dtype_size(t->inputs[i].dtype);
    rc = d->alloc(d, d->gpu ? bytes : 2 * bytes, &c->in[i], err);
  }
  for (int o = 0; rc == KB_OK && o < t->n_out; o++) {
    c->out_n[o] = kb_tensor_spec_numel(&t->outputs[o]);
    c->out_dtype[o] = t->outputs[o].dtype;
    rc = d->alloc(d, (size_t)c->out_n[o] * (size_t)kb_dtype_size(t->outputs[o].dtype),
                  &c->out[o], err);
  }
  if (rc) {
    kb__witness_bufs_free(d, c);
    return rc;
  }
  *out = c;
  return KB_OK;
}

/* The buffers for `w` into *kept: the ones there when they fit its task, else new ones (the
 * old freed); the number of calls into r->calls. Returns KB_OK, or KB_ENOMEM with r saying
 * infra_error. */
static int bufs_get(struct kb__dev *d, struct kb__witness_bufs **kept,
                    const struct kb__witness_spec *w, struct kb__witness_reply *r) {
  const struct kb__prep_spec *t = w->task;
  struct kb_error err = {0};
  if (*kept != NULL && !bufs_fit(*kept, t)) {
    kb__witness_bufs_free(d, *kept);
    *kept = NULL;
  }
  if (*kept == NULL) {
    int rc = bufs_new(d, t, kept, &err);
    if (rc) {
      say(r, KB_STATUS_INFRA_ERROR, "the witness calls' buffers: %s", err.msg);
      return rc == KB_ENOMEM ? KB_ENOMEM : KB_OK;
    }
  }
  struct kb__witness_bufs *c = *kept;
  c->w = w;
  c->t = t;
  int sampled = 0;
  plan_keep(c, &sampled);
  r->sampled = sampled;
  size_t fit = c->per_call > 0 ? KB__WITNESS_OUT_BYTES / c->per_call : (size_t)w->calls;
  r->calls = fit < (size_t)w->calls ? (int)fit : w->calls;
  if (r->calls < 1)
    r->calls = 1;
  size_t need = (size_t)r->calls * c->per_call;
  if (need > c->host_bytes) {
    kb_free(c->host);
    c->host_bytes = 0;
    c->host = kb_malloc(need ? need : 1);
    if (c->host == NULL) {
      say(r, KB_STATUS_INFRA_ERROR, "the witness calls: out of host memory");
      return KB_ENOMEM;
    }
    c->host_bytes = need;
  }
  r->bytes = (int64_t)need;
  return KB_OK;
}

/* The input set of a request's calls on the host: one, picked by the seed (a draw takes some
 * 7 ns an element there, so each set drawn would add its inputs' draw to every round). */
static int host_set(const struct kb__witness_bufs *c) {
  return (int)(c->w->seed % (uint64_t)c->t->n_sets);
}

/* The draw of call `i` on a GPU (input set i's distribution, cycling), or of the request's
 * inputs on the host, under a seed made of the runner's. */
static struct kb_input_set call_set(const struct kb__dev *d, const struct kb__witness_bufs *c,
                                    int i) {
  int s = d->gpu ? i % c->t->n_sets : host_set(c);
  struct kb_input_set set = c->t->sets[s];
  set.seed = kb__mask_word(c->w->seed, (uint64_t)(d->gpu ? i : s));
  return set;
}

/* Elements of an input's window step (64 bytes: the ABI's 16-byte alignment kept). */
static int64_t window_step(int dtype) {
  int64_t size = kb_dtype_size(dtype);
  return size < 64 ? 64 / size : 1;
}

/* On the host, each input drawn once for the request and copied after itself: each call's
 * input is then a window of it at an offset drawn from the seed, so that every element moves
 * from one call to the next without a copy per call (a copy would cost more than many a call,
 * and its noise would be the rounds' noise). No-op on a GPU, where each call's inputs are
 * drawn whole. */
static int draw_request(struct kb__dev *d, struct kb__witness_bufs *c, struct kb_error *err) {
  struct kb_input_set set = call_set(d, c, 0);
  int e = KB_OK;
  for (int k = 0; !d->gpu && e == KB_OK && k < c->t->n_in; k++) {
    size_t bytes = (size_t)c->in_n[k] * (size_t)kb_dtype_size(c->t->inputs[k].dtype);
    e = d->fill(d, c->in[k], c->t->inputs[k].dtype, c->in_n[k], &set, k, err);
    if (e == KB_OK)
      e = d->copy(d, (unsigned char *)c->in[k] + bytes, c->in[k], bytes, err);
  }
  return e;
}

/* Input `k` of call `i` into c->cur[k]: drawn (GPU; on the host an input shorter than two
 * window steps), or a window of the request's draw at an offset drawn from the seed (host). */
static int call_input(struct kb__dev *d, struct kb__witness_bufs *c, int i, int k,
                      struct kb_error *err) {
  const struct kb_tensor_spec *spec = &c->t->inputs[k];
  int64_t n = c->in_n[k];
  int64_t step = window_step(spec->dtype);
  c->cur[k] = c->in[k];
  if (d->gpu || n / step < 2) {
    struct kb_input_set set = call_set(d, c, i);
    if (!d->gpu) /* each call its own draw */
      set.seed = kb__mask_word(set.seed, (uint64_t)i + 1);
    return d->fill(d, c->in[k], spec->dtype, n, &set, k, err);
  }
  uint64_t x = kb__mask_word(c->w->seed ^ UINT64_C(0x5bd1e9955bd1e995),
                             (uint64_t)i * KB_MAX_TENSORS + (uint64_t)k);
  int64_t off = step * (1 + (int64_t)(x % (uint64_t)(n / step - 1)));
  c->cur[k] = (unsigned char *)c->in[k] + (size_t)off * (size_t)kb_dtype_size(spec->dtype);
  /* the windows share one draw: work done once on it (prefix sums of the doubled buffer)
   * answered every call at a few microseconds (tests/catalogue/host/memo_witness_windows.c),
   * so each window's elements are reflected about the distribution's centre by bits of the
   * call's own: no element's value is known to code that has not read it in this call */
  struct kb_input_set set = call_set(d, c, i);
  uint64_t key = kb__mask_word(c->w->seed ^ UINT64_C(0xc2b2ae3d27d4eb4f),
                               (uint64_t)i * KB_MAX_TENSORS + (uint64_t)k);
  return kb__inputs_reflect(&set, key, spec->dtype, c->cur[k], n, err);
}

/* The block starts of call `i`'s sampled outputs, from a seed the candidate's process does not
 * hold before that call has returned: asked of the runner then (w->positions; its answer comes
 * once the call is over and the device idle, and no candidate code runs in between: a confined
 * kb-sandbox runs no thread, and the call has returned), else drawn from the request's seed.
 * Returns 0, or -1 with `r` saying why. */
static int call_starts(struct kb__witness_bufs *c, int i, struct kb__witness_reply *r) {
  const struct kb__witness_spec *w = c->w;
  uint64_t seed = kb__mask_word(w->seed ^ UINT64_C(0x9e3779b97f4a7c15), (uint64_t)i);
  char why[160] = "";
  if (w->positions != NULL && w->positions(w->positions_ctx, i, &seed, why, sizeof why) != 0) {
    say(r, KB_STATUS_INFRA_ERROR, "the positions of witness call %d: %s", i + 1, why);
    return -1;
  }
  for (int o = 0; o < c->t->n_out; o++) {
    int64_t *st = c->starts + (size_t)o * KB__WITNESS_BLOCKS;
    if (st[0] < 0)
      continue;
    int64_t n = c->out_n[o];
    for (int j = 0; j < KB__WITNESS_BLOCKS; j++)
      st[j] = (int64_t)(kb__mask_word(seed + 31u * (uint64_t)(o + 1), (uint64_t)j) %
                        (uint64_t)(n - KB__WITNESS_BLOCK + 1));
  }
  return 0;
}

/* Call `i` of `fn` (the candidate's, or the oracle's when `oracle`): draws, poison, flush,
 * wait, the call and a wait (timed into *module_s), the kept outputs into the host buffer. */
static void one_call(struct kb__dev *d, struct kb__witness_bufs *c, kb__forward_fn fn,
                     int oracle, int i, double *module_s, struct kb__witness_reply *r) {
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
    kb__tensor_describe(&c->in_desc[k], &t->inputs[k], c->cur[k]);
  for (int o = 0; o < t->n_out; o++)
    kb__tensor_describe(&c->out_desc[o], &t->outputs[o], c->out[o]);
  double a = now_s(d);
  int ret = fn(c->in_desc, t->n_in, c->out_desc, t->n_out, d->stream);
  kb__fpenv_restore(); /* integrity.h */
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
  if (r->sampled > 0 && call_starts(c, i, r) != 0)
    return;
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
static void compare_file(const struct kb__witness_bufs *c, const char *path,
                         struct kb__witness_reply *r) {
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
            "\"%s\" of witness call %d of %d: %s",
            t->outputs[o].name, i + 1, r->calls, what); /* what: "(B of N bad)" too */
        break;
      }
      at += c->slot[o];
    }
  }
  kb_free(got);
}

int kb__witness_calls(struct kb__dev *d, struct kb__witness_bufs **kept,
                      const struct kb__witness_spec *w, struct kb__witness_reply *r) {
  memset(r, 0, sizeof *r);
  r->status = KB_STATUS_OK;
  int oracle = w->oracle;
  kb__forward_fn fn = w->fn;
  struct kb_error err = {0};
  int rc = bufs_get(d, kept, w, r);
  struct kb__witness_bufs *c = *kept;
  double module_s = 0;
  if (rc == KB_OK && r->status == KB_STATUS_OK && draw_request(d, c, &err) != KB_OK)
    say(r, oracle ? KB_STATUS_INFRA_ERROR : KB_STATUS_CRASH, "the witness's draw: %s", err.msg);
  for (int i = 0; rc == KB_OK && r->status == KB_STATUS_OK && i < r->calls; i++)
    one_call(d, c, fn, oracle, i, &module_s, r);
  r->fatal = d->broken;
  if (rc == KB_OK && r->status == KB_STATUS_OK) {
    r->module_us = module_s * 1e6 / r->calls;
    int e = w->out_fd >= 0 ? write_all(w->out_fd, c->host, (size_t)r->bytes) : 0;
    if (e) {
      say(r, KB_STATUS_INFRA_ERROR, "the witness file cannot be written: %s", strerror(e));
      r->write_errno = e;
    }
  }
  if (rc == KB_OK && r->status == KB_STATUS_OK && w->check_path != NULL) {
    double v0 = now_s(d);
    compare_file(c, w->check_path, r);
    r->verify_s = now_s(d) - v0;
  }
  return rc;
}
