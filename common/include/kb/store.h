/* The HDF5 result store: one file per task, results/<campaign>/<task>.h5. Layout:
 * schemas/hdf5-layout.md. The scheduler is the only writer.
 *
 * Writes are idempotent: a candidate is added once by id, an evaluation once by (candidate, tier,
 * attempt); adding again is a no-op that reports `*added = 0`. The file is written in SWMR mode
 * with fixed-length strings (HDF5 1.10.8 SWMR readers cannot read variable-length strings), so
 * h5dump and h5py can read it while the scheduler runs and after it is killed. kb_store_flush()
 * makes everything added so far durable; the scheduler acknowledges results only after it.
 */
#ifndef KB_STORE_H
#define KB_STORE_H

#include "kb/candidate.h"
#include "kb/result.h"

struct kb_error;
struct kb_store; /* opaque */

struct kb_store_task_info {
  const char *campaign;        /* campaign id (borrowed) */
  const char *task;            /* task id (borrowed) */
  const char *spec_json;       /* task.json text (borrowed) */
  const char *reference;       /* reference source text (borrowed) */
};

/* Opens the file at `path`, creating it (and /task from `info`) when absent. Recovers a file left
 * open by a killed writer (clears its SWMR status flags). Returns the store in `*out` (new; free
 * with kb_store_close). Errors: KB_EHDF5 naming the path, KB_EIO, KB_ENOMEM. */
int kb_store_open(const char *path, const struct kb_store_task_info *info, struct kb_store **out,
                  struct kb_error *err);
/* 1 when a candidate with `id` is stored, else 0. */
int kb_store_has_candidate(const struct kb_store *s, const char *id);
/* Appends `c` to /candidates and its source to /sources/<id>, once. `*added` (may be NULL) is 1
 * when written, 0 when it was already there. */
int kb_store_add_candidate(struct kb_store *s, const struct kb_candidate *c, int *added,
                           struct kb_error *err);
/* Appends `r` to /evaluations once per (candidate, tier, attempt) and updates the candidate's
 * best tier and status. The candidate must have been added. */
int kb_store_add_evaluation(struct kb_store *s, const struct kb_result *r, int *added,
                            struct kb_error *err);
/* Writes /best attributes: the best candidate so far for this task. */
int kb_store_set_best(struct kb_store *s, const char *candidate, const char *name, int tier,
                      double median_us, double speedup, struct kb_error *err);
/* Flushes all data to disk (H5Fflush). */
int kb_store_flush(struct kb_store *s, struct kb_error *err);
/* Number of evaluation rows. */
long kb_store_evaluation_count(const struct kb_store *s);
/* Flushes and closes; NULL is fine. */
void kb_store_close(struct kb_store *s);

#endif
