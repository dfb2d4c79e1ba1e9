/* Candidates: one kernel source plus its compile-time knob values. Spec:
 * schemas/candidate.schema.json (the JSON form below is what travels through Redis).
 *
 * The id is the SHA-256 (hex) of the task id, the normalized source, the knob string and the
 * compile flags, each followed by a NUL byte. Normalization turns CRLF into LF and strips
 * trailing blanks from each line and trailing blank lines, so whitespace-only edits of the same
 * kernel give the same id and it is evaluated once.
 *
 * JSON form: {"schema": "kernelbrain.candidate/1", "id": 64 hex, "task": id, "name": string,
 *   "generator": "seed"|"tune"|"llm"|"crossover"|"archive", "parents": [64 hex, ...] (0..2),
 *   "knobs": string ("-DBLOCK=128 ..." or ""), "flags": string, "created": unix seconds (number),
 *   "source": string}
 */
#ifndef KB_CANDIDATE_H
#define KB_CANDIDATE_H

#include <stddef.h>

#include "kb/task.h"

#define KB_CAND_ID_LEN 64 /* hex chars of a SHA-256 */

struct kb_error;

struct kb_candidate {
  char id[KB_CAND_ID_LEN + 1];
  char task[KB_ID_MAX];
  char name[KB_ID_MAX];          /* human label: seed name, or generator-assigned */
  char generator[16];            /* "seed", "tune", "llm", "crossover", "archive" */
  char parents[2][KB_CAND_ID_LEN + 1]; /* "" when absent */
  char *knobs;                   /* "-DNAME=value ..." or "" (owned) */
  char *flags;                   /* extra compiler flags or "" (owned) */
  char *source;                  /* normalized source text (owned) */
  double created;                /* unix seconds */
};

/* Computes the candidate id into `out` (65 bytes). `source` need not be normalized.
 * Errors: KB_ENOMEM, KB_EINTERNAL (libcrypto failure). */
int kb_candidate_id(const char *task, const char *source, const char *knobs, const char *flags,
                    char out[KB_CAND_ID_LEN + 1], struct kb_error *err);
/* Returns the normalized copy of `source` (new), or NULL on ENOMEM. */
char *kb_source_normalize(const char *source);

/* Fills `c` (caller-owned) from its parts and computes the id. Strings are copied. */
int kb_candidate_init(struct kb_candidate *c, const char *task, const char *name,
                      const char *generator, const char *source, const char *knobs,
                      const char *flags, struct kb_error *err);
/* Encodes `c` as compact JSON into `*out` (new). */
int kb_candidate_to_json(const struct kb_candidate *c, char **out, struct kb_error *err);
/* Decodes and validates JSON `text` into `c` (caller-owned; released on failure). `where` names
 * the origin in messages ("redis kb:{demo}:cand:…"). Verifies the id matches the content. */
int kb_candidate_from_json(const char *text, const char *where, struct kb_candidate *c,
                           struct kb_error *err);
void kb_candidate_release(struct kb_candidate *c);

#endif
