/* Framing and field access of the sandbox protocol (see proto.h). */
#include "proto.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/clock.h"
#include "kb/error.h"

#define POLL_MS 20

/* Milliseconds to wait in one poll: POLL_MS, or less when the deadline is nearer. */
static int wait_ms(double deadline) {
  if (deadline <= 0)
    return POLL_MS;
  double left = (deadline - kb_now_mono()) * 1000.0;
  if (left <= 0)
    return 0;
  return left < POLL_MS ? (int)left + 1 : POLL_MS;
}

static int past(double deadline) { return deadline > 0 && kb_now_mono() >= deadline; }

static kb__proto_send_fn sender; /* kb__proto_set_sender's; NULL: send(2) */

void kb__proto_set_sender(kb__proto_send_fn fn) { sender = fn; }

/* write() that does not raise SIGPIPE on sockets. */
static ssize_t put(int fd, const void *p, size_t n) {
  if (sender != NULL)
    return (ssize_t)sender(fd, p, n);
  ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
  if (w < 0 && errno == ENOTSOCK)
    w = write(fd, p, n);
  return w;
}

static int write_all(int fd, const unsigned char *p, size_t n, double deadline,
                     struct kb_error *err) {
  while (n > 0) {
    ssize_t w = put(fd, p, n);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (past(deadline))
        return kb_error_set(err, KB_ETIMEOUT, "sandbox message: the peer reads nothing");
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      poll(&pfd, 1, wait_ms(deadline));
      continue;
    }
    return kb_error_set(err, KB_EIO, "sandbox message: cannot write: %s",
                        w < 0 ? strerror(errno) : "nothing written");
  }
  return KB_OK;
}

int kb__frame_write(int fd, const char *data, size_t len, double deadline,
                    struct kb_error *err) {
  if (len > KB__FRAME_MAX)
    return kb_error_set(err, KB_EINVAL, "sandbox message of %zu bytes exceeds the %u-byte limit",
                        len, KB__FRAME_MAX);
  unsigned char head[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16),
                           (unsigned char)(len >> 8), (unsigned char)len};
  int rc = write_all(fd, head, sizeof head, deadline, err);
  if (rc == KB_OK)
    rc = write_all(fd, (const unsigned char *)data, len, deadline, err);
  return rc;
}

int kb__msg_write(int fd, const json_t *msg, double deadline, struct kb_error *err) {
  char *text = json_dumps(msg, JSON_COMPACT);
  if (text == NULL)
    return kb_error_set(err, KB_ENOMEM, "sandbox message: cannot encode");
  int rc = kb__frame_write(fd, text, strlen(text), deadline, err);
  free(text); /* jansson's allocator */
  return rc;
}

/* Reads exactly `n` bytes into `p`. `*got` counts what arrived (to tell EOF from truncation). */
static int read_all(int fd, unsigned char *p, size_t n, size_t *got, double deadline,
                    volatile sig_atomic_t *stop, struct kb_error *err) {
  while (*got < n) {
    ssize_t r = read(fd, p + *got, n - *got);
    if (r > 0) {
      *got += (size_t)r;
      continue;
    }
    /* a peer that ends with unread data in its socket resets the connection: an end too */
    if (r == 0 || (r < 0 && errno == ECONNRESET))
      return KB__FRAME_EOF;
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      kb_error_set(err, KB_EIO, "sandbox message: cannot read: %s", strerror(errno));
      return KB__FRAME_IO;
    }
    if (stop != NULL && *stop) {
      kb_error_set(err, KB_EINTERRUPTED, "sandbox message: interrupted");
      return KB__FRAME_STOPPED;
    }
    if (past(deadline)) {
      kb_error_set(err, KB_ETIMEOUT, "sandbox message: no reply in time");
      return KB__FRAME_TIMEOUT;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    poll(&pfd, 1, wait_ms(deadline));
  }
  return KB__FRAME_OK;
}

