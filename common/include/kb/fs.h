/* File-system steps more than one process takes the same way: writing a whole buffer to a file
 * descriptor, syncing a file or folder by name, removing a folder with everything in it, and telling a write fault from other
 * failures.
 */
#ifndef KB_FS_H
#define KB_FS_H

#include <stddef.h>

struct kb_error;

/* Writes all `n` bytes of `buf` (borrowed) to `fd`, again after a short write or EINTR.
 * Returns 0, or -1 with errno set (EIO when write() wrote nothing); the file offset then
 * stands after what was written. Does not close `fd`. */
int kb_write_all(int fd, const void *buf, size_t n);

/* fsync()s the file or, with `dir` non-zero, the folder at `path` (borrowed): opened read-only
 * (a folder with O_DIRECTORY), synced, closed. Returns 0, or -1 with errno set by the step that
 * failed (the open or the sync). */
int kb_fsync_path(const char *path, int dir);

/* Removes `path` (borrowed) and, when it is a folder, everything under it; symbolic links are
 * removed, never followed. A `path` that does not exist is not an error. What cannot be removed
 * stays and the rest is removed all the same. Returns KB_OK, or KB_EIO `cannot remove "<entry>":
 * <why>` naming the first entry that could not be removed (`err` may be NULL). */
int kb_remove_tree(const char *path, struct kb_error *err);

/* KB_EWRITE for an errno that says the file system cannot take more writes (a full disk or
 * quota, a read-only or immutable file, a failing device: ENOSPC, EDQUOT, EROFS, EIO, EPERM,
 * EACCES, EFBIG), else KB_EIO. The one rule for which write errors are the machine's, not the
 * input's: the scheduler stops on them (results, summary.json) and a runner leaves (its build
 * cache), both with exit 9. */
int kb_write_errno_code(int e);

#endif
