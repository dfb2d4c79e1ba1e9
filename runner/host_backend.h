/* The host backend: evaluates C candidates on the CPU.
 *
 * A candidate is compiled with `cc -O2 -shared -fPIC` into a content-addressed cache, then run in
 * a child process (fork, no CUDA is ever initialised in a host runner) with a watchdog, so a
 * candidate that crashes, hangs or corrupts memory costs only that evaluation. Inputs and outputs
 * live in a shared mapping: the child runs the candidate and times it; the trusted parent checks
 * the outputs against the oracle's (computed once per task and input set, in the parent) and that
 * the inputs were not modified.
 */
#ifndef KB_RUNNER_HOST_BACKEND_H
#define KB_RUNNER_HOST_BACKEND_H

#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/result.h"
#include "kb/task.h"

struct kb_error;
struct kb_host_backend; /* opaque */

/* Creates a backend whose compiled libraries live under `cache_dir` (borrowed; created if
 * missing). `cc` is the compiler command ("cc" when NULL). Returns it in `*out` (new). */
int kb_host_backend_new(const char *cache_dir, const char *cc, struct kb_host_backend **out,
                        struct kb_error *err);
void kb_host_backend_free(struct kb_host_backend *b);

/* Evaluates candidate `c` of `task` at ladder tier `tier` (index `tier_index`; 0 = compile only),
 * filling the verdict fields of `r` (status, reason, compile_*, sets_checked, max_*_err, timing,
 * cost_ms, device). Prepares the task on first use (compiles its oracle, draws the input sets,
 * computes reference outputs) and keeps that for later calls.
 * Returns KB_OK whenever a verdict was reached, whatever the status; an error code only when
 * the runner itself failed (the oracle does not compile, out of memory, fork failed): then the
 * caller reports infra_error. */
int kb_host_backend_evaluate(struct kb_host_backend *b, const struct kb_task *task,
                             const struct kb_candidate *c, const struct kb_tier *tier,
                             int tier_index, struct kb_result *r, struct kb_error *err);

#endif
