/* Task bundles: loading and validating task.json (see kb/task.h, schemas/task.schema.json).
 * Every check here has its twin in the schema, except the ones JSON Schema cannot say (unique
 * names, the baseline naming a seed, low < high, referenced files existing); keep them agreeing.
 */
#include "kb/task.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/candidate.h"
#include "kb/error.h"
#include "kb/jsonfile.h"

#define TASK_SCHEMA "kernelbrain.task/1"
#define DIM_MAX 2147483647 /* largest extent of one dimension */

static const char *const dtype_names[] = {"f32", "f16", "bf16", "f64", "i32",
                                          "i64", "u8",  "bool", NULL};
static const char *const backend_names[] = {"host", "cuda", NULL};
static const char *const oracle_names[] = {"c", "cuda", "pytorch", "data", NULL};
static const char *const dist_names[] = {"uniform", "normal", "integers", NULL};

int64_t kb_tensor_spec_numel(const struct kb_tensor_spec *s) {
  int64_t n = 1;
  for (int d = 0; d < s->ndim; d++)
    n *= s->shape[d];
  return n;
}

const char *kb_dtype_name(int dtype) {
  if (dtype < 0 || dtype >= (int)(sizeof dtype_names / sizeof dtype_names[0]) - 1)
    return NULL;
  return dtype_names[dtype];
}

int kb_dtype_from_name(const char *name) {
  for (int i = 0; dtype_names[i] != NULL; i++)
    if (strcmp(name, dtype_names[i]) == 0)
      return i;
  return -1;
}

const char *kb_backend_name(int backend) {
  if (backend < 0 || backend >= (int)(sizeof backend_names / sizeof backend_names[0]) - 1)
    return NULL;
  return backend_names[backend];
}

int kb_backend_from_name(const char *name) {
  for (int i = 0; backend_names[i] != NULL; i++)
    if (strcmp(name, backend_names[i]) == 0)
      return i;
  return -1;
}

int kb_id_valid(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= KB_ID_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (i > 0)
      ok = ok || c == '_' || c == '.' || c == '-';
    if (!ok)
      return 0;
  }
  return 1;
}

int kb_id_get(const struct kb_jsonfile *f, json_t *obj, const char *path, const char *key,
              char *out, struct kb_error *err) {
  const char *s = NULL;
  int rc = kb_json_get_string(f, obj, path, key, 1, &s, err);
  if (rc)
    return rc;
  if (!kb_id_valid(s)) {
    char full[KB_JSON_PATH_MAX];
    kb_json_path(full, sizeof full, path, key);
    return kb_jsonfile_fail(f, err, full,
                            "\"%s\" must be 1 to 63 characters of a-z, 0-9, \"_\", \".\", \"-\", "
                            "starting with a letter or digit",
                            full);
  }
  snprintf(out, KB_ID_MAX, "%s", s);
  return KB_OK;
}

char *kb_path_resolve(const char *base, const char *rel) {
  struct kb_buf joined;
  kb_buf_init(&joined);
  int rc = KB_OK;
  if (rel[0] != '/') {
    if (base == NULL || base[0] != '/') {
      char cwd[PATH_MAX];
      if (getcwd(cwd, sizeof cwd) == NULL)
        return NULL;
      rc = kb_buf_adds(&joined, cwd);
      if (rc == KB_OK && base != NULL)
        rc = kb_buf_addf(&joined, "/%s", base);
    } else {
      rc = kb_buf_adds(&joined, base);
    }
    if (rc == KB_OK)
      rc = kb_buf_adds(&joined, "/");
  }
  if (rc == KB_OK)
    rc = kb_buf_adds(&joined, rel);
  if (rc) {
    kb_buf_release(&joined);
    return NULL;
  }
  /* normalize in place: the result is never longer than the input */
  char *s = joined.data;
  size_t out = 0;
  size_t i = 0;
  while (s[i] != '\0') {
    while (s[i] == '/')
      i++;
    size_t start = i;
    while (s[i] != '\0' && s[i] != '/')
      i++;
    size_t len = i - start;
    if (len == 0 || (len == 1 && s[start] == '.'))
      continue;
    if (len == 2 && s[start] == '.' && s[start + 1] == '.') {
      while (out > 0 && s[out - 1] != '/')
        out--;
      if (out > 0)
        out--; /* the slash before the dropped component */
      continue;
    }
    s[out++] = '/';
    memmove(s + out, s + start, len);
    out += len;
  }
  if (out == 0)
    s[out++] = '/';
  s[out] = '\0';
  joined.len = out;
  return kb_buf_detach(&joined);
}

