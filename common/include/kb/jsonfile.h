/* Strict JSON input with positions, for messages like
 * `campaign.json:14:9: "budget.gpu_seconds" must be a positive number`.
 *
 * jansson parses (with duplicate keys rejected) but does not remember where each value was, so
 * this module also scans the text once and records the line and column of every value by its
 * JSON path ("budget.gpu_seconds", "tasks[2]"). Written by hand because no packaged library
 * gives value positions; the scanner relies on jansson having validated the syntax first.
 *
 * Typical use: kb_jsonfile_load(); then the kb_json_get_*() helpers, which check presence and
 * type and report with the position; then kb_jsonfile_check_unknown() per object for strictness.
 */
#ifndef KB_JSONFILE_H
#define KB_JSONFILE_H

#include <jansson.h>
#include <stdint.h>

struct kb_error;
struct kb_jsonpos;

struct kb_jsonfile {
  char *name;        /* as shown in messages, usually the path (owned) */
  char *text;        /* the raw text (owned) */
  json_t *root;      /* parsed document (owned reference) */
  struct kb_jsonpos *pos; /* positions by path (owned) */
};

/* Reads and parses `path`. On a syntax error: KB_EPARSE "path:line:col: <jansson's message>".
 * KB_EIO when unreadable. `f` is caller-owned; release it with kb_jsonfile_release. */
int kb_jsonfile_load(struct kb_jsonfile *f, const char *path, struct kb_error *err);
/* Same, from text in memory; `name` is used in messages. */
int kb_jsonfile_parse(struct kb_jsonfile *f, const char *name, const char *text,
                      struct kb_error *err);
void kb_jsonfile_release(struct kb_jsonfile *f);

/* Records KB_EPARSE "name:line:col: <msg>" where line:col is the position of the value at
 * `path` (or of its closest existing parent). Returns KB_EPARSE. */
int kb_jsonfile_fail(const struct kb_jsonfile *f, struct kb_error *err, const char *path,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Field getters on object `obj` whose own path is `path` ("" for the root). Each checks type
 * and range and reports `"<path>.<key>" must be ...` at the right position. `required` = 0 means
 * a missing key leaves *out untouched and returns KB_OK. Strings are borrowed from the tree. */
int kb_json_get_string(const struct kb_jsonfile *f, json_t *obj, const char *path,
                       const char *key, int required, const char **out, struct kb_error *err);
int kb_json_get_int(const struct kb_jsonfile *f, json_t *obj, const char *path, const char *key,
                    int required, int64_t min, int64_t max, int64_t *out, struct kb_error *err);
int kb_json_get_number(const struct kb_jsonfile *f, json_t *obj, const char *path,
                       const char *key, int required, double min, double max, double *out,
                       struct kb_error *err);
int kb_json_get_bool(const struct kb_jsonfile *f, json_t *obj, const char *path, const char *key,
                     int required, int *out, struct kb_error *err);
/* `*out` is the array/object (borrowed) or left untouched when absent and not required. */
int kb_json_get_array(const struct kb_jsonfile *f, json_t *obj, const char *path,
                      const char *key, int required, size_t min_len, size_t max_len,
                      json_t **out, struct kb_error *err);
int kb_json_get_object(const struct kb_jsonfile *f, json_t *obj, const char *path,
                       const char *key, int required, json_t **out, struct kb_error *err);
/* Fails on the first key of `obj` not in the NULL-terminated `allowed` list. */
int kb_jsonfile_check_unknown(const struct kb_jsonfile *f, json_t *obj, const char *path,
                              const char *const *allowed, struct kb_error *err);

#endif
