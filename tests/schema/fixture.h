/* Test fixtures for the schema suite: throwaway folders holding task bundles and campaigns.
 * Every function aborts the test (cmocka fail_msg) when the file system says no.
 */
#ifndef KB_TESTS_SCHEMA_FIXTURE_H
#define KB_TESTS_SCHEMA_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kb/error.h"
#include "kb/fs.h"

/* A task.json that kb_task_load accepts; "%s" slots: none. Bundles made by fx_bundle hold the
 * files it names. */
#define FX_TASK_JSON                                                                           \
  "{\n"                                                                                        \
  "  \"schema\": \"kernelbrain.task/1\",\n"                                                    \
  "  \"id\": \"t1\",\n"                                                                        \
  "  \"name\": \"test task\",\n"                                                               \
  "  \"backend\": \"host\",\n"                                                                 \
  "  \"oracle\": {\"kind\": \"c\", \"source\": \"oracle.c\"},\n"                               \
  "  \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [16]}],\n"                  \
  "  \"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [16]}],\n"                 \
  "  \"input_sets\": [{\"seed\": 1, \"distribution\": \"uniform\", \"low\": -1, \"high\": 1}],\n" \
  "  \"seeds\": [{\"name\": \"naive\", \"source\": \"seeds/naive.c\"}]\n"                      \
  "}\n"

/* Makes a fresh folder under $TMPDIR (or /tmp) into `out` (PATH_MAX bytes). */
static inline void fx_tmpdir(char *out) {
  const char *base = getenv("TMPDIR");
  if (base == NULL || base[0] == '\0')
    base = "/tmp";
  int n = snprintf(out, PATH_MAX, "%s/kb-schema-test-XXXXXX", base);
  if (n < 0 || n >= PATH_MAX || mkdtemp(out) == NULL)
    fail_msg("cannot make a temporary folder: %s", strerror(errno));
}

/* Creates every missing folder of `path` up to its last slash. */
static inline void fx_mkparents(const char *path) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    fail_msg("path too long: %s", path);
  for (char *p = buf + 1; *p != '\0'; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      fail_msg("mkdir %s: %s", buf, strerror(errno));
    *p = '/';
  }
}

/* Writes `text` to `dir`/`rel`, creating folders on the way. */
static inline void fx_write(const char *dir, const char *rel, const char *text) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s", dir, rel) >= (int)sizeof path)
    fail_msg("path too long: %s/%s", dir, rel);
  fx_mkparents(path);
  FILE *f = fopen(path, "w");
  if (f == NULL)
    fail_msg("cannot write %s: %s", path, strerror(errno));
  fputs(text, f);
  fclose(f);
}

/* Writes a task bundle at `dir`/`rel` with the given task.json and the files FX_TASK_JSON
 * names (oracle.c, reference.c, seeds/naive.c, seeds/fast.c). */
static inline void fx_bundle(const char *dir, const char *rel, const char *task_json) {
  char sub[PATH_MAX];
  if (snprintf(sub, sizeof sub, "%s/%s", dir, rel) >= (int)sizeof sub)
    fail_msg("path too long: %s/%s", dir, rel);
  fx_write(sub, "task.json", task_json);
  fx_write(sub, "oracle.c", "/* oracle */\n");
  fx_write(sub, "reference.c", "/* reference */\n");
  fx_write(sub, "seeds/naive.c", "/* naive */\n");
  fx_write(sub, "seeds/fast.c", "/* fast */\n");
}

/* Returns a new string (free()) that is `text` with the first `from` replaced by `to`; fails
 * the test when `from` does not occur. */
static inline char *fx_replace(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  if (at == NULL)
    fail_msg("fixture text has no \"%s\"", from);
  size_t head = (size_t)(at - text);
  size_t len = strlen(text) - strlen(from) + strlen(to);
  char *out = malloc(len + 1);
  assert_non_null(out);
  memcpy(out, text, head);
  memcpy(out + head, to, strlen(to));
  const char *tail = at + strlen(from);
  memcpy(out + head + strlen(to), tail, strlen(tail) + 1);
  return out;
}

/* One bad edit of a fixture document: `from` replaced by `to` must fail with `want` in the
 * message. */
struct fx_edit {
  const char *from; /* text of the fixture to replace */
  const char *to;   /* what replaces it */
  const char *want; /* part of the expected KB_EPARSE message */
};

/* Writes `text` with its first `from` replaced by `to` to `dir`/`rel`. */
static inline void fx_write_edit(const char *dir, const char *rel, const char *text,
                                 const char *from, const char *to) {
  char *json = fx_replace(text, from, to);
  fx_write(dir, rel, json);
  free(json);
}

/* Fails the test unless `rc` is KB_EPARSE with `e->want` in `msg`. */
static inline void fx_expect_parse_error(int rc, const char *msg, const struct fx_edit *e) {
  if (rc != KB_EPARSE || strstr(msg, e->want) == NULL)
    fail_msg("edit \"%s\" -> \"%s\": rc %d \"%s\", want KB_EPARSE \"%s\"", e->from, e->to, rc,
             msg, e->want);
}

/* Teardown for a state struct whose first member is its `char dir[PATH_MAX]`: removes that
 * folder and frees the struct. */
static inline int fx_teardown(void **state) {
  char *dir = *state; /* a pointer to a struct is a pointer to its first member */
  kb_remove_tree(dir, NULL);
  free(*state);
  return 0;
}

#endif