/* 1 when `rel` is relative and has no ".." component, so it stays inside its folder. */
static int rel_inside(const char *rel) {
  if (rel[0] == '\0' || rel[0] == '/')
    return 0;
  const char *p = rel;
  while (*p != '\0') {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.')
      return 0;
    p += len;
    if (*p == '/')
      p++;
  }
  return 1;
}

/* A C identifier of 1..63 characters: tensor names become kb_forward argument names. */
static int tensor_name_valid(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= KB_ID_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (i > 0)
      ok = ok || (c >= '0' && c <= '9');
    if (!ok)
      return 0;
  }
  return 1;
}

/* [a-z0-9_.-]{1,63} */
static int seed_name_valid(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= KB_ID_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
      return 0;
  }
  return 1;
}

void kb_task_release(struct kb_task *task) {
  if (task == NULL)
    return;
  kb_free(task->name);
  kb_free(task->category);
  kb_free(task->dir);
  kb_free(task->json_path);
  kb_free(task->oracle_path);
  kb_free(task->reference_path);
  kb_free(task->inputs);
  kb_free(task->outputs);
  kb_free(task->torch_ref_path);
  for (int i = 0; i < task->n_seeds; i++) {
    kb_free(task->seeds[i].path);
    kb_free(task->seeds[i].flags);
  }
  kb_free(task->spec_json);
  memset(task, 0, sizeof *task);
  task->baseline = -1;
}

/* Parsing state shared by the helpers below. */
struct ctx {
  const struct kb_jsonfile *f; /* the document (borrowed) */
  struct kb_task *t;           /* being filled (borrowed) */
  int check_files;             /* 1: referenced files must exist */
  struct kb_error *err;        /* where the first error goes (borrowed) */
};

static int nomem(struct ctx *c) {
  return kb_error_set(c->err, KB_ENOMEM, "%s: out of memory", c->f->name);
}

/* A required, non-empty string field copied into `*out` (new). */
static int get_text(struct ctx *c, json_t *obj, const char *path, const char *key, int required,
                    const char *def, char **out) {
  const char *s = def;
  int rc = kb_json_get_string(c->f, obj, path, key, required, &s, c->err);
  if (rc)
    return rc;
  char full[KB_JSON_PATH_MAX];
  kb_json_path(full, sizeof full, path, key);
  if (s[0] == '\0')
    return kb_jsonfile_fail(c->f, c->err, full, "\"%s\" must be a non-empty string", full);
  long at = kb_text_control_at(s);
  if (at >= 0)
    return kb_jsonfile_fail(c->f, c->err, full, "\"%s\" has a control character (0x%02x at "
                            "offset %ld): it is shown on terminals", full,
                            (unsigned)(unsigned char)s[at], at);
  *out = kb_strdup(s);
  return *out ? KB_OK : nomem(c);
}

/* KB_OK when existing file `abs` (borrowed), field `full` = `rel` of the task, resolves with
 * every symbolic link followed to a path inside the bundle folder (itself resolved): a link to
 * /etc/passwd or to another bundle's file is refused, naming the field and where it leads. */
static int check_inside(struct ctx *c, const char *full, const char *rel, const char *abs) {
  char real[PATH_MAX];
  if (realpath(abs, real) == NULL)
    return kb_jsonfile_fail(c->f, c->err, full, "\"%s\": cannot resolve \"%s\": %s", full, rel,
                            strerror(errno));
  size_t n = strlen(c->t->dir);
  if (strncmp(real, c->t->dir, n) == 0 && (real[n] == '/' || c->t->dir[n - 1] == '/'))
    return KB_OK;
  return kb_jsonfile_fail(c->f, c->err, full,
                          "\"%s\": \"%s\" resolves to \"%s\", outside the task bundle "
                          "(symbolic links are followed; copy the file into the bundle)",
                          full, rel, real);
}

