/* The sandbox's message loop (see serve.h). */
#include "serve.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "confine.h"
#include "cupti_trace.h"
#include "engine.h"
#include "kb/alloc.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/jsonfile.h"
#include "kb/result.h"
#include "proto.h"
#include "integrity.h"
#include "prep_keep.h"
#include "witness_calls.h"

/* Prepared tasks are kept (prep_keep.h) while they hold at most this share of the device memory
 * (one task just prepared may stay above it until the next prepare): the rest is for candidates'
 * own allocations and for the Range Profiler's kernel replay, which saves and restores device
 * memory between its passes (a run that let prepared tasks hold 70% of the H200 did not finish
 * the suite campaign in 240 s, its GPU mostly idle, where 127 s had been enough with 4 tasks) */
#define PREPARED_SHARE 0.25
#define FIELD_MAX 96

struct server {
  struct kb__dev *d;
  int ordinal;
  int out_fd;
  int in_fd;
  char nonce[40];            /* the current request's "nonce", echoed in its reply ("": none) */
  int trusted;               /* kb-sandbox --trusted: loads no candidate */
  int witness_fd;            /* its witness file, -1: none */
  char *witness_path;        /* the library the witness calls, kept loaded between its rounds
                                (owned; NULL: none) */
  void *witness_lib;         /* its handle */
  kb__forward_fn witness_fn;
  struct kb__witness_bufs *witness_bufs; /* its calls' buffers, kept between its rounds and
                                            freed at any other request */
  struct kb__integrity *integrity;        /* the process as it was before any candidate
                                            (integrity.h); NULL: not checked */
  struct kb__prepared *tasks[KB_PREP_SLOTS]; /* prepared tasks (owned), NULL: an empty slot */
  struct kb__prep_keep keep;                 /* which of them stay (prep_keep.h) */
};

/* The input distribution named `name` ("uniform", "normal", "integers": enum kb_dist of
 * inputs.h), or -1 for another name. */
static int dist_from_name(const char *name) {
  if (strcmp(name, "uniform") == 0)
    return KB_DIST_UNIFORM;
  if (strcmp(name, "normal") == 0)
    return KB_DIST_NORMAL;
  if (strcmp(name, "integers") == 0)
    return KB_DIST_INTEGERS;
  return -1;
}

/* Sends `msg` (stolen) with the request's nonce: the runner takes a reply without it for one
 * that candidate code wrote on the socket (docs/sandbox.md, "Framing"). Returns 0, or 1 when
 * the channel is broken. */
static int reply(struct server *sv, json_t *msg) {
  struct kb_error err = {0};
  if (msg != NULL && sv->nonce[0] != '\0' &&
      json_object_set_new(msg, "nonce", json_string(sv->nonce)) != 0) {
    json_decref(msg);
    msg = NULL;
  }
  int rc = msg ? kb__msg_write(sv->out_fd, msg, 0, &err) : KB_ENOMEM;
  json_decref(msg);
  return rc != KB_OK;
}

static int reply_error(struct server *sv, const char *field, const char *reason) {
  return reply(sv, json_pack("{s:s, s:s, s:s}", "op", "error", "field", field ? field : "",
                             "reason", reason));
}

static int hello(struct server *sv) {
  char cc[16];
  snprintf(cc, sizeof cc, "%d.%d", sv->d->cc_major, sv->d->cc_minor);
  struct kb__confine_level cl;
  kb__confine_current(&cl);
  return reply(sv, json_pack("{s:s, s:I, s:s, s:s, s:i, s:s, s:i, s:I, s:I, s:i, s:i, s:f, "
                             "s:{s:s, s:b, s:i, s:s}}", "op",
                             "hello", "pid", (json_int_t)getpid(), "backend", sv->d->backend,
                             "device", sv->d->name, "ordinal", sv->ordinal, "cc", cc, "sm_count",
                             sv->d->sm_count, "mem_bytes", (json_int_t)sv->d->mem_bytes,
                             "l2_bytes", (json_int_t)sv->d->l2_bytes, "runtime",
                             sv->d->runtime_version, "driver", sv->d->driver_version,
                             "bandwidth_gbs", sv->d->bandwidth / 1e9,
                             "confinement", "level", cl.level, "seccomp", cl.seccomp,
                             "landlock_abi", cl.landlock_abi, "note", cl.note));
}

