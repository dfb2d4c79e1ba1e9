/* Strict JSON input with positions, for messages like
 * `campaign.json:14:9: "budget.gpu_seconds" must be a positive number`.
 *
 * jansson parses (with duplicate keys rejected) but does not remember where each value was, so
 * this module also scans the text once and records the line and column of every value by its
 * JSON path ("budget.gpu_seconds", "tasks[2]"). Written by hand because no packaged library
 * gives value positions; the scanner relies on jansson having validated the syntax first.
 *
 * Lines and columns are 1-based; a column counts characters (UTF-8 sequences), as jansson's
 * own error positions do. Values point at their first character, unknown fields at their key,
 * missing fields at the object that lacks them. The top level must be an object or an array.
 *
 * Typical use: kb_jsonfile_load(); kb_jsonfile_check_unknown() on each object first, so a typo
 * is reported as such rather than as a missing field; then the kb_json_get_*() helpers, which
 * check presence, type and range and report with the position. When jansson runs out of memory
 * it sometimes reports a syntax error instead; callers cannot tell these apart.
 */
#ifndef KB_JSONFILE_H
#define KB_JSONFILE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct kb_error;
struct kb_jsonpos;

struct kb_jsonfile {
  char *name;        /* as shown in messages, usually the path (owned) */
  char *text;        /* the raw text (owned) */
  json_t *root;      /* parsed document (owned reference) */
  struct kb_jsonpos *pos; /* positions by path (owned) */
};

/* Largest file kb_jsonfile_load reads, bytes: a task or campaign file is a few KiB. */
#define KB_JSONFILE_MAX (64 * 1024 * 1024)

/* Reads and parses `path` (borrowed; also the name in messages) as one strict JSON document:
 * duplicate keys are errors and nothing may follow the top-level object or array. On a syntax
 * error: KB_EPARSE "path:line:col: <jansson's message>". KB_EPARSE "path: ..." too when `path`
 * is not a regular file (a folder, a FIFO, a device such as /dev/zero: never read, so never a
 * hang) or is over KB_JSONFILE_MAX bytes. KB_EIO when unreadable, KB_ENOMEM.
 * `f` is caller-owned and zeroed first; on success release it with kb_jsonfile_release (on
 * failure it is already released). */
int kb_jsonfile_load(struct kb_jsonfile *f, const char *path, struct kb_error *err);
/* Same, from NUL-terminated `text` in memory (borrowed; copied); `name` (borrowed; copied) is
 * used in messages. */
int kb_jsonfile_parse(struct kb_jsonfile *f, const char *name, const char *text,
                      struct kb_error *err);
/* Frees the contents of `f` and zeroes it; NULL and a zeroed struct are fine. */
void kb_jsonfile_release(struct kb_jsonfile *f);

/* Records KB_EPARSE "name:line:col: <msg>" where line:col is the position of the value at
 * `path` (or of its closest existing parent). Returns KB_EPARSE. */
