/* The sandbox protocol's framing and field access, shared by kb-runner and kb-sandbox.
 *
 * A message is a frame: a 4-byte big-endian length, then that many bytes of one JSON object
 * (UTF-8, no NUL). Frames larger than KB__FRAME_MAX are refused by both sides. Every message
 * has "op"; the messages themselves are documented in docs/sandbox.md.
 *
 * Reading and writing work on blocking or non-blocking descriptors with a deadline (monotonic
 * seconds, kb_now_mono()); a peer that closes mid-frame is reported as such, never as a short
 * message. Writes use send(MSG_NOSIGNAL) on sockets, so a dead peer is an error, not SIGPIPE.
 */
#ifndef KB_SANDBOX_PROTO_H
#define KB_SANDBOX_PROTO_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct kb_error;

/* The exit status of a sandbox process whose seccomp filter stopped a system call (128 +
 * SIGSYS, as a shell shows a death by SIGSYS), after the line
 * "kb-sandbox: blocked system call <name> (<nr>)" on its stderr (confine.h). */
#define KB__SANDBOX_EXIT_BLOCKED 159

/* Largest frame either side accepts, bytes. */
#define KB__FRAME_MAX (16u << 20)

/* How a frame read ended. */
enum kb__frame_status {
  KB__FRAME_OK = 0,      /* a whole frame is in the buffer */
  KB__FRAME_EOF,         /* the peer closed before a frame began */
  KB__FRAME_TRUNCATED,   /* the peer closed in the middle of a frame */
  KB__FRAME_TIMEOUT,     /* the deadline passed first */
  KB__FRAME_STOPPED,     /* *stop was set first */
  KB__FRAME_TOO_LARGE,   /* the length prefix exceeds KB__FRAME_MAX */
  KB__FRAME_IO           /* read error (errno in the message) */
};

/* How frames are written: a function like send(2) with MSG_NOSIGNAL (a count, or -1 with
 * errno). */
typedef long (*kb__proto_send_fn)(int fd, const void *p, size_t n);

/* Makes every later frame write go through `fn` (NULL: send(2), write(2) where `fd` is not a
 * socket). A confined kb-sandbox sets its filter's gate (kb__confine_send), since its filter
 * lets no other code write to the protocol's descriptors (docs/sandbox.md, "Confinement"). */
void kb__proto_set_sender(kb__proto_send_fn fn);

/* Writes `len` bytes of `data` (borrowed) as one frame to `fd`, waiting at most until
 * `deadline` (kb_now_mono() seconds; <= 0: no limit). Errors: KB_EINVAL (too large), KB_EIO
 * (peer gone: EPIPE, ECONNRESET; other errors), KB_ETIMEOUT. */
int kb__frame_write(int fd, const char *data, size_t len, double deadline, struct kb_error *err);

/* Encodes `msg` (borrowed) compactly and writes it as one frame (see kb__frame_write).
 * Errors: those, and KB_ENOMEM. */
int kb__msg_write(int fd, const json_t *msg, double deadline, struct kb_error *err);

/* Reads one frame from `fd` into `*out` (new, NUL-terminated, free with kb_free; NULL unless
 * KB__FRAME_OK) and its length into `*len`. Waits until `deadline` (<= 0: no limit), polling
 * `*stop` (may be NULL) every 20 ms. Returns an enum kb__frame_status; `err` gets a message
 * for every status but OK and EOF. */
int kb__frame_read(int fd, char **out, size_t *len, double deadline,
                   volatile sig_atomic_t *stop, struct kb_error *err);

/* Parses `text` (borrowed, `len` bytes) into `*out` (new reference, json_decref it; NULL on
 * failure) and checks that it is an object with a string "op". Errors: KB_EPARSE
 * "message: ..." naming the position or field. */
int kb__msg_parse(const char *text, size_t len, json_t **out, struct kb_error *err);

/* Field readers for messages. Each reads `key` of `obj` (borrowed), and on a missing
 * (when `required`) or mistyped or out-of-range value fails with KB_EPARSE and a message that
 * names the field as `path`.`key` ("inputs[2].dtype"), also copied into `field` (`field_size`
 * bytes; may be NULL) for the error reply. A missing optional key leaves `*out` untouched. */
int kb__msg_int(json_t *obj, const char *path, const char *key, int required, int64_t min,
                int64_t max, int64_t *out, char *field, size_t field_size, struct kb_error *err);
int kb__msg_num(json_t *obj, const char *path, const char *key, int required, double min,
                double max, double *out, char *field, size_t field_size, struct kb_error *err);
int kb__msg_bool(json_t *obj, const char *path, const char *key, int required, int *out,
                 char *field, size_t field_size, struct kb_error *err);
/* `*out` is borrowed from `obj`; an empty string is refused when `required`. */
int kb__msg_str(json_t *obj, const char *path, const char *key, int required, const char **out,
                char *field, size_t field_size, struct kb_error *err);
/* `*out` is borrowed; the array must have `min`..`max` elements. */
int kb__msg_array(json_t *obj, const char *path, const char *key, int required, size_t min,
                  size_t max, json_t **out, char *field, size_t field_size, struct kb_error *err);

#endif
