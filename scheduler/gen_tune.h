/* The tune generator: knob variants of a candidate source.
 *
 * A source declares knobs as `// kb:param NAME v1 v2 ...` directly above `#ifndef NAME` /
 * `#define NAME default` (blank lines between are allowed; see docs/candidate-abi.md). A variant
 * is the same source built with `-DNAME=value` for every knob (in declaration order, so equal
 * knob sets give equal candidate ids), the base's flags kept.
 *
 * The search is evolutionary over each base's knob space: from the best-so-far knob sets of the
 * base (ranked by the population: highest tier passed, then median time) it mutates one knob of
 * a parent or crosses two parents knob by knob; a knob set already proposed for that base is
 * never proposed again. The default knob set counts as proposed (it is the base itself). When
 * random tries find nothing new, the space is walked in order; a base whose every knob set was
 * proposed is exhausted. Proposals are recorded in Redis
 * (kb:{cid}:gen:tune:<task>:<base id prefix>, KB_KEY_GEN_TUNE_FMT of kb/keys.h, knob string ->
 * candidate id), so a restarted scheduler repeats nothing either.
 *
 * Bases: every member of the task's population that has knobs and was not itself made by tune;
 * the best-ranked base that is not exhausted goes first. Only native candidates are bases: a
 * kernelbench (ModelNew) candidate is never tuned, even when a CUDA string in it holds
 * `// kb:param` lines (its build takes no -D flags from kernelbrain).
 */
#ifndef KB_SCHED_GEN_TUNE_H
#define KB_SCHED_GEN_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "kb/candidate.h"
#include "population.h"

#define KB_TUNE_MAX_KNOBS 16
#define KB_TUNE_MAX_VALUES 32
#define KB_TUNE_VALUE_MAX 32

struct kb_error;
struct kb_queue;

struct kb_knob {
  char name[KB_ID_MAX];                             /* C identifier */
  char values[KB_TUNE_MAX_VALUES][KB_TUNE_VALUE_MAX]; /* integers or identifiers */
  int n_values;                                     /* 1..KB_TUNE_MAX_VALUES */
  int def;                                          /* index of the #define's value, -1 if not listed */
};

struct kb_knob_space {
  struct kb_knob knobs[KB_TUNE_MAX_KNOBS];
  int n;                                            /* knobs declared */
};

/* Parses the knob annotations of `source` (borrowed) into `s` (caller-owned). A source without
 * any gives n = 0. Errors: KB_EPARSE "line N: ..." for an annotation that is not followed by
 * `#ifndef NAME` and `#define NAME`, a bad name or value, a repeated knob or value, too many. */
int kb__tune_parse(const char *source, struct kb_knob_space *s, struct kb_error *err);
/* Number of knob sets (the product of the value counts), capped at INT64_MAX. */
int64_t kb__tune_space_size(const struct kb_knob_space *s);
/* Writes "-DA=v -DB=w" for value indices `idx` into `out`. Returns KB_OK or KB_EINVAL when it
 * does not fit. */
int kb__tune_knob_string(const struct kb_knob_space *s, const int *idx, char *out, size_t size);

struct kb_tune; /* opaque: the generator's state for one campaign */

/* Creates the generator for campaign `q` (borrowed; must outlive it); `seed` drives its random
 * choices. Returns it in `*out` (new; kb__tune_free). Errors: KB_ENOMEM. */
int kb__tune_new(struct kb_queue *q, unsigned seed, struct kb_tune **out, struct kb_error *err);
void kb__tune_free(struct kb_tune *t);

/* A proposal: the candidate and what to record once it is enqueued. */
struct kb_tune_proposal {
  struct kb_candidate cand;           /* generator "tune" (owned: kb_candidate_release) */
  char base[KB_CAND_ID_LEN + 1];      /* the base it varies */
};

/* Proposes one new knob set for task `pop->task` into `p` (caller-owned; zeroed first). Reads
 * base sources from the catalog (cached). Returns KB_OK, or KB_EEMPTY when every base known for
 * the task is exhausted (or no member has knobs). Errors: KB_ECONN, KB_EREDIS, KB_ENOMEM. */
int kb__tune_propose(struct kb_tune *t, const struct kb_task_pop *pop,
                    struct kb_tune_proposal *p, struct kb_error *err);
/* Records `p` as proposed (in memory and in Redis); call after the candidate was stored and
 * enqueued, so a crash in between at worst proposes the same candidate (same id) again. */
int kb__tune_commit(struct kb_tune *t, const struct kb_tune_proposal *p, struct kb_error *err);
/* 1 when the last kb__tune_propose for `task` returned KB_EEMPTY and the task's population has
 * not grown since (no new base can have appeared). */
int kb__tune_exhausted(const struct kb_tune *t, const struct kb_task_pop *pop);

#endif