/* Reads one tensor spec at `path` (e.g. "inputs[1]"). */
static int read_tensor(json_t *t, const char *path, struct kb_tensor_spec *spec, char *field,
                       struct kb_error *err) {
  const char *name = NULL, *dtype = NULL;
  json_t *shape = NULL;
  if (!json_is_object(t)) {
    snprintf(field, FIELD_MAX, "%s", path);
    return kb_error_set(err, KB_EPARSE, "\"%s\" must be an object", path);
  }
  int rc = kb__msg_str(t, path, "name", 1, &name, field, FIELD_MAX, err);
  if (rc == KB_OK)
    rc = kb__msg_str(t, path, "dtype", 1, &dtype, field, FIELD_MAX, err);
  if (rc == KB_OK)
    rc = kb__msg_array(t, path, "shape", 1, 0, KB_MAX_DIMS, &shape, field, FIELD_MAX, err);
  if (rc)
    return rc;
  memset(spec, 0, sizeof *spec);
  if (snprintf(spec->name, sizeof spec->name, "%s", name) >= (int)sizeof spec->name) {
    snprintf(field, FIELD_MAX, "%s.name", path);
    return kb_error_set(err, KB_EPARSE, "\"%s.name\" is too long", path);
  }
  spec->dtype = kb_dtype_from_name(dtype);
  if (spec->dtype < 0) {
    snprintf(field, FIELD_MAX, "%s.dtype", path);
    return kb_error_set(err, KB_EPARSE, "\"%s.dtype\": unknown dtype \"%s\"", path, dtype);
  }
  spec->ndim = (int)json_array_size(shape);
  for (int d = 0; d < spec->ndim; d++) {
    json_t *v = json_array_get(shape, (size_t)d);
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > INT64_C(2147483647)) {
      snprintf(field, FIELD_MAX, "%s.shape[%d]", path, d);
      return kb_error_set(err, KB_EPARSE, "\"%s.shape[%d]\" must be an integer in 1..2147483647",
                          path, d);
    }
    spec->shape[d] = json_integer_value(v);
  }
  return KB_OK;
}

/* Reads the tensor list `key` of `req` into a new array `*specs` (kb_free; set even when a
 * later item fails) of `*n` specs. */
