/* The host backend (see host_backend.h).
 *
 * Per task, prepared once and kept (a few tasks at a time): the oracle's library, every input
 * set drawn with kb/inputs, and the oracle's outputs for each set, computed here in the trusted
 * parent. They live in the "image", private to the parent; the child works on a MAP_SHARED
 * anonymous mapping with the same layout: per set, the inputs, the "check" outputs (first call)
 * and the "time" outputs (timed calls). Before each evaluation the outputs are poisoned; after
 * it every input region is compared with the image (and restored if touched), the check
 * outputs are verified against the reference, and so are the time outputs of every set that was
 * timed: the re-check after timing runs at every timed tier, because the backend does not know
 * the ladder's length and the compare is cheap next to the timing.
 *
 * Verdicts: a library that does not export kb_forward, or that fails to load (an undefined
 * symbol), is `compile_error`: it is a build defect (a missing kb_forward is found by the ELF
 * check at tier 0, before any candidate code runs), deterministic, and what the generator
 * should be told to fix; `rejected` is kept for cheating. A
 * kb_forward that returns non-zero, a signal, or an exit before the child reports (exit(0)
 * inside kb_forward) is `crash`; a child past the tier's timeout is killed and `timeout`;
 * touched inputs, or outputs that were right on the first call and wrong after the timed
 * calls (state kept between calls), are `rejected`; wrong values are `wrong_output`.
 */
#include "host_backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "child.h"
#include "compile.h"
#include "elfsym.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "kb/hash.h"
#include "kb/inputs.h"
#include "kb/verify.h"
#include "proc.h"

#define MAX_PREPARED 4    /* tasks kept prepared at once */
#define REGION_ALIGN 64   /* bytes; every tensor starts on a cache line */
#define OUTPUT_KEEP 4096  /* bytes of the child's stdout/stderr kept */
#define BUDGET_SHARE 0.7  /* of the timeout, after which sampling stops once min_samples are in */

typedef int (*forward_fn)(const kb_tensor *in, int n_in, kb_tensor *out, int n_out,
                          void *stream);

struct prepared {
  char fingerprint[KB_CAND_ID_LEN + 1]; /* SHA-256 of what the data depends on */
  int n_sets;
  int n_in;
  int n_out;
  size_t size;           /* bytes of map and image */
  unsigned char *map;    /* MAP_SHARED anonymous: what the child reads and writes (owned) */
  unsigned char *image;  /* pristine inputs, and reference outputs at the check offsets (owned) */
  size_t *in_off;        /* n_sets * n_in offsets of inputs (owned) */
  size_t *chk_off;       /* n_sets * n_out offsets of the check outputs (owned) */
  size_t *tim_off;       /* n_sets * n_out offsets of the timed outputs (owned) */
  size_t *in_bytes;      /* n_in bytes per input (owned) */
  size_t *out_bytes;     /* n_out bytes per output (owned) */
  kb_tensor *in;         /* n_sets * n_in, into map (owned) */
  kb_tensor *out_check;  /* n_sets * n_out, into map (owned) */
  kb_tensor *out_time;   /* n_sets * n_out, into map (owned) */
  uint64_t last_used;    /* backend use counter, for eviction */
};

struct kb_host_backend {
  struct kb__compiler cc;
  char device[KB_ID_MAX];                /* CPU model name, or "cpu" */
  struct prepared *tasks[MAX_PREPARED];  /* owned; NULL slots free */
  uint64_t uses;                         /* counter behind prepared.last_used */
  volatile sig_atomic_t *stop;           /* set: the runner leaves, evaluations end (borrowed) */
};

/* ---- set-up --------------------------------------------------------------------------- */

/* The CPU's model name from /proc/cpuinfo into `out`, "cpu" when unknown. */
static void read_device(char *out, size_t size) {
  struct kb_buf info;
  kb_buf_init(&info);
  int n = snprintf(out, size, "cpu");
  if (n < 0 && size > 0)
    out[0] = '\0';
  if (kb_buf_read_file(&info, "/proc/cpuinfo", NULL) == KB_OK) {
    const char *line = strstr(info.data, "model name");
    const char *colon = line ? strchr(line, ':') : NULL;
    if (colon != NULL) {
      colon++;
      while (*colon == ' ' || *colon == '\t')
        colon++;
      size_t len = strcspn(colon, "\n");
      while (len > 0 && (colon[len - 1] == ' ' || colon[len - 1] == '\t'))
        len--;
      if (len > 0 && snprintf(out, size, "%.*s", (int)len, colon) < 0 && size > 0)
        out[0] = '\0';
    }
  }
  kb_buf_release(&info);
}