int kb_jsonfile_fail(const struct kb_jsonfile *f, struct kb_error *err, const char *path,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Same as kb_jsonfile_fail, but points at the key of the member at `path` rather than at its
 * value (used for "unknown field"). Falls back to the value position for non-members. */
int kb_jsonfile_fail_key(const struct kb_jsonfile *f, struct kb_error *err, const char *path,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Writes into *line and *col (1-based) the position of the value at `path` or, when `at_key`,
 * of its key; a missing path gives its closest recorded parent's value position. Returns 1 when
 * `path` itself was found, 0 when a parent stood in (0:0 when nothing is recorded). */
int kb_jsonfile_position(const struct kb_jsonfile *f, const char *path, int at_key, int *line,
                         int *col);

/* Longest path the getters build; longer ones are truncated in messages. */
#define KB_JSON_PATH_MAX 512
/* Writes `path`.`key` (or `key` when `path` is "") into `out` (caller-owned, `size` bytes). */
void kb_json_path(char *out, size_t size, const char *path, const char *key);
/* Writes `path`[`index`] into `out` (caller-owned, `size` bytes). */
void kb_json_index_path(char *out, size_t size, const char *path, size_t index);

/* Field getters on object `obj` (borrowed) whose own path is `path` ("" for the root). Each
 * checks type and range and reports KB_EPARSE `"<path>.<key>" must be ...` at the value's
 * position, or `"<path>.<key>" is required` at the object's position. `required` = 0 means a
 * missing key leaves *out untouched and returns KB_OK. Strings and json_t results are borrowed
 * from the tree (valid while `f` is). Ranges are inclusive; messages name them: for numbers a
 * `min` of 0 reads "a non-negative number", a `min` of DBL_MIN (from <float.h>) "a positive
 * number" (effectively min > 0), and -DBL_MAX/DBL_MAX mean unbounded; for integers min 0 and 1
 * read "non-negative" and "positive", INT64_MIN/INT64_MAX unbounded. An integer field also
 * accepts a real with no fractional part (3.0), as JSON Schema does. */
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
/* A string field that must be one of the NULL-terminated `names` (borrowed); `*out` is its
 * index. Reports `"<path>.<key>" must be one of "a", "b"`. */
int kb_json_get_enum(const struct kb_jsonfile *f, json_t *obj, const char *path, const char *key,
                     int required, const char *const *names, int *out, struct kb_error *err);
/* Fails with KB_EPARSE `unknown field "<path>.<key>"`, pointing at the key, on the key of `obj`
 * that comes first in the file among those not in the NULL-terminated `allowed` list. */
int kb_jsonfile_check_unknown(const struct kb_jsonfile *f, json_t *obj, const char *path,
                              const char *const *allowed, struct kb_error *err);

/* Item `index` of the array `arr` (borrowed) whose own path is `path`: it must be an object
 * (else KB_EPARSE `"<path>[i]" must be an object`) with no key outside the NULL-terminated
 * `allowed` (as kb_jsonfile_check_unknown). Writes its path into `item_path` (caller-owned,
 * KB_JSON_PATH_MAX bytes) and the item into *out (borrowed from the tree, valid while `f` is). */
int kb_json_array_object(const struct kb_jsonfile *f, json_t *arr, const char *path,
                         size_t index, const char *const *allowed, char *item_path,
                         json_t **out, struct kb_error *err);
/* The checks every document of this project starts with, in order: the root is an object
 * (else KB_EPARSE "<what> must be a JSON object", `what` being e.g. "a task"), it has no
 * top-level key outside `allowed` (NULL-terminated), and its required "schema" string is
 * `schema` (else `"schema" must be "<schema>"`). All arguments borrowed. */
int kb_jsonfile_check_document(const struct kb_jsonfile *f, const char *what,
                               const char *const *allowed, const char *schema,
                               struct kb_error *err);

/* Encodes `v` (borrowed) as compact one-line JSON, keys in insertion order, into `*out` (new,
 * free with kb_free). Returns KB_OK or KB_ENOMEM. */
int kb_json_dump_compact(const json_t *v, char **out);

/* A decoder as kb_json_dump_checked calls it: KB_OK when it accepts `text` (borrowed for the
 * call), else its code with the reason in `why`. */
typedef int (*kb_json_decode_fn)(const char *text, struct kb_error *why);
/* Encodes `o` (stolen: the reference is dropped, also on failure) as kb_json_dump_compact does
 * into `*out` (new, kb_free; NULL on failure), but only text that `decodes` accepts: how an
 * encoder keeps its promise to emit only what its decoder, and so the schema, takes. `what`
 * (borrowed) names the record in messages: KB_ENOMEM "<what>: out of memory" (also when the
 * decoder runs out), KB_EINVAL "cannot encode <what>: <the decoder's reason>". */
int kb_json_dump_checked(json_t *o, kb_json_decode_fn decodes, const char *what, char **out,
                         struct kb_error *err);

/* 1 when `len` bytes of `s` (borrowed) are valid UTF-8 that jansson accepts in a string (no NUL,
 * no overlong forms, no surrogates), else 0. */
int kb_json_utf8_valid(const char *s, size_t len);
/* Returns a copy of NUL-terminated `s` (borrowed) with every byte that is not part of a valid
 * UTF-8 sequence replaced by '?', so it can go into a JSON string (new), or NULL on ENOMEM. */
char *kb_json_utf8_sanitize(const char *s);
/* The offset in NUL-terminated `s` (borrowed) of its first control character (bytes 0x01-0x1f
 * and 0x7f: a newline, a tab, an escape that would reach a terminal from a name shown by
 * status, watch or report), or -1 when it has none. */
long kb_text_control_at(const char *s);
/* Copies at most `cap - 1` bytes of `src` (borrowed; reading at most `max` bytes of it; NULL
 * copies nothing) into `dst` (`cap` > 0 bytes), NUL-terminated and NUL-padded; a cut never
 * splits a UTF-8 sequence. For fixed-size text fields (results, HDF5 rows). */
void kb_utf8_copy(char *dst, size_t cap, const char *src, size_t max);

#endif