static int read_tensors(json_t *req, const char *key, struct kb_tensor_spec **specsp, int *n,
                        char *field, struct kb_error *err) {
  json_t *arr = NULL;
  int rc = kb__msg_array(req, "", key, 1, 1, KB_MAX_TENSORS, &arr, field, FIELD_MAX, err);
  struct kb_tensor_spec *specs = NULL;
  if (rc == KB_OK) {
    specs = kb_calloc(json_array_size(arr), sizeof *specs);
    *specsp = specs;
    if (specs == NULL)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  for (size_t i = 0; rc == KB_OK && i < json_array_size(arr); i++) {
    char path[48];
    snprintf(path, sizeof path, "%s[%zu]", key, i);
    rc = read_tensor(json_array_get(arr, i), path, &specs[i], field, err);
  }
  if (rc == KB_OK)
    *n = (int)json_array_size(arr);
  return rc;
}

static int read_sets(json_t *req, struct kb__prep_spec *s, char *field, struct kb_error *err) {
  json_t *arr = NULL;
  int rc = kb__msg_array(req, "", "sets", 1, 1, KB_MAX_SETS, &arr, field, FIELD_MAX, err);
  for (size_t i = 0; rc == KB_OK && i < json_array_size(arr); i++) {
    char path[32];
    snprintf(path, sizeof path, "sets[%zu]", i);
    json_t *o = json_array_get(arr, i);
    int64_t seed = 0;
    const char *dist = NULL;
    struct kb_input_set *set = &s->sets[i];
    rc = kb__msg_int(o, path, "seed", 1, 0, INT64_MAX, &seed, field, FIELD_MAX, err);
    if (rc == KB_OK)
      rc = kb__msg_str(o, path, "distribution", 1, &dist, field, FIELD_MAX, err);
    if (rc == KB_OK)
      rc = kb__msg_num(o, path, "low", 1, -KB_INPUT_BOUND_MAX, KB_INPUT_BOUND_MAX, &set->low,
                       field, FIELD_MAX, err);
    if (rc == KB_OK)
      rc = kb__msg_num(o, path, "high", 1, -KB_INPUT_BOUND_MAX, KB_INPUT_BOUND_MAX, &set->high,
                       field, FIELD_MAX, err);
    if (rc)
      break;
    set->seed = (uint64_t)seed;
    set->dist = dist_from_name(dist);
    if (set->dist < 0) {
      snprintf(field, FIELD_MAX, "%s.distribution", path);
      rc = kb_error_set(err, KB_EPARSE, "\"%s.distribution\": unknown distribution \"%s\"", path,
                        dist);
    }
  }
  if (rc == KB_OK)
    s->n_sets = (int)json_array_size(arr);
  return rc;
}

static int find(struct server *sv, const char *key) {
  for (int i = 0; i < KB_PREP_SLOTS; i++)
    if (sv->tasks[i] != NULL && strcmp(kb__prepared_key(sv->tasks[i]), key) == 0)
      return i;
  return -1;
}

/* Frees the prepared task in `slot` (none: nothing) and says so to the keeping rule. */
static void unprepare(struct server *sv, int slot) {
  if (slot < 0 || sv->tasks[slot] == NULL)
    return;
  kb__prepared_free(sv->d, sv->tasks[slot]);
  sv->tasks[slot] = NULL;
  kb__prep_keep_drop(&sv->keep, slot);
}

/* The task fields of a prepare (or witness) request into `s`, its tensor lists into `*in` and
 * `*out` (new, the caller frees them even on failure). KB_OK, or an error with the field. */
static int read_spec(json_t *req, struct kb__prep_spec *s, struct kb_tensor_spec **in,
                     struct kb_tensor_spec **out, char *field, size_t fsize,
                     struct kb_error *err) {
  memset(s, 0, sizeof *s);
  int rc = kb__msg_str(req, "", "key", 1, &s->key, field, fsize, err);
  if (rc == KB_OK)
    rc = kb__msg_str(req, "", "oracle", 1, &s->oracle, field, fsize, err);
  if (rc == KB_OK)
    rc = read_tensors(req, "inputs", in, &s->n_in, field, err);
  s->inputs = *in;
  if (rc == KB_OK)
    rc = read_tensors(req, "outputs", out, &s->n_out, field, err);
  s->outputs = *out;
  if (rc == KB_OK)
    rc = read_sets(req, s, field, err);
  if (rc == KB_OK)
    rc = kb__msg_num(req, "", "atol", 1, 0, KB_INPUT_BOUND_MAX, &s->atol, field, fsize, err);
  if (rc == KB_OK)
    rc = kb__msg_num(req, "", "rtol", 1, 0, KB_INPUT_BOUND_MAX, &s->rtol, field, fsize, err);
  s->must_read = 1.0;
  if (rc == KB_OK)
    rc = kb__msg_num(req, "", "must_read", 0, 0, 1, &s->must_read, field, fsize, err);
  return rc;
}

/* prepare() with the request's tensor lists read into `*in` and `*out` (new, the caller frees
 * them even on failure). */
/* Kept whole (65 lines): the prepare and its reply. */
static int prepare_into(struct server *sv, json_t *req, struct kb_tensor_spec **in,
                        struct kb_tensor_spec **out) {
  struct kb__prep_spec s;
  char field[FIELD_MAX] = "";
  struct kb_error err = {0};
  if (read_spec(req, &s, in, out, field, sizeof field, &err))
    return reply_error(sv, field, err.msg);
  int at = find(sv, s.key);
  if (at >= 0) {
    kb__prep_keep_use(&sv->keep, at);
    return reply(sv, json_pack("{s:s, s:b, s:s, s:b, s:f, s:f}", "op", "prepare", "ok", 1,
                               "key", s.key, "cached", 1, "seconds", 0.0, "oracle_s",
                               kb__prepared_oracle_s(sv->tasks[at])));
  }
  /* a task an earlier prepare kept above the share goes before this one is made */
  int dropped = 0;
  if (kb__prep_keep_over(&sv->keep) >= 0) {
    unprepare(sv, kb__prep_keep_over(&sv->keep));
    dropped++;
  }
  double t0 = kb_now_mono();
  struct kb__prepared *p = NULL;
  int fatal = 0;
  struct kb_error perr = {0};
  int rc = kb__prepare(sv->d, &s, &p, &fatal, &perr);
  if (rc != KB_OK && !fatal) {
    /* the device may be full of other tasks' data: drop them all and try once more */
    int before = dropped;
    for (int i = 0; i < KB_PREP_SLOTS; i++)
      if (sv->tasks[i] != NULL) {
        unprepare(sv, i);
        dropped++;
      }
    if (dropped > before) {
      kb_error_clear(&perr); /* the retry's reason is the one to give */
      rc = kb__prepare(sv->d, &s, &p, &fatal, &perr);
    }
  }
  if (rc != KB_OK) {
    int broken = reply(sv, json_pack("{s:s, s:b, s:s, s:b}", "op", "prepare", "ok", 0, "reason",
                                     perr.msg, "fatal", fatal));
    return broken ? 1 : fatal ? 3 : 0;
  }
  int slot = kb__prep_keep_slot(&sv->keep);
  if (sv->tasks[slot] != NULL)
    dropped++;
  unprepare(sv, slot);
  sv->tasks[slot] = p;
  double seconds = kb_now_mono() - t0;
  kb__prep_keep_add(&sv->keep, slot, kb__prepared_bytes(p), seconds);
  /* a campaign cycles through its tasks: keep as many prepared as the memory share allows
   * (re-preparing a task costs its inputs and an oracle run, time the campaign waits for), and
   * over the share drop those whose preparation buys the least time per byte (prep_keep.h) */
  size_t budget = sv->d->mem_bytes > 0 ? (size_t)(PREPARED_SHARE * (double)sv->d->mem_bytes) : 0;
  for (int drop; (drop = kb__prep_keep_next_drop(&sv->keep, slot, budget)) >= 0; dropped++)
    unprepare(sv, drop);
  size_t held = kb__prep_keep_held(&sv->keep);
  return reply(sv, json_pack("{s:s, s:b, s:s, s:b, s:f, s:f, s:I, s:I, s:i, s:b}", "op",
                             "prepare", "ok", 1, "key", s.key, "cached", 0, "seconds", seconds,
                             "oracle_s", kb__prepared_oracle_s(p), "bytes",
                             (json_int_t)kb__prepared_bytes(p), "held_bytes", (json_int_t)held,
                             "dropped", dropped, "over", kb__prep_keep_over(&sv->keep) == slot));
}

/* Returns 0 to go on, 1 when the channel broke, 3 when the process must end. */
static int prepare(struct server *sv, json_t *req) {
  struct kb_tensor_spec *in = NULL, *out = NULL;
  int r = prepare_into(sv, req, &in, &out);
  kb_free(in);
  kb_free(out);
  return r;
}

/* Adds the members of `t` that are known (finite) to `o`. */
static json_t *timing_json(const struct kb_timing *t) {
  json_t *o = json_pack("{s:i, s:i}", "samples", t->samples, "warmup", t->warmup);
  const struct {
    const char *k;
    double v;
  } nums[] = {{"median_us", t->median_us}, {"p10_us", t->p10_us}, {"p90_us", t->p90_us},
              {"mean_us", t->mean_us},     {"min_us", t->min_us}, {"noise", t->noise}};
  for (size_t i = 0; o != NULL && i < sizeof nums / sizeof nums[0]; i++)
    if (isfinite(nums[i].v))
      json_object_set_new(o, nums[i].k, json_real(nums[i].v));
  return o;
}

/* The candidate's kernel records of a trace (`recs`, borrowed): every record but the evaluator's
 * own ("kb_dk_" in the name), the first KB_KERNELS_MAX of them, as result.h's "kernels" array
 * (new reference, NULL when out of memory); `*dropped` gets how many were left out. */
static json_t *kernels_json(const struct kb_cupti_kernel *recs, size_t n, int64_t *dropped) {
  json_t *a = json_array();
  *dropped = 0;
  for (size_t i = 0; a != NULL && i < n; i++) {
    const struct kb_cupti_kernel *k = &recs[i];
    if (strstr(k->name, "kb_dk_") != NULL)
      continue;
    if (json_array_size(a) >= KB_KERNELS_MAX) {
      (*dropped)++;
      continue;
    }
    char name[KB_KERNEL_NAME_MAX];
    snprintf(name, sizeof name, "%s", k->name);
    char *clean = kb_json_utf8_sanitize(name);
    json_t *o = clean == NULL
                    ? NULL
                    : json_pack("{s:s, s:[i,i,i], s:[i,i,i], s:i, s:i, s:i, s:I, s:I, s:I, s:I}",
                                "name", clean, "grid", k->grid[0], k->grid[1], k->grid[2],
                                "block", k->block[0], k->block[1], k->block[2], "registers",
                                (int)k->registers, "static_smem", (int)k->static_smem,
                                "dynamic_smem", (int)k->dynamic_smem, "start_ns",
                                (json_int_t)k->start, "end_ns", (json_int_t)k->end, "stream",
                                (json_int_t)k->stream_id, "correlation",
                                (json_int_t)k->correlation_id);
    kb_free(clean);
    if (o == NULL || json_array_append_new(a, o) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

/* The reply to an eval request: verdict `v` (its arrays borrowed) of an evaluation that took
 * `seconds` (new reference; NULL when out of memory). */
static json_t *verdict_json(const struct kb__verdict *v, double seconds) {
  json_t *out = json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:f}", "op", "eval", "status",
                          kb_status_name(v->status), "reason", v->reason, "sets_checked",
                          v->sets_checked, "batch", v->batch, "fatal", v->fatal, "seconds", seconds);
  if (out != NULL && v->batch_flushed)
    json_object_set_new(out, "batch_flushed", json_true());
  if (out != NULL && v->chunks > 0)
    json_object_set_new(out, "chunks", json_integer(v->chunks));
  if (out != NULL && v->fresh_samples > 0)
    json_object_set_new(out, "fresh_samples", json_integer(v->fresh_samples));
  if (out != NULL && isfinite(v->max_abs_err))
    json_object_set_new(out, "max_abs_err", json_real(v->max_abs_err));
  if (out != NULL && isfinite(v->max_rel_err))
    json_object_set_new(out, "max_rel_err", json_real(v->max_rel_err));
  if (out != NULL && v->timing.samples > 0)
    json_object_set_new(out, "timing", timing_json(&v->timing));
  if (out != NULL && v->timing.samples > 0 && v->cpu_median_us > 0) /* NAN compares false */
    json_object_set_new(out, "cpu_median_us", json_real(v->cpu_median_us));
  if (out != NULL && v->baseline.samples > 0)
    json_object_set_new(out, "baseline_timing", timing_json(&v->baseline));
  if (out != NULL && v->trace_note[0])
    json_object_set_new(out, "trace_note", json_string(v->trace_note));
  if (out != NULL && v->traced)
    json_object_set_new(out, "trace",
                        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "kernels",
                                  (json_int_t)v->trace_kernels, "own_kernels",
                                  (json_int_t)v->trace_own_kernels, "own_ns",
                                  (json_int_t)v->trace_own_ns, "other_ns",
                                  (json_int_t)v->trace_other_ns, "late_ns",
                                  (json_int_t)v->trace_late_ns, "dropped",
                                  (json_int_t)v->trace_dropped));
  if (out != NULL && v->traced) {
    int64_t left_out = 0;
    json_t *ks = kernels_json(v->trace_recs, v->n_trace_recs, &left_out);
    if (ks != NULL)
      json_object_set_new(out, "kernels", ks);
    if (left_out > 0)
      json_object_set_new(out, "kernels_dropped", json_integer((json_int_t)left_out));
  }
  if (out != NULL && v->samples != NULL) {
    json_t *a = json_array();
    for (int i = 0; a != NULL && i < v->n_samples; i++)
      json_array_append_new(a, json_real(v->samples[i]));
    if (a != NULL)
      json_object_set_new(out, "samples_us", a);
  }
  if (out != NULL && v->calls != NULL) {
    json_t *a = json_array();
    for (int i = 0; a != NULL && i < v->n_calls; i++)
      json_array_append_new(a, json_real(v->calls[i]));
    if (a != NULL)
      json_object_set_new(out, "calls_us", a);
  }
  if (out != NULL) {
    json_t *ph = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "load", v->t_load, "check",
                           v->t_check, "warmup", v->t_warmup, "samples", v->t_samples, "trace",
                           v->t_trace, "recheck", v->t_recheck, "metrics", v->t_metrics, "fresh",
                           v->t_fresh);
    if (ph != NULL)
      json_object_set_new(out, "phases", ph);
  }
  if (out != NULL && v->metrics_note[0])
    json_object_set_new(out, "metrics_note", json_string(v->metrics_note));
  if (out != NULL && v->has_metrics) {
    json_t *m = json_pack("{s:i}", "passes", v->metric_passes);
    const struct {
      const char *k;
      double x;
    } f[] = {{"duration_ns", v->duration_ns}, {"dram_pct", v->dram_pct}, {"sm_pct", v->sm_pct},
             {"occupancy_pct", v->occupancy_pct}, {"l2_hit_pct", v->l2_hit_pct}};
    for (size_t i = 0; m != NULL && i < sizeof f / sizeof f[0]; i++)
      if (isfinite(f[i].x))
        json_object_set_new(m, f[i].k, json_real(f[i].x));
    json_object_set_new(out, "metrics", m);
  }
  return out;
}