/* Folder of kb_kernel.h: $KB_INCLUDE_DIR, else the build's KB_ABI_INCLUDE_DIR (the source
 * tree's common/include, set by runner/CMakeLists.txt). */
static int include_dir(struct kb_buf *out) {
  const char *env = getenv("KB_INCLUDE_DIR");
  if (env != NULL && *env)
    return kb_buf_adds(out, env);
  return kb_buf_adds(out, KB_ABI_INCLUDE_DIR);
}

int kb_host_backend_new(const char *cache_dir, const char *cc, struct kb_host_backend **out,
                        struct kb_error *err) {
  struct kb_buf inc;
  kb_buf_init(&inc);
  *out = NULL;
  struct kb_host_backend *b = kb_calloc(1, sizeof *b);
  if (b == NULL || include_dir(&inc) != KB_OK) {
    kb_free(b);
    kb_buf_release(&inc);
    return kb_error_set(err, KB_ENOMEM, "cannot create the host backend: out of memory");
  }
  int rc = kb__compiler_init(&b->cc, cache_dir, cc, inc.data, err);
  kb_buf_release(&inc);
  if (rc) {
    kb_free(b);
    return rc;
  }
  read_device(b->device, sizeof b->device);
  *out = b;
  return KB_OK;
}

static void prepared_free(struct prepared *p) {
  if (p == NULL)
    return;
  if (p->map != NULL)
    munmap(p->map, p->size);
  kb_free(p->image);
  kb_free(p->in_off);
  kb_free(p->chk_off);
  kb_free(p->tim_off);
  kb_free(p->in_bytes);
  kb_free(p->out_bytes);
  kb_free(p->in);
  kb_free(p->out_check);
  kb_free(p->out_time);
  kb_free(p);
}

void kb_host_backend_set_stop(struct kb_host_backend *b, volatile sig_atomic_t *stop) {
  b->stop = stop;
}

void kb_host_backend_free(struct kb_host_backend *b) {
  if (b == NULL)
    return;
  for (int i = 0; i < MAX_PREPARED; i++)
    prepared_free(b->tasks[i]);
  kb__compiler_release(&b->cc);
  kb_free(b);
}

void kb_host_backend_set_compile_timeout(struct kb_host_backend *b, double seconds) {
  if (seconds > 0)
    b->cc.timeout_s = seconds;
}

const char *kb_host_backend_device(const struct kb_host_backend *b) { return b->device; }

/* ---- task preparation ----------------------------------------------------------------- */

/* Bytes of a tensor of `spec`, 0 when the dtype is unknown, a dimension is not positive, or the
 * size does not fit comfortably in memory. */
static size_t spec_bytes(const struct kb_tensor_spec *spec, int64_t *numel) {
  int size = kb_dtype_size(spec->dtype);
  if (size == 0 || spec->ndim < 0 || spec->ndim > KB_MAX_DIMS)
    return 0;
  int64_t n = 1;
  for (int d = 0; d < spec->ndim; d++) {
    if (spec->shape[d] <= 0 || spec->shape[d] > (INT64_C(1) << 40) / n)
      return 0;
    n *= spec->shape[d];
  }
  *numel = n;
  return (size_t)n * (size_t)size;
}

static size_t align_up(size_t v) { return (v + REGION_ALIGN - 1) / REGION_ALIGN * REGION_ALIGN; }

static int hash_bytes(struct kb_sha256 *h, const void *data, size_t len, int rc) {
  return rc ? rc : kb_sha256_update(h, data, len);
}

static int hash_spec(struct kb_sha256 *h, const struct kb_tensor_spec *s, int rc) {
  rc = hash_bytes(h, &s->dtype, sizeof s->dtype, rc);
  rc = hash_bytes(h, &s->ndim, sizeof s->ndim, rc);
  for (int d = 0; d < s->ndim && d < KB_MAX_DIMS; d++)
    rc = hash_bytes(h, &s->shape[d], sizeof s->shape[d], rc);
  return rc;
}

