/* Helpers shared by the compile-tier tests: temporary folders, files, the processes a build
 * leaves, and one-call builds that fail the test on a runner-level error. */
#ifndef KB_TESTS_RUNNER_COMPILE_UTIL_H
#define KB_TESTS_RUNNER_COMPILE_UTIL_H

#include <stddef.h>

#include "compile.h"

/* rm -r `path` (files and folders; no links followed). */
void tu_remove_tree(const char *path);

/* Creates a fresh folder from `templ` ("/tmp/kb-x.XXXXXX", modified in place); fails the test
 * when it cannot. */
void tu_mkdtemp(char *templ);

/* The contents of `path` as a new string (kb_free it); fails the test when unreadable. */
char *tu_slurp(const char *path);

/* Writes `text` to `path`; fails the test when it cannot. */
void tu_write(const char *path, const char *text);

/* How many processes of this user have their working folder inside `dir`. A build runs in a
 * folder of the cache, so after a cancel none may be left there. */
int tu_processes_in(const char *dir);

/* tu_processes_in(dir) once it reaches 0, or after `timeout_s` seconds: killed processes take
 * a moment to exit, and orphans to be reaped by init. */
int tu_processes_left(const char *dir, double timeout_s);

/* How many entries named "tmp.*" (build folders) `dir` holds. */
int tu_build_dirs_in(const char *dir);

/* Builds `source` with `knobs`, `flags` and `arch` (may be NULL) through kb__compile_req into
 * `b` (initialised here; release it); fails the test on a runner-level error. */
void tu_build(const struct kb__compiler *cc, const char *source, const char *knobs,
              const char *flags, const char *arch, struct kb__build *b);

/* Value of a "// NAME: value" header line of a test candidate's source into `out`, "" when
 * missing. */
void tu_header(const char *source, const char *name, char *out, size_t size);

#endif