/* After a candidate ran in this process: 1 when the process is no longer as it was before any
 * candidate (integrity.h; `why` says what, or that it cannot be checked), 0 when it is or when
 * it is not checked (a trusted sandbox). */
static int tainted(struct server *sv, char *why, size_t size) {
  if (sv->integrity == NULL)
    return 0;
  struct kb_error err = {0};
  int c = kb__integrity_check(sv->integrity, why, size, &err);
  if (c < 0)
    snprintf(why, size, "its own mappings cannot be checked: %.120s", err.msg);
  return c != 0;
}

/* What a process the candidate changed (`why`) does to its verdict (`status`, `reason` of
 * `size`, `fatal`): an ok candidate is rejected and the process ends after the reply, so the
 * next candidate gets a new one (on a GPU a new CUDA context and its tasks prepared anew;
 * docs/sandbox.md, "Between candidates"). */
static void settle_taint(const char *why, int *status, char *reason, size_t size, int *fatal) {
  if (*status == KB_STATUS_OK) {
    *status = KB_STATUS_REJECTED;
    snprintf(reason, size, "changed the sandbox's own process: %.180s", why);
  }
  *fatal = 1;
}

/* Closes the library the witness loaded, if any. */
static void witness_unload(struct server *sv) {
  if (sv->witness_lib != NULL) {
    dlclose(sv->witness_lib);
    kb__fpenv_restore(); /* its destructors ran (integrity.h) */
  }
  kb_free(sv->witness_path);
  sv->witness_lib = NULL;
  sv->witness_path = NULL;
}

