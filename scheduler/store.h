/* The HDF5 result store: one file per task, results/<campaign>/<task>.h5. Layout:
 * schemas/hdf5-layout.md (format kernelbrain.h5/3: evaluations with their CUPTI profiles in
 * /profiles/kernels, the LLM audit in /llm, the torch eager and torch.compile times in
 * /evaluations and /torch). The scheduler is the only writer.
 *
 * Writes are idempotent: a candidate is added once by id, an evaluation once by (candidate, tier,
 * attempt); adding again is a no-op that reports `*added = 0`. The file is written in SWMR mode
 * with fixed-length strings (HDF5 1.10.8 SWMR readers cannot read variable-length strings), so
 * h5py (swmr=True) can read it while the scheduler runs and after it is killed, and h5dump once
 * it is closed or recovered. kb__store_flush() makes everything added so far durable; the
 * scheduler acknowledges results only after it.
 */
#ifndef KB_STORE_H
#define KB_STORE_H

#include <stddef.h>
#include <stdint.h>

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

/* Opens the file at `path`, creating it (and /task from `info`) when absent; the parent folder
 * must exist. A file of another format (kernelbrain.h5/1) gives KB_EHDF5: rebuild it. `info` (borrowed; may be NULL to open an existing file only) must name the file's
 * campaign and task. Recovers a file left by a killed writer: clears its SWMR status flags (runs
 * `h5clear -s` from PATH) and drops rows written after the last kb__store_flush(). Holds flock()
 * on "<path>.lock" until closed. Returns the store in `*out` (new; free with kb__store_close).
 * Errors: KB_EHDF5 naming the path (also when recovery failed: rebuild from Redis), KB_ESTATE
 * (another store has it open), KB_EINVAL (other campaign or task), KB_ENOTFOUND (absent and
 * `info` NULL), KB_EIO, KB_ENOMEM. The store is not thread-safe: one thread at a time. */
int kb__store_open(const char *path, const struct kb_store_task_info *info, struct kb_store **out,
                  struct kb_error *err);
/* Durably syncs the folder holding `path` (borrowed), so that a rename into it survives a
 * crash: what the store does after writing a new file, and what a caller that renames a task
 * file into place (a rebuild) must do before anything is acknowledged. Errors: KB_EWRITE (a
 * write fault: EIO, ENOSPC, EROFS, ...) or KB_EIO naming the folder and errno, KB_ENOMEM. */
int kb__store_sync_folder(const char *path, struct kb_error *err);
/* 1 when a candidate with `id` is stored, else 0. */
int kb__store_has_candidate(const struct kb_store *s, const char *id);
/* Appends `c` (borrowed) to /candidates and its source to /sources/data, once. `*added` (may be
 * NULL) is 1 when written, 0 when it was already there. Texts longer than their column (knobs,
 * flags: 255 bytes) are cut at a UTF-8 character boundary. Errors: KB_EINVAL (id not 64 hex
 * digits, another task, no source), KB_EHDF5 (after which the store only accepts close),
 * KB_ENOMEM. */
int kb__store_add_candidate(struct kb_store *s, const struct kb_candidate *c, int *added,
                           struct kb_error *err);
/* Appends `r` (borrowed) to /evaluations once per (candidate, tier, attempt) and updates the
 * candidate's best_tier, status (of its evaluation at the highest tier, latest attempt) and
 * n_evaluations. A non-empty compile log goes to /compile_logs/data, its kernel records
 * (r->kernels) to /profiles/kernels; metrics, trace summary and same-run speedup are columns. Errors: KB_ENOTFOUND (the
 * candidate was not added), KB_EINVAL (bad id, status, tier < 0, attempt < 1, another task),
 * KB_EHDF5, KB_ENOMEM. */
int kb__store_add_evaluation(struct kb_store *s, const struct kb_result *r, int *added,
                            struct kb_error *err);
