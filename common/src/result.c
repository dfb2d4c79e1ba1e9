/* Evaluation results and their JSON form (see kb/result.h and schemas/result.schema.json; keep
 * the checks here and the schema agreeing).
 */
#include "kb/result.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/campaign.h"
#include "kb/error.h"
#include "kb/jsonfile.h"

#define RESULT_SCHEMA "kernelbrain.result/1"
#define ATTEMPT_MAX 1000

static const char *const status_names[] = {
#define KB_STATUS_NAME(n, s) s,
    KB_STATUS_MAP(KB_STATUS_NAME)
#undef KB_STATUS_NAME
        NULL};
static const char *const backend_names[] = {"host", "cuda", NULL};

const char *kb_status_name(int status) {
  if (status < 0 || status >= KB_STATUS_COUNT)
    return "unknown";
  return status_names[status];
}

int kb_status_from_name(const char *name) {
  for (int i = 0; i < KB_STATUS_COUNT; i++)
    if (strcmp(name, status_names[i]) == 0)
      return i;
  return -1;
}

void kb_result_keep_torch(const struct kb_result *r, double *eager_us, double *compile_us,
                          int *tier) {
  if (isfinite(r->torch_eager_us) && r->torch_eager_us > 0) {
    *eager_us = r->torch_eager_us;
    *tier = r->tier;
  }
  if (isfinite(r->torch_compile_us) && r->torch_compile_us > 0) {
    *compile_us = r->torch_compile_us;
    *tier = r->tier;
  }
}

void kb_result_init(struct kb_result *r) {
  memset(r, 0, sizeof *r);
  r->tier = -1;
  r->attempt = -1;
  r->backend = -1;
  r->status = -1;
  r->compile_s = NAN;
  r->registers = -1;
  r->spills = -1;
  r->shared_bytes = -1;
  r->max_abs_err = NAN;
  r->max_rel_err = NAN;
  r->timing.median_us = NAN;
  r->timing.p10_us = NAN;
  r->timing.p90_us = NAN;
  r->timing.mean_us = NAN;
  r->timing.min_us = NAN;
  r->timing.noise = NAN;
  r->baseline_median_us = NAN;
  r->same_run_speedup = NAN;
  r->torch_eager_us = NAN;
  r->torch_compile_us = NAN;
  r->kernel_us = NAN;
  r->dram_pct = NAN;
  r->sm_pct = NAN;
  r->occupancy_pct = NAN;
  r->l2_hit_pct = NAN;
  r->trace = (struct kb_trace_summary){-1, -1, -1, -1, -1, -1};
  r->started = NAN;
  r->finished = NAN;
}

void kb_result_release(struct kb_result *r) {
  if (r == NULL)
    return;
  kb_free(r->compile_log);
  r->compile_log = NULL;
  kb_free(r->kernels);
  r->kernels = NULL;
  r->n_kernels = 0;
}

/* 1 when `s` is `min`..`max` printable ASCII characters. */
static int printable(const char *s, size_t min, size_t max) {
  size_t n = strlen(s);
  if (n < min || n > max)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] > 0x7E)
      return 0;
  return 1;
}

/* --- decoding ------------------------------------------------------------------------------ */

struct ctx {
  const struct kb_jsonfile *f; /* the document (borrowed) */
  struct kb_result *r;         /* being filled (borrowed) */
  struct kb_error *err;        /* first error goes here (borrowed) */
};

/* A required string field of 1..63 id characters, copied into `out` (KB_ID_MAX bytes). */
/* A required string of `min`..`size`-1 printable ASCII characters, copied into `out`. */
static int get_printable(struct ctx *x, json_t *obj, const char *key, size_t min, char *out,
                         size_t size) {
  const char *s = NULL;
  int rc = kb_json_get_string(x->f, obj, "", key, 1, &s, x->err);
  if (rc)
    return rc;
  if (!printable(s, min, size - 1))
    return kb_jsonfile_fail(x->f, x->err, key,
                            "\"%s\" must be %zu to %zu printable ascii characters", key, min,
                            size - 1);
  snprintf(out, size, "%s", s);
  return KB_OK;
}

/* An optional int field in 0..INT_MAX stored into an int. */
static int get_count(struct ctx *x, json_t *obj, const char *path, const char *key, int required,
                     int64_t min, int64_t max, int *out) {
  int64_t v = *out;
  int rc = kb_json_get_int(x->f, obj, path, key, required, min, max, &v, x->err);
  if (rc == KB_OK)
    *out = (int)v;
  return rc;
}

