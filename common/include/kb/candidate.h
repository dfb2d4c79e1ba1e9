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
 *   "knobs": string ("-DBLOCK=128 ..." or ""), "flags": string, "created": unix seconds (number
 *   >= 0), "source": string}; "name" is 1..63 printable ASCII characters. All fields required.
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

/* 1 when `s` is a candidate id: exactly 64 lowercase hex digits; else 0. */
int kb_candidate_id_valid(const char *s);
/* 1 when `s` is a valid candidate name: 1 to 63 printable ASCII characters; else 0. */
int kb_candidate_name_valid(const char *s);

/* Computes the candidate id into `out` (65 bytes, caller-owned). All strings are borrowed;
 * `source` need not be normalized. Errors: KB_ENOMEM, KB_EINTERNAL (libcrypto failure). */
int kb_candidate_id(const char *task, const char *source, const char *knobs, const char *flags,
                    char out[KB_CAND_ID_LEN + 1], struct kb_error *err);
/* Returns the normalized copy of `source` (borrowed): CRLF becomes LF, blanks (space, tab) at
 * line ends go, trailing blank lines go, and a non-empty result ends with exactly one "\n".
 * New string, or NULL on ENOMEM. */
char *kb_source_normalize(const char *source);

/* Fills `c` (caller-owned, zeroed first) from its parts and computes the id; `created` is now
 * and `parents` are "" (set them before encoding). Strings are borrowed and copied; `knobs` and
 * `flags` may be NULL for "". Errors: KB_EINVAL (task not an id, name not 1..63 printable ASCII,
 * unknown generator, text not UTF-8), KB_ENOMEM, KB_EINTERNAL. */
int kb_candidate_init(struct kb_candidate *c, const char *task, const char *name,
                      const char *generator, const char *source, const char *knobs,
                      const char *flags, struct kb_error *err);
/* Encodes `c` (borrowed) as compact one-line JSON into `*out` (new, free with kb_free; NULL on
 * failure). Emits only what kb_candidate_from_json accepts: KB_EINVAL (with its reason) for a
 * candidate that would not pass, e.g. an id that does not match the content. KB_ENOMEM. */
int kb_candidate_to_json(const struct kb_candidate *c, char **out, struct kb_error *err);
/* Decodes and validates JSON `text` (borrowed) into `c` (caller-owned, zeroed first; released on
 * failure). Every field is required and unknown fields are errors. `where` (borrowed) names the
 * origin in messages ("redis kb:{demo}:cand:…"): KB_EPARSE "where:line:col: what is wrong".
 * Verifies the id matches the content. The source is stored normalized. KB_ENOMEM. */
int kb_candidate_from_json(const char *text, const char *where, struct kb_candidate *c,
                           struct kb_error *err);
/* Frees the contents of `c` and zeroes it; NULL is fine. */
void kb_candidate_release(struct kb_candidate *c);

#endif
