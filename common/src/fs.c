/* Whole writes and tree removal (see kb/fs.h). */
#define _GNU_SOURCE /* nftw's FTW_DEPTH and FTW_PHYS */
#include "kb/fs.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kb/error.h"

int kb_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -1;
    if (w == 0) {
      errno = EIO;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

int kb_remove_tree(const char *path, struct kb_error *err) {
  if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
    return kb_error_set(err, KB_EIO, "cannot remove \"%s\": %s", path, strerror(errno));
  return KB_OK;
}
