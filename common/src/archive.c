/* The kernel archive (see kb/archive.h). */
#include "kb/archive.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "kb/fs.h"
#include "kb/hash.h"
#include "kb/jsonfile.h"

/* ---- Fingerprints and ids ------------------------------------------------------------------ */

int kb_task_fingerprint(const struct kb_task *t, char out[KB_CAND_ID_LEN + 1],
                        struct kb_error *err) {
  struct kb_buf b;
  kb_buf_init(&b);
  int rc = kb_buf_addf(&b, "kernelbrain.task-fingerprint/1\nbackend %s\n",
                       kb_backend_name(t->backend));
  for (int k = 0; k < 2 && rc == KB_OK; k++) {
    const struct kb_tensor_spec *ts = k == 0 ? t->inputs : t->outputs;
    int n = k == 0 ? t->n_inputs : t->n_outputs;
    for (int i = 0; i < n && rc == KB_OK; i++) {
      const char *dt = kb_dtype_name(ts[i].dtype);
      rc = kb_buf_addf(&b, "%s %s", k == 0 ? "in" : "out", dt ? dt : "?");
      for (int d = 0; d < ts[i].ndim && rc == KB_OK; d++)
        rc = kb_buf_addf(&b, " %lld", (long long)ts[i].shape[d]);
      if (rc == KB_OK)
        rc = kb_buf_adds(&b, "\n");
    }
  }
  if (rc == KB_OK)
    rc = kb_sha256_hex(b.data, b.len, out, err);
  else
    kb_error_set(err, KB_ENOMEM, "task fingerprint: out of memory");
  kb_buf_release(&b);
  return rc;
}

int kb_archive_entry_set_id(struct kb_archive_entry *e, struct kb_error *err) {
  struct kb_buf b;
  kb_buf_init(&b);
  int rc = kb_buf_add(&b, e->fingerprint, strlen(e->fingerprint) + 1);
  if (rc == KB_OK)
    rc = kb_buf_add(&b, e->candidate, strlen(e->candidate) + 1);
  if (rc == KB_OK)
    rc = kb_buf_add(&b, e->gpu, strlen(e->gpu) + 1);
  if (rc == KB_OK)
    rc = kb_sha256_hex(b.data, b.len, e->id, err);
  else
    kb_error_set(err, KB_ENOMEM, "archive entry id: out of memory");
  kb_buf_release(&b);
  return rc;
}

/* ---- Tags ---------------------------------------------------------------------------------- */

int kb_archive_entry_add_tag(struct kb_archive_entry *e, const char *tag, struct kb_error *err) {
  char t[KB_ARCHIVE_TAG_MAX];
  size_t n = strlen(tag);
  if (n == 0 || n >= sizeof t)
    return kb_error_set(err, KB_EINVAL, "tag \"%.60s\" must be 1 to %d characters", tag,
                        KB_ARCHIVE_TAG_MAX - 1);
  for (size_t i = 0; i <= n; i++) {
    unsigned char ch = (unsigned char)tag[i];
    if (i < n && (ch < 0x20 || ch > 0x7e))
      return kb_error_set(err, KB_EINVAL, "tag \"%.60s\" must be printable ASCII", tag);
    t[i] = ch == ' ' || ch == '\t' ? '-' : (char)tolower(ch);
  }
  for (int i = 0; i < e->n_tags; i++)
    if (strcmp(e->tags[i], t) == 0)
      return KB_OK;
  if (e->n_tags >= KB_ARCHIVE_MAX_TAGS)
    return kb_error_set(err, KB_EINVAL, "more than %d tags", KB_ARCHIVE_MAX_TAGS);
  memcpy(e->tags[e->n_tags++], t, n + 1);
  return KB_OK;
}