static const char *const compile_fields[] = {"seconds",      "cached", "registers", "spills",
                                             "shared_bytes", "log",    NULL};
static const char *const check_fields[] = {"sets", "max_abs_err", "max_rel_err", NULL};
static const char *const timing_fields[] = {"median_us", "p10_us", "p90_us",  "mean_us", "min_us",
                                            "noise",     "samples", "warmup",
                                            "baseline_median_us", "same_run_speedup",
                                            "torch_eager_us", "torch_compile_us", NULL};
static const char *const profile_fields[] = {"kernel_us", "dram_pct", "sm_pct", "occupancy_pct",
                                             "l2_hit_pct", "trace", "kernels", "kernels_dropped",
                                             NULL};
static const char *const trace_fields[] = {"kernels", "own_kernels", "own_ns", "other_ns",
                                           "late_ns", "dropped", NULL};
static const char *const kernel_fields[] = {"name",         "grid",     "block",  "registers",
                                            "static_smem",  "dynamic_smem", "start_ns",
                                            "end_ns",       "stream",   "correlation", NULL};
static const char *const result_fields[] = {
    "schema",  "campaign", "task",    "candidate", "tier",     "tier_name", "attempt",
    "charge_id", "runner", "backend", "device",    "confinement", "status",   "reason",
    "compile",
    "check",   "timing",   "cost_ms", "started",   "finished", "profile", NULL};

static int parse_compile(struct ctx *x, json_t *root) {
  const struct kb_jsonfile *f = x->f;
  struct kb_result *r = x->r;
  json_t *o = NULL;
  int rc = kb_json_get_object(f, root, "", "compile", 0, &o, x->err);
  if (rc || o == NULL)
    return rc;
  rc = kb_jsonfile_check_unknown(f, o, "compile", compile_fields, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, "compile", "seconds", 0, 0, DBL_MAX, &r->compile_s, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_bool(f, o, "compile", "cached", 0, &r->compile_cached, x->err);
  if (rc == KB_OK)
    rc = get_count(x, o, "compile", "registers", 0, 0, INT_MAX, &r->registers);
  if (rc == KB_OK)
    rc = get_count(x, o, "compile", "spills", 0, 0, INT_MAX, &r->spills);
  if (rc == KB_OK)
    rc = get_count(x, o, "compile", "shared_bytes", 0, 0, INT_MAX, &r->shared_bytes);
  const char *log = NULL;
  if (rc == KB_OK)
    rc = kb_json_get_string(f, o, "compile", "log", 0, &log, x->err);
  if (rc == KB_OK && log != NULL) {
    r->compile_log = kb_strdup(log);
    if (r->compile_log == NULL)
      rc = kb_error_set(x->err, KB_ENOMEM, "%s: out of memory", f->name);
  }
  return rc;
}

static int parse_check(struct ctx *x, json_t *root) {
  const struct kb_jsonfile *f = x->f;
  struct kb_result *r = x->r;
  json_t *o = NULL;
  int rc = kb_json_get_object(f, root, "", "check", 0, &o, x->err);
  if (rc || o == NULL)
    return rc;
  rc = kb_jsonfile_check_unknown(f, o, "check", check_fields, x->err);
  if (rc == KB_OK)
    rc = get_count(x, o, "check", "sets", 1, 0, KB_MAX_SETS, &r->sets_checked);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, "check", "max_abs_err", 0, 0, DBL_MAX, &r->max_abs_err,
                            x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, "check", "max_rel_err", 0, 0, DBL_MAX, &r->max_rel_err,
                            x->err);
  return rc;
}

