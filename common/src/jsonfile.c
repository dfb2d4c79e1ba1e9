/* Strict JSON input with value positions (see kb/jsonfile.h).
 *
 * jansson checks the syntax; then a small scanner walks the same text and records, for every
 * value, its JSON path and the line:column where it starts (and, for object members, where its
 * key starts). The scanner trusts jansson's verdict: it is only ever run on text jansson
 * accepted, so it does not re-check the grammar, only stays inside the buffer.
 */
#include "kb/jsonfile.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"

struct pos_entry {
  size_t path_off; /* offset of the NUL-terminated path in kb_jsonpos.paths */
  int line;        /* 1-based line of the value's first character */
  int col;         /* 1-based column (in UTF-8 characters) of the value */
  int key_line;    /* line of the member's key; the value's own for non-members */
  int key_col;     /* column of the member's key */
};

struct kb_jsonpos {
  struct kb_buf paths;      /* every path, each followed by a NUL */
  struct pos_entry *v;      /* entries in document order (owned) */
  size_t n;                 /* entries used */
  size_t alloc;             /* entries allocated */
};

/* --- position table -------------------------------------------------------------------- */

static void pos_free(struct kb_jsonpos *pos) {
  if (pos == NULL)
    return;
  kb_buf_release(&pos->paths);
  kb_free(pos->v);
  kb_free(pos);
}

static int pos_add(struct kb_jsonpos *pos, const char *path, size_t path_len, int line, int col,
                   int key_line, int key_col) {
  if (pos->n == pos->alloc) {
    size_t cap = pos->alloc ? pos->alloc * 2 : 32;
    struct pos_entry *v = kb_reallocarray(pos->v, cap, sizeof *v);
    if (v == NULL)
      return KB_ENOMEM;
    pos->v = v;
    pos->alloc = cap;
  }
  size_t off = pos->paths.len;
  int rc = kb_buf_add(&pos->paths, path, path_len);
  if (rc == KB_OK)
    rc = kb_buf_add(&pos->paths, "", 1); /* keep the NUL as a separator */
  if (rc) {
    pos->paths.len = off;
    pos->paths.data[off] = '\0';
    return rc;
  }
  pos->v[pos->n].path_off = off;
  pos->v[pos->n].line = line;
  pos->v[pos->n].col = col;
  pos->v[pos->n].key_line = key_line;
  pos->v[pos->n].key_col = key_col;
  pos->n++;
  return KB_OK;
}

static const struct pos_entry *pos_find(const struct kb_jsonpos *pos, const char *path,
                                        size_t len) {
  if (pos == NULL)
    return NULL;
  for (size_t i = 0; i < pos->n; i++) {
    const char *p = pos->paths.data + pos->v[i].path_off;
    if (strlen(p) == len && memcmp(p, path, len) == 0)
      return &pos->v[i];
  }
  return NULL;
}

/* Length of the parent path of `path[0..len)`: "a.b[2]" -> "a.b" -> "a" -> "". */
static size_t parent_len(const char *path, size_t len) {
  if (len == 0)
    return 0;
  if (path[len - 1] == ']') {
    while (len > 0 && path[len - 1] != '[')
      len--;
    return len > 0 ? len - 1 : 0;
  }
  while (len > 0 && path[len - 1] != '.' && path[len - 1] != ']')
    len--;
  if (len > 0 && path[len - 1] == '.')
    len--;
  return len;
}

/* The entry of `path` or of its closest recorded parent; NULL only without a table. */
static const struct pos_entry *pos_lookup(const struct kb_jsonpos *pos, const char *path,
                                          int *exact) {
  size_t len = strlen(path);
  *exact = 1;
  for (;;) {
    const struct pos_entry *e = pos_find(pos, path, len);
    if (e != NULL || len == 0)
      return e;
    *exact = 0;
    len = parent_len(path, len);
  }
}

/* --- scanner --------------------------------------------------------------------------- */

struct scanner {
  const char *p;          /* next byte */
  const char *end;        /* one past the last byte */
  int line;               /* line of *p, 1-based */
  int col;                /* column of *p, 1-based, in UTF-8 characters */
  struct kb_buf path;     /* path of the value being scanned */
  struct kb_jsonpos *pos; /* where entries go (borrowed) */
};

