/* A growable, always NUL-terminated byte buffer (like git's strbuf).
 *
 * struct kb_buf is owned by the caller: kb_buf_init() it, append, then kb_buf_release() its
 * contents or kb_buf_detach() them. On allocation failure an append returns KB_ENOMEM and leaves
 * the buffer as it was. `data` belongs to the buffer: a pointer into it is valid until the next
 * append, reset, release or detach.
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

/* Sets `b` (caller-owned) to the empty string; allocates nothing. */
void kb_buf_init(struct kb_buf *b);
/* Frees the contents and re-initialises; NULL is fine. */
void kb_buf_release(struct kb_buf *b);
/* Returns the data (new, caller frees with kb_free; a never-grown buffer gives a new "") and
 * re-initialises `b`, also when it returns NULL on ENOMEM. */
char *kb_buf_detach(struct kb_buf *b);
/* Empties `b`, keeping its memory for reuse. */
void kb_buf_reset(struct kb_buf *b);
/* Makes room for `extra` more bytes (and the NUL) so the next appends of that much cannot fail.
 * Returns KB_OK or KB_ENOMEM (also when the size would overflow). */
int kb_buf_grow(struct kb_buf *b, size_t extra);
/* Appends `len` bytes of `data` (borrowed; copied; may hold NUL bytes). KB_OK or KB_ENOMEM. */
int kb_buf_add(struct kb_buf *b, const void *data, size_t len);
/* Appends the NUL-terminated `s` (borrowed; copied). KB_OK or KB_ENOMEM. */
int kb_buf_adds(struct kb_buf *b, const char *s);
/* Appends printf-style text. KB_OK, KB_ENOMEM, or KB_EINVAL when vsnprintf refuses the format
 * (the buffer is then unchanged). */
int kb_buf_addf(struct kb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int kb_buf_vaddf(struct kb_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Reads the whole file at `path` (borrowed) into `b` (appended). Returns KB_OK, KB_EIO (message
 * names the path and errno text) or KB_ENOMEM; on a failure after the open, `b` keeps what was
 * appended so far (the caller releases it). */
struct kb_error;
int kb_buf_read_file(struct kb_buf *b, const char *path, struct kb_error *err);

#endif