/* What the prepared data of `task` depends on: id, oracle source, tensors, input sets. */
static int fingerprint(const struct kb_task *task, const char *oracle_src,
                       char out[KB_CAND_ID_LEN + 1], struct kb_error *err) {
  struct kb_sha256 *h = kb_sha256_new();
  if (h == NULL)
    return kb_error_set(err, KB_EINTERNAL, "cannot hash task \"%s\"", task->id);
  int rc = hash_bytes(h, task->id, strlen(task->id) + 1, KB_OK);
  rc = hash_bytes(h, oracle_src, strlen(oracle_src) + 1, rc);
  rc = hash_bytes(h, &task->n_inputs, sizeof task->n_inputs, rc);
  for (int i = 0; i < task->n_inputs; i++)
    rc = hash_spec(h, &task->inputs[i], rc);
  rc = hash_bytes(h, &task->n_outputs, sizeof task->n_outputs, rc);
  for (int i = 0; i < task->n_outputs; i++)
    rc = hash_spec(h, &task->outputs[i], rc);
  rc = hash_bytes(h, &task->n_sets, sizeof task->n_sets, rc);
  for (int s = 0; s < task->n_sets; s++) {
    const struct kb_input_set *set = &task->sets[s];
    rc = hash_bytes(h, &set->seed, sizeof set->seed, rc);
    rc = hash_bytes(h, &set->dist, sizeof set->dist, rc);
    rc = hash_bytes(h, &set->low, sizeof set->low, rc);
    rc = hash_bytes(h, &set->high, sizeof set->high, rc);
  }
  if (rc) {
    kb_sha256_free(h);
    return kb_error_set(err, KB_EINTERNAL, "cannot hash task \"%s\"", task->id);
  }
  if (kb_sha256_final_hex(h, out) != KB_OK)
    return kb_error_set(err, KB_EINTERNAL, "cannot hash task \"%s\"", task->id);
  return KB_OK;
}

static void fill_tensor(kb_tensor *t, const struct kb_tensor_spec *spec, void *data) {
  memset(t, 0, sizeof *t);
  t->data = data;
  t->dtype = spec->dtype;
  t->ndim = spec->ndim;
  for (int d = 0; d < spec->ndim; d++)
    t->shape[d] = spec->shape[d];
}

/* Lays out `p` for `task`: offsets, sizes, the mapping, the image and the tensors into the
 * mapping. Errors: KB_EINVAL (bad tensor spec), KB_ENOMEM. */
