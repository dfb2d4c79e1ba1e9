/* Candidates: source normalization, content ids and the JSON form (see kb/candidate.h and
 * schemas/candidate.schema.json; keep the checks here and the schema agreeing).
 */
#include "kb/candidate.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "kb/hash.h"
#include "kb/jsonfile.h"

#define CANDIDATE_SCHEMA "kernelbrain.candidate/1"

static const char *const generator_names[] = {"seed", "tune", "llm", "crossover", "archive",
                                              NULL};
/* indexed by enum kb_cand_format */
static const char *const format_names[] = {"native", "kernelbench", NULL};

const char *kb_cand_format_name(int format) {
  if (format < KB_FORMAT_NATIVE || format > KB_FORMAT_KERNELBENCH)
    return NULL;
  return format_names[format];
}

int kb_cand_format_from_name(const char *name) {
  for (int i = 0; format_names[i] != NULL; i++)
    if (strcmp(name, format_names[i]) == 0)
      return i;
  return -1;
}

int kb_cand_format_of_path(const char *path) {
  size_t n = strlen(path);
  return n > 3 && strcmp(path + n - 3, ".py") == 0 ? KB_FORMAT_KERNELBENCH : KB_FORMAT_NATIVE;
}

int kb_candidate_id_valid(const char *s) {
  size_t n = strlen(s);
  if (n != KB_CAND_ID_LEN)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return 1;
}

int kb_candidate_name_valid(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= KB_ID_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] > 0x7E)
      return 0;
  return 1;
}

static int generator_valid(const char *s) {
  for (int i = 0; generator_names[i] != NULL; i++)
    if (strcmp(s, generator_names[i]) == 0)
      return 1;
  return 0;
}

char *kb_source_normalize(const char *source) {
  struct kb_buf out;
  kb_buf_init(&out);
  size_t keep = 0; /* length up to and including the last non-blank line */
  const char *p = source;
  while (*p != '\0') {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    size_t end = len;
    /* trailing blanks, and the CR of a CRLF line end */
    while (end > 0 && (p[end - 1] == ' ' || p[end - 1] == '\t' || p[end - 1] == '\r'))
      end--;
    if (kb_buf_add(&out, p, end) != KB_OK || kb_buf_add(&out, "\n", 1) != KB_OK) {
      kb_buf_release(&out);
      return NULL;
    }
    if (end > 0)
      keep = out.len;
    p += len;
    if (*p == '\n')
      p++;
  }
  if (out.alloc) {
    out.len = keep;
    out.data[keep] = '\0';
  }
  return kb_buf_detach(&out);
}

int kb_candidate_id(const char *task, const char *source, const char *knobs, const char *flags,
                    char out[KB_CAND_ID_LEN + 1], struct kb_error *err) {
  return kb_candidate_id_format(task, source, knobs, flags, KB_FORMAT_NATIVE, out, err);
}

int kb_candidate_id_format(const char *task, const char *source, const char *knobs,
                           const char *flags, int format, char out[KB_CAND_ID_LEN + 1],
                           struct kb_error *err) {
  out[0] = '\0';
  const char *fname = kb_cand_format_name(format);
  if (fname == NULL)
    return kb_error_set(err, KB_EINVAL, "candidate id: unknown format %d", format);
  char *norm = kb_source_normalize(source);
  if (norm == NULL)
    return kb_error_set(err, KB_ENOMEM, "candidate id: out of memory");
  struct kb_sha256 *h = kb_sha256_new();
  if (h == NULL) {
    kb_free(norm);
    return kb_error_set(err, KB_ENOMEM, "candidate id: cannot create a digest context");
  }
  /* each part with its NUL, so no two different splits hash alike */
  int rc = kb_sha256_update(h, task, strlen(task) + 1);
  if (rc == KB_OK)
    rc = kb_sha256_update(h, norm, strlen(norm) + 1);
  if (rc == KB_OK)
    rc = kb_sha256_update(h, knobs, strlen(knobs) + 1);
  if (rc == KB_OK)
    rc = kb_sha256_update(h, flags, strlen(flags) + 1);
  /* native hashes nothing more, so its ids are those of the versions before formats */
  if (rc == KB_OK && format != KB_FORMAT_NATIVE)
    rc = kb_sha256_update(h, fname, strlen(fname) + 1);
  kb_free(norm);
  if (rc) {
    kb_sha256_free(h);
    return kb_error_set(err, KB_EINTERNAL, "candidate id: sha-256 failed");
  }
  if (kb_sha256_final_hex(h, out) != KB_OK)
    return kb_error_set(err, KB_EINTERNAL, "candidate id: sha-256 failed");
  return KB_OK;
}

void kb_candidate_release(struct kb_candidate *c) {
  if (c == NULL)
    return;
  kb_free(c->knobs);
  kb_free(c->flags);
  kb_free(c->source);
  memset(c, 0, sizeof *c);
}

