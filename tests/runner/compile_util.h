/* Helpers shared by the compile-tier tests: temporary folders, files, the processes a build
 * leaves, and one-call builds that fail the test on a runner-level error. */
#ifndef KB_TESTS_RUNNER_COMPILE_UTIL_H
#define KB_TESTS_RUNNER_COMPILE_UTIL_H

#include <stddef.h>

#include "compile.h"
#include "compile_pool.h"
#include "kb/fs.h" /* kb_remove_tree */

/* The set-up of a compile test group: a fresh cache folder from `templ` into `cache` (`size`
 * bytes), and `cc` initialised over it with the host compiler `compiler` (NULL: the default)
 * and the ABI header folder `abi_dir`. Returns 0, or -1 after printing why (a cmocka group
 * setup's convention). */
int tu_compiler_setup(struct kb__compiler *cc, char *cache, size_t size, const char *templ,
                      const char *compiler, const char *abi_dir);

/* Releases `cc` and removes `cache`: tu_compiler_setup's teardown. Returns 0. */
int tu_compiler_teardown(struct kb__compiler *cc, const char *cache);

/* The names of the files in `dir` ending in `ext` (".c", ".cu"), sorted, `*n` of them (new
 * array of new strings: tu_free_names); fails the test when `dir` cannot be read. */
char **tu_list_files(const char *dir, const char *ext, int *n);

/* Frees what tu_list_files returned. */
void tu_free_names(char **names, int n);

/* Frees the pool `p` while its builds run in build folders of `cache`: at least `min_running`
 * processes must be there before, kb__compile_pool_free must take under a second, and no
 * process nor build folder may be left (the cancellation contract of compile_pool.h). */
void tu_expect_free_kills(struct kb__compile_pool *p, const char *cache, int min_running);

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