void kb_archive_technique_tags(struct kb_archive_entry *e, const char *source) {
  static const struct {
    const char *tag;
    const char *words[5];
  } techniques[] = {
      {"shared-memory", {"__shared__", NULL}},
      {"warp-shuffle", {"__shfl", NULL}},
      {"tensor-cores", {"wmma::", "mma.sync", "wgmma", NULL}},
      {"vectorized", {"float4", "float2", "__m256", "__m128", "__attribute__((vector_size"}},
      {"unrolled", {"#pragma unroll", "unroll", NULL}},
      {"async-copy", {"cp.async", "memcpy_async", "cuda::pipeline", NULL}},
      {"atomics", {"atomicAdd", "atomicCAS", "_Atomic", NULL}},
      {"half-precision", {"__half", "__nv_bfloat16", "_Float16", NULL}},
      {"simd", {"#pragma omp simd", "immintrin.h", "arm_neon.h", NULL}},
      {"tunable", {"kb:param", NULL}},
  };
  struct kb_error ignore = {0};
  for (size_t i = 0; i < sizeof techniques / sizeof techniques[0]; i++)
    for (int w = 0; w < 5 && techniques[i].words[w]; w++)
      if (strstr(source, techniques[i].words[w])) {
        kb_archive_entry_add_tag(e, techniques[i].tag, &ignore);
        break;
      }
}

/* ---- Building entries ---------------------------------------------------------------------- */

void kb_archive_entry_release(struct kb_archive_entry *e) {
  if (e == NULL)
    return;
  kb_free(e->category);
  kb_free(e->source);
  kb_free(e->knobs);
  kb_free(e->flags);
  memset(e, 0, sizeof *e);
}

