/* The LLM API key: from an environment variable or a file, never from the campaign file or the
 * command line. A key file must be a regular file that neither group nor others can read or
 * write (mode 0600 or stricter); anything else is refused before any request is made.
 */
#ifndef KB_SCHED_LLM_KEY_H
#define KB_SCHED_LLM_KEY_H

#include <stddef.h>

struct kb_error;

/* Reads the key from environment variable `env` or, when `env` is NULL, from file `path` (both
 * borrowed) into `out` (`size` bytes; first line, surrounding blanks stripped). Errors:
 * KB_ENOTFOUND (variable unset or empty, file empty), KB_EINVAL "key file \"P\" is readable by
 * group or others (mode 0644): chmod 600 it" (also: not a regular file, key too long), KB_EIO. */
int kb__llm_key_read(const char *env, const char *path, char *out, size_t size,
                    struct kb_error *err);

#endif