static void advance(struct scanner *s) {
  if (s->p >= s->end)
    return;
  unsigned char c = (unsigned char)*s->p++;
  if (c == '\n') {
    s->line++;
    s->col = 1;
  } else if (s->p >= s->end || ((unsigned char)*s->p & 0xC0) != 0x80) {
    /* count a character once its last byte is consumed */
    s->col++;
  }
}

static void skip_ws(struct scanner *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    advance(s);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return 0;
}

static unsigned read_u4(struct scanner *s) {
  unsigned v = 0;
  for (int i = 0; i < 4 && s->p < s->end; i++) {
    v = v * 16 + (unsigned)hexval(*s->p);
    advance(s);
  }
  return v;
}

static int add_utf8(struct kb_buf *b, unsigned cp) {
  char out[4];
  size_t n;
  if (cp < 0x80) {
    out[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  return kb_buf_add(b, out, n);
}

/* Scans a string starting at its opening quote. When `decoded` is not NULL the unescaped text
 * is appended to it (used for keys, which become part of paths). */
static int scan_string(struct scanner *s, struct kb_buf *decoded) {
  advance(s); /* opening quote */
  while (s->p < s->end && *s->p != '"') {
    if (*s->p != '\\') {
      const char *start = s->p;
      while (s->p < s->end && *s->p != '"' && *s->p != '\\')
        advance(s);
      if (decoded != NULL) {
        int rc = kb_buf_add(decoded, start, (size_t)(s->p - start));
        if (rc)
          return rc;
      }
      continue;
    }
    advance(s); /* backslash */
    if (s->p >= s->end)
      break;
    char esc = *s->p;
    advance(s);
    unsigned cp;
    switch (esc) {
    case 'b': cp = '\b'; break;
    case 'f': cp = '\f'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 't': cp = '\t'; break;
    case 'u':
      cp = read_u4(s);
      if (cp >= 0xD800 && cp < 0xDC00 && s->end - s->p >= 6 && s->p[0] == '\\' &&
          s->p[1] == 'u') {
        advance(s);
        advance(s);
        unsigned lo = read_u4(s);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      }
      break;
    default: cp = (unsigned char)esc; break; /* '"', '\\', '/' */
    }
    if (decoded != NULL) {
      int rc = add_utf8(decoded, cp);
      if (rc)
        return rc;
    }
  }
  advance(s); /* closing quote */
  return KB_OK;
}

static int scan_value(struct scanner *s, int key_line, int key_col);

/* One member of an object, from its key to the end of its value; the key is appended to the
 * path (after a '.' unless the object is the root at `base` 0). */
static int scan_member(struct scanner *s, size_t base) {
  int kline = s->line;
  int kcol = s->col;
  int rc = KB_OK;
  if (base > 0)
    rc = kb_buf_add(&s->path, ".", 1);
  if (rc == KB_OK)
    rc = scan_string(s, &s->path);
  if (rc == KB_OK) {
    skip_ws(s);
    advance(s); /* ':' */
    rc = scan_value(s, kline, kcol);
  }
  return rc;
}

/* Item `i` of an array; "[i]" is appended to the path. */
static int scan_item(struct scanner *s, size_t i) {
  int rc = kb_buf_addf(&s->path, "[%zu]", i);
  if (rc == KB_OK)
    rc = scan_value(s, 0, 0);
  return rc;
}

/* An object or an array, from its opening bracket to past `close` ('}' or ']'): each member
 * or item is scanned under the container's path extended by its key or index. */
static int scan_container(struct scanner *s, char close) {
  size_t base = s->path.len;
  advance(s); /* '{' or '[' */
  skip_ws(s);
  if (s->p < s->end && *s->p == close) {
    advance(s);
    return KB_OK;
  }
  for (size_t i = 0; s->p < s->end; i++) {
    skip_ws(s);
    int rc = close == '}' ? scan_member(s, base) : scan_item(s, i);
    s->path.len = base;
    s->path.data[base] = '\0';
    if (rc)
      return rc;
    skip_ws(s);
    if (s->p >= s->end)
      break;
    char c = *s->p;
    advance(s); /* ',' or the closing bracket */
    if (c == close)
      break;
  }
  return KB_OK;
}

/* Records the value at the current position under the current path, then skips it.
 * `key_line` 0 means the value is not an object member. */
static int scan_value(struct scanner *s, int key_line, int key_col) {
  skip_ws(s);
  int line = s->line;
  int col = s->col;
  if (key_line == 0) {
    key_line = line;
    key_col = col;
  }
  int rc = pos_add(s->pos, s->path.data, s->path.len, line, col, key_line, key_col);
  if (rc)
    return rc;
  if (s->p >= s->end)
    return KB_OK;
  switch (*s->p) {
  case '{':
    return scan_container(s, '}');
  case '[':
    return scan_container(s, ']');
  case '"':
    return scan_string(s, NULL);
  default:
    /* number, true, false, null: runs until a delimiter */
    while (s->p < s->end && strchr(",]} \t\r\n", *s->p) == NULL)
      advance(s);
    return KB_OK;
  }
}

static int scan_positions(const char *text, size_t len, struct kb_jsonpos **out) {
  struct kb_jsonpos *pos = kb_calloc(1, sizeof *pos);
  if (pos == NULL)
    return KB_ENOMEM;
  kb_buf_init(&pos->paths);
  struct scanner s = {.p = text, .end = text + len, .line = 1, .col = 1, .pos = pos};
  kb_buf_init(&s.path);
  int rc = scan_value(&s, 0, 0);
  kb_buf_release(&s.path);
  if (rc) {
    pos_free(pos);
    return rc;
  }
  *out = pos;
  return KB_OK;
}

/* --- loading ----------------------------------------------------------------------------- */

static int parse_text(struct kb_jsonfile *f, const char *name, char *text, size_t len,
                      struct kb_error *err) {
  /* `text` is stolen: it belongs to `f` from here on, whatever happens */
  memset(f, 0, sizeof *f);
  f->text = text;
  f->name = kb_strdup(name);
  if (f->name == NULL) {
    kb_jsonfile_release(f);
    return kb_error_set(err, KB_ENOMEM, "%s: out of memory", name);
  }
  /* zeroed: jansson does not fill the code byte on every failure path */
  json_error_t jerr;
  memset(&jerr, 0, sizeof jerr);
  f->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (f->root == NULL) {
    int rc;
    /* jansson leaves the error blank when the allocation setting up its lexer fails */
    if (json_error_code(&jerr) == json_error_out_of_memory || jerr.text[0] == '\0')
      rc = kb_error_set(err, KB_ENOMEM, "%s: out of memory", name);
    else
      rc = kb_error_set(err, KB_EPARSE, "%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text);
    kb_jsonfile_release(f);
    return rc;
  }
  int rc = scan_positions(text, len, &f->pos);
  if (rc) {
    kb_jsonfile_release(f);
    return kb_error_set(err, rc, "%s: out of memory", name);
  }
  return KB_OK;
}

/* Reads the regular file `path` into `b`. Opened without blocking and checked before any
 * read: a FIFO would wait for a writer forever, /dev/zero never ends, a sparse file of 10 GB
 * would be read whole. */
static int read_json_file(struct kb_buf *b, const char *path, struct kb_error *err) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return kb_error_set(err, KB_EIO, "cannot open \"%s\": %s", path, strerror(errno));
  int rc = KB_OK;
  struct stat st;
  if (fstat(fd, &st) != 0)
    rc = kb_error_set(err, KB_EIO, "cannot read \"%s\": %s", path, strerror(errno));
  else if (S_ISDIR(st.st_mode))
    rc = kb_error_set(err, KB_EPARSE, "%s: is a folder, not a JSON file", path);
  else if (!S_ISREG(st.st_mode))
    rc = kb_error_set(err, KB_EPARSE,
                      "%s: not a regular file (a FIFO, socket or device is not read)", path);
  else if (st.st_size > KB_JSONFILE_MAX)
    rc = kb_error_set(err, KB_EPARSE, "%s: too large: %lld bytes, at most %d", path,
                      (long long)st.st_size, KB_JSONFILE_MAX);
  char chunk[8192];
  while (rc == KB_OK) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      rc = kb_error_set(err, KB_EIO, "cannot read \"%s\": %s", path, strerror(errno));
    if (n <= 0)
      break;
    if (b->len + (size_t)n > KB_JSONFILE_MAX) /* it grew since fstat */
      rc = kb_error_set(err, KB_EPARSE, "%s: too large: over %d bytes", path, KB_JSONFILE_MAX);
    else if (kb_buf_add(b, chunk, (size_t)n) != KB_OK)
      rc = kb_error_set(err, KB_ENOMEM, "cannot read \"%s\": out of memory", path);
  }
  close(fd);
  return rc;
}

int kb_jsonfile_load(struct kb_jsonfile *f, const char *path, struct kb_error *err) {
  memset(f, 0, sizeof *f);
  struct kb_buf b;
  kb_buf_init(&b);
  int rc = read_json_file(&b, path, err);
  if (rc) {
    kb_buf_release(&b);
    return rc;
  }
  size_t len = b.len;
  char *text = kb_buf_detach(&b);
  if (text == NULL)
    return kb_error_set(err, KB_ENOMEM, "%s: out of memory", path);
  return parse_text(f, path, text, len, err);
}

int kb_jsonfile_parse(struct kb_jsonfile *f, const char *name, const char *text,
                      struct kb_error *err) {
  memset(f, 0, sizeof *f);
  size_t len = strlen(text);
  char *copy = kb_strndup(text, len);
  if (copy == NULL)
    return kb_error_set(err, KB_ENOMEM, "%s: out of memory", name);
  return parse_text(f, name, copy, len, err);
}

void kb_jsonfile_release(struct kb_jsonfile *f) {
  if (f == NULL)
    return;
  kb_free(f->name);
  kb_free(f->text);
  json_decref(f->root);
  pos_free(f->pos);
  memset(f, 0, sizeof *f);
}

/* --- positions and failures ---------------------------------------------------------------- */

int kb_jsonfile_position(const struct kb_jsonfile *f, const char *path, int at_key, int *line,
                         int *col) {
  int exact;
  const struct pos_entry *e = pos_lookup(f->pos, path, &exact);
  if (e == NULL) {
    *line = 0;
    *col = 0;
    return 0;
  }
  /* a key position only makes sense for the member itself, not a parent standing in */
  if (at_key && exact) {
    *line = e->key_line;
    *col = e->key_col;
  } else {
    *line = e->line;
    *col = e->col;
  }
  return exact;
}

static int vfail(const struct kb_jsonfile *f, struct kb_error *err, const char *path, int at_key,
                 const char *fmt, va_list ap) {
  if (err == NULL || err->code != KB_OK)
    return KB_EPARSE;
  int line;
  int col;
  kb_jsonfile_position(f, path, at_key, &line, &col);
  char msg[sizeof err->msg];
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  if (n < 0)
    msg[0] = '\0';
  return kb_error_set(err, KB_EPARSE, "%s:%d:%d: %s", f->name ? f->name : "<json>", line, col,
                      msg);
}

int kb_jsonfile_fail(const struct kb_jsonfile *f, struct kb_error *err, const char *path,
                     const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vfail(f, err, path, 0, fmt, ap);
  va_end(ap);
  return rc;
}

int kb_jsonfile_fail_key(const struct kb_jsonfile *f, struct kb_error *err, const char *path,
                         const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vfail(f, err, path, 1, fmt, ap);
  va_end(ap);
  return rc;
}

void kb_json_path(char *out, size_t size, const char *path, const char *key) {
  int n;
  if (path == NULL || path[0] == '\0')
    n = snprintf(out, size, "%s", key);
  else
    n = snprintf(out, size, "%s.%s", path, key);
  if (n < 0 && size > 0)
    out[0] = '\0';
}

void kb_json_index_path(char *out, size_t size, const char *path, size_t index) {
  int n = snprintf(out, size, "%s[%zu]", path, index);
  if (n < 0 && size > 0)
    out[0] = '\0';
}

/* The JSON type a getter asks for: the check member() makes, and its message. */
enum kind { ANY_KIND, STRING_KIND, BOOL_KIND, ARRAY_KIND, OBJECT_KIND };

static int kind_ok(const json_t *v, enum kind kind) {
  switch (kind) {
  case ANY_KIND: return 1;
  case STRING_KIND: return json_is_string(v);
  case BOOL_KIND: return json_is_boolean(v);
  case ARRAY_KIND: return json_is_array(v);
  case OBJECT_KIND: return json_is_object(v);
  }
  return 0;
}

static const char *const kind_name[] = {
    [ANY_KIND] = "anything", [STRING_KIND] = "a string", [BOOL_KIND] = "true or false",
    [ARRAY_KIND] = "an array", [OBJECT_KIND] = "an object",
};

/* Looks `key` up in `obj` and writes its path into `full` (KB_JSON_PATH_MAX bytes). Returns
 * KB_OK with *val set, KB_OK with *val NULL when absent and optional, or the KB_EPARSE of a
 * missing required field (reported at the object) or of a value not of `kind` (at the value). */
static int member(const struct kb_jsonfile *f, json_t *obj, const char *path, const char *key,
                  int required, enum kind kind, char *full, json_t **val,
                  struct kb_error *err) {
  kb_json_path(full, KB_JSON_PATH_MAX, path, key);
  *val = json_object_get(obj, key);
  if (*val == NULL && required)
    return kb_jsonfile_fail(f, err, path, "\"%s\" is required", full);
  if (*val != NULL && !kind_ok(*val, kind)) {
    *val = NULL;
    return kb_jsonfile_fail(f, err, full, "\"%s\" must be %s", full, kind_name[kind]);
  }
  return KB_OK;
}

int kb_json_get_string(const struct kb_jsonfile *f, json_t *obj, const char *path,
                       const char *key, int required, const char **out, struct kb_error *err) {
  char full[KB_JSON_PATH_MAX];
  json_t *v;
  int rc = member(f, obj, path, key, required, STRING_KIND, full, &v, err);
  if (rc == KB_OK && v != NULL)
    *out = json_string_value(v);
  return rc;
}

/* What an integer field must be, for messages: "an integer between 1 and 20" when both bounds
 * are real limits; otherwise the lower bound ("a positive integer"), or "at most N" when the
 * value only broke the upper one. A max of INT32_MAX or more is a sanity cap, not a limit. */
static void describe_int(char *out, size_t size, int64_t min, int64_t max, int above) {
  int n;
  int capped = max < INT32_MAX;
  if (capped && min != INT64_MIN)
    n = snprintf(out, size, "an integer between %" PRId64 " and %" PRId64, min, max);
  else if (above)
    n = snprintf(out, size, "at most %" PRId64, max);
  else if (min == INT64_MIN)
    n = snprintf(out, size, "an integer");
  else if (min == 0)
    n = snprintf(out, size, "a non-negative integer");
  else if (min == 1)
    n = snprintf(out, size, "a positive integer");
  else
    n = snprintf(out, size, "an integer >= %" PRId64, min);
  if (n < 0 && size > 0)
    out[0] = '\0';
}

int kb_json_get_int(const struct kb_jsonfile *f, json_t *obj, const char *path, const char *key,
                    int required, int64_t min, int64_t max, int64_t *out, struct kb_error *err) {
  char full[KB_JSON_PATH_MAX];
  json_t *v;
  int rc = member(f, obj, path, key, required, ANY_KIND, full, &v, err);
  if (rc || v == NULL)
    return rc;
  int ok = 0;
  int64_t value = 0;
  if (json_is_integer(v)) {
    value = json_integer_value(v);
    ok = 1;
  } else if (json_is_real(v)) {
    /* JSON Schema counts 3.0 as an integer; so do we, to agree with the schemas */
    double d = json_real_value(v);
    if (d == floor(d) && d >= -9.2233720368547758e18 && d < 9.2233720368547758e18) {
      value = (int64_t)d;
      ok = 1;
    }
  }
  if (!ok || value < min || value > max) {
    char what[96];
    describe_int(what, sizeof what, min, max, ok && value > max);
    return kb_jsonfile_fail(f, err, full, "\"%s\" must be %s", full, what);
  }
  *out = value;
  return KB_OK;
}

/* Same for numbers: min 0 reads "non-negative", DBL_MIN "positive", -DBL_MAX no bound. */
static void describe_number(char *out, size_t size, double min, double max, int above) {
  int custom_min = min > -DBL_MAX && min != 0 && min != DBL_MIN;
  int n;
  if (custom_min && max < DBL_MAX)
    n = snprintf(out, size, "a number between %g and %g", min, max);
  else if (above)
    n = snprintf(out, size, "at most %g", max);
  else if (custom_min)
    n = snprintf(out, size, "a number >= %g", min);
  else if (min == 0)
    n = snprintf(out, size, "a non-negative number");
  else if (min == DBL_MIN)
    n = snprintf(out, size, "a positive number");
  else
    n = snprintf(out, size, "a number");
  if (n < 0 && size > 0)
    out[0] = '\0';
}

int kb_json_get_number(const struct kb_jsonfile *f, json_t *obj, const char *path,
                       const char *key, int required, double min, double max, double *out,
                       struct kb_error *err) {
  char full[KB_JSON_PATH_MAX];
  json_t *v;
  int rc = member(f, obj, path, key, required, ANY_KIND, full, &v, err);
  if (rc || v == NULL)
    return rc;
  double value = json_is_number(v) ? json_number_value(v) : NAN;
  if (!(value >= min && value <= max)) {
    char what[96];
    describe_number(what, sizeof what, min, max, value > max);
    return kb_jsonfile_fail(f, err, full, "\"%s\" must be %s", full, what);
  }
  *out = value;
  return KB_OK;
}

int kb_json_get_bool(const struct kb_jsonfile *f, json_t *obj, const char *path, const char *key,
                     int required, int *out, struct kb_error *err) {
  char full[KB_JSON_PATH_MAX];
  json_t *v;
  int rc = member(f, obj, path, key, required, BOOL_KIND, full, &v, err);
  if (rc == KB_OK && v != NULL)
    *out = json_is_true(v);
  return rc;
}

int kb_json_get_array(const struct kb_jsonfile *f, json_t *obj, const char *path,
                      const char *key, int required, size_t min_len, size_t max_len,
                      json_t **out, struct kb_error *err) {
  char full[KB_JSON_PATH_MAX];
  json_t *v;
  int rc = member(f, obj, path, key, required, ARRAY_KIND, full, &v, err);
  if (rc || v == NULL)
    return rc;
  size_t n = json_array_size(v);
  if (n < min_len)
    return kb_jsonfile_fail(f, err, full, "\"%s\" must have at least %zu item%s", full, min_len,
                            min_len == 1 ? "" : "s");
  if (n > max_len)
    return kb_jsonfile_fail(f, err, full, "\"%s\" must have at most %zu item%s", full, max_len,
                            max_len == 1 ? "" : "s");
  *out = v;
  return KB_OK;
}

int kb_json_get_object(const struct kb_jsonfile *f, json_t *obj, const char *path,
                       const char *key, int required, json_t **out, struct kb_error *err) {
  char full[KB_JSON_PATH_MAX];
  json_t *v;
  int rc = member(f, obj, path, key, required, OBJECT_KIND, full, &v, err);
  if (rc == KB_OK && v != NULL)
    *out = v;
  return rc;
}

int kb_json_get_enum(const struct kb_jsonfile *f, json_t *obj, const char *path, const char *key,
                     int required, const char *const *names, int *out, struct kb_error *err) {
  char full[KB_JSON_PATH_MAX];
  kb_json_path(full, sizeof full, path, key);
  const char *s = NULL;
  int rc = kb_json_get_string(f, obj, path, key, required, &s, err);
  if (rc || s == NULL)
    return rc;
  for (int i = 0; names[i] != NULL; i++) {
    if (strcmp(s, names[i]) == 0) {
      *out = i;
      return KB_OK;
    }
  }
  char list[256];
  size_t used = 0;
  list[0] = '\0';
  for (int i = 0; names[i] != NULL && used < sizeof list; i++) {
    int n = snprintf(list + used, sizeof list - used, "%s\"%s\"", i ? ", " : "", names[i]);
    if (n < 0)
      break;
    used += (size_t)n;
  }
  return kb_jsonfile_fail(f, err, full, "\"%s\" must be one of %s", full, list);
}

int kb_jsonfile_check_unknown(const struct kb_jsonfile *f, json_t *obj, const char *path,
                              const char *const *allowed, struct kb_error *err) {
  const char *key;
  json_t *value;
  const char *first = NULL;
  int first_line = 0;
  int first_col = 0;
  /* report the unknown key that comes first in the file, whatever jansson's order */
  json_object_foreach(obj, key, value) {
    (void)value;
    int known = 0;
    for (int i = 0; allowed[i] != NULL && !known; i++)
      known = strcmp(key, allowed[i]) == 0;
    if (known)
      continue;
    char full[KB_JSON_PATH_MAX];
    kb_json_path(full, sizeof full, path, key);
    int line;
    int col;
    kb_jsonfile_position(f, full, 1, &line, &col);
    if (first == NULL || line < first_line || (line == first_line && col < first_col)) {
      first = key;
      first_line = line;
      first_col = col;
    }
  }
  if (first == NULL)
    return KB_OK;
  char full[KB_JSON_PATH_MAX];
  kb_json_path(full, sizeof full, path, first);
  return kb_jsonfile_fail_key(f, err, full, "unknown field \"%s\"", full);
}

int kb_json_array_object(const struct kb_jsonfile *f, json_t *arr, const char *path,
                         size_t index, const char *const *allowed, char *item_path,
                         json_t **out, struct kb_error *err) {
  kb_json_index_path(item_path, KB_JSON_PATH_MAX, path, index);
  json_t *item = json_array_get(arr, index);
  if (!json_is_object(item))
    return kb_jsonfile_fail(f, err, item_path, "\"%s\" must be an object", item_path);
  int rc = kb_jsonfile_check_unknown(f, item, item_path, allowed, err);
  if (rc == KB_OK)
    *out = item;
  return rc;
}

int kb_jsonfile_check_document(const struct kb_jsonfile *f, const char *what,
                               const char *const *allowed, const char *schema,
                               struct kb_error *err) {
  if (!json_is_object(f->root))
    return kb_jsonfile_fail(f, err, "", "%s must be a JSON object", what);
  int rc = kb_jsonfile_check_unknown(f, f->root, "", allowed, err);
  const char *s = NULL;
  if (rc == KB_OK)
    rc = kb_json_get_string(f, f->root, "", "schema", 1, &s, err);
  if (rc == KB_OK && strcmp(s, schema) != 0)
    rc = kb_jsonfile_fail(f, err, "schema", "\"schema\" must be \"%s\"", schema);
  return rc;
}

/* --- UTF-8 ------------------------------------------------------------------------------- */

/* Length of the valid, non-NUL UTF-8 sequence starting at `p` (`left` bytes available), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t left) {
  unsigned char c = p[0];
  if (c == 0)
    return 0;
  if (c < 0x80)
    return 1;
  size_t n;
  unsigned cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (left < n)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

void kb_utf8_copy(char *dst, size_t cap, const char *src, size_t max) {
  memset(dst, 0, cap);
  if (src == NULL)
    return;
  size_t len = strnlen(src, max);
  size_t n = len < cap - 1 ? len : cap - 1;
  if (n < len)
    while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
      n--;
  memcpy(dst, src, n);
}

int kb_json_utf8_valid(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
    size_t n = utf8_seq(p + i, len - i);
    if (n == 0)
      return 0;
    i += n;
  }
  return 1;
}

long kb_text_control_at(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      return (long)(p - (const unsigned char *)s);
  return -1;
}

char *kb_json_utf8_sanitize(const char *s) {
  size_t len = strlen(s);
  char *out = kb_strndup(s, len);
  if (out == NULL)
    return NULL;
  unsigned char *p = (unsigned char *)out;
  size_t i = 0;
  while (i < len) {
    size_t n = utf8_seq(p + i, len - i);
    if (n == 0) {
      p[i] = '?';
      n = 1;
    }
    i += n;
  }
  return out;
}

/* --- output ------------------------------------------------------------------------------ */

int kb_json_dump_checked(json_t *o, kb_json_decode_fn decodes, const char *what, char **out,
                         struct kb_error *err) {
  *out = NULL;
  char *text = NULL;
  int rc = kb_json_dump_compact(o, &text);
  json_decref(o);
  if (rc)
    return kb_error_set(err, rc, "%s: out of memory", what);
  struct kb_error why = {0};
  rc = decodes(text, &why);
  if (rc) {
    kb_free(text);
    if (rc == KB_ENOMEM)
      return kb_error_set(err, rc, "%s: out of memory", what);
    return kb_error_set(err, KB_EINVAL, "cannot encode %s: %s", what, why.msg);
  }
  *out = text;
  return KB_OK;
}

static int dump_to_buf(const char *buffer, size_t size, void *data) {
  return kb_buf_add(data, buffer, size) == KB_OK ? 0 : -1;
}

int kb_json_dump_compact(const json_t *v, char **out) {
  struct kb_buf b;
  kb_buf_init(&b);
  *out = NULL;
  if (json_dump_callback(v, dump_to_buf, &b, JSON_COMPACT) != 0) {
    kb_buf_release(&b);
    return KB_ENOMEM;
  }
  *out = kb_buf_detach(&b);
  return *out ? KB_OK : KB_ENOMEM;
}
