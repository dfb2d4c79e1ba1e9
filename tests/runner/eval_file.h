/* The part of the evaluation test tools (kb-test-eval in tests/runner, kb-test-torch-eval in
 * tests/tasks) that is the same in both: a task bundle, the default ladder and an evaluator
 * opened together, and one candidate file evaluated at one tier through the runner's evaluator
 * (runner/evaluator.h), without Redis. Each tool keeps its own output and exit status. */
#ifndef KB_TEST_EVAL_FILE_H
#define KB_TEST_EVAL_FILE_H

#include "evaluator.h"
#include "kb/campaign.h"
#include "kb/error.h"
#include "kb/result.h"
#include "kb/task.h"

/* Loads the bundle at `task_dir` into `*task` and the default ladder into `*ladder`, and starts
 * an evaluator for `backend` ("host" or "cuda") with its build cache in `cache` into `*ev`
 * (caller-owned: kb__evaluator_free, kb_task_release). `*start_s` (may be NULL) gets the seconds
 * the evaluator took to start. Returns KB_OK, or the error in `err` with nothing left open. */
int kb_test_eval_open(const char *task_dir, const char *backend, const char *cache,
                      struct kb_task *task, struct kb_campaign *ladder,
                      struct kb_evaluator **ev, double *start_s, struct kb_error *err);

/* Evaluates the C/CUDA source at `path` as candidate `name` of `task`, built with `flags` ("" for
 * none), at tier index `tier` of `ladder` (the last tier with KB_EVAL_FULL). `*r` is initialized
 * here and holds the verdict; the caller releases it (kb_result_release) whatever the return.
 * `*wall` gets the evaluation's wall seconds. Returns 0 with a verdict in `*r`; 1 when the
 * candidate could not be made (the file unreadable, the candidate refused: `err`); 2 when the
 * evaluator reached no verdict (`err`). */
int kb_test_eval_file(struct kb_evaluator *ev, const struct kb_task *task, const char *name,
                      const char *path, const char *flags, const struct kb_campaign *ladder,
                      int tier, struct kb_result *r, double *wall, struct kb_error *err);

#endif