/* An eval request: read field by field in the protocol's order (docs/sandbox.md), then the
 * evaluation and its reply (verdict_json). */
static int eval(struct server *sv, json_t *req) {
  if (sv->trusted)
    return reply_error(sv, "op", "a trusted sandbox evaluates no candidate");
  struct kb__eval_spec e;
  memset(&e, 0, sizeof e);
  const char *key = NULL;
  char field[FIELD_MAX] = "";
  struct kb_error err = {0};
  /* nvbench's defaults where the request leaves a stopping rule out */
  int64_t sets = 0, warmup = 0, min_s = 10, max_s = 0;
  e.noise = 0.005;
  e.max_seconds = 0.5;
  e.budget_s = 1e9;
  int rc = kb__msg_str(req, "", "key", 1, &key, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_str(req, "", "library", 1, &e.library, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_str(req, "", "baseline", 0, &e.baseline, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_int(req, "", "sets", 1, 0, KB_MAX_SETS, &sets, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_int(req, "", "warmup", 1, 0, 1000000, &warmup, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_int(req, "", "min_samples", 0, 0, 10000000, &min_s, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_int(req, "", "max_samples", 1, 0, 10000000, &max_s, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_num(req, "", "noise", 0, 0, 1e9, &e.noise, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_num(req, "", "max_seconds", 0, 0, 1e9, &e.max_seconds, field, sizeof field,
                     &err);
  if (rc == KB_OK)
    rc = kb__msg_num(req, "", "budget_s", 0, 0, 1e9, &e.budget_s, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_bool(req, "", "flush_l2", 1, &e.flush_l2, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_bool(req, "", "recheck", 1, &e.recheck, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_bool(req, "", "trace", 0, &e.trace, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_bool(req, "", "metrics", 0, &e.metrics, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_num(req, "", "metrics_below_us", 0, 0, 1e12, &e.metrics_below_us, field,
                     sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_bool(req, "", "dump_samples", 0, &e.dump_samples, field, sizeof field, &err);
  int64_t chunk = 0;
  if (rc == KB_OK)
    rc = kb__msg_int(req, "", "sample_chunk", 0, 0, 1000000, &chunk, field, sizeof field, &err);
  int64_t fresh_min = KB__FRESH_MIN;
  if (rc == KB_OK)
    rc = kb__msg_int(req, "", "fresh_min", 0, 1, 1000, &fresh_min, field, sizeof field, &err);
  e.fresh_share = KB__FRESH_SHARE;
  if (rc == KB_OK)
    rc = kb__msg_num(req, "", "fresh_share", 0, 0, 1, &e.fresh_share, field, sizeof field, &err);
  if (rc == KB_OK && min_s > max_s && json_object_get(req, "min_samples") != NULL) {
    snprintf(field, sizeof field, "min_samples");
    rc = kb_error_set(&err, KB_EPARSE, "\"min_samples\" must not exceed \"max_samples\"");
  }
  if (min_s > max_s)
    min_s = max_s; /* the default 10 under a smaller cap */
  if (rc)
    return reply_error(sv, field, err.msg);
  int at = find(sv, key);
  if (at < 0)
    return reply_error(sv, "key", "\"key\": no task is prepared under this key (send prepare "
                                  "first)");
  e.sets = (int)sets;
  e.warmup = (int)warmup;
  e.min_samples = (int)min_s;
  e.max_samples = (int)max_s;
  e.sample_chunk = (int)chunk;
  e.fresh_min = (int)fresh_min;
  kb__prep_keep_use(&sv->keep, at);
  /* the library the last witness called is closed first: kept loaded, the code of an earlier
   * candidate could be rewritten by this one (tests/runner/candidates/slows_baseline.c put a
   * jump into its own code in every kb_forward it found), and a later evaluation of the same
   * file would find it loaded, rewritten (crash, by SIGSEGV, before 2026-12-07) */
  witness_unload(sv);
  double t0 = kb_now_mono();
  struct kb__verdict v;
  /* on the host the candidate's library must be gone after its evaluation, unless the sandbox
   * held it already (a seed built from the oracle's very source shares its cached file) */
  int check_gone = sv->integrity != NULL && !sv->d->gpu && !kb__integrity_loaded(e.library);
  kb__evaluate(sv->d, sv->tasks[at], &e, &v);
  double seconds = kb_now_mono() - t0;
  /* every prepared task's oracle, not only this one's: a rewritten one would make the fresh
   * references of the next candidates of its task (the evaluated task's own: kb__evaluate) */
  for (int i = 0; i < KB_PREP_SLOTS; i++)
    if (i != at && sv->tasks[i] != NULL && kb__prepared_oracle_changed(sv->tasks[i]) &&
        v.status == KB_STATUS_OK) {
      v.status = KB_STATUS_REJECTED;
      snprintf(v.reason, sizeof v.reason, "changed the oracle's code of another prepared task "
               "(the library the references of unseen inputs come from)");
      memset(&v.timing, 0, sizeof v.timing);
      memset(&v.baseline, 0, sizeof v.baseline);
    }
  for (int i = 0; i < KB_PREP_SLOTS; i++)
    if (sv->tasks[i] != NULL && kb__prepared_damaged(sv->tasks[i]))
      unprepare(sv, i);
  char why[200];
  int changed = tainted(sv, why, sizeof why);
  if (!changed && check_gone && kb__integrity_loaded(e.library)) {
    snprintf(why, sizeof why, "its library stayed loaded after the sandbox closed it (a GNU "
             "unique symbol or another open of itself): its code stays in the process");
    changed = 1;
  }
  if (changed)
    settle_taint(why, &v.status, v.reason, sizeof v.reason, &v.fatal);
  json_t *out = verdict_json(&v, seconds);
  if (out != NULL && changed)
    json_object_set_new(out, "tainted", json_string(why));
  kb_free(v.trace_recs);
  kb_free(v.samples);
  kb_free(v.calls);
  int broken = reply(sv, out);
  return broken ? 1 : v.fatal ? 3 : 0;
}

/* The library at `path` loaded for the witness, unless it already is (another one is closed
 * first): a first call's one-time cost then falls in the first round only. */
static int witness_load(struct server *sv, const char *path, struct kb_error *err) {
  if (sv->witness_path != NULL && strcmp(sv->witness_path, path) == 0)
    return KB_OK;
  witness_unload(sv);
  sv->witness_lib = kb__load_forward(path, &sv->witness_fn, err);
  if (sv->witness_lib == NULL)
    return err->code ? err->code : KB_ELOAD;
  sv->witness_path = kb_strdup(path);
  return KB_OK;
}

/* kb__witness_spec.positions: asks the runner for call `call`'s position seed under the
 * request's nonce ({"op": "witness_positions", "call": i}) and reads its answer ({"op":
 * "witness_positions", "seed": s}). Returns 0, or -1 with `why` set. */
static int ask_positions(void *ctx, int call, uint64_t *seed, char *why, size_t size) {
  struct server *sv = ctx;
  struct kb_error err = {0};
  char *text = NULL;
  size_t len = 0;
  json_t *ans = NULL;
  int64_t s = 0;
  char field[FIELD_MAX] = "";
  int rc = reply(sv, json_pack("{s:s, s:i}", "op", "witness_positions", "call", call))
               ? KB_EIO
               : KB_OK;
  if (rc == KB_OK && kb__frame_read(sv->in_fd, &text, &len, 0, NULL, &err) != KB__FRAME_OK)
    rc = KB_EIO;
  if (rc == KB_OK)
    rc = kb__msg_parse(text, len, &ans, &err);
  if (rc == KB_OK)
    rc = kb__msg_int(ans, "", "seed", 1, 1, INT64_C(1) << 62, &s, field, sizeof field, &err);
  if (rc == KB_OK) {
    const char *op = json_string_value(json_object_get(ans, "op"));
    const char *nonce = json_string_value(json_object_get(ans, "nonce"));
    if (op == NULL || strcmp(op, "witness_positions") != 0 || nonce == NULL ||
        strcmp(nonce, sv->nonce) != 0)
      rc = kb_error_set(&err, KB_EPARSE, "the runner's answer is not its positions");
  }
  if (rc != KB_OK)
    snprintf(why, size, "%s", err.msg[0] ? err.msg : "the runner cannot be asked");
  *seed = (uint64_t)s;
  json_decref(ans);
  kb_free(text);
  return rc == KB_OK ? 0 : -1;
}

/* The "witness" request (witness_calls.h): the task's fields as in prepare, and "seed",
 * "calls", "flush_l2", "ask_positions" (sampled outputs' positions asked after each call); the confined sandbox "library" (the candidate, its outputs into its
 * witness file); a trusted one "path" and "check" (the confined sandbox's file, compared with
 * the oracle's outputs). Returns 0 to go on, 1 when the channel broke, 3 when the process must
 * end. */
static int witness(struct server *sv, json_t *req) {
  struct kb__prep_spec task;
  struct kb_tensor_spec *in = NULL, *out = NULL;
  struct kb__witness_spec w = {.task = &task, .out_fd = sv->witness_fd};
  char field[FIELD_MAX] = "";
  struct kb_error err = {0};
  int64_t seed = 0, calls = 0;
  int check = 0;
  const char *path = NULL, *library = NULL;
  int rc = read_spec(req, &task, &in, &out, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_int(req, "", "seed", 1, 1, INT64_C(1) << 62, &seed, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_int(req, "", "calls", 1, 1, KB__WITNESS_MAX_CALLS, &calls, field, sizeof field,
                     &err);
  if (rc == KB_OK)
    rc = kb__msg_bool(req, "", "flush_l2", 0, &w.flush_l2, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_str(req, "", "library", !sv->trusted, &library, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_bool(req, "", "check", 0, &check, field, sizeof field, &err);
  int asked = 0;
  if (rc == KB_OK)
    rc = kb__msg_bool(req, "", "ask_positions", 0, &asked, field, sizeof field, &err);
  if (rc == KB_OK)
    rc = kb__msg_str(req, "", "path", check, &path, field, sizeof field, &err);
  if (rc == KB_OK && sv->trusted && library != NULL) {
    snprintf(field, sizeof field, "library");
    rc = kb_error_set(&err, KB_EPARSE, "\"library\": a trusted sandbox loads no candidate");
  }
  if (rc == KB_OK && check && !sv->trusted) {
    snprintf(field, sizeof field, "check");
    rc = kb_error_set(&err, KB_EPARSE, "\"check\": only a trusted sandbox compares outputs");
  }
  if (rc == KB_OK && sv->witness_fd < 0) {
    snprintf(field, sizeof field, "op");
    rc = kb_error_set(&err, KB_EPARSE, "this sandbox has no witness file");
  }
  if (rc) {
    kb_free(in);
    kb_free(out);
    return reply_error(sv, field, err.msg);
  }
  w.seed = (uint64_t)seed;
  w.calls = (int)calls;
  w.check_path = check ? path : NULL;
  w.oracle = sv->trusted;
  if (asked) {
    w.positions = ask_positions;
    w.positions_ctx = sv;
  }
  double t0 = kb_now_mono();
  struct kb__witness_reply r;
  memset(&r, 0, sizeof r);
  const char *lib = sv->trusted ? task.oracle : library;
  if (witness_load(sv, lib, &err) != KB_OK) {
    r.status = sv->trusted ? KB_STATUS_INFRA_ERROR : KB_STATUS_CRASH;
    snprintf(r.reason, sizeof r.reason, "the witness cannot load the %s: %.200s",
             sv->trusted ? "oracle" : "candidate", err.msg);
  } else if ((w.fn = sv->witness_fn, kb__witness_calls(sv->d, &sv->witness_bufs, &w, &r)) ==
                 KB_ENOMEM &&
             !r.fatal) {
    /* the device may be full of prepared tasks: drop them all and try once more */
    for (int i = 0; i < KB_PREP_SLOTS; i++)
      unprepare(sv, i);
    kb__witness_calls(sv->d, &sv->witness_bufs, &w, &r);
  }
  kb_free(in);
  kb_free(out);
  json_t *msg = json_pack("{s:s, s:s, s:s, s:i, s:i, s:I, s:f, s:f, s:f, s:b, s:i}", "op",
                          "witness", "status", kb_status_name(r.status), "reason", r.reason,
                          "calls", r.calls, "sampled", r.sampled, "bytes", (json_int_t)r.bytes,
                          "module_us", r.module_us, "verify_s", r.verify_s, "timed_s",
                          kb_now_mono() - t0, "fatal", r.fatal, "write_errno", r.write_errno);
  int broken = reply(sv, msg);
  return broken ? 1 : r.fatal ? 3 : 0;
}

/* A check request (after the witness's rounds, untimed: the runner's clock around a witness
 * request must hold the candidate's calls only): the process held to its snapshot, as after an
 * evaluation; a changed one is the candidate's rejection and the process ends after the
 * reply. */
static int check(struct server *sv) {
  char why[200] = "";
  int status = KB_STATUS_OK, fatal = 0;
  char reason[256] = "";
  int changed = !sv->trusted && tainted(sv, why, sizeof why);
  if (changed)
    settle_taint(why, &status, reason, sizeof reason, &fatal);
  json_t *msg = json_pack("{s:s, s:s, s:s, s:b}", "op", "check", "status",
                          kb_status_name(status), "reason", reason, "fatal", fatal);
  if (msg != NULL && changed)
    json_object_set_new(msg, "tainted", json_string(why));
  int broken = reply(sv, msg);
  return broken ? 1 : fatal ? 3 : 0;
}

int kb__sandbox_serve(struct kb__dev *d, const struct kb__serve_opts *o) {
  struct server sv;
  memset(&sv, 0, sizeof sv);
  kb__prep_keep_init(&sv.keep);
  sv.d = d;
  sv.ordinal = o->ordinal;
  sv.out_fd = o->out_fd;
  sv.in_fd = o->in_fd;
  sv.trusted = o->trusted;
  sv.witness_fd = o->witness_fd;
  int in_fd = o->in_fd;
  int rc = 0;
  if (o->maps_fd >= 0) { /* before any candidate: what integrity.h holds it to */
    struct kb_error ierr = {0};
    if (kb__integrity_new(o->maps_fd, !d->gpu, &sv.integrity, &ierr) != KB_OK ||
        kb__integrity_snapshot(sv.integrity, &ierr) != KB_OK) {
      fprintf(stderr, "kb-sandbox: its own process cannot be checked between candidates: %s\n",
              ierr.msg);
      kb__integrity_free(sv.integrity);
      sv.integrity = NULL;
    }
  }
  for (;;) {
    char *text = NULL;
    size_t len = 0;
    struct kb_error err = {0};
    int st = kb__frame_read(in_fd, &text, &len, 0, NULL, &err);
    if (st == KB__FRAME_EOF)
      break;
    if (st == KB__FRAME_TOO_LARGE) {
      /* the rest of the stream cannot be framed any more */
      reply_error(&sv, "", err.msg);
      rc = 1;
      break;
    }
    if (st != KB__FRAME_OK) {
      rc = 1;
      break;
    }
    json_t *req = NULL;
    int step = 0;
    sv.nonce[0] = '\0';
    if (kb__msg_parse(text, len, &req, &err) != KB_OK) {
      step = reply_error(&sv, json_is_object(req) ? "op" : "", err.msg);
    } else {
      const char *op = json_string_value(json_object_get(req, "op"));
      const char *nonce = json_string_value(json_object_get(req, "nonce"));
      if (nonce != NULL && snprintf(sv.nonce, sizeof sv.nonce, "%s", nonce) >= (int)sizeof sv.nonce)
        sv.nonce[0] = '\0'; /* longer than the runner's: not echoed, the runner says so */
      if (strcmp(op, "witness") != 0 && strcmp(op, "check") != 0) { /* the witness is over:
                                        its device memory is the next evaluation's */
        kb__witness_bufs_free(d, sv.witness_bufs);
        sv.witness_bufs = NULL;
      }
      if (strcmp(op, "hello") == 0)
        step = hello(&sv);
      else if (strcmp(op, "prepare") == 0)
        step = prepare(&sv, req);
      else if (strcmp(op, "eval") == 0)
        step = eval(&sv, req);
      else if (strcmp(op, "witness") == 0)
        step = witness(&sv, req);
      else if (strcmp(op, "check") == 0)
        step = check(&sv);
      else if (strcmp(op, "quit") == 0) {
        reply(&sv, json_pack("{s:s}", "op", "bye"));
        step = 2;
      } else {
        char why[160];
        snprintf(why, sizeof why, "\"op\": unknown request \"%.64s\"", op);
        step = reply_error(&sv, "op", why);
      }
    }
    json_decref(req);
    kb_free(text);
    if (step == 2)
      break;
    if (step) {
      rc = step;
      break;
    }
  }
  for (int i = 0; i < KB_PREP_SLOTS; i++)
    if (rc != 3) /* after a sticky error the device frees nothing; the process ends anyway */
      kb__prepared_free(d, sv.tasks[i]);
  kb__integrity_free(sv.integrity);
  if (rc != 3)
    kb__witness_bufs_free(d, sv.witness_bufs);
  if (rc != 3 && sv.witness_lib != NULL)
    dlclose(sv.witness_lib);
  kb_free(sv.witness_path);
  return rc;
}
