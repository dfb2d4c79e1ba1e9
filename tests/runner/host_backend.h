/* The host backend: evaluates C candidates on the CPU.
 *
 * A thin layer over the generic backend (evaluator.h) with the host compiler: a candidate is
 * compiled with `cc -O2 -shared -fPIC` into a content-addressed cache, then evaluated in the
 * persistent kb-sandbox process (sandbox_client.h, docs/sandbox.md), started with posix_spawn
 * and watched by a watchdog, so a candidate that crashes, hangs or corrupts memory costs only
 * that evaluation (and a restart of the sandbox). The sandbox draws the input sets, runs the C
 * oracle, verifies and times; the runner checks that the reported timing fits the wall time.
 */
#ifndef KB_RUNNER_HOST_BACKEND_H
#define KB_RUNNER_HOST_BACKEND_H

#include <signal.h>

#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/result.h"
#include "kb/task.h"

struct kb_error;
struct kb_evaluator;
struct kb_host_backend; /* opaque */

/* Creates a backend whose compiled libraries live under `cache_dir` (borrowed; created if
 * missing). `cc` is the compiler command ("cc" when NULL). Returns it in `*out` (new). The
 * folder of kb_kernel.h, passed to every build with -I, is $KB_INCLUDE_DIR when set, else the
 * KB_ABI_INCLUDE_DIR the runner was built with, else common/include of its source tree.
 * Errors: KB_EIO (cache folder, ABI header), KB_ECOMPILE (`cc --version` fails), KB_ECHILD,
 * KB_ENOMEM. */
int kb_host_backend_new(const char *cache_dir, const char *cc, struct kb_host_backend **out,
                        struct kb_error *err);
/* Stops the sandbox and frees `b`; NULL is fine. */
void kb_host_backend_free(struct kb_host_backend *b);
/* Limits one compiler run to `seconds` (default 60; values <= 0 are ignored). A build that
 * runs longer is a compile_error that is not cached. */
void kb_host_backend_set_compile_timeout(struct kb_host_backend *b, double seconds);
/* Makes evaluations stop early once `*stop` is set (borrowed; NULL: never): a child running a
 * candidate is killed and kb_host_backend_evaluate() returns KB_EINTERRUPTED. */
void kb_host_backend_set_stop(struct kb_host_backend *b, volatile sig_atomic_t *stop);
/* The device name results carry: the CPU model from /proc/cpuinfo, or "cpu" (borrowed; lives
 * as long as `b`). */
const char *kb_host_backend_device(const struct kb_host_backend *b);

/* The generic backend underneath (borrowed; lives as long as `b`). */
struct kb_evaluator *kb_host_backend_generic(struct kb_host_backend *b);

/* Evaluates candidate `c` of `task` at ladder tier `tier` (index `tier_index`; 0 = compile only),
 * filling the verdict fields of `r` (status, reason, compile_*, sets_checked, max_*_err, timing,
 * cost_ms, device, backend; r->compile_log is freed and replaced, new and owned by `r`).
 * Prepares the task on first use (compiles its oracle, draws the input sets, computes reference
 * outputs) and keeps that for later calls.
 * Statuses: compile_error also for a library that does not export kb_forward (found at tier 0
 * from its ELF symbol table, without running candidate code) or cannot be loaded (an undefined
 * symbol, found by the first running tier): build defects; crash for a signal, a non-zero
 * return from kb_forward, or an exit inside it (the captured stdout/stderr tail goes into the
 * reason); timeout when the child outlives tier->timeout_s (it is killed); rejected for modified
 * inputs, for outputs right on the first call and wrong after the timed calls, or for a timing
 * report the child's run time cannot hold; wrong_output for values outside tolerance (the
 * reason names the first bad element, got and expected). tier->input_sets sets are checked
 * (0 = all); cost_ms is the child's wall time, rounded up; tier 0 and compile errors cost 0.
 * Returns KB_OK whenever a verdict was reached, whatever the status; KB_EINTERRUPTED when the
 * stop flag (kb_host_backend_set_stop) ended the evaluation first (no verdict: the caller
 * releases the item); another error code only when the runner itself failed (the oracle does
 * not compile, out of memory, fork failed): then the caller reports infra_error. */
int kb_host_backend_evaluate(struct kb_host_backend *b, const struct kb_task *task,
                             const struct kb_candidate *c, const struct kb_tier *tier,
                             int tier_index, struct kb_result *r, struct kb_error *err);

#endif