static int layout(struct prepared *p, const struct kb_task *task, struct kb_error *err) {
  int ns = task->n_sets, ni = task->n_inputs, no = task->n_outputs;
  p->n_sets = ns;
  p->n_in = ni;
  p->n_out = no;
  p->in_off = kb_calloc((size_t)ns * (size_t)ni, sizeof *p->in_off);
  p->chk_off = kb_calloc((size_t)ns * (size_t)no, sizeof *p->chk_off);
  p->tim_off = kb_calloc((size_t)ns * (size_t)no, sizeof *p->tim_off);
  p->in_bytes = kb_calloc((size_t)ni, sizeof *p->in_bytes);
  p->out_bytes = kb_calloc((size_t)no, sizeof *p->out_bytes);
  p->in = kb_calloc((size_t)ns * (size_t)ni, sizeof *p->in);
  p->out_check = kb_calloc((size_t)ns * (size_t)no, sizeof *p->out_check);
  p->out_time = kb_calloc((size_t)ns * (size_t)no, sizeof *p->out_time);
  if (!p->in_off || !p->chk_off || !p->tim_off || !p->in_bytes || !p->out_bytes || !p->in ||
      !p->out_check || !p->out_time)
    return kb_error_set(err, KB_ENOMEM, "cannot prepare task \"%s\": out of memory", task->id);
  for (int i = 0; i < ni + no; i++) {
    const struct kb_tensor_spec *spec = i < ni ? &task->inputs[i] : &task->outputs[i - ni];
    int64_t numel;
    size_t bytes = spec_bytes(spec, &numel);
    if (bytes == 0)
      return kb_error_set(err, KB_EINVAL, "task \"%s\": tensor \"%s\" has a bad dtype or shape",
                          task->id, spec->name);
    if (i < ni)
      p->in_bytes[i] = bytes;
    else
      p->out_bytes[i - ni] = bytes;
  }
  size_t off = 0;
  for (int s = 0; s < ns; s++) {
    for (int i = 0; i < ni; i++) {
      p->in_off[s * ni + i] = off;
      off = align_up(off + p->in_bytes[i]);
    }
    for (int o = 0; o < no; o++) {
      p->chk_off[s * no + o] = off;
      off = align_up(off + p->out_bytes[o]);
      p->tim_off[s * no + o] = off;
      off = align_up(off + p->out_bytes[o]);
    }
  }
  p->size = off;
  void *map = mmap(NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    return kb_error_set(err, KB_ENOMEM, "cannot map %zu bytes for task \"%s\": %s", p->size,
                        task->id, strerror(errno));
  p->map = map;
  p->image = kb_calloc(1, p->size);
  if (p->image == NULL)
    return kb_error_set(err, KB_ENOMEM, "cannot prepare task \"%s\": out of memory", task->id);
  for (int s = 0; s < ns; s++) {
    for (int i = 0; i < ni; i++)
      fill_tensor(&p->in[s * ni + i], &task->inputs[i], p->map + p->in_off[s * ni + i]);
    for (int o = 0; o < no; o++) {
      fill_tensor(&p->out_check[s * no + o], &task->outputs[o], p->map + p->chk_off[s * no + o]);
      fill_tensor(&p->out_time[s * no + o], &task->outputs[o], p->map + p->tim_off[s * no + o]);
    }
  }
  return KB_OK;
}

static int is_float(int dtype) {
  return dtype == KB_F32 || dtype == KB_F64 || dtype == KB_F16 || dtype == KB_BF16;
}

/* Runs the trusted oracle at `lib_path` in this process on every set of `p`, writing the
 * reference outputs into the image. Errors: KB_ELOAD, KB_EINTERNAL (the oracle fails). */
static int run_oracle(struct prepared *p, const struct kb_task *task, const char *lib_path,
                      struct kb_error *err) {
  void *lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char *why = dlerror();
    return kb_error_set(err, KB_ELOAD, "cannot load the oracle of task \"%s\": %s", task->id,
                        why ? why : "unknown error");
  }
  union {
    void *obj;
    forward_fn fn;
  } sym;
  sym.obj = dlsym(lib, "kb_forward");
  int rc = KB_OK;
  if (sym.obj == NULL) {
    rc = kb_error_set(err, KB_ELOAD, "oracle of task \"%s\" does not export kb_forward",
                      task->id);
    goto out;
  }
  for (int s = 0; s < p->n_sets && rc == KB_OK; s++) {
    kb_tensor in[KB_MAX_TENSORS], out[KB_MAX_TENSORS];
    for (int i = 0; i < p->n_in; i++)
      fill_tensor(&in[i], &task->inputs[i], p->image + p->in_off[s * p->n_in + i]);
    for (int o = 0; o < p->n_out; o++) {
      fill_tensor(&out[o], &task->outputs[o], p->image + p->chk_off[s * p->n_out + o]);
      kb_poison(out[o].dtype, out[o].data, kb_tensor_numel(&out[o]));
    }
    int ret = sym.fn(in, p->n_in, out, p->n_out, NULL);
    if (ret != 0) {
      rc = kb_error_set(err, KB_EINTERNAL, "oracle of task \"%s\" returned %d on input set %d",
                        task->id, ret, s);
      break;
    }
    for (int o = 0; o < p->n_out && rc == KB_OK; o++) {
      if (!is_float(out[o].dtype))
        continue;
      int64_t n = kb_tensor_numel(&out[o]);
      for (int64_t e = 0; e < n; e++)
        if (!isfinite(kb_dtype_load(out[o].dtype, out[o].data, e))) {
          rc = kb_error_set(err, KB_EINTERNAL,
                            "oracle of task \"%s\": element %lld of output \"%s\" of input set "
                            "%d is not finite",
                            task->id, (long long)e, task->outputs[o].name, s);
          break;
        }
    }
  }
out:
  dlclose(lib);
  return rc;
}

/* Returns in `*out` the prepared data of `task`, preparing it on first use (or when the task
 * changed). Errors: KB_EIO (oracle source), KB_ECOMPILE (oracle does not build), KB_ELOAD,
 * KB_EINTERNAL, KB_EINVAL, KB_ENOMEM, KB_ECHILD. */
