/* Shared by the tests of the kernel archive (tests/common/test_archive.c) and of the archive
 * generator (tests/scheduler/test_gen_archive.c): small tasks, kernel sources and archive
 * entries made from them, and throwaway folders. Every function fails the cmocka test when
 * something it needs fails. */
#ifndef KB_TESTS_COMMON_ARCHIVE_FIXTURE_H
#define KB_TESTS_COMMON_ARCHIVE_FIXTURE_H

#include <stddef.h>

#include "kb/archive.h"
#include "kb/task.h"

/* Parses into `t` (caller-owned; release with kb_task_release) a host task `id` of `category`
 * whose one input has `n` floats; its files are not checked. */
void kbt_archive_task(const char *id, const char *category, int n, struct kb_task *t);
/* Writes into `out` (caller-owned, `size` bytes) the source of kernel number `k`; different
 * `k` give different sources (and candidate ids), all marked unrolled. */
void kbt_archive_source(int k, char *out, size_t size);
/* Fills `e` (caller-owned; release with kb_archive_entry_release) with kernel number `k` of
 * task `t` (borrowed), an llm candidate named "k<k>", verified in tier "full" of campaign "c1"
 * at `speedup` over a 100 us baseline on `gpu` (borrowed, copied). */
void kbt_archive_entry(const struct kb_task *t, int k, double speedup, const char *gpu,
                       struct kb_archive_entry *e);
/* Same for KernelBench solution number `k` (format kernelbench, a ModelNew file, name
 * "kb<k>"), timed on "cpu". */
void kbt_archive_modelnew(const struct kb_task *t, int k, double speedup,
                          struct kb_archive_entry *e);
/* Makes a fresh folder /tmp/kb-archive-XXXXXX into `out` (caller-owned, `size` >= 23 bytes). */
void kbt_archive_tmpdir(char *out, size_t size);

#endif
