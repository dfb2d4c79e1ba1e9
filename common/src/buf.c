/* Growable NUL-terminated buffer (see kb/buf.h). */
#include "kb/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/error.h"

static char empty[1];

void kb_buf_init(struct kb_buf *b) {
  b->data = empty;
  b->len = 0;
  b->alloc = 0;
}

void kb_buf_release(struct kb_buf *b) {
  if (b == NULL)
    return;
  if (b->alloc)
    kb_free(b->data);
  kb_buf_init(b);
}

char *kb_buf_detach(struct kb_buf *b) {
  char *out = b->alloc ? b->data : kb_strdup("");
  kb_buf_init(b);
  return out;
}

void kb_buf_reset(struct kb_buf *b) {
  b->len = 0;
  b->data[0] = '\0';
}

int kb_buf_grow(struct kb_buf *b, size_t extra) {
  if (extra > SIZE_MAX - b->len - 1)
    return KB_ENOMEM;
  size_t need = b->len + extra + 1;
  if (need <= b->alloc)
    return KB_OK;
  size_t cap = b->alloc ? b->alloc : 64;
  while (cap < need)
    cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  char *p = kb_reallocarray(b->alloc ? b->data : NULL, cap, 1);
  if (p == NULL)
    return KB_ENOMEM;
  if (!b->alloc)
    p[0] = '\0';
  b->data = p;
  b->alloc = cap;
  return KB_OK;
}

int kb_buf_add(struct kb_buf *b, const void *data, size_t len) {
  int rc = kb_buf_grow(b, len);
  if (rc)
    return rc;
  memcpy(b->data + b->len, data, len);
  b->len += len;
  b->data[b->len] = '\0';
  return KB_OK;
}

int kb_buf_adds(struct kb_buf *b, const char *s) { return kb_buf_add(b, s, strlen(s)); }

int kb_buf_vaddf(struct kb_buf *b, const char *fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  if (n < 0)
    return KB_EINVAL;
  int rc = kb_buf_grow(b, (size_t)n);
  if (rc)
    return rc;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return KB_OK;
}

int kb_buf_addf(struct kb_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = kb_buf_vaddf(b, fmt, ap);
  va_end(ap);
  return rc;
}

int kb_buf_read_file(struct kb_buf *b, const char *path, struct kb_error *err) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return kb_error_set(err, KB_EIO, "cannot open \"%s\": %s", path, strerror(errno));
  int rc = KB_OK;
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    rc = kb_buf_add(b, chunk, n);
    if (rc) {
      kb_error_set(err, rc, "cannot read \"%s\": out of memory", path);
      break;
    }
  }
  if (rc == KB_OK && ferror(f))
    rc = kb_error_set(err, KB_EIO, "cannot read \"%s\": %s", path, strerror(errno));
  fclose(f);
  return rc;
}