static int prepare(struct kb_host_backend *b, const struct kb_task *task, struct prepared **out,
                   struct kb_error *err) {
  struct kb_buf src;
  struct kb__build build;
  struct prepared *p = NULL;
  char fp[KB_CAND_ID_LEN + 1];
  kb_buf_init(&src);
  kb__build_init(&build);
  int rc = kb_buf_read_file(&src, task->oracle_path, err);
  if (rc)
    goto out;
  rc = fingerprint(task, src.data, fp, err);
  if (rc)
    goto out;
  b->uses++;
  for (int i = 0; i < MAX_PREPARED; i++)
    if (b->tasks[i] != NULL && strcmp(b->tasks[i]->fingerprint, fp) == 0) {
      b->tasks[i]->last_used = b->uses;
      *out = b->tasks[i];
      goto out;
    }

  /* The oracle is trusted code: it skips the import allow-list that candidates face. */
  rc = kb__compile_req(&b->cc, &(struct kb__compile_req){.source = src.data, .trusted = 1},
                       &build, err);
  if (rc)
    goto out;
  if (!build.ok) {
    rc = kb_error_set(err, KB_ECOMPILE, "oracle of task \"%s\" (%s) %s", task->id,
                      task->oracle_path, build.reason);
    goto out;
  }
  p = kb_calloc(1, sizeof *p);
  if (p == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot prepare task \"%s\": out of memory", task->id);
    goto out;
  }
  memcpy(p->fingerprint, fp, sizeof fp);
  rc = layout(p, task, err);
  if (rc)
    goto out;
  for (int s = 0; s < p->n_sets && rc == KB_OK; s++)
    for (int i = 0; i < p->n_in && rc == KB_OK; i++)
      rc = kb_inputs_fill(&task->sets[s], i, task->inputs[i].dtype,
                          p->image + p->in_off[s * p->n_in + i], kb_tensor_numel(&p->in[i]), err);
  if (rc)
    goto out;
  rc = run_oracle(p, task, build.lib_path, err);
  if (rc)
    goto out;
  for (int s = 0; s < p->n_sets; s++)
    for (int i = 0; i < p->n_in; i++) {
      size_t off = p->in_off[s * p->n_in + i];
      memcpy(p->map + off, p->image + off, p->in_bytes[i]);
    }

  int slot = 0;
  for (int i = 0; i < MAX_PREPARED; i++) {
    if (b->tasks[i] == NULL) {
      slot = i;
      break;
    }
    if (b->tasks[i]->last_used < b->tasks[slot]->last_used)
      slot = i;
  }
  prepared_free(b->tasks[slot]);
  p->last_used = b->uses;
  b->tasks[slot] = p;
  *out = p;
  p = NULL;
out:
  prepared_free(p);
  kb__build_release(&build);
  kb_buf_release(&src);
  return rc;
}

/* ---- verdicts ------------------------------------------------------------------------- */