static int parse_timing(struct ctx *x, json_t *root) {
  const struct kb_jsonfile *f = x->f;
  struct kb_timing *t = &x->r->timing;
  json_t *o = NULL;
  int rc = kb_json_get_object(f, root, "", "timing", 0, &o, x->err);
  if (rc || o == NULL)
    return rc;
  rc = kb_jsonfile_check_unknown(f, o, "timing", timing_fields, x->err);
  if (rc == KB_OK)
    rc = get_count(x, o, "timing", "samples", 1, 1, INT_MAX, &t->samples);
  if (rc == KB_OK)
    rc = get_count(x, o, "timing", "warmup", 1, 0, INT_MAX, &t->warmup);
  struct {
    const char *key;
    double *out;
  } nums[] = {{"median_us", &t->median_us}, {"p10_us", &t->p10_us}, {"p90_us", &t->p90_us},
              {"mean_us", &t->mean_us},     {"min_us", &t->min_us}, {"noise", &t->noise},
              {"baseline_median_us", &x->r->baseline_median_us},
              {"same_run_speedup", &x->r->same_run_speedup},
              {"torch_eager_us", &x->r->torch_eager_us},
              {"torch_compile_us", &x->r->torch_compile_us}};
  for (size_t i = 0; rc == KB_OK && i < sizeof nums / sizeof nums[0]; i++)
    rc = kb_json_get_number(f, o, "timing", nums[i].key, 0, 0, DBL_MAX, nums[i].out, x->err);
  return rc;
}

static int parse_trace(struct ctx *x, json_t *profile, const char *where) {
  const struct kb_jsonfile *f = x->f;
  struct kb_trace_summary *t = &x->r->trace;
  json_t *o = NULL;
  char path[KB_JSON_PATH_MAX];
  kb_json_path(path, sizeof path, where, "trace");
  int rc = kb_json_get_object(f, profile, where, "trace", 0, &o, x->err);
  if (rc || o == NULL)
    return rc;
  rc = kb_jsonfile_check_unknown(f, o, path, trace_fields, x->err);
  struct {
    const char *key;
    int64_t *out;
  } nums[] = {{"kernels", &t->kernels},   {"own_kernels", &t->own_kernels},
              {"own_ns", &t->own_ns},     {"other_ns", &t->other_ns},
              {"late_ns", &t->late_ns},   {"dropped", &t->dropped}};
  for (size_t i = 0; rc == KB_OK && i < sizeof nums / sizeof nums[0]; i++)
    rc = kb_json_get_int(f, o, path, nums[i].key, 1, 0, INT64_MAX, nums[i].out, x->err);
  return rc;
}

/* Reads a [x, y, z] array of non-negative ints (each at most INT_MAX) at `key` of `o`. */
static int get_dim3(struct ctx *x, json_t *o, const char *path, const char *key, int out[3]) {
  json_t *a = json_object_get(o, key);
  char at[KB_JSON_PATH_MAX];
  kb_json_path(at, sizeof at, path, key);
  path = at;
  if (!json_is_array(a) || json_array_size(a) != 3)
    return kb_jsonfile_fail(x->f, x->err, path, "\"%s\" must be an array of 3 integers", key);
  for (size_t i = 0; i < 3; i++) {
    json_t *v = json_array_get(a, i);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT_MAX)
      return kb_jsonfile_fail(x->f, x->err, path,
                              "\"%s\" must be an array of 3 integers in 0..%d", key, INT_MAX);
    out[i] = (int)json_integer_value(v);
  }
  return KB_OK;
}

/* One kernel record at `path` ("profile.kernels[3]"). */
static int parse_kernel(struct ctx *x, json_t *o, const char *path, struct kb_kernel_rec *k) {
  const struct kb_jsonfile *f = x->f;
  if (!json_is_object(o))
    return kb_jsonfile_fail(f, x->err, path, "\"%s\" must be an object", path);
  int rc = kb_jsonfile_check_unknown(f, o, path, kernel_fields, x->err);
  const char *name = NULL;
  if (rc == KB_OK)
    rc = kb_json_get_string(f, o, path, "name", 1, &name, x->err);
  if (rc == KB_OK)
    kb_utf8_copy(k->name, sizeof k->name, name, SIZE_MAX);
  if (rc == KB_OK)
    rc = get_dim3(x, o, path, "grid", k->grid);
  if (rc == KB_OK)
    rc = get_dim3(x, o, path, "block", k->block);
  if (rc == KB_OK)
    rc = get_count(x, o, path, "registers", 1, 0, INT_MAX, &k->registers);
  if (rc == KB_OK)
    rc = get_count(x, o, path, "static_smem", 1, 0, INT_MAX, &k->static_smem);
  if (rc == KB_OK)
    rc = get_count(x, o, path, "dynamic_smem", 1, 0, INT_MAX, &k->dynamic_smem);
  struct {
    const char *key;
    int64_t *out;
  } nums[] = {{"start_ns", &k->start_ns}, {"end_ns", &k->end_ns}, {"stream", &k->stream},
              {"correlation", &k->correlation}};
  for (size_t i = 0; rc == KB_OK && i < sizeof nums / sizeof nums[0]; i++)
    rc = kb_json_get_int(f, o, path, nums[i].key, 1, 0, INT64_MAX, nums[i].out, x->err);
  return rc;
}

