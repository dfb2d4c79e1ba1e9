/* A growable, always NUL-terminated byte buffer (like git's strbuf).
 *
 * struct kb_buf is owned by the caller: kb_buf_init() it, append, then kb_buf_release() its
 * contents or kb_buf_detach() them. On allocation failure an append returns KB_ENOMEM and leaves
 * the buffer as it was.
 */
#ifndef KB_BUF_H
#define KB_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct kb_buf {
  char *data;   /* NUL-terminated; never NULL after kb_buf_init */
  size_t len;   /* bytes used, not counting the NUL */
  size_t alloc; /* bytes allocated; 0 while data points at a static empty string */
};

void kb_buf_init(struct kb_buf *b);
/* Frees the contents and re-initialises; NULL is fine. */
void kb_buf_release(struct kb_buf *b);
/* Returns the data (new, caller frees with kb_free) and re-initialises `b`; NULL on ENOMEM. */
char *kb_buf_detach(struct kb_buf *b);
void kb_buf_reset(struct kb_buf *b);
int kb_buf_grow(struct kb_buf *b, size_t extra);
int kb_buf_add(struct kb_buf *b, const void *data, size_t len);
int kb_buf_adds(struct kb_buf *b, const char *s);
int kb_buf_addf(struct kb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int kb_buf_vaddf(struct kb_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Reads the whole file at `path` into `b` (appended). Returns KB_OK, KB_EIO (message names the
 * path and errno text) or KB_ENOMEM. */
struct kb_error;
int kb_buf_read_file(struct kb_buf *b, const char *path, struct kb_error *err);

#endif
