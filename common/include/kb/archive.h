/* The kernel archive: verified best kernels across campaigns, one JSON file per entry in a
 * folder that several campaigns (and several schedulers at once, on a network filesystem)
 * share. User docs: docs/generators.md ("archive"), docs/cli.md (kb-submit archive).
 *
 * Layout: <dir>/<entry id>.json, nothing else is read. An entry is written under a temporary
 * name starting with "." (host, pid and a random number in it, so writers on different nodes
 * never share one), flushed with fsync, then renamed into place: a reader sees a whole entry or
 * none. Writing an entry whose id exists replaces it (same kernel, same task spec, same GPU:
 * the newer timing wins).
 *
 * Entry file (schema "kernelbrain.archive-entry/1"), every field required, unknown fields are
 * errors:
 *   "schema", "id": 64 hex (SHA-256 of fingerprint, candidate id and gpu, NUL-separated),
 *   "task": task id, "fingerprint": 64 hex (kb_task_fingerprint), "backend": "host"|"cuda",
 *   "category": string, "candidate": 64 hex (the candidate id: task, source, knobs, flags),
 *   "name": the candidate's name, "generator": who made it ("seed", "tune", "llm", "archive",
 *   "manual"), "source", "knobs", "flags": strings, "gpu": the device its timing comes from
 *   ("NVIDIA H200", "cpu"; "" when never timed), "tier": that tier's name ("" when never timed),
 *   "median_us", "baseline_us", "speedup": numbers >= 0 (0 = unknown), "campaign": id or "",
 *   "added": unix seconds, "tags": [strings of 1..40 printable ASCII characters] (0..32);
 *   optional "format": "native" | "kernelbench" (the candidate's format, kb/candidate.h;
 *   absent = native, and written only for kernelbench, so older entries stay valid; the
 *   candidate id covers it). A kernelbench entry is a ModelNew Python file: only tasks with a
 *   pytorch oracle can run it (the archive generator proposes it to no other).
 */
#ifndef KB_ARCHIVE_H
#define KB_ARCHIVE_H

#include <stddef.h>

#include "kb/candidate.h"
#include "kb/task.h"

#define KB_ARCHIVE_SCHEMA "kernelbrain.archive-entry/1"
#define KB_ARCHIVE_MAX_TAGS 32
#define KB_ARCHIVE_TAG_MAX 41 /* bytes of a tag with its NUL */

struct kb_error;

struct kb_archive_entry {
  char id[KB_CAND_ID_LEN + 1];          /* entry id (kb_archive_entry_set_id) */
  char task[KB_ID_MAX];                 /* task id */
  char fingerprint[KB_CAND_ID_LEN + 1]; /* kb_task_fingerprint of the task's spec */
  int backend;                          /* enum kb_backend */
  char *category;                       /* the task's category (owned) */
  char candidate[KB_CAND_ID_LEN + 1];   /* candidate id */
  char name[KB_ID_MAX];                 /* candidate name */
  char generator[16];                   /* "seed", "tune", "llm", "archive", "manual" */
  char *source;                         /* kernel source, normalized (owned) */
  char *knobs;                          /* "-DNAME=value ..." or "" (owned) */
  char *flags;                          /* extra compile flags or "" (owned) */
  int format;                           /* enum kb_cand_format (JSON "format", absent = native) */
  char gpu[KB_ID_MAX];                  /* device of the timing; "" = never timed */
  char tier[KB_ID_MAX];                 /* tier of the timing; "" = never timed */
  double median_us;                     /* microseconds at that tier; 0 = unknown */
  double baseline_us;                   /* the task's baseline there, microseconds; 0 = unknown */
  double speedup;                       /* baseline_us / median_us; 0 = unknown */
  char campaign[KB_ID_MAX];             /* campaign it was verified in; "" = added by hand */
  double added;                         /* unix seconds */
  char tags[KB_ARCHIVE_MAX_TAGS][KB_ARCHIVE_TAG_MAX]; /* category, techniques, user tags */
  int n_tags;
};

/* The entries of one archive folder, as read by kb_archive_load. */
struct kb_archive {
  struct kb_archive_entry *entries; /* owned */
  int n, cap;
  int skipped;                      /* files that were not valid entries (reported) */
};

/* Called once per skipped file with its message ("dir/x.json:3:12: \"gpu\" must be a
 * string"); `msg` is borrowed for the call. */
typedef void (*kb_archive_warn_fn)(const char *msg, void *arg);

/* SHA-256 (hex, into `out`) of what makes a kernel fit a task: the backend and, in argument
 * order, every input's and output's dtype and shape (not names, tolerances or input sets).
 * `t` is borrowed. Errors: KB_ENOMEM, KB_EINTERNAL. */
int kb_task_fingerprint(const struct kb_task *t, char out[KB_CAND_ID_LEN + 1],
                        struct kb_error *err);