/* A path field: relative, inside the bundle; resolved into `*out` (new) and, when checking
 * files, required to be a readable regular file. */
static int get_file(struct ctx *c, json_t *obj, const char *path, const char *key, int required,
                    char **out) {
  const char *rel = NULL;
  int rc = kb_json_get_string(c->f, obj, path, key, required, &rel, c->err);
  if (rc || rel == NULL)
    return rc;
  char full[KB_JSON_PATH_MAX];
  kb_json_path(full, sizeof full, path, key);
  for (const char *p = rel; *p != '\0'; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return kb_jsonfile_fail(c->f, c->err, full, "\"%s\" must not contain control characters",
                              full);
  if (!rel_inside(rel))
    return kb_jsonfile_fail(c->f, c->err, full,
                            "\"%s\" must be a relative path inside the task bundle, "
                            "without \"..\": \"%s\"",
                            full, rel);
  char *abs = kb_path_resolve(c->t->dir, rel);
  if (abs == NULL)
    return nomem(c);
  if (c->check_files) {
    struct stat st;
    const char *why = NULL;
    if (stat(abs, &st) != 0)
      why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
      why = "not a regular file";
    else if (access(abs, R_OK) != 0)
      why = strerror(errno);
    if (why != NULL) {
      kb_free(abs);
      return kb_jsonfile_fail(c->f, c->err, full, "\"%s\": cannot read \"%s\": %s", full, rel,
                              why);
    }
    rc = check_inside(c, full, rel, abs);
    if (rc) {
      kb_free(abs);
      return rc;
    }
  }
  *out = abs;
  return KB_OK;
}

static const char *const tensor_fields[] = {"name", "dtype", "shape", NULL};

/* Reads the tensor list `key` into a new array `*outp` (kb_free) of `*n_out` specs. */
static int parse_tensors(struct ctx *c, json_t *root, const char *key,
                         struct kb_tensor_spec **outp, int *n_out) {
  json_t *arr = NULL;
  int rc = kb_json_get_array(c->f, root, "", key, 1, 1, KB_MAX_TENSORS, &arr, c->err);
  if (rc)
    return rc;
  struct kb_tensor_spec *out = kb_calloc(json_array_size(arr), sizeof *out);
  if (out == NULL)
    return nomem(c);
  *outp = out;
  for (size_t i = 0; i < json_array_size(arr); i++) {
    char path[KB_JSON_PATH_MAX];
    json_t *item;
    rc = kb_json_array_object(c->f, arr, key, i, tensor_fields, path, &item, c->err);
    if (rc)
      return rc;
    struct kb_tensor_spec *ts = &out[i];
    const char *name = NULL;
    rc = kb_json_get_string(c->f, item, path, "name", 1, &name, c->err);
    if (rc)
      return rc;
    char full[KB_JSON_PATH_MAX];
    kb_json_path(full, sizeof full, path, "name");
    if (!tensor_name_valid(name))
      return kb_jsonfile_fail(c->f, c->err, full,
                              "\"%s\" must be a C identifier of 1 to 63 characters", full);
    snprintf(ts->name, sizeof ts->name, "%s", name);
    rc = kb_json_get_enum(c->f, item, path, "dtype", 1, dtype_names, &ts->dtype, c->err);
    if (rc)
      return rc;
    json_t *shape = NULL;
    rc = kb_json_get_array(c->f, item, path, "shape", 1, 0, KB_MAX_DIMS, &shape, c->err);
    if (rc)
      return rc;
    char shape_path[KB_JSON_PATH_MAX];
    kb_json_path(shape_path, sizeof shape_path, path, "shape");
    int64_t numel = 1;
    ts->ndim = (int)json_array_size(shape);
    for (int d = 0; d < ts->ndim; d++) {
      char dim_path[KB_JSON_PATH_MAX];
      kb_json_index_path(dim_path, sizeof dim_path, shape_path, (size_t)d);
      json_t *dim = json_array_get(shape, (size_t)d);
      int64_t v = 0;
      if (json_is_integer(dim)) {
        v = json_integer_value(dim);
      } else if (json_is_real(dim)) {
        /* as in kb_json_get_int: 3.0 counts as an integer, like JSON Schema says */
        double real = json_real_value(dim);
        if (real >= 1 && real <= DIM_MAX && real == floor(real))
          v = (int64_t)real;
      }
      if (v > DIM_MAX || (json_is_real(dim) && json_real_value(dim) > DIM_MAX))
        return kb_jsonfile_fail(c->f, c->err, dim_path, "\"%s\" must be at most %d", dim_path,
                                DIM_MAX);
      if (v < 1)
        return kb_jsonfile_fail(c->f, c->err, dim_path, "\"%s\" must be a positive integer",
                                dim_path);
      ts->shape[d] = v;
      if (v > KB_MAX_NUMEL / numel) /* numel <= 2^40 and v < 2^31: no overflow */
        return kb_jsonfile_fail(c->f, c->err, shape_path,
                                "\"%s\" is too large: over 2^40 elements (%lld), what a "
                                "sandbox can hold", shape_path, (long long)KB_MAX_NUMEL);
      numel *= v;
    }
  }
  *n_out = (int)json_array_size(arr);
  return KB_OK;
}

/* Default tolerance of one dtype: the loosest default among the outputs is used. */
static double default_tolerance(int dtype) {
  switch ((enum kb_dtype)dtype) {
  case KB_F32:
  case KB_F64:
    return 1e-4;
  case KB_F16:
  case KB_BF16:
    return 1e-2;
  case KB_I32:
  case KB_I64:
  case KB_U8:
  case KB_BOOL:
    return 0;
  }
  return 0;
}

static const char *const tolerance_fields[] = {"atol", "rtol", NULL};

static int parse_tolerance(struct ctx *c, json_t *root) {
  struct kb_task *t = c->t;
  double def = 0;
  for (int i = 0; i < t->n_outputs; i++) {
    double d = default_tolerance(t->outputs[i].dtype);
    if (d > def)
      def = d;
  }
  t->atol = def;
  t->rtol = def;
  json_t *tol = NULL;
  int rc = kb_json_get_object(c->f, root, "", "tolerance", 0, &tol, c->err);
  if (rc || tol == NULL)
    return rc;
  rc = kb_jsonfile_check_unknown(c->f, tol, "tolerance", tolerance_fields, c->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(c->f, tol, "tolerance", "atol", 0, 0, KB_INPUT_BOUND_MAX, &t->atol,
                            c->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(c->f, tol, "tolerance", "rtol", 0, 0, KB_INPUT_BOUND_MAX, &t->rtol,
                            c->err);
  return rc;
}

static const char *const set_fields[] = {"seed", "distribution", "low", "high", NULL};

static int parse_sets(struct ctx *c, json_t *root) {
  json_t *arr = NULL;
  int rc = kb_json_get_array(c->f, root, "", "input_sets", 1, 1, KB_MAX_SETS, &arr, c->err);
  if (rc)
    return rc;
  for (size_t i = 0; i < json_array_size(arr); i++) {
    char path[KB_JSON_PATH_MAX];
    json_t *item;
    rc = kb_json_array_object(c->f, arr, "input_sets", i, set_fields, path, &item, c->err);
    if (rc)
      return rc;
    struct kb_input_set *s = &c->t->sets[i];
    int64_t seed = 0;
    rc = kb_json_get_int(c->f, item, path, "seed", 1, 0, INT64_MAX, &seed, c->err);
    if (rc == KB_OK)
      rc = kb_json_get_enum(c->f, item, path, "distribution", 1, dist_names, &s->dist, c->err);
    if (rc == KB_OK)
      rc = kb_json_get_number(c->f, item, path, "low", 1, -KB_INPUT_BOUND_MAX,
                              KB_INPUT_BOUND_MAX, &s->low, c->err);
    if (rc == KB_OK)
      rc = kb_json_get_number(c->f, item, path, "high", 1, -KB_INPUT_BOUND_MAX,
                              KB_INPUT_BOUND_MAX, &s->high, c->err);
    if (rc)
      return rc;
    s->seed = (uint64_t)seed;
    char high[KB_JSON_PATH_MAX];
    kb_json_path(high, sizeof high, path, "high");
    if (s->dist == KB_DIST_NORMAL && !(s->high > 0))
      return kb_jsonfile_fail(c->f, c->err, high,
                              "\"%s\" must be a positive number (the standard deviation)", high);
    if (s->dist != KB_DIST_NORMAL && !(s->high > s->low))
      return kb_jsonfile_fail(c->f, c->err, high, "\"%s\" must be greater than \"%s.low\"",
                              high, path);
    /* the sandbox draws integers from [ceil(low), ceil(high)) (kb_gen_integer_range of
     * runner/sandbox/inputs_gen.h): refuse here what it would refuse at every evaluation */
    if (s->dist == KB_DIST_INTEGERS && !(ceil(s->high) > ceil(s->low)))
      return kb_jsonfile_fail(c->f, c->err, high,
                              "\"%s\": no integer in [%g, %g): \"integers\" draws from "
                              "ceil(low) up to ceil(high), exclusive",
                              high, s->low, s->high);
    if (s->dist == KB_DIST_INTEGERS &&
        (fabs(ceil(s->low)) > 0x1p62 || fabs(ceil(s->high)) > 0x1p62 ||
         ceil(s->high) - ceil(s->low) > 0x1p62))
      return kb_jsonfile_fail(c->f, c->err, high,
                              "\"%s\": \"integers\" bounds must lie within -2^62..2^62 and "
                              "span at most 2^62",
                              high);
  }
  c->t->n_sets = (int)json_array_size(arr);
  return KB_OK;
}

/* A seed name field: a string of [a-z0-9_.-]{1,63} (borrowed from the tree into *out). */
static int get_seed_name(struct ctx *c, json_t *obj, const char *path, const char *key,
                         int required, const char **out) {
  const char *name = NULL;
  int rc = kb_json_get_string(c->f, obj, path, key, required, &name, c->err);
  if (rc || name == NULL)
    return rc;
  if (!seed_name_valid(name)) {
    char full[KB_JSON_PATH_MAX];
    kb_json_path(full, sizeof full, path, key);
    return kb_jsonfile_fail(c->f, c->err, full,
                            "\"%s\" must be 1 to 63 characters of a-z, 0-9, \"_\", \".\", \"-\"",
                            full);
  }
  *out = name;
  return KB_OK;
}

static const char *const seed_fields[] = {"name", "source", "flags", NULL};

static int parse_seeds(struct ctx *c, json_t *root) {
  struct kb_task *t = c->t;
  json_t *arr = NULL;
  int rc = kb_json_get_array(c->f, root, "", "seeds", 1, 1, KB_MAX_SEEDS, &arr, c->err);
  if (rc)
    return rc;
  for (size_t i = 0; i < json_array_size(arr); i++) {
    char path[KB_JSON_PATH_MAX];
    json_t *item;
    rc = kb_json_array_object(c->f, arr, "seeds", i, seed_fields, path, &item, c->err);
    if (rc)
      return rc;
    struct kb_seed_source *s = &t->seeds[i];
    const char *name = NULL;
    rc = get_seed_name(c, item, path, "name", 1, &name);
    if (rc)
      return rc;
    char full[KB_JSON_PATH_MAX];
    kb_json_path(full, sizeof full, path, "name");
    for (size_t j = 0; j < i; j++)
      if (strcmp(t->seeds[j].name, name) == 0)
        return kb_jsonfile_fail(c->f, c->err, full, "\"%s\" repeats the seed name \"%s\"", full,
                                name);
    snprintf(s->name, sizeof s->name, "%s", name);
    /* count the seed before its strings so kb_task_release frees whatever was set */
    t->n_seeds = (int)i + 1;
    rc = get_file(c, item, path, "source", 1, &s->path);
    if (rc)
      return rc;
    /* a ".py" seed is a KernelBench solution (class ModelNew): only a pytorch oracle runs one */
    s->format = kb_cand_format_of_path(s->path);
    if (s->format == KB_FORMAT_KERNELBENCH && t->oracle_kind != KB_ORACLE_PYTORCH) {
      char src[KB_JSON_PATH_MAX];
      kb_json_path(src, sizeof src, path, "source");
      return kb_jsonfile_fail(c->f, c->err, src,
                              "\"%s\" is a KernelBench solution (.py, class ModelNew): only a "
                              "task with a \"pytorch\" oracle can evaluate one",
                              src);
    }
    const char *flags = "";
    rc = kb_json_get_string(c->f, item, path, "flags", 0, &flags, c->err);
    if (rc)
      return rc;
    s->flags = kb_strdup(flags);
    if (s->flags == NULL)
      return nomem(c);
  }
  return KB_OK;
}

static int parse_baseline(struct ctx *c, json_t *root) {
  struct kb_task *t = c->t;
  const char *name = NULL;
  int rc = get_seed_name(c, root, "", "baseline", 0, &name);
  if (rc || name == NULL)
    return rc;
  for (int i = 0; i < t->n_seeds; i++) {
    if (strcmp(t->seeds[i].name, name) == 0) {
      t->baseline = i;
      return KB_OK;
    }
  }
  return kb_jsonfile_fail(c->f, c->err, "baseline",
                          "\"baseline\" must name one of \"seeds\": no seed \"%s\"", name);
}

static const char *const oracle_fields[] = {"kind", "source", NULL};
static const char *const task_fields[] = {
    "schema", "id",        "name",      "category",   "backend", "oracle",   "reference",
    "inputs", "outputs",   "tolerance", "input_sets", "seeds",   "baseline", "must_read",
    "torch_reference", NULL};

static int check_tensor_names(struct ctx *c) {
  struct kb_task *t = c->t;
  int n = t->n_inputs + t->n_outputs;
  for (int i = 0; i < n; i++) {
    const struct kb_tensor_spec *a = i < t->n_inputs ? &t->inputs[i] : &t->outputs[i - t->n_inputs];
    for (int j = 0; j < i; j++) {
      const struct kb_tensor_spec *b =
          j < t->n_inputs ? &t->inputs[j] : &t->outputs[j - t->n_inputs];
      if (strcmp(a->name, b->name) == 0) {
        char full[KB_JSON_PATH_MAX];
        int idx = i < t->n_inputs ? i : i - t->n_inputs;
        kb_json_index_path(full, sizeof full, i < t->n_inputs ? "inputs" : "outputs",
                           (size_t)idx);
        size_t len = strlen(full);
        snprintf(full + len, sizeof full - len, ".name");
        return kb_jsonfile_fail(c->f, c->err, full,
                                "\"%s\" repeats the tensor name \"%s\"", full, a->name);
      }
    }
  }
  return KB_OK;
}

/* The oracle kinds a backend runs: host "c" or "pytorch", cuda "cuda" or "pytorch"; "data"
 * none yet. Any other pairing was accepted, and then every evaluation of the task was the
 * runner's infra_error ("the host backend needs a host task with a c or pytorch oracle"). */
static int check_oracle_kind(struct ctx *c) {
  const struct kb_task *t = c->t;
  if (t->oracle_kind == KB_ORACLE_PYTORCH)
    return KB_OK;
  int want = t->backend == KB_BACKEND_HOST ? KB_ORACLE_C : KB_ORACLE_CUDA;
  if (t->oracle_kind == want)
    return KB_OK;
  if (t->oracle_kind == KB_ORACLE_DATA)
    return kb_jsonfile_fail(c->f, c->err, "oracle.kind",
                            "\"oracle.kind\" \"data\" is not run by any backend yet: a \"%s\" "
                            "task's oracle is \"%s\" or \"pytorch\"",
                            kb_backend_name(t->backend), oracle_names[want]);
  return kb_jsonfile_fail(c->f, c->err, "oracle.kind",
                          "\"oracle.kind\" \"%s\" does not run on the \"%s\" backend: a \"%s\" "
                          "task's oracle is \"%s\" or \"pytorch\"",
                          oracle_names[t->oracle_kind], kb_backend_name(t->backend),
                          kb_backend_name(t->backend), oracle_names[want]);
}

static int parse_task(struct ctx *c) {
  const struct kb_jsonfile *f = c->f;
  struct kb_task *t = c->t;
  json_t *root = f->root;
  int rc = kb_jsonfile_check_document(f, "a task", task_fields, TASK_SCHEMA, c->err);
  if (rc == KB_OK)
    rc = kb_id_get(f, root, "", "id", t->id, c->err);
  if (rc)
    return rc;
  rc = get_text(c, root, "", "name", 1, NULL, &t->name);
  if (rc == KB_OK)
    rc = get_text(c, root, "", "category", 0, "other", &t->category);
  if (rc == KB_OK)
    rc = kb_json_get_enum(f, root, "", "backend", 1, backend_names, &t->backend, c->err);
  if (rc)
    return rc;
  json_t *oracle = NULL;
  rc = kb_json_get_object(f, root, "", "oracle", 1, &oracle, c->err);
  if (rc == KB_OK)
    rc = kb_jsonfile_check_unknown(f, oracle, "oracle", oracle_fields, c->err);
  if (rc == KB_OK)
    rc = kb_json_get_enum(f, oracle, "oracle", "kind", 1, oracle_names, &t->oracle_kind, c->err);
  if (rc == KB_OK)
    rc = check_oracle_kind(c);
  if (rc == KB_OK)
    rc = get_file(c, oracle, "oracle", "source", 1, &t->oracle_path);
  if (rc == KB_OK)
    rc = get_file(c, root, "", "reference", 0, &t->reference_path);
  if (rc == KB_OK)
    rc = get_file(c, root, "", "torch_reference", 0, &t->torch_ref_path);
  if (rc)
    return rc;
  if (t->reference_path == NULL) {
    t->reference_path = kb_strdup(t->oracle_path);
    if (t->reference_path == NULL)
      return nomem(c);
  }
  rc = parse_tensors(c, root, "inputs", &t->inputs, &t->n_inputs);
  if (rc == KB_OK)
    rc = parse_tensors(c, root, "outputs", &t->outputs, &t->n_outputs);
  if (rc == KB_OK)
    rc = check_tensor_names(c);
  if (rc == KB_OK)
    rc = parse_tolerance(c, root);
  t->must_read = 1.0;
  if (rc == KB_OK)
    rc = kb_json_get_number(f, root, "", "must_read", 0, 0, 1, &t->must_read, c->err);
  if (rc == KB_OK)
    rc = parse_sets(c, root);
  if (rc == KB_OK)
    rc = parse_seeds(c, root);
  if (rc == KB_OK)
    rc = parse_baseline(c, root);
  return rc;
}

/* Absolute form of the bundle folder: symbolic links resolved when it exists. */
static char *bundle_dir(const char *dir) {
  char real[PATH_MAX];
  if (realpath(dir, real) != NULL)
    return kb_strdup(real);
  return kb_path_resolve(NULL, dir);
}

/* Parses the loaded document `f` (whose text `task` takes over) into `task`. */
static int task_from_file(struct kb_jsonfile *f, const char *dir, int check_files,
                          struct kb_task *task, struct kb_error *err) {
  struct ctx c = {.f = f, .t = task, .check_files = check_files, .err = err};
  int rc = KB_OK;
  task->dir = bundle_dir(dir);
  if (task->dir != NULL)
    task->json_path = kb_path_resolve(task->dir, "task.json");
  if (task->dir == NULL || task->json_path == NULL)
    rc = nomem(&c);
  if (rc == KB_OK)
    rc = parse_task(&c);
  if (rc == KB_OK) {
    task->spec_json = f->text;
    f->text = NULL;
  }
  kb_jsonfile_release(f);
  if (rc)
    kb_task_release(task);
  return rc;
}

int kb_task_load(const char *dir, struct kb_task *task, struct kb_error *err) {
  memset(task, 0, sizeof *task);
  task->baseline = -1;
  size_t len = strlen(dir);
  int slash = len > 0 && dir[len - 1] == '/';
  char name[PATH_MAX + 16];
  int n = snprintf(name, sizeof name, "%s%stask.json", dir, slash ? "" : "/");
  if (n < 0 || (size_t)n >= sizeof name)
    return kb_error_set(err, KB_EINVAL, "task folder path too long: \"%s\"", dir);
  struct kb_jsonfile f;
  int rc = kb_jsonfile_load(&f, name, err);
  if (rc)
    return rc;
  return task_from_file(&f, dir, 1, task, err);
}

int kb_task_parse(const char *name, const char *text, const char *dir, int check_files,
                  struct kb_task *task, struct kb_error *err) {
  memset(task, 0, sizeof *task);
  task->baseline = -1;
  struct kb_jsonfile f;
  int rc = kb_jsonfile_parse(&f, name, text, err);
  if (rc)
    return rc;
  return task_from_file(&f, dir, check_files, task, err);
}
