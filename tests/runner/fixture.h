/* The fixture the host-backend tests share (test_host_backend.c, test_sandbox.c, test_confine.c,
 * test_engine_trust.c, test_catalogue.c): a host backend over a temporary build cache, the
 * built-in host tasks "sum", "matmul" and "row_sum", the default
 * ladder, and the helpers around one evaluation. Functions that take cmocka's place fail the
 * running test (fail_msg) instead of returning an error. */
#ifndef KB_TESTS_RUNNER_FIXTURE_H
#define KB_TESTS_RUNNER_FIXTURE_H

#include "compile_util.h" /* tu_slurp, kb_remove_tree */
#include "host_backend.h"
#include "kb/campaign.h"
#include "kb/result.h"
#include "kb/task.h"

struct kb_error;

enum { FX_TIER_COMPILE = 0, FX_TIER_SMOKE = 1, FX_TIER_SCREEN = 2, FX_TIER_FULL = 3 };

struct runner_fixture {
  char cache[64];                   /* temporary build cache folder, removed by teardown */
  struct kb_host_backend *backend;  /* owned; NULL once a test freed it */
  struct kb_task sum;               /* tasks/host/sum */
  struct kb_task matmul;            /* tasks/host/matmul */
  struct kb_task row_sum;           /* tasks/host/row_sum */
  struct kb_campaign ladder;        /* the default ladder; only its tiers are used */
};

/* Sets `fx` up: KB_INCLUDE_DIR to the source tree's ABI header, a fresh cache folder from
 * `cache_template` ("/tmp/kb-test-x.XXXXXX", at most 63 characters), the host backend, the three
 * tasks and the default ladder. Returns 0, or -1 after printing why to stderr (a cmocka group
 * setup's convention); what was set up before the failure is released by fixture_teardown. */
int fixture_setup(struct runner_fixture *fx, const char *cache_template);

/* Frees the backend (unless a test already did and set it to NULL), releases the tasks and
 * removes the cache folder. */
void fixture_teardown(struct runner_fixture *fx);

/* Evaluates `source` (borrowed), compiled with `cflags` (borrowed, "" for none), as a candidate
 * of `task` at `tier` (index `index`) with the evaluator's `eval_flags` (KB_EVAL_FULL or 0)
 * into `r` (initialised here; the caller releases it). Returns kb__evaluator_evaluate's code,
 * with `err` (borrowed) set when it is not KB_OK; fails the test when the candidate cannot be
 * made. */
int fixture_eval(struct runner_fixture *fx, const struct kb_task *task, const char *source,
                 const char *cflags, const struct kb_tier *tier, int index, int eval_flags,
                 struct kb_result *r, struct kb_error *err);

/* fixture_eval of the candidate file `path` (borrowed) at the ladder's tier `index`, without
 * evaluator flags; fails the test when the evaluation returns an error. */
void fixture_eval_file(struct runner_fixture *fx, const struct kb_task *task, const char *path,
                       const char *cflags, int index, struct kb_result *r);

/* Fails the test unless `r` has `status` and, when `in_reason` (borrowed) is not NULL, a reason
 * containing it; a status other than ok is printed with its reason. */
void fixture_expect(const struct kb_result *r, int status, const char *in_reason);

#endif
