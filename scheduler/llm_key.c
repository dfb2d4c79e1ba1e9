/* Reading the LLM API key (see llm_key.h). */
#include "llm_key.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb/error.h"

/* Copies the first line of `s` without surrounding blanks into `out`. */
static int first_line(const char *s, size_t n, char *out, size_t size) {
  while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')) {
    s++;
    n--;
  }
  size_t len = 0;
  while (len < n && s[len] != '\n' && s[len] != '\r')
    len++;
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
    len--;
  if (len + 1 > size)
    return -1;
  memcpy(out, s, len);
  out[len] = '\0';
  return (int)len;
}

int kb__llm_key_read(const char *env, const char *path, char *out, size_t size,
                    struct kb_error *err) {
  out[0] = '\0';
  if (env != NULL) {
    const char *v = getenv(env);
    if (v == NULL || v[0] == '\0')
      return kb_error_set(err, KB_ENOTFOUND, "llm api key: environment variable %s is not set",
                          env);
    int n = first_line(v, strlen(v), out, size);
    if (n < 0)
      return kb_error_set(err, KB_EINVAL, "llm api key in %s is too long", env);
    if (n == 0)
      return kb_error_set(err, KB_ENOTFOUND, "llm api key: environment variable %s is blank",
                          env);
    return KB_OK;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return kb_error_set(err, errno == ENOENT ? KB_ENOTFOUND : KB_EIO,
                        "cannot open llm key file \"%s\": %s", path, strerror(errno));
  struct stat st;
  int rc = KB_OK;
  char buf[4096];
  ssize_t got = 0;
  if (fstat(fd, &st) != 0) {
    rc = kb_error_set(err, KB_EIO, "cannot stat llm key file \"%s\": %s", path, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    rc = kb_error_set(err, KB_EINVAL, "llm key file \"%s\" is not a regular file", path);
  } else if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    rc = kb_error_set(err, KB_EINVAL,
                      "llm key file \"%s\" is readable by group or others (mode %04o): "
                      "chmod 600 it",
                      path, (unsigned)(st.st_mode & 07777));
  } else {
    got = read(fd, buf, sizeof buf - 1);
    if (got < 0)
      rc = kb_error_set(err, KB_EIO, "cannot read llm key file \"%s\": %s", path,
                        strerror(errno));
  }
  close(fd);
  if (rc)
    return rc;
  int n = first_line(buf, (size_t)got, out, size);
  memset(buf, 0, sizeof buf);
  if (n < 0)
    return kb_error_set(err, KB_EINVAL, "llm key in \"%s\" is too long", path);
  if (n == 0)
    return kb_error_set(err, KB_ENOTFOUND, "llm key file \"%s\" is empty", path);
  return KB_OK;
}