int kb_candidate_init(struct kb_candidate *c, const char *task, const char *name,
                      const char *generator, const char *source, const char *knobs,
                      const char *flags, struct kb_error *err) {
  memset(c, 0, sizeof *c);
  if (knobs == NULL)
    knobs = "";
  if (flags == NULL)
    flags = "";
  if (!kb_id_valid(task))
    return kb_error_set(err, KB_EINVAL, "candidate: invalid task id \"%s\"", task);
  if (!kb_candidate_name_valid(name))
    return kb_error_set(err, KB_EINVAL,
                        "candidate: name \"%s\" must be 1 to 63 printable ascii characters", name);
  if (!generator_valid(generator))
    return kb_error_set(err, KB_EINVAL, "candidate: unknown generator \"%s\"", generator);
  if (!kb_json_utf8_valid(source, strlen(source)) || !kb_json_utf8_valid(knobs, strlen(knobs)) ||
      !kb_json_utf8_valid(flags, strlen(flags)))
    return kb_error_set(err, KB_EINVAL, "candidate \"%s\": source, knobs and flags must be utf-8",
                        name);
  snprintf(c->task, sizeof c->task, "%s", task);
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->generator, sizeof c->generator, "%s", generator);
  c->source = kb_source_normalize(source);
  c->knobs = kb_strdup(knobs);
  c->flags = kb_strdup(flags);
  if (c->source == NULL || c->knobs == NULL || c->flags == NULL) {
    kb_candidate_release(c);
    return kb_error_set(err, KB_ENOMEM, "candidate \"%s\": out of memory", name);
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  c->created = (double)ts.tv_sec + (double)(ts.tv_nsec / 1000000) / 1e3;
  int rc = kb_candidate_id(c->task, c->source, c->knobs, c->flags, c->id, err);
  if (rc)
    kb_candidate_release(c);
  return rc;
}

int kb_candidate_set_format(struct kb_candidate *c, int format, struct kb_error *err) {
  char id[KB_CAND_ID_LEN + 1];
  int rc = kb_candidate_id_format(c->task, c->source ? c->source : "", c->knobs ? c->knobs : "",
                                  c->flags ? c->flags : "", format, id, err);
  if (rc)
    return rc;
  c->format = format;
  memcpy(c->id, id, sizeof c->id);
  return KB_OK;
}

static const char *const candidate_fields[] = {"schema", "id",    "task",    "name",
                                               "generator", "parents", "knobs", "flags",
                                               "created", "source", "format", NULL};

/* Fills `c` from the parsed document; its strings are copied. */
static int candidate_from_file(const struct kb_jsonfile *f, struct kb_candidate *c,
                               struct kb_error *err) {
  json_t *root = f->root;
  int rc = kb_jsonfile_check_document(f, "a candidate", candidate_fields, CANDIDATE_SCHEMA, err);
  if (rc)
    return rc;
  const char *s = NULL;
  const char *id = NULL;
  rc = kb_json_get_string(f, root, "", "id", 1, &id, err);
  if (rc)
    return rc;
  if (!kb_candidate_id_valid(id))
    return kb_jsonfile_fail(f, err, "id", "\"id\" must be 64 lowercase hex digits");
  rc = kb_id_get(f, root, "", "task", c->task, err);
  if (rc)
    return rc;
  rc = kb_json_get_string(f, root, "", "name", 1, &s, err);
  if (rc)
    return rc;
  if (!kb_candidate_name_valid(s))
    return kb_jsonfile_fail(f, err, "name",
                            "\"name\" must be 1 to 63 printable ascii characters");
  snprintf(c->name, sizeof c->name, "%s", s);
  int gen = 0;
  rc = kb_json_get_enum(f, root, "", "generator", 1, generator_names, &gen, err);
  if (rc)
    return rc;
  snprintf(c->generator, sizeof c->generator, "%s", generator_names[gen]);
  json_t *parents = NULL;
  rc = kb_json_get_array(f, root, "", "parents", 1, 0, 2, &parents, err);
  if (rc)
    return rc;
  for (size_t i = 0; i < json_array_size(parents); i++) {
    char path[KB_JSON_PATH_MAX];
    kb_json_index_path(path, sizeof path, "parents", i);
    json_t *p = json_array_get(parents, i);
    if (!json_is_string(p) || !kb_candidate_id_valid(json_string_value(p)))
      return kb_jsonfile_fail(f, err, path, "\"%s\" must be 64 lowercase hex digits", path);
    snprintf(c->parents[i], sizeof c->parents[i], "%s", json_string_value(p));
  }
  const char *knobs = NULL;
  const char *flags = NULL;
  const char *source = NULL;
  rc = kb_json_get_string(f, root, "", "knobs", 1, &knobs, err);
  if (rc == KB_OK)
    rc = kb_json_get_string(f, root, "", "flags", 1, &flags, err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, root, "", "created", 1, 0, DBL_MAX, &c->created, err);
  if (rc == KB_OK)
    rc = kb_json_get_string(f, root, "", "source", 1, &source, err);
  c->format = KB_FORMAT_NATIVE;
  if (rc == KB_OK)
    rc = kb_json_get_enum(f, root, "", "format", 0, format_names, &c->format, err);
  if (rc)
    return rc;
  c->knobs = kb_strdup(knobs);
  c->flags = kb_strdup(flags);
  c->source = kb_source_normalize(source);
  if (c->knobs == NULL || c->flags == NULL || c->source == NULL)
    return kb_error_set(err, KB_ENOMEM, "%s: out of memory", f->name);
  rc = kb_candidate_id_format(c->task, c->source, c->knobs, c->flags, c->format, c->id, err);
  if (rc)
    return rc;
  if (strcmp(c->id, id) != 0)
    return kb_jsonfile_fail(f, err, "id",
                            "\"id\" does not match the candidate's task, source, knobs, flags "
                            "and format (their id is %s)",
                            c->id);
  return KB_OK;
}