int kb__frame_read(int fd, char **out, size_t *len, double deadline,
                   volatile sig_atomic_t *stop, struct kb_error *err) {
  *out = NULL;
  *len = 0;
  unsigned char head[4];
  size_t got = 0;
  /* a blocking descriptor gets no deadline or stop checks inside read(): poll first */
  for (;;) {
    if (stop != NULL && *stop) {
      kb_error_set(err, KB_EINTERRUPTED, "sandbox message: interrupted");
      return KB__FRAME_STOPPED;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int pr = poll(&pfd, 1, wait_ms(deadline));
    if (pr > 0)
      break;
    if (pr < 0 && errno != EINTR) {
      kb_error_set(err, KB_EIO, "sandbox message: cannot poll: %s", strerror(errno));
      return KB__FRAME_IO;
    }
    if (past(deadline)) {
      kb_error_set(err, KB_ETIMEOUT, "sandbox message: no reply in time");
      return KB__FRAME_TIMEOUT;
    }
  }
  int st = read_all(fd, head, sizeof head, &got, deadline, stop, err);
  if (st == KB__FRAME_EOF && got > 0) {
    kb_error_set(err, KB_EIO, "sandbox message: the peer closed inside a frame header");
    return KB__FRAME_TRUNCATED;
  }
  if (st != KB__FRAME_OK)
    return st;
  uint32_t n = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 |
               (uint32_t)head[3];
  if (n > KB__FRAME_MAX) {
    kb_error_set(err, KB_EPARSE, "sandbox message: frame of %u bytes exceeds the %u-byte limit",
                 n, KB__FRAME_MAX);
    return KB__FRAME_TOO_LARGE;
  }
  char *buf = kb_malloc((size_t)n + 1);
  if (buf == NULL) {
    kb_error_set(err, KB_ENOMEM, "sandbox message: out of memory for %u bytes", n);
    return KB__FRAME_IO;
  }
  got = 0;
  st = read_all(fd, (unsigned char *)buf, n, &got, deadline, stop, err);
  if (st == KB__FRAME_EOF) {
    kb_error_set(err, KB_EIO, "sandbox message: the peer closed after %zu of %u bytes", got, n);
    st = KB__FRAME_TRUNCATED;
  }
  if (st != KB__FRAME_OK) {
    kb_free(buf);
    return st;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return KB__FRAME_OK;
}

int kb__msg_parse(const char *text, size_t len, json_t **out, struct kb_error *err) {
  json_error_t je;
  *out = NULL;
  json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (v == NULL)
    return kb_error_set(err, KB_EPARSE, "message:%d:%d: %s", je.line, je.column, je.text);
  if (!json_is_object(v)) {
    json_decref(v);
    return kb_error_set(err, KB_EPARSE, "message: not a JSON object");
  }
  json_t *op = json_object_get(v, "op");
  if (!json_is_string(op)) {
    json_decref(v);
    return kb_error_set(err, KB_EPARSE, "message: \"op\" must be a string");
  }
  *out = v;
  return KB_OK;
}

/* Writes "path.key" (or "key") into `field` and fails with `what`. */
static int bad_field(const char *path, const char *key, char *field, size_t field_size,
                     struct kb_error *err, const char *what) {
  char name[160];
  if (snprintf(name, sizeof name, "%s%s%s", path, path[0] ? "." : "", key) < 0)
    name[0] = '\0';
  if (field != NULL && field_size > 0 && snprintf(field, field_size, "%s", name) < 0)
    field[0] = '\0';
  return kb_error_set(err, KB_EPARSE, "\"%s\" %s", name, what);
}

static json_t *get(json_t *obj, const char *key) {
  return json_is_object(obj) ? json_object_get(obj, key) : NULL;
}

int kb__msg_int(json_t *obj, const char *path, const char *key, int required, int64_t min,
                int64_t max, int64_t *out, char *field, size_t field_size,
                struct kb_error *err) {
  json_t *v = get(obj, key);
  if (v == NULL)
    return required ? bad_field(path, key, field, field_size, err, "is missing") : KB_OK;
  if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
    char what[96];
    snprintf(what, sizeof what, "must be an integer in %lld..%lld", (long long)min,
             (long long)max);
    return bad_field(path, key, field, field_size, err, what);
  }
  *out = json_integer_value(v);
  return KB_OK;
}

int kb__msg_num(json_t *obj, const char *path, const char *key, int required, double min,
                double max, double *out, char *field, size_t field_size, struct kb_error *err) {
  json_t *v = get(obj, key);
  if (v == NULL)
    return required ? bad_field(path, key, field, field_size, err, "is missing") : KB_OK;
  double d = json_number_value(v);
  if (!json_is_number(v) || !isfinite(d) || d < min || d > max) {
    char what[96];
    snprintf(what, sizeof what, "must be a number in %g..%g", min, max);
    return bad_field(path, key, field, field_size, err, what);
  }
  *out = d;
  return KB_OK;
}

int kb__msg_bool(json_t *obj, const char *path, const char *key, int required, int *out,
                 char *field, size_t field_size, struct kb_error *err) {
  json_t *v = get(obj, key);
  if (v == NULL)
    return required ? bad_field(path, key, field, field_size, err, "is missing") : KB_OK;
  if (!json_is_boolean(v))
    return bad_field(path, key, field, field_size, err, "must be true or false");
  *out = json_is_true(v);
  return KB_OK;
}

int kb__msg_str(json_t *obj, const char *path, const char *key, int required, const char **out,
                char *field, size_t field_size, struct kb_error *err) {
  json_t *v = get(obj, key);
  if (v == NULL || json_is_null(v))
    return required ? bad_field(path, key, field, field_size, err, "is missing") : KB_OK;
  if (!json_is_string(v) || (required && json_string_length(v) == 0))
    return bad_field(path, key, field, field_size, err, "must be a non-empty string");
  *out = json_string_value(v);
  return KB_OK;
}

int kb__msg_array(json_t *obj, const char *path, const char *key, int required, size_t min,
                  size_t max, json_t **out, char *field, size_t field_size,
                  struct kb_error *err) {
  json_t *v = get(obj, key);
  if (v == NULL)
    return required ? bad_field(path, key, field, field_size, err, "is missing") : KB_OK;
  if (!json_is_array(v) || json_array_size(v) < min || json_array_size(v) > max) {
    char what[96];
    snprintf(what, sizeof what, "must be an array of %zu..%zu elements", min, max);
    return bad_field(path, key, field, field_size, err, what);
  }
  *out = v;
  return KB_OK;
}