static void set_reason(struct kb_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_reason(struct kb_result *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(r->reason, sizeof r->reason, fmt, ap);
  va_end(ap);
  if (n < 0)
    r->reason[0] = '\0';
}

/* Appends "; output: <tail>" to the reason, with as much of the end of `out` as fits, blanks
 * and line breaks folded to single spaces. */
static void append_output(struct kb_result *r, const struct kb_buf *out) {
  char folded[sizeof r->reason];
  size_t n = 0;
  const char *s = out->data;
  size_t len = out->len;
  while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' ' || s[len - 1] == '\r' ||
                     s[len - 1] == '\t'))
    len--;
  size_t used = strlen(r->reason);
  const char *sep = "; output: ";
  if (len == 0 || used + strlen(sep) + 8 >= sizeof r->reason)
    return;
  size_t room = sizeof r->reason - used - strlen(sep) - 1;
  size_t start = len > room ? len - room : 0;
  for (size_t i = start; i < len && n + 1 < sizeof folded; i++) {
    char c = s[i];
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
    if (c == ' ' && n > 0 && folded[n - 1] == ' ')
      continue;
    folded[n++] = (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  folded[n] = '\0';
  size_t left = sizeof r->reason - used;
  if (snprintf(r->reason + used, left, "%s%s", sep, folded) < 0)
    r->reason[used] = '\0';
}

/* Compares every input region of the mapping with the image and restores the ones that
 * differ. Returns 1 and names the first changed element when any did. */
static int inputs_touched(struct prepared *p, int *set, int *input, int64_t *element) {
  int touched = 0;
  for (int s = 0; s < p->n_sets; s++)
    for (int i = 0; i < p->n_in; i++) {
      size_t off = p->in_off[s * p->n_in + i];
      const unsigned char *m = p->map + off, *g = p->image + off;
      if (memcmp(m, g, p->in_bytes[i]) == 0)
        continue;
      if (!touched) {
        size_t k = 0;
        while (m[k] == g[k])
          k++;
        *set = s;
        *input = i;
        *element = (int64_t)(k / (size_t)kb_dtype_size(p->in[i].dtype));
        touched = 1;
      }
      memcpy(p->map + off, p->image + off, p->in_bytes[i]);
    }
  return touched;
}

static void poison_sets(struct prepared *p, int n_sets) {
  for (int s = 0; s < n_sets; s++)
    for (int o = 0; o < p->n_out; o++) {
      const kb_tensor *c = &p->out_check[s * p->n_out + o];
      const kb_tensor *t = &p->out_time[s * p->n_out + o];
      kb_poison(c->dtype, c->data, kb_tensor_numel(c));
      kb_poison(t->dtype, t->data, kb_tensor_numel(t));
    }
}

/* Verifies the outputs at `offs` (check or time) of the sets in `mask` against the reference,
 * folding the errors into r->max_*_err. Returns 1 when all pass; else writes "output ... of
 * input set ...: element ..." into `why`. */
static int outputs_pass(const struct prepared *p, const struct kb_task *task, const size_t *offs,
                        uint32_t mask, struct kb_result *r, char *why, size_t why_size) {
  int pass = 1;
  for (int s = 0; s < p->n_sets; s++) {
    if (!(mask & (UINT32_C(1) << s)))
      continue;
    for (int o = 0; o < p->n_out; o++) {
      const kb_tensor *t = &p->out_check[s * p->n_out + o];
      struct kb_verify_report rep;
      int ok = kb_verify(t->dtype, p->map + offs[s * p->n_out + o],
                         p->image + p->chk_off[s * p->n_out + o], kb_tensor_numel(t), task->atol,
                         task->rtol, &rep);
      if (isnan(r->max_abs_err) || rep.max_abs_err > r->max_abs_err)
        r->max_abs_err = rep.max_abs_err;
      if (isnan(r->max_rel_err) || rep.max_rel_err > r->max_rel_err)
        r->max_rel_err = rep.max_rel_err;
      if (!ok && pass) {
        char detail[160];
        kb_verify_describe(&rep, detail, sizeof detail);
        if (snprintf(why, why_size, "output \"%s\" of input set %d: %s", task->outputs[o].name,
                     s, detail) < 0)
          why[0] = '\0';
        pass = 0;
      }
    }
  }
  return pass;
}

static const char *phase_name(int phase) {
  switch ((enum kb__eval_phase)phase) {
  case KB__PHASE_CHECK:
    return "check";
  case KB__PHASE_WARMUP:
    return "warm-up";
  case KB__PHASE_TIMING:
    return "timed";
  }
  return "unknown";
}

/* Turns what the child did into r's verdict. Returns an error code only when the runner
 * failed (the child ran out of memory). */
static int judge(struct prepared *p, const struct kb_task *task, const struct kb_tier *tier,
                 int n_check, const char *lib_path, const struct kb__proc_result *res,
                 struct kb_result *r, struct kb_error *err) {
  struct kb__eval_report rep;
  int complete = res->report.len == sizeof rep;
  if (complete) {
    memcpy(&rep, res->report.data, sizeof rep);
    complete = rep.magic == KB__EVAL_MAGIC;
  }
  int set = 0, input = 0;
  int64_t element = 0;
  int touched = inputs_touched(p, &set, &input, &element);

  if (res->timed_out) {
    r->status = KB_STATUS_TIMEOUT;
    set_reason(r, "timed out after %g s (limit of tier \"%s\")", tier->timeout_s, tier->name);
    return KB_OK;
  }
  if (res->signal) {
    char buf[32];
    r->status = KB_STATUS_CRASH;
    set_reason(r, "killed by %s", kb__signal_name(res->signal, buf, sizeof buf));
    append_output(r, &res->output);
    return KB_OK;
  }
  if (!complete) {
    r->status = KB_STATUS_CRASH;
    set_reason(r, "exited with status %d before the evaluation finished (kb_forward must return)",
               res->exit_code);
    append_output(r, &res->output);
    return KB_OK;
  }
  rep.msg[sizeof rep.msg - 1] = '\0';
  switch ((enum kb__eval_outcome)rep.outcome) {
  case KB__EVAL_LOAD: {
    /* dlerror() starts with the cache path, which says nothing to whoever reads the reason */
    const char *msg = rep.msg;
    size_t plen = strlen(lib_path);
    if (strncmp(msg, lib_path, plen) == 0 && strncmp(msg + plen, ": ", 2) == 0)
      msg += plen + 2;
    r->status = KB_STATUS_COMPILE_ERROR;
    set_reason(r, "cannot load the library: %s", msg);
    return KB_OK;
  }
  case KB__EVAL_NOSYM:
    r->status = KB_STATUS_COMPILE_ERROR;
    set_reason(r, "the library does not export kb_forward");
    return KB_OK;
  case KB__EVAL_NOMEM:
    return kb_error_set(err, KB_ENOMEM, "evaluation child: out of memory for %d samples",
                        tier->max_samples);
  case KB__EVAL_FAILED:
    r->status = KB_STATUS_CRASH;
    set_reason(r, "kb_forward returned %d on input set %d (%s call)", rep.rc, rep.set,
               phase_name(rep.phase));
    append_output(r, &res->output);
    return KB_OK;
  case KB__EVAL_DONE:
    break;
  }
  if (rep.outcome != KB__EVAL_DONE) {
    r->status = KB_STATUS_CRASH;
    set_reason(r, "evaluation child sent an unknown report");
    return KB_OK;
  }
  if (touched) {
    r->status = KB_STATUS_REJECTED;
    set_reason(r, "modified its inputs: element %lld of input \"%s\" of input set %d changed",
               (long long)element, task->inputs[input].name, set);
    return KB_OK;
  }
  uint32_t checked = n_check >= 32 ? UINT32_MAX : (UINT32_C(1) << n_check) - 1;
  char why[sizeof r->reason];
  r->sets_checked = n_check;
  if (!outputs_pass(p, task, p->chk_off, checked, r, why, sizeof why)) {
    r->status = KB_STATUS_WRONG_OUTPUT;
    set_reason(r, "%s", why);
    return KB_OK;
  }
  if (!outputs_pass(p, task, p->tim_off, rep.sets_timed & checked, r, why, sizeof why)) {
    r->status = KB_STATUS_REJECTED;
    set_reason(r, "outputs right on the first call but wrong after repeated calls: %s", why);
    return KB_OK;
  }
  /* timed time cannot exceed the child's life: a report that claims so was forged from inside
   * the child (the candidate shares its address space and descriptors) */
  if (rep.timing.samples < 0 || rep.timing.mean_us * rep.timing.samples > res->wall_s * 1e6) {
    r->status = KB_STATUS_REJECTED;
    set_reason(r, "timing report inconsistent with the evaluation's %.3f s run time",
               res->wall_s);
    return KB_OK;
  }
  r->timing = rep.timing;
  return KB_OK;
}

/* ---- evaluation ----------------------------------------------------------------------- */

/* Sets the verdict fields of `r` to "ok, nothing known yet". */
static void reset_verdict(const struct kb_host_backend *b, struct kb_result *r) {
  r->backend = KB_BACKEND_HOST;
  if (snprintf(r->device, sizeof r->device, "%s", b->device) < 0)
    r->device[0] = '\0';
  r->status = KB_STATUS_OK;
  r->reason[0] = '\0';
  r->compile_s = 0;
  r->compile_cached = 0;
  r->registers = -1;
  r->spills = -1;
  r->shared_bytes = -1;
  kb_free(r->compile_log);
  r->compile_log = NULL;
  r->sets_checked = 0;
  r->max_abs_err = NAN;
  r->max_rel_err = NAN;
  memset(&r->timing, 0, sizeof r->timing);
  r->cost_ms = 0;
}

int kb_host_backend_evaluate(struct kb_host_backend *b, const struct kb_task *task,
                             const struct kb_candidate *c, const struct kb_tier *tier,
                             int tier_index, struct kb_result *r, struct kb_error *err) {
  struct kb__build build;
  struct kb__proc_result res;
  struct prepared *p = NULL;
  kb__build_init(&build);
  kb__proc_result_init(&res);
  reset_verdict(b, r);
  int rc = KB_OK;
  if (task->backend != KB_BACKEND_HOST || task->oracle_kind != KB_ORACLE_C) {
    rc = kb_error_set(err, KB_EINVAL, "task \"%s\": the host backend needs a host task with a "
                      "c oracle", task->id);
    goto out;
  }
  if (task->n_inputs < 1 || task->n_inputs > KB_MAX_TENSORS || task->n_outputs < 1 ||
      task->n_outputs > KB_MAX_TENSORS || task->n_sets < 1 || task->n_sets > KB_MAX_SETS) {
    rc = kb_error_set(err, KB_EINVAL, "task \"%s\": bad number of tensors or input sets",
                      task->id);
    goto out;
  }
  if (tier_index > 0 && !(tier->timeout_s > 0)) {
    rc = kb_error_set(err, KB_EINVAL, "tier \"%s\": timeout must be positive", tier->name);
    goto out;
  }

  rc = kb__compile(&b->cc, c->source, c->knobs, c->flags, &build, err);
  if (rc)
    goto out;
  r->compile_s = build.cached ? 0 : build.seconds;
  r->compile_cached = build.cached;
  r->compile_log = build.log;
  build.log = NULL;
  if (!build.ok) {
    /* Importing a forbidden function is a cheat (rejected); importing one that nothing
     * defines is a helper declared and never written, a build defect (compile_error). */
    r->status = build.rejected && !build.undefined ? KB_STATUS_REJECTED : KB_STATUS_COMPILE_ERROR;
    set_reason(r, "%s", build.reason);
    goto out;
  }
  int found = 0;
  struct kb_error elf_err = {0};
  rc = kb__elf_defines(build.lib_path, "kb_forward", &found, &elf_err);
  if (rc == KB_ENOMEM) {
    rc = kb_error_set(err, rc, "%s", elf_err.msg);
    goto out;
  }
  if (rc) {
    rc = KB_OK;
    r->status = KB_STATUS_COMPILE_ERROR;
    set_reason(r, "cannot read the built library: %s", elf_err.msg);
    goto out;
  }
  if (!found) {
    r->status = KB_STATUS_COMPILE_ERROR;
    set_reason(r, "the library does not export kb_forward (int kb_forward(const kb_tensor *, "
                  "int, kb_tensor *, int, void *))");
    goto out;
  }
  if (tier_index == 0)
    goto out;

  rc = prepare(b, task, &p, err);
  if (rc)
    goto out;
  int n_check = tier->input_sets <= 0 || tier->input_sets > p->n_sets ? p->n_sets
                                                                       : tier->input_sets;
  poison_sets(p, n_check);
  struct kb__eval_job job = {
      .lib_path = build.lib_path,
      .n_in = p->n_in,
      .n_out = p->n_out,
      .n_sets = n_check,
      .in = p->in,
      .out_check = p->out_check,
      .out_time = p->out_time,
      .timed = tier->max_samples >= 1,
      .warmup = tier->warmup > 0 ? tier->warmup : 0,
      .min_samples = tier->min_samples < tier->max_samples ? tier->min_samples
                                                           : tier->max_samples,
      .max_samples = tier->max_samples,
      .max_seconds = tier->max_seconds,
      .noise = tier->noise,
      .budget_s = tier->timeout_s * BUDGET_SHARE,
  };
  rc = kb__proc_run(kb__eval_child, &job, tier->timeout_s, OUTPUT_KEEP,
                    sizeof(struct kb__eval_report), b->stop, &res, err);
  if (rc)
    goto out;
  if (res.interrupted) {
    rc = kb_error_set(err, KB_EINTERRUPTED, "evaluation stopped: the runner is leaving");
    goto out;
  }
  r->cost_ms = (int64_t)ceil(res.wall_s * 1000.0);
  rc = judge(p, task, tier, n_check, build.lib_path, &res, r, err);
out:
  kb__build_release(&build);
  kb__proc_result_release(&res);
  return rc;
}