int kb_candidate_from_json(const char *text, const char *where, struct kb_candidate *c,
                           struct kb_error *err) {
  memset(c, 0, sizeof *c);
  struct kb_jsonfile f;
  int rc = kb_jsonfile_parse(&f, where, text, err);
  if (rc)
    return rc;
  rc = candidate_from_file(&f, c, err);
  kb_jsonfile_release(&f);
  if (rc)
    kb_candidate_release(c);
  return rc;
}

/* kb_candidate_from_json as kb_json_dump_checked calls it. */
static int decodes(const char *text, struct kb_error *why) {
  struct kb_candidate check;
  int rc = kb_candidate_from_json(text, "candidate", &check, why);
  kb_candidate_release(&check);
  return rc;
}

int kb_candidate_to_json(const struct kb_candidate *c, char **out, struct kb_error *err) {
  *out = NULL;
  json_t *parents = json_array();
  int rc = parents ? KB_OK : KB_ENOMEM;
  for (int i = 0; i < 2 && rc == KB_OK; i++) {
    if (c->parents[i][0] == '\0')
      continue;
    if (json_array_append_new(parents, json_string(c->parents[i])) != 0)
      rc = KB_ENOMEM;
  }
  if (rc) {
    json_decref(parents);
    return kb_error_set(err, KB_ENOMEM, "candidate %s: out of memory", c->id);
  }
  /* "O" takes its own reference, so ours is dropped below whether json_pack works or not */
  json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O, s:s, s:s, s:f, s:s}", "schema",
                        CANDIDATE_SCHEMA, "id", c->id, "task", c->task, "name", c->name,
                        "generator", c->generator, "parents", parents, "knobs",
                        c->knobs ? c->knobs : "", "flags", c->flags ? c->flags : "", "created",
                        isfinite(c->created) ? c->created : 0.0, "source",
                        c->source ? c->source : "");
  json_decref(parents);
  /* "format" only when not native, so native candidates encode as they always did */
  const char *fname = kb_cand_format_name(c->format);
  if (o != NULL && c->format != KB_FORMAT_NATIVE &&
      (fname == NULL || json_object_set_new(o, "format", json_string(fname)) != 0)) {
    json_decref(o);
    if (fname == NULL)
      return kb_error_set(err, KB_EINVAL, "candidate %s: unknown format %d", c->id, c->format);
    return kb_error_set(err, KB_ENOMEM, "candidate %s: out of memory", c->id);
  }
  if (o == NULL) {
    /* json_pack fails on ENOMEM and on strings that are not UTF-8 */
    int bad = !kb_json_utf8_valid(c->name, strlen(c->name)) ||
              (c->source && !kb_json_utf8_valid(c->source, strlen(c->source))) ||
              (c->knobs && !kb_json_utf8_valid(c->knobs, strlen(c->knobs))) ||
              (c->flags && !kb_json_utf8_valid(c->flags, strlen(c->flags)));
    if (bad)
      return kb_error_set(err, KB_EINVAL, "candidate %s: strings must be utf-8", c->id);
    return kb_error_set(err, KB_ENOMEM, "candidate %s: out of memory", c->id);
  }
  char what[KB_CAND_ID_LEN + 16];
  snprintf(what, sizeof what, "candidate %s", c->id);
  return kb_json_dump_checked(o, decodes, what, out, err);
}

int kb_source_defines_modelnew(const char *source) {
  static const char word[] = "class";
  for (const char *l = source; *l;) {
    /* a top-level "class ModelNew" followed by "(" or ":" */
    if (strncmp(l, word, sizeof word - 1) == 0 && (l[5] == ' ' || l[5] == '\t')) {
      const char *p = l + 5;
      while (*p == ' ' || *p == '\t')
        p++;
      if (strncmp(p, "ModelNew", 8) == 0) {
        p += 8;
        while (*p == ' ' || *p == '\t')
          p++;
        if (*p == '(' || *p == ':')
          return 1;
      }
    }
    const char *e = strchr(l, '\n');
    l = e ? e + 1 : l + strlen(l);
  }
  return 0;
}
