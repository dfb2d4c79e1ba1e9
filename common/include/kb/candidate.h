/* Candidates: one kernel source plus its compile-time knob values. Spec:
 * schemas/candidate.schema.json (the JSON form below is what travels through Redis).
 *
 * The id is the SHA-256 (hex) of the task id, the normalized source, the knob string and the
 * compile flags, each followed by a NUL byte; a candidate not in the native format also hashes
 * its format name ("kernelbench") and a NUL after them, so the ids of native candidates are
 * those they always had. Normalization turns CRLF into LF and strips
 * trailing blanks from each line and trailing blank lines, so whitespace-only edits of the same
 * kernel give the same id and it is evaluated once.
 *
 * JSON form: {"schema": "kernelbrain.candidate/1", "id": 64 hex, "task": id, "name": string,
 *   "generator": "seed"|"tune"|"llm"|"crossover"|"archive", "parents": [64 hex, ...] (0..2),
 *   "knobs": string ("-DBLOCK=128 ..." or ""), "flags": string, "created": unix seconds (number
 *   >= 0), "source": string, "format": "native"|"kernelbench"}; "name" is 1..63 printable ASCII
 * characters. All fields but "format" are required; an absent "format" is "native" and the
 * encoder writes it only for the other formats, so files of earlier versions stay valid.
 *
 * Formats: native is a C/CUDA source of the kernel ABI (kb_kernel.h) built into a shared
 * library; kernelbench is a Python file in KernelBench's solution form that defines
 * `class ModelNew(nn.Module)` taking the task Model's constructor arguments, evaluated by the
 * PyTorch worker (docs/sandbox.md) and only for tasks with a pytorch oracle.
 */
#ifndef KB_CANDIDATE_H
#define KB_CANDIDATE_H

#include <stddef.h>

#include "kb/task.h"

#define KB_CAND_ID_LEN 64 /* hex chars of a SHA-256 */

/* What a candidate's source is (see the formats above). */
enum kb_cand_format { KB_FORMAT_NATIVE = 0, KB_FORMAT_KERNELBENCH = 1 };

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
  int format;                    /* enum kb_cand_format; KB_FORMAT_NATIVE when zeroed */
};

/* Name of a format ("native", "kernelbench"; static), or NULL when unknown; and back (-1 when
 * unknown). */
const char *kb_cand_format_name(int format);
int kb_cand_format_from_name(const char *name);
/* The format a source file's path gives: KB_FORMAT_KERNELBENCH for a name ending in ".py",
 * otherwise KB_FORMAT_NATIVE. `path` is borrowed. */
int kb_cand_format_of_path(const char *path);

/* 1 when `source` (borrowed) has a line starting with `class ModelNew` followed by "(" or ":"
 * (blanks allowed between): the light static check that a kernelbench source defines ModelNew
 * (the LLM generator's answers, kb-submit archive add/import); else 0. */
int kb_source_defines_modelnew(const char *source);

/* 1 when `s` is a candidate id: exactly 64 lowercase hex digits; else 0. */
int kb_candidate_id_valid(const char *s);
/* 1 when `s` is a valid candidate name: 1 to 63 printable ASCII characters; else 0. */
int kb_candidate_name_valid(const char *s);

/* Computes the id of a native candidate into `out` (65 bytes, caller-owned). All strings are
 * borrowed; `source` need not be normalized. Errors: KB_ENOMEM, KB_EINTERNAL (libcrypto
 * failure). */
int kb_candidate_id(const char *task, const char *source, const char *knobs, const char *flags,
                    char out[KB_CAND_ID_LEN + 1], struct kb_error *err);
/* Same, for a candidate of `format` (enum kb_cand_format; KB_FORMAT_NATIVE gives what
 * kb_candidate_id gives). KB_EINVAL for an unknown format. */
int kb_candidate_id_format(const char *task, const char *source, const char *knobs,
                           const char *flags, int format, char out[KB_CAND_ID_LEN + 1],
                           struct kb_error *err);
/* Returns the normalized copy of `source` (borrowed): CRLF becomes LF, blanks (space, tab) at
 * line ends go, trailing blank lines go, and a non-empty result ends with exactly one "\n".
 * New string, or NULL on ENOMEM. */
char *kb_source_normalize(const char *source);

/* Fills `c` (caller-owned, zeroed first) from its parts and computes the id; `created` is now,
 * `parents` are "" (set them before encoding) and the format is native (kb_candidate_set_format
 * changes it). Strings are borrowed and copied; `knobs` and
 * `flags` may be NULL for "". Errors: KB_EINVAL (task not an id, name not 1..63 printable ASCII,
 * unknown generator, text not UTF-8), KB_ENOMEM, KB_EINTERNAL. */
int kb_candidate_init(struct kb_candidate *c, const char *task, const char *name,
                      const char *generator, const char *source, const char *knobs,
                      const char *flags, struct kb_error *err);
/* Sets the format of `c` (enum kb_cand_format) and recomputes its id. KB_EINVAL for an unknown
 * format (then `c` is unchanged), KB_ENOMEM, KB_EINTERNAL. */
int kb_candidate_set_format(struct kb_candidate *c, int format, struct kb_error *err);
/* Encodes `c` (borrowed) as compact one-line JSON into `*out` (new, free with kb_free; NULL on
 * failure). Emits only what kb_candidate_from_json accepts: KB_EINVAL (with its reason) for a
 * candidate that would not pass, e.g. an id that does not match the content. KB_ENOMEM. */
int kb_candidate_to_json(const struct kb_candidate *c, char **out, struct kb_error *err);
/* Decodes and validates JSON `text` (borrowed) into `c` (caller-owned, zeroed first; released on
 * failure). Every field but "format" is required and unknown fields are errors. `where`
 * (borrowed) names the origin in messages ("redis kb:{demo}:cand:…"): KB_EPARSE "where:line:col: what is wrong".
 * Verifies the id matches the content. The source is stored normalized. KB_ENOMEM. */
int kb_candidate_from_json(const char *text, const char *where, struct kb_candidate *c,
                           struct kb_error *err);
/* Frees the contents of `c` and zeroes it; NULL is fine. */
void kb_candidate_release(struct kb_candidate *c);

#endif