/* "kernels" of `profile`: replaces r->kernels only when the whole array parsed. */
static int parse_kernels(struct ctx *x, json_t *profile, const char *where) {
  struct kb_result *r = x->r;
  char path[KB_JSON_PATH_MAX];
  kb_json_path(path, sizeof path, where, "kernels");
  int rc = kb_json_get_int(x->f, profile, where, "kernels_dropped", 0, 0, INT64_MAX,
                           &r->kernels_dropped, x->err);
  json_t *a = json_object_get(profile, "kernels");
  if (rc || a == NULL)
    return rc;
  if (!json_is_array(a) || json_array_size(a) > KB_KERNELS_MAX)
    return kb_jsonfile_fail(x->f, x->err, path, "\"%s\" must be an array of at most %d records",
                            path, KB_KERNELS_MAX);
  size_t n = json_array_size(a);
  struct kb_kernel_rec *k = n > 0 ? kb_calloc(n, sizeof *k) : NULL;
  if (n > 0 && k == NULL)
    return kb_error_set(x->err, KB_ENOMEM, "%s: out of memory", x->f->name);
  for (size_t i = 0; rc == KB_OK && i < n; i++) {
    char at[KB_JSON_PATH_MAX];
    kb_json_index_path(at, sizeof at, path, i);
    rc = parse_kernel(x, json_array_get(a, i), at, &k[i]);
  }
  if (rc) {
    kb_free(k);
    return rc;
  }
  kb_free(r->kernels);
  r->kernels = k;
  r->n_kernels = (int)n;
  return KB_OK;
}

/* The members of a "profile" object `o` (at `where`) into x->r. */
static int parse_profile_members(struct ctx *x, json_t *o, const char *where) {
  const struct kb_jsonfile *f = x->f;
  struct kb_result *r = x->r;
  int rc = kb_jsonfile_check_unknown(f, o, where, profile_fields, x->err);
  struct {
    const char *key;
    double *out;
  } nums[] = {{"kernel_us", &r->kernel_us},         {"dram_pct", &r->dram_pct},
              {"sm_pct", &r->sm_pct},               {"occupancy_pct", &r->occupancy_pct},
              {"l2_hit_pct", &r->l2_hit_pct}};
  for (size_t i = 0; rc == KB_OK && i < sizeof nums / sizeof nums[0]; i++)
    rc = kb_json_get_number(f, o, where, nums[i].key, 0, 0, DBL_MAX, nums[i].out, x->err);
  if (rc == KB_OK)
    rc = parse_trace(x, o, where);
  if (rc == KB_OK)
    rc = parse_kernels(x, o, where);
  return rc;
}

static int parse_profile(struct ctx *x, json_t *root) {
  json_t *o = NULL;
  int rc = kb_json_get_object(x->f, root, "", "profile", 0, &o, x->err);
  if (rc || o == NULL)
    return rc;
  return parse_profile_members(x, o, "profile");
}