/* One LLM exchange for /llm (every pointer borrowed; strings may be NULL for ""). */
struct kb_store_llm {
  const char *request;     /* unique id (the ledger charge, "llm:<task>:<seq>"), 1..64 bytes */
  const char *entry;       /* id of its entry in the redis stream kb:{cid}:llm:<task> */
  double time;             /* unix seconds the exchange was recorded */
  const char *kind;        /* translate, mutate, crossover, repair */
  const char *status;      /* ok, no_code, failed */
  const char *model;
  int attempts;            /* HTTP attempts */
  int64_t tokens_in;
  int64_t tokens_out;
  const char *candidate;   /* id of the candidate it produced; NULL or "" when none */
  const char *parents[2];  /* parent candidate ids; NULL or "" when none */
  const char *error;       /* why it failed or had no code */
  const char *prompt;      /* `prompt_len` bytes of prompt text (not NUL-terminated) */
  size_t prompt_len;
  const char *response;    /* `response_len` bytes of response text */
  size_t response_len;
};

/* Appends `x` to /llm/requests and its prompt and response to /llm/text (a deflate-compressed
 * byte heap), once per request id. Columns longer than their size are cut at a UTF-8 character
 * boundary. `*added` (may be NULL) is 1 when written, 0 when the request was already stored.
 * Errors: KB_EINVAL (no request id, or 65 bytes or more), KB_EHDF5 (after which the store only
 * accepts close), KB_ENOMEM. */
int kb__store_add_llm(struct kb_store *s, const struct kb_store_llm *x, int *added,
                     struct kb_error *err);
/* 1 when an exchange with id `request` is stored, else 0. */
int kb__store_has_llm(const struct kb_store *s, const char *request);
/* The stream entry id of the last stored exchange ("" when none); borrowed, valid until the
 * next write or close. After a restart it is the last committed one: read the stream after it. */
const char *kb__store_llm_last_entry(const struct kb_store *s);
/* Number of /llm/requests rows. */
long kb__store_llm_count(const struct kb_store *s);
/* Number of /profiles/kernels rows. */
long kb__store_kernel_count(const struct kb_store *s);
/* Writes /best attributes: the best candidate so far for this task. `candidate` (borrowed) must
 * be stored (else KB_ENOTFOUND); `name` (borrowed) may be NULL. */
int kb__store_set_best(struct kb_store *s, const char *candidate, const char *name, int tier,
                      double median_us, double speedup, struct kb_error *err);
/* Makes everything added so far durable: H5Fflush + fsync, then the root "commit" attribute,
 * H5Fflush + fsync again. Only committed rows survive a crash. Errors: KB_EHDF5, KB_EIO. */
int kb__store_flush(struct kb_store *s, struct kb_error *err);
/* Number of evaluation rows. */
long kb__store_evaluation_count(const struct kb_store *s);
/* Number of candidate rows. */
long kb__store_candidate_count(const struct kb_store *s);
/* 1 when (candidate, tier, attempt) is stored, else 0. */
int kb__store_has_evaluation(const struct kb_store *s, const char *candidate, int tier,
                            int attempt);

/* What kb__store_open() had to do to a file left by a killed writer (bits). */
enum kb_store_recovery {
  KB_STORE_RECOVERED_FLAGS = 1,    /* cleared the SWMR status flags with h5clear */
  KB_STORE_RECOVERED_DROPPED = 2,  /* dropped rows or bytes written after the last flush */
  KB_STORE_RECOVERED_REPAIRED = 4, /* recomputed candidate columns or reset /best */
  KB_STORE_RECOVERED_REMADE = 8    /* made anew: it had committed nothing, and the writer killed
                                    * in its first moments left it beyond recovery */
};
/* KB_STORE_RECOVERED_* bits for the open that made `s`; 0 for a clean open. */
int kb__store_recovered(const struct kb_store *s);
/* Flushes and closes; NULL is fine. A flush error here is lost: call kb__store_flush() first
 * where it matters. After a write error the file is closed without a flush (it is recovered
 * to the last commit on the next open). */
void kb__store_close(struct kb_store *s);

/* Takes HDF5's library shutdown off exit(): call it first in main(), before any HDF5 call.
 * A file whose last write failed (full disk, read-only, quota) cannot be closed; HDF5's own
 * shutdown at exit would retry that close in a loop ("infinite loop closing library") or
 * crash in H5F__close_cb. kb__store_library_end() ends the library instead. */
void kb__store_library_init(void);
/* Ends the HDF5 library (H5close) when no write, close or open failed (an open of a damaged
 * file leaves pieces HDF5 cannot evict either); else leaves what HDF5 holds
 * open to the operating system at exit (everything kb__store_flush() committed is durable
 * already). Call it after closing every store. Returns the number of failed writes and closes. */
int kb__store_library_end(void);

#endif
