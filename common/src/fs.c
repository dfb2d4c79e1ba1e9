/* Whole writes, syncs by name and tree removal (see kb/fs.h). */
#define _GNU_SOURCE /* nftw's FTW_DEPTH and FTW_PHYS */
#include "kb/fs.h"

#include <errno.h>
#include <fcntl.h>
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

int kb_fsync_path(const char *path, int dir) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
  if (fd < 0)
    return -1;
  int rc = fsync(fd);
  int e = errno;
  close(fd);
  errno = e;
  return rc == 0 ? 0 : -1;
}

/* The first entry nftw's callback could not remove, per thread (nftw passes no user data). */
static _Thread_local int first_errno;
static _Thread_local char first_path[512];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  if (remove(path) != 0 && errno != ENOENT && first_errno == 0) {
    first_errno = errno;
    snprintf(first_path, sizeof first_path, "%s", path);
  }
  return 0; /* go on: remove what can be removed */
}

int kb_remove_tree(const char *path, struct kb_error *err) {
  first_errno = 0;
  if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
    return kb_error_set(err, KB_EIO, "cannot remove \"%s\": %s", path, strerror(errno));
  if (first_errno != 0)
    return kb_error_set(err, KB_EIO, "cannot remove \"%s\": %s", first_path,
                        strerror(first_errno));
  return KB_OK;
}

int kb_write_errno_code(int e) {
  switch (e) {
  case ENOSPC:
  case EDQUOT:
  case EROFS:
  case EIO:
  case EPERM:
  case EACCES:
  case EFBIG:
    return KB_EWRITE;
  default:
    return KB_EIO;
  }
}