static int parse_result(struct ctx *x) {
  const struct kb_jsonfile *f = x->f;
  struct kb_result *r = x->r;
  json_t *root = f->root;
  int rc = kb_jsonfile_check_document(f, "a result", result_fields, RESULT_SCHEMA, x->err);
  if (rc == KB_OK)
    rc = kb_id_get(f, root, "", "campaign", r->campaign, x->err);
  if (rc == KB_OK)
    rc = kb_id_get(f, root, "", "task", r->task, x->err);
  const char *s = NULL;
  if (rc == KB_OK)
    rc = kb_json_get_string(f, root, "", "candidate", 1, &s, x->err);
  if (rc)
    return rc;
  if (!kb_candidate_id_valid(s))
    return kb_jsonfile_fail(f, x->err, "candidate", "\"candidate\" must be 64 lowercase hex digits");
  snprintf(r->candidate, sizeof r->candidate, "%s", s);
  rc = get_count(x, root, "", "tier", 1, 0, KB_MAX_TIERS - 1, &r->tier);
  if (rc == KB_OK)
    rc = kb_id_get(f, root, "", "tier_name", r->tier_name, x->err);
  if (rc == KB_OK)
    rc = get_count(x, root, "", "attempt", 1, 1, ATTEMPT_MAX, &r->attempt);
  if (rc == KB_OK)
    rc = get_printable(x, root, "charge_id", 1, r->charge_id, sizeof r->charge_id);
  if (rc == KB_OK)
    rc = get_printable(x, root, "runner", 1, r->runner, sizeof r->runner);
  if (rc == KB_OK)
    rc = kb_json_get_enum(f, root, "", "backend", 1, backend_names, &r->backend, x->err);
  if (rc == KB_OK)
    rc = get_printable(x, root, "device", 0, r->device, sizeof r->device);
  if (rc == KB_OK && json_object_get(root, "confinement") != NULL) {
    static const char *const levels[] = {"none", "seccomp", "seccomp+landlock", NULL};
    int level = 0;
    rc = kb_json_get_enum(f, root, "", "confinement", 1, levels, &level, x->err);
    if (rc == KB_OK)
      snprintf(r->confinement, sizeof r->confinement, "%s", levels[level]);
  }
  if (rc == KB_OK)
    rc = kb_json_get_enum(f, root, "", "status", 1, status_names, &r->status, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_string(f, root, "", "reason", 1, &s, x->err);
  if (rc)
    return rc;
  /* free text: keep what fits, cut at a character boundary */
  kb_utf8_copy(r->reason, sizeof r->reason, s, SIZE_MAX);
  rc = parse_compile(x, root);
  if (rc == KB_OK)
    rc = parse_check(x, root);
  if (rc == KB_OK)
    rc = parse_timing(x, root);
  if (rc == KB_OK)
    rc = parse_profile(x, root);
  if (rc == KB_OK)
    rc = kb_json_get_int(f, root, "", "cost_ms", 1, 0, INT64_MAX, &r->cost_ms, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, root, "", "started", 0, 0, DBL_MAX, &r->started, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, root, "", "finished", 0, 0, DBL_MAX, &r->finished, x->err);
  return rc;
}

int kb_result_from_json(const char *text, const char *where, struct kb_result *r,
                        struct kb_error *err) {
  kb_result_init(r);
  struct kb_jsonfile f;
  int rc = kb_jsonfile_parse(&f, where, text, err);
  if (rc)
    return rc;
  struct ctx x = {.f = &f, .r = r, .err = err};
  rc = parse_result(&x);
  kb_jsonfile_release(&f);
  if (rc) {
    kb_result_release(r);
    kb_result_init(r);
  }
  return rc;
}

int kb_result_profile_from_json(struct kb_result *r, const char *text, const char *where,
                                struct kb_error *err) {
  struct kb_jsonfile f;
  int rc = kb_jsonfile_parse(&f, where, text, err);
  if (rc)
    return rc;
  /* parse into a copy, so that a failure leaves `r` as it was */
  struct kb_result tmp = *r;
  tmp.kernels = NULL;
  tmp.n_kernels = 0;
  struct ctx x = {.f = &f, .r = &tmp, .err = err};
  int has_kernels = 0;
  if (!json_is_object(f.root)) {
    rc = kb_jsonfile_fail(&f, err, "", "a profile must be a JSON object");
  } else {
    has_kernels = json_object_get(f.root, "kernels") != NULL;
    rc = parse_profile_members(&x, f.root, "");
  }
  kb_jsonfile_release(&f);
  if (rc) {
    kb_free(tmp.kernels);
    return rc;
  }
  if (!has_kernels) {
    tmp.kernels = r->kernels; /* absent: keep the old records */
    tmp.n_kernels = r->n_kernels;
  } else {
    kb_free(r->kernels);
  }
  *r = tmp;
  return KB_OK;
}

/* --- encoding ------------------------------------------------------------------------------ */

/* Sets key to a real when `v` is known (finite), else leaves it out. Returns 0 or -1. */
static int set_real(json_t *o, const char *key, double v) {
  if (!isfinite(v))
    return 0;
  return json_object_set_new(o, key, json_real(v));
}

/* Sets key to an integer when `v` is known (>= 0), else leaves it out. */
static int set_count(json_t *o, const char *key, int v) {
  if (v < 0)
    return 0;
  return json_object_set_new(o, key, json_integer(v));
}

/* Sets key to free text made valid UTF-8 (a runner may have cut a character in half). */
static int set_text(json_t *o, const char *key, const char *s) {
  char *clean = kb_json_utf8_sanitize(s);
  if (clean == NULL)
    return -1;
  int rc = json_object_set_new(o, key, json_string(clean));
  kb_free(clean);
  return rc;
}

/* The trace summary as JSON (new reference; NULL when out of memory). Negative counts (unknown)
 * are sent as 0. */
static json_t *encode_trace(const struct kb_trace_summary *t) {
  const int64_t v[] = {t->kernels, t->own_kernels, t->own_ns, t->other_ns, t->late_ns,
                       t->dropped};
  json_t *o = json_object();
  for (size_t i = 0; o != NULL && trace_fields[i] != NULL; i++)
    if (json_object_set_new(o, trace_fields[i], json_integer(v[i] > 0 ? v[i] : 0)) != 0) {
      json_decref(o);
      return NULL;
    }
  return o;
}

static json_t *dim3(const int d[3]) {
  return json_pack("[i, i, i]", d[0], d[1], d[2]);
}

/* Kernel records as a JSON array (new reference; NULL when out of memory). */
static json_t *encode_kernels(const struct kb_kernel_rec *k, int n) {
  json_t *a = json_array();
  for (int i = 0; a != NULL && i < n; i++) {
    char *name = kb_json_utf8_sanitize(k[i].name);
    json_t *o = name == NULL ? NULL
                : json_pack("{s:s, s:o, s:o, s:i, s:i, s:i, s:I, s:I, s:I, s:I}", "name", name,
                            "grid", dim3(k[i].grid), "block", dim3(k[i].block), "registers",
                            k[i].registers, "static_smem", k[i].static_smem, "dynamic_smem",
                            k[i].dynamic_smem, "start_ns", (json_int_t)k[i].start_ns, "end_ns",
                            (json_int_t)k[i].end_ns, "stream", (json_int_t)k[i].stream,
                            "correlation", (json_int_t)k[i].correlation);
    kb_free(name);
    if (o == NULL || json_array_append_new(a, o) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

/* The optional parts of a result's JSON, each attached to `o` only when it has something to
 * say. Each part is filled before it is attached: a failed set frees the value it was given. */
/* "compile": time, cache, registers, spills, shared memory, log; returns nonzero when a set failed. */
static int encode_compile(json_t *o, const struct kb_result *r) {
  int bad = 0;
  int has_compile = isfinite(r->compile_s) || r->compile_cached || r->registers >= 0 ||
                    r->spills >= 0 || r->shared_bytes >= 0 || r->compile_log != NULL;
  if (has_compile) {
    json_t *c = json_object();
    if (c != NULL) {
      bad |= set_real(c, "seconds", r->compile_s);
      bad |= json_object_set_new(c, "cached", json_boolean(r->compile_cached));
      bad |= set_count(c, "registers", r->registers);
      bad |= set_count(c, "spills", r->spills);
      bad |= set_count(c, "shared_bytes", r->shared_bytes);
      if (r->compile_log != NULL)
        bad |= set_text(c, "log", r->compile_log);
    }
    bad |= json_object_set_new(o, "compile", c);
  }
  return bad;
}

/* "check": sets compared and the largest errors; returns nonzero when a set failed. */
static int encode_check(json_t *o, const struct kb_result *r) {
  int bad = 0;
  if (r->sets_checked != 0 || isfinite(r->max_abs_err) || isfinite(r->max_rel_err)) {
    json_t *c = json_object();
    if (c != NULL) {
      bad |= json_object_set_new(c, "sets", json_integer(r->sets_checked));
      bad |= set_real(c, "max_abs_err", r->max_abs_err);
      bad |= set_real(c, "max_rel_err", r->max_rel_err);
    }
    bad |= json_object_set_new(o, "check", c);
  }
  return bad;
}

/* "timing": the samples' summary and the comparisons; returns nonzero when a set failed. */
static int encode_timing(json_t *o, const struct kb_result *r) {
  int bad = 0;
  if (r->timing.samples != 0) {
    const struct kb_timing *t = &r->timing;
    json_t *c = json_object();
    if (c != NULL) {
      bad |= set_real(c, "median_us", t->median_us);
      bad |= set_real(c, "p10_us", t->p10_us);
      bad |= set_real(c, "p90_us", t->p90_us);
      bad |= set_real(c, "mean_us", t->mean_us);
      bad |= set_real(c, "min_us", t->min_us);
      bad |= set_real(c, "noise", t->noise);
      bad |= json_object_set_new(c, "samples", json_integer(t->samples));
      bad |= json_object_set_new(c, "warmup", json_integer(t->warmup));
      bad |= set_real(c, "baseline_median_us", r->baseline_median_us);
      bad |= set_real(c, "same_run_speedup", r->same_run_speedup);
      bad |= set_real(c, "torch_eager_us", r->torch_eager_us);
      bad |= set_real(c, "torch_compile_us", r->torch_compile_us);
    }
    bad |= json_object_set_new(o, "timing", c);
  }
  return bad;
}

/* "profile": counters, the trace and the kernel records; returns nonzero when a set failed. */
static int encode_profile(json_t *o, const struct kb_result *r) {
  int bad = 0;
  if (isfinite(r->kernel_us) || isfinite(r->dram_pct) || isfinite(r->sm_pct) ||
      isfinite(r->occupancy_pct) || isfinite(r->l2_hit_pct) || r->trace.kernels >= 0 ||
      r->n_kernels > 0 || r->kernels_dropped > 0) {
    json_t *c = json_object();
    if (c != NULL) {
      bad |= set_real(c, "kernel_us", r->kernel_us);
      bad |= set_real(c, "dram_pct", r->dram_pct);
      bad |= set_real(c, "sm_pct", r->sm_pct);
      bad |= set_real(c, "occupancy_pct", r->occupancy_pct);
      bad |= set_real(c, "l2_hit_pct", r->l2_hit_pct);
      if (r->trace.kernels >= 0)
        bad |= json_object_set_new(c, "trace", encode_trace(&r->trace));
      if (r->n_kernels > 0)
        bad |= json_object_set_new(c, "kernels", encode_kernels(r->kernels, r->n_kernels));
      if (r->kernels_dropped > 0)
        bad |= json_object_set_new(c, "kernels_dropped", json_integer(r->kernels_dropped));
    }
    bad |= json_object_set_new(o, "profile", c);
  }
  return bad;
}

static json_t *encode(const struct kb_result *r) {
  json_t *o = json_object();
  if (o == NULL)
    return NULL;
  int bad = 0;
  bad |= json_object_set_new(o, "schema", json_string(RESULT_SCHEMA));
  bad |= set_text(o, "campaign", r->campaign);
  bad |= set_text(o, "task", r->task);
  bad |= set_text(o, "candidate", r->candidate);
  bad |= json_object_set_new(o, "tier", json_integer(r->tier));
  bad |= set_text(o, "tier_name", r->tier_name);
  bad |= json_object_set_new(o, "attempt", json_integer(r->attempt));
  bad |= set_text(o, "charge_id", r->charge_id);
  bad |= set_text(o, "runner", r->runner);
  bad |= json_object_set_new(o, "backend", json_string(kb_backend_name(r->backend)
                                                           ? kb_backend_name(r->backend)
                                                           : "unknown"));
  bad |= set_text(o, "device", r->device);
  if (r->confinement[0])
    bad |= set_text(o, "confinement", r->confinement);
  bad |= json_object_set_new(o, "status", json_string(kb_status_name(r->status)));
  bad |= set_text(o, "reason", r->reason);
  bad |= encode_compile(o, r);
  bad |= encode_check(o, r);
  bad |= encode_timing(o, r);
  bad |= encode_profile(o, r);
  bad |= json_object_set_new(o, "cost_ms", json_integer(r->cost_ms));
  bad |= set_real(o, "started", r->started);
  bad |= set_real(o, "finished", r->finished);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* kb_result_from_json as kb_json_dump_checked calls it. */
static int decodes(const char *text, struct kb_error *why) {
  struct kb_result check;
  int rc = kb_result_from_json(text, "result", &check, why);
  kb_result_release(&check);
  return rc;
}

int kb_result_to_json(const struct kb_result *r, char **out, struct kb_error *err) {
  *out = NULL;
  json_t *o = encode(r);
  if (o == NULL)
    return kb_error_set(err, KB_ENOMEM, "result of %s: out of memory", r->candidate);
  char what[sizeof r->candidate + 16];
  snprintf(what, sizeof what, "result of %s", r->candidate);
  return kb_json_dump_checked(o, decodes, what, out, err);
}
