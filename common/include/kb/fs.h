/* File-system steps more than one process takes the same way: writing a whole buffer to a file
 * descriptor, and removing a folder with everything in it.
 */
#ifndef KB_FS_H
#define KB_FS_H

#include <stddef.h>

struct kb_error;

/* Writes all `n` bytes of `buf` (borrowed) to `fd`, again after a short write or EINTR.
 * Returns 0, or -1 with errno set (EIO when write() wrote nothing); the file offset then
 * stands after what was written. Does not close `fd`. */
int kb_write_all(int fd, const void *buf, size_t n);

/* Removes `path` (borrowed) and, when it is a folder, everything under it; symbolic links are
 * removed, never followed. A `path` that does not exist is not an error. What cannot be removed
 * stays and the rest is removed all the same. Returns KB_OK, or KB_EIO `cannot remove "<entry>":
 * <why>` naming the first entry that could not be removed (`err` may be NULL). */
int kb_remove_tree(const char *path, struct kb_error *err);

#endif