/* Fills the task part of `e` (caller-owned, zeroed first) from `t` and the candidate part from
 * `c` (both borrowed; strings copied): task, fingerprint, backend, category, candidate, name,
 * generator, format, source, knobs, flags; sets `added` to now and the tags to the category, the
 * generator and kb_archive_technique_tags of the source. Timing fields stay unknown.
 * Errors: KB_EINVAL (c is for another task), KB_ENOMEM, KB_EINTERNAL. */
int kb_archive_entry_from(struct kb_archive_entry *e, const struct kb_task *t,
                          const struct kb_candidate *c, struct kb_error *err);
/* Adds `tag` (borrowed) unless present: lowercased, blanks turned into '-'. Returns KB_OK, or
 * KB_EINVAL for an empty or too long tag, or when the entry has KB_ARCHIVE_MAX_TAGS tags. */
int kb_archive_entry_add_tag(struct kb_archive_entry *e, const char *tag, struct kb_error *err);
/* Adds words naming techniques seen in `source` (borrowed): shared-memory, warp-shuffle,
 * tensor-cores, vectorized, unrolled, async-copy, atomics, half-precision, simd, tunable.
 * Tags beyond KB_ARCHIVE_MAX_TAGS are dropped. */
void kb_archive_technique_tags(struct kb_archive_entry *e, const char *source);
/* Computes `e->id` from its fingerprint, candidate and gpu. Errors: KB_ENOMEM, KB_EINTERNAL. */
int kb_archive_entry_set_id(struct kb_archive_entry *e, struct kb_error *err);
/* A candidate for task `task_id` (borrowed) made from `e` (borrowed): its source, knobs,
 * flags and format, generator "archive", name "archive-<name>" (cut to fit). `c` is caller-owned and
 * zeroed first. Errors as kb_candidate_init. */
int kb_archive_entry_candidate(const struct kb_archive_entry *e, const char *task_id,
                               struct kb_candidate *c, struct kb_error *err);

/* Encodes `e` (borrowed) as indented JSON (`pretty`) or one line into `*out` (new, kb_free).
 * Errors: KB_EINVAL (a field kb_archive_entry_parse would refuse: the message names it),
 * KB_ENOMEM. */
int kb_archive_entry_to_json(const struct kb_archive_entry *e, int pretty, char **out,
                             struct kb_error *err);
/* Decodes and checks `text` (borrowed) into `e` (caller-owned, zeroed first; released on
 * failure). `where` (borrowed) names the origin: KB_EPARSE "where:line:col: \"field\" what is
 * wrong"; the id must match the content and the candidate id the source. KB_ENOMEM. */
int kb_archive_entry_parse(const char *text, const char *where, struct kb_archive_entry *e,
                           struct kb_error *err);
/* Frees the contents of `e` and zeroes it; NULL is fine. */
void kb_archive_entry_release(struct kb_archive_entry *e);

/* Checks that `dir` (borrowed) is an existing folder. Errors: KB_ENOTFOUND "archive folder
 * \"dir\" does not exist", KB_EINVAL (not a folder), KB_EIO. */
int kb_archive_check_dir(const char *dir, struct kb_error *err);
/* Writes `e` (borrowed; its id is computed first) into folder `dir` (borrowed) atomically, as
 * the header comment says. `path_out` (may be NULL; caller-owned, `path_size` bytes) gets the
 * entry's path. Errors: KB_EINVAL (entry not valid), KB_ENOTFOUND (no folder), KB_EIO,
 * KB_ENOMEM. */
int kb_archive_put(const char *dir, struct kb_archive_entry *e, char *path_out,
                   size_t path_size, struct kb_error *err);
/* Reads every entry of folder `dir` (borrowed) into `a` (caller-owned, zeroed first), sorted
 * by task, then speedup (best first), then id. A file that is not a valid entry is skipped:
 * `warn` (may be NULL) gets its message naming the file and field, with `arg` (passed through),
 * and `a->skipped` counts it. On failure `a` holds nothing to release. Errors: KB_ENOTFOUND / KB_EINVAL / KB_EIO for the folder itself, KB_ENOMEM. */
int kb_archive_load(const char *dir, struct kb_archive *a, kb_archive_warn_fn warn, void *arg,
                    struct kb_error *err);
/* The entry of `a` whose id starts with `prefix` (borrowed; 4..64 characters, else NULL), or
 * NULL when none or more than one (`*ambiguous` set to 1 then; may be NULL). The entry is
 * borrowed from `a`, valid until kb_archive_release(a). */
const struct kb_archive_entry *kb_archive_find(const struct kb_archive *a, const char *prefix,
                                               int *ambiguous);
/* Frees the contents of `a`; NULL is fine. */
void kb_archive_release(struct kb_archive *a);

#endif