int kb_archive_entry_from(struct kb_archive_entry *e, const struct kb_task *t,
                          const struct kb_candidate *c, struct kb_error *err) {
  memset(e, 0, sizeof *e);
  if (strcmp(t->id, c->task) != 0)
    return kb_error_set(err, KB_EINVAL, "candidate %.12s is for task \"%s\", not \"%s\"", c->id,
                        c->task, t->id);
  snprintf(e->task, sizeof e->task, "%s", t->id);
  snprintf(e->candidate, sizeof e->candidate, "%s", c->id);
  snprintf(e->name, sizeof e->name, "%s", c->name);
  snprintf(e->generator, sizeof e->generator, "%s", c->generator);
  e->format = c->format;
  e->backend = t->backend;
  e->category = kb_strdup(t->category ? t->category : "other");
  e->source = kb_strdup(c->source);
  e->knobs = kb_strdup(c->knobs ? c->knobs : "");
  e->flags = kb_strdup(c->flags ? c->flags : "");
  if (!e->category || !e->source || !e->knobs || !e->flags) {
    kb_archive_entry_release(e);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  e->added = (double)ts.tv_sec;
  int rc = kb_task_fingerprint(t, e->fingerprint, err);
  struct kb_error ignore = {0};
  if (rc == KB_OK) {
    kb_archive_entry_add_tag(e, e->category, &ignore);
    kb_archive_entry_add_tag(e, e->generator, &ignore);
    kb_archive_technique_tags(e, e->source);
    rc = kb_archive_entry_set_id(e, err);
  }
  if (rc)
    kb_archive_entry_release(e);
  return rc;
}

int kb_archive_entry_candidate(const struct kb_archive_entry *e, const char *task_id,
                               struct kb_candidate *c, struct kb_error *err) {
  char name[KB_ID_MAX];
  snprintf(name, sizeof name, "archive-%.*s", (int)(sizeof name - 9), e->name);
  int rc = kb_candidate_init(c, task_id, name, "archive", e->source, e->knobs, e->flags, err);
  if (rc == KB_OK && e->format != KB_FORMAT_NATIVE) {
    rc = kb_candidate_set_format(c, e->format, err);
    if (rc)
      kb_candidate_release(c);
  }
  return rc;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static const char *const entry_fields[] = {
    "schema",   "id",        "task",     "fingerprint", "backend",     "category",
    "candidate", "name",     "generator", "source",     "knobs",       "flags",
    "gpu",      "tier",      "median_us", "baseline_us", "speedup",    "campaign",
    "added",    "tags",      "format",    NULL};

static const char *const generators[] = {"seed", "tune", "llm", "crossover", "archive",
                                         "manual", NULL};

int kb_archive_entry_to_json(const struct kb_archive_entry *e, int pretty, char **out,
                             struct kb_error *err) {
  *out = NULL;
  json_t *tags = json_array();
  for (int i = 0; tags && i < e->n_tags; i++)
    json_array_append_new(tags, json_string(e->tags[i]));
  json_t *o = json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:f, s:f, "
      "s:s, s:f, s:o}",
      "schema", KB_ARCHIVE_SCHEMA, "id", e->id, "task", e->task, "fingerprint", e->fingerprint,
      "backend", kb_backend_name(e->backend) ? kb_backend_name(e->backend) : "?", "category",
      e->category ? e->category : "", "candidate", e->candidate, "name", e->name, "generator",
      e->generator, "source", e->source ? e->source : "", "knobs", e->knobs ? e->knobs : "",
      "flags", e->flags ? e->flags : "", "gpu", e->gpu, "tier", e->tier, "median_us",
      e->median_us, "baseline_us", e->baseline_us, "speedup", e->speedup, "campaign",
      e->campaign, "added", e->added, "tags", tags);
  /* "format" only when not native, so native entries are written as they always were */
  const char *fname = kb_cand_format_name(e->format);
  if (o != NULL && e->format != KB_FORMAT_NATIVE &&
      (fname == NULL || json_object_set_new(o, "format", json_string(fname)) != 0)) {
    json_decref(o);
    return kb_error_set(err, KB_EINVAL, "archive entry %.12s: unknown format %d", e->id,
                        e->format);
  }
  if (o == NULL)
    return kb_error_set(err, KB_EINVAL, "archive entry %.12s: a field is not valid UTF-8 or "
                        "out of memory", e->id);
  char *text = json_dumps(o, pretty ? JSON_INDENT(2) : JSON_COMPACT);
  json_decref(o);
  if (text == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  /* check it the way a reader will, so nothing unreadable is ever written */
  struct kb_archive_entry back;
  int rc = kb_archive_entry_parse(text, "archive entry", &back, err);
  kb_archive_entry_release(&back);
  if (rc) {
    free(text);
    return rc == KB_EPARSE ? (err->code = KB_EINVAL) : rc;
  }
  *out = kb_strdup(text);
  free(text);
  return *out ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
}

static int get_id(const struct kb_jsonfile *f, json_t *o, const char *key, char *out,
                  struct kb_error *err) {
  const char *s = NULL;
  int rc = kb_json_get_string(f, o, "", key, 1, &s, err);
  if (rc)
    return rc;
  if (!kb_candidate_id_valid(s))
    return kb_jsonfile_fail(f, err, key, "\"%s\" must be 64 lowercase hex digits", key);
  memcpy(out, s, KB_CAND_ID_LEN + 1);
  return KB_OK;
}

static int get_fixed(const struct kb_jsonfile *f, json_t *o, const char *key, char *out,
                     size_t size, int nonempty, struct kb_error *err) {
  const char *s = NULL;
  int rc = kb_json_get_string(f, o, "", key, 1, &s, err);
  if (rc)
    return rc;
  if (strlen(s) >= size || (nonempty && s[0] == '\0'))
    return kb_jsonfile_fail(f, err, key, "\"%s\" must be %s%zu characters at most", key,
                            nonempty ? "1 to " : "", size - 1);
  memcpy(out, s, strlen(s) + 1);
  return KB_OK;
}

static int get_dup(const struct kb_jsonfile *f, json_t *o, const char *key, char **out,
                   struct kb_error *err) {
  const char *s = NULL;
  int rc = kb_json_get_string(f, o, "", key, 1, &s, err);
  if (rc)
    return rc;
  *out = kb_strdup(s);
  return *out ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
}

/* The "tags" list, each added as kb_archive_entry_add_tag does. */
static int get_tags(const struct kb_jsonfile *f, json_t *o, struct kb_archive_entry *e,
                    struct kb_error *err) {
  json_t *tags = NULL;
  int rc = kb_json_get_array(f, o, "", "tags", 1, 0, KB_ARCHIVE_MAX_TAGS, &tags, err);
  for (size_t i = 0; rc == KB_OK && i < json_array_size(tags); i++) {
    char path[64];
    kb_json_index_path(path, sizeof path, "tags", i);
    const char *t = json_string_value(json_array_get(tags, i));
    struct kb_error terr = {0};
    if (t == NULL)
      rc = kb_jsonfile_fail(f, err, path, "\"%s\" must be a string", path);
    else if (kb_archive_entry_add_tag(e, t, &terr) != KB_OK)
      rc = kb_jsonfile_fail(f, err, path, "\"%s\": %s", path, terr.msg);
  }
  return rc;
}

/* The ids of `e`, read from the file, must be those its content makes; the source is stored
 * normalized. */
static int check_ids(const struct kb_jsonfile *f, struct kb_archive_entry *e,
                     struct kb_error *err) {
  /* the ids must match the content: a hand-edited source is caught here */
  char want[KB_CAND_ID_LEN + 1];
  int rc = kb_candidate_id_format(e->task, e->source, e->knobs, e->flags, e->format, want, err);
  if (rc == KB_OK && strcmp(want, e->candidate) != 0)
    rc = kb_jsonfile_fail(f, err, "candidate",
                          "\"candidate\" does not match the task, source, knobs, flags and "
                          "format");
  if (rc == KB_OK) {
    char *norm = kb_source_normalize(e->source);
    if (norm == NULL) {
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    } else {
      kb_free(e->source);
      e->source = norm;
    }
  }
  if (rc == KB_OK) {
    memcpy(want, e->id, sizeof want);
    rc = kb_archive_entry_set_id(e, err);
    if (rc == KB_OK && strcmp(want, e->id) != 0)
      rc = kb_jsonfile_fail(f, err, "id",
                            "\"id\" does not match the fingerprint, candidate and gpu");
  }
  return rc;
}

static int entry_from_file(const struct kb_jsonfile *f, struct kb_archive_entry *e,
                           struct kb_error *err) {
  json_t *o = f->root;
  int rc = kb_jsonfile_check_document(f, "an archive entry", entry_fields, KB_ARCHIVE_SCHEMA, err);
  const char *s = NULL;
  if (rc == KB_OK)
    rc = get_id(f, o, "id", e->id, err);
  if (rc == KB_OK)
    rc = get_fixed(f, o, "task", e->task, sizeof e->task, 1, err);
  if (rc == KB_OK && !kb_id_valid(e->task))
    rc = kb_jsonfile_fail(f, err, "task", "\"task\" must be a task id");
  if (rc == KB_OK)
    rc = get_id(f, o, "fingerprint", e->fingerprint, err);
  if (rc == KB_OK)
    rc = kb_json_get_string(f, o, "", "backend", 1, &s, err);
  if (rc == KB_OK) {
    e->backend = kb_backend_from_name(s);
    if (e->backend < 0)
      rc = kb_jsonfile_fail(f, err, "backend", "\"backend\" must be \"host\" or \"cuda\"");
  }
  if (rc == KB_OK)
    rc = get_dup(f, o, "category", &e->category, err);
  if (rc == KB_OK)
    rc = get_id(f, o, "candidate", e->candidate, err);
  if (rc == KB_OK)
    rc = get_fixed(f, o, "name", e->name, sizeof e->name, 1, err);
  if (rc == KB_OK)
    rc = kb_json_get_string(f, o, "", "generator", 1, &s, err);
  if (rc == KB_OK) {
    int known = 0;
    for (int i = 0; generators[i]; i++)
      known |= strcmp(s, generators[i]) == 0;
    if (!known)
      rc = kb_jsonfile_fail(f, err, "generator",
                            "\"generator\" must be one of seed, tune, llm, crossover, archive, "
                            "manual");
    else
      snprintf(e->generator, sizeof e->generator, "%s", s);
  }
  if (rc == KB_OK)
    rc = get_dup(f, o, "source", &e->source, err);
  if (rc == KB_OK && e->source[0] == '\0')
    rc = kb_jsonfile_fail(f, err, "source", "\"source\" must not be empty");
  if (rc == KB_OK)
    rc = get_dup(f, o, "knobs", &e->knobs, err);
  if (rc == KB_OK)
    rc = get_dup(f, o, "flags", &e->flags, err);
  if (rc == KB_OK)
    rc = get_fixed(f, o, "gpu", e->gpu, sizeof e->gpu, 0, err);
  if (rc == KB_OK)
    rc = get_fixed(f, o, "tier", e->tier, sizeof e->tier, 0, err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, "", "median_us", 1, 0, DBL_MAX, &e->median_us, err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, "", "baseline_us", 1, 0, DBL_MAX, &e->baseline_us, err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, "", "speedup", 1, 0, DBL_MAX, &e->speedup, err);
  if (rc == KB_OK)
    rc = get_fixed(f, o, "campaign", e->campaign, sizeof e->campaign, 0, err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, "", "added", 1, 0, DBL_MAX, &e->added, err);
  if (rc == KB_OK)
    rc = get_tags(f, o, e, err);
  static const char *const formats[] = {"native", "kernelbench", NULL};
  e->format = KB_FORMAT_NATIVE;
  if (rc == KB_OK)
    rc = kb_json_get_enum(f, o, "", "format", 0, formats, &e->format, err);
  if (rc == KB_OK)
    rc = check_ids(f, e, err);
  return rc;
}

int kb_archive_entry_parse(const char *text, const char *where, struct kb_archive_entry *e,
                           struct kb_error *err) {
  memset(e, 0, sizeof *e);
  struct kb_jsonfile f;
  int rc = kb_jsonfile_parse(&f, where, text, err);
  if (rc)
    return rc;
  rc = entry_from_file(&f, e, err);
  kb_jsonfile_release(&f);
  if (rc)
    kb_archive_entry_release(e);
  return rc;
}

/* ---- The folder ---------------------------------------------------------------------------- */

int kb_archive_check_dir(const char *dir, struct kb_error *err) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    if (errno == ENOENT)
      return kb_error_set(err, KB_ENOTFOUND, "archive folder \"%s\" does not exist", dir);
    return kb_error_set(err, KB_EIO, "archive folder \"%s\": %s", dir, strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return kb_error_set(err, KB_EINVAL, "archive folder \"%s\" is not a folder", dir);
  return KB_OK;
}

int kb_archive_put(const char *dir, struct kb_archive_entry *e, char *path_out,
                   size_t path_size, struct kb_error *err) {
  int rc = kb_archive_check_dir(dir, err);
  if (rc == KB_OK)
    rc = kb_archive_entry_set_id(e, err);
  char *text = NULL;
  if (rc == KB_OK)
    rc = kb_archive_entry_to_json(e, 1, &text, err);
  if (rc)
    return rc;
  char path[4096], tmp[4200], host[64] = "host";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  for (char *h = host; *h; h++)
    if (*h == '/' || *h == '.')
      *h = '_';
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned noise = (unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 8);
  int n1 = snprintf(path, sizeof path, "%s/%s.json", dir, e->id);
  int n2 = snprintf(tmp, sizeof tmp, "%s/.%s.json.%s.%ld.%08x.tmp", dir, e->id, host,
                    (long)getpid(), noise);
  if (n1 < 0 || n1 >= (int)sizeof path || n2 < 0 || n2 >= (int)sizeof tmp) {
    kb_free(text);
    return kb_error_set(err, KB_EINVAL, "archive folder path too long: \"%.60s...\"", dir);
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* the umask decides */
  if (fd < 0) {
    kb_free(text);
    return kb_error_set(err, KB_EIO, "cannot create \"%s\": %s", tmp, strerror(errno));
  }
  size_t len = strlen(text);
  int bad = kb_write_all(fd, text, len) != 0 || kb_write_all(fd, "\n", 1) != 0 || fsync(fd) != 0;
  int e_no = errno;
  bad = close(fd) != 0 || bad;
  kb_free(text);
  if (bad || rename(tmp, path) != 0) {
    if (!bad)
      e_no = errno;
    unlink(tmp);
    return kb_error_set(err, KB_EIO, "cannot write archive entry \"%s\": %s", path,
                        strerror(e_no));
  }
  if (path_out)
    snprintf(path_out, path_size, "%s", path);
  return KB_OK;
}

/* 1 when `name` is "<64 hex>.json". */
static int entry_name(const char *name) {
  char id[KB_CAND_ID_LEN + 1];
  if (strlen(name) != KB_CAND_ID_LEN + 5 || strcmp(name + KB_CAND_ID_LEN, ".json") != 0)
    return 0;
  memcpy(id, name, KB_CAND_ID_LEN);
  id[KB_CAND_ID_LEN] = '\0';
  return kb_candidate_id_valid(id);
}

static int entry_cmp(const void *pa, const void *pb) {
  const struct kb_archive_entry *a = pa, *b = pb;
  int c = strcmp(a->task, b->task);
  if (c)
    return c;
  if (a->speedup != b->speedup)
    return a->speedup > b->speedup ? -1 : 1;
  return strcmp(a->id, b->id);
}

int kb_archive_load(const char *dir, struct kb_archive *a, kb_archive_warn_fn warn, void *arg,
                    struct kb_error *err) {
  memset(a, 0, sizeof *a);
  int rc = kb_archive_check_dir(dir, err);
  if (rc)
    return rc;
  DIR *d = opendir(dir);
  if (d == NULL)
    return kb_error_set(err, KB_EIO, "cannot read archive folder \"%s\": %s", dir,
                        strerror(errno));
  struct dirent *de;
  while (rc == KB_OK && (de = readdir(d)) != NULL) {
    if (!entry_name(de->d_name))
      continue;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    struct kb_buf b;
    kb_buf_init(&b);
    struct kb_error ferr = {0};
    struct kb_archive_entry e;
    memset(&e, 0, sizeof e);
    int frc = kb_buf_read_file(&b, path, &ferr);
    if (frc == KB_OK && (b.data == NULL || b.len == 0))
      frc = kb_error_set(&ferr, KB_EPARSE, "%s: empty file, not an archive entry", path);
    if (frc == KB_OK)
      frc = kb_archive_entry_parse(b.data, path, &e, &ferr);
    kb_buf_release(&b);
    if (frc == KB_OK && strncmp(de->d_name, e.id, KB_CAND_ID_LEN) != 0)
      frc = kb_error_set(&ferr, KB_EPARSE, "%s: \"id\" %.12s... does not match the file name",
                         path, e.id);
    if (frc == KB_ENOMEM) {
      kb_archive_entry_release(&e);
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
      break;
    }
    if (frc == KB_ENOTFOUND) /* replaced or removed since the listing */
      continue;
    if (frc) {
      kb_archive_entry_release(&e);
      a->skipped++;
      if (warn)
        warn(ferr.msg, arg);
      continue;
    }
    if (a->n == a->cap) {
      int cap = a->cap ? a->cap * 2 : 16;
      struct kb_archive_entry *v = kb_reallocarray(a->entries, (size_t)cap, sizeof *v);
      if (v == NULL) {
        kb_archive_entry_release(&e);
        rc = kb_error_set(err, KB_ENOMEM, "out of memory");
        break;
      }
      a->entries = v;
      a->cap = cap;
    }
    a->entries[a->n++] = e;
  }
  closedir(d);
  if (rc) {
    kb_archive_release(a);
    return rc;
  }
  if (a->n > 1)
    qsort(a->entries, (size_t)a->n, sizeof *a->entries, entry_cmp);
  return KB_OK;
}

const struct kb_archive_entry *kb_archive_find(const struct kb_archive *a, const char *prefix,
                                               int *ambiguous) {
  size_t n = strlen(prefix);
  const struct kb_archive_entry *found = NULL;
  if (ambiguous)
    *ambiguous = 0;
  if (n < 4 || n > KB_CAND_ID_LEN)
    return NULL;
  for (int i = 0; i < a->n; i++)
    if (strncmp(a->entries[i].id, prefix, n) == 0) {
      if (found) {
        if (ambiguous)
          *ambiguous = 1;
        return NULL;
      }
      found = &a->entries[i];
    }
  return found;
}

void kb_archive_release(struct kb_archive *a) {
  if (a == NULL)
    return;
  for (int i = 0; i < a->n; i++)
    kb_archive_entry_release(&a->entries[i]);
  kb_free(a->entries);
  memset(a, 0, sizeof *a);
}
