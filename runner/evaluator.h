/* The evaluation backends, host and CUDA: compile a candidate (tier 0), then evaluate it in the
 * sandbox process (sandbox_client.h, docs/sandbox.md) at a running tier.
 *
 * One backend per runner, one sandbox process per backend, kept across evaluations. The host
 * backend builds C candidates with `cc -O2 -shared -fPIC` and runs them on the CPU; the CUDA
 * backend builds with `nvcc -shared -cudart shared` for the device's architecture (the
 * sandbox's hello says which) and runs them on the GPU the sandbox owns. Both prepare a task in
 * the sandbox on first use (the oracle, compiled here as trusted code, runs there on every input
 * set) and keep it there. A task whose oracle is a PyTorch module (kind "pytorch", imported from
 * KernelBench) goes to a second sandbox process, the PyTorch worker (kb_sandbox_torch.py, same
 * protocol and watchdog), started on first use; at the full tier it also times the module in
 * torch eager and torch.compile (the result's torch_eager_us and torch_compile_us).
 */
#ifndef KB_RUNNER_EVALUATOR_H
#define KB_RUNNER_EVALUATOR_H

#include <signal.h>

#include "compile.h"
#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/result.h"
#include "kb/task.h"

struct kb_error;
struct kb_evaluator; /* opaque */

struct kb_evaluator_opts {
  int kind;                 /* enum kb_backend */
  const char *cache_dir;    /* compiled libraries (borrowed; created if missing) */
  const char *compiler;     /* "cc" / nvcc command; NULL for the default (borrowed) */
  const char *arch;         /* CUDA: "sm_90"; NULL: the device's (borrowed) */
  int device;               /* CUDA ordinal */
  const char *sandbox;      /* kb-sandbox's path; NULL: kb__sandbox_program() (borrowed) */
  volatile sig_atomic_t *stop; /* set: evaluations end early (borrowed; may be NULL) */
};

/* Evaluation flags. */
enum {
  KB_EVAL_FULL = 1 /* the ladder's last tier: baseline re-timed in the same run, kernel trace,
                      hardware metrics (CUDA) */
};

/* Creates a backend in `*out` (new; kb__evaluator_free) and starts its sandbox (so a missing
 * kb-sandbox or GPU is found now). The folder of kb_kernel.h is $KB_INCLUDE_DIR when set, else
 * the build's KB_ABI_INCLUDE_DIR. Errors: KB_EIO (cache folder, ABI header), KB_ECOMPILE (the
 * compiler does not run), KB_ENOTFOUND (no kb-sandbox), KB_ECHILD (the sandbox does not start:
 * the message has its stderr, e.g. no CUDA device), KB_EINVAL, KB_ENOMEM. */
int kb__evaluator_new(const struct kb_evaluator_opts *o, struct kb_evaluator **out,
                   struct kb_error *err);
/* Stops the sandbox, frees `b`; NULL is fine. */
void kb__evaluator_free(struct kb_evaluator *b);
/* Makes evaluations stop early once `*stop` is set (borrowed; NULL: never). */
void kb__evaluator_set_stop(struct kb_evaluator *b, volatile sig_atomic_t *stop);
/* Lets an evaluation under way when the stop flag is set run `seconds` more (default 0): one that
 * ends by then keeps its verdict. */
void kb__evaluator_set_grace(struct kb_evaluator *b, double seconds);
/* Which full-tier evaluations of a CUDA task get the hardware-metrics pass (the CUPTI Range
 * Profiler, about 0.3 s each on the H200): every one (the evaluator's default), only one whose
 * median beats the best full-tier median of its task this evaluator has seen (its first
 * included), none, or (KB_METRICS_MARKED, kb-runner's default) only one the scheduler marked,
 * under the bound of kb__evaluator_set_mark() (docs/search.md). */
enum kb_metrics_mode { KB_METRICS_EVERY, KB_METRICS_BEST, KB_METRICS_NONE, KB_METRICS_MARKED };
void kb__evaluator_set_metrics(struct kb_evaluator *b, int mode);
/* The scheduler's mark for the evaluations that follow: the median the candidate must beat to
 * rank among its task's best at the last tier. `bound_us` < 0 not marked (the default), 0 any
 * time ranks, > 0 only one under this many microseconds. With KB_METRICS_MARKED it decides the
 * metrics pass (< 0: none, else when ok and under a bound > 0); in every mode the witness's
 * rounds (kb__witness_rounds: one for a claim no faster than a bound > 0, else three). */
void kb__evaluator_set_mark(struct kb_evaluator *b, double bound_us);
/* Timed samples the sandbox queues before the host waits once, at most (its "sample_chunk"):
 * 0 (the default) its own choice, 1 a wait after every sample. */
void kb__evaluator_set_sample_chunk(struct kb_evaluator *b, int samples);
/* The fresh samples' schedule (timed calls on unseen inputs, docs/sandbox.md): KB_FRESH_TIER
 * (the default) asks the sandbox for one at least below the ladder's last tier (more while
 * they take under 10% of the evaluation's time) and for the full schedule (three at least) at
 * the last; KB_FRESH_FULL asks for the full schedule at every tier (the behaviour before). */
enum kb_fresh_mode { KB_FRESH_TIER, KB_FRESH_FULL };
void kb__evaluator_set_fresh(struct kb_evaluator *b, int mode);
/* How long a pytorch task's torch eager and torch.compile medians, timed by the trusted worker
 * at a full-tier evaluation, stand for the task's later full-tier evaluations by this evaluator
 * (they are copied into those results, not timed again): KB_TORCH_REUSE_S seconds by default,
 * 0 to time them in every evaluation. The times are the task's on this device; re-timing them
 * for each candidate started and prepared the trusted worker and compiled the task's module
 * again each time (measured on the H200, KernelBench level 1: 8.6 s of a 16.7 s evaluation). */
#define KB_TORCH_REUSE_S 600
void kb__evaluator_set_torch_reuse(struct kb_evaluator *b, int seconds);
/* Limits one compiler run to `seconds` (values <= 0 are ignored). */
void kb__evaluator_set_compile_timeout(struct kb_evaluator *b, double seconds);
/* The compiler (borrowed; lives as long as `b`), for a compile pool building ahead. */
const struct kb__compiler *kb__evaluator_compiler(const struct kb_evaluator *b);
/* Seconds spent so far making tasks ready in the sandbox (oracle builds, drawing inputs, running
 * the oracle; a cached task costs a round trip), for the runner's time split. */
double kb__evaluator_prepare_s(const struct kb_evaluator *b);
/* Task affinity: the tasks this evaluator prepared most recently, most recent first, at most
 * `max` (and at most KB_AFFINITY_MAX, kb/queue.h) into `out` (pointers into `b`, valid until
 * its next evaluation); returns how many. Its sandboxes may have dropped some (memory), which
 * costs only a preparation. */
int kb__evaluator_prepared_tasks(const struct kb_evaluator *b, const char **out, int max);
/* Preparations so far that the sandbox did not have cached (inputs drawn, references computed). */
long kb__evaluator_preparations(const struct kb_evaluator *b);
/* Seconds spent so far witnessing full-tier results (docs/sandbox.md, "The witness"), and the
 * witness rounds completed (a second witness's included), for the runner's time split. */
double kb__evaluator_witness_s(const struct kb_evaluator *b);
long kb__evaluator_witness_rounds(const struct kb_evaluator *b);
/* The device name results carry: "NVIDIA H200", the CPU model (borrowed). */
const char *kb__evaluator_device(const struct kb_evaluator *b);
/* Sandbox processes started so far (kb-sandbox and the PyTorch worker together) and the last
 * kb-sandbox start's seconds. */
int kb__evaluator_sandbox_starts(const struct kb_evaluator *b);
double kb__evaluator_sandbox_start_s(const struct kb_evaluator *b);
/* The running sandbox's pid, 0 when none. */
int kb__evaluator_sandbox_pid(const struct kb_evaluator *b);

/* Sets the baseline of task `task` (borrowed) for same-run speedups at the full tier: `c`
 * (borrowed; NULL: the task has none to be found, do not look again) is built now like any
 * candidate (a KernelBench-format one through compile_kb.c), and its build is kept. Without one, the evaluator uses the task's baseline seed
 * file when it exists. A baseline that does not build is logged and left out. Errors:
 * KB_ENOMEM. */
int kb__evaluator_set_baseline(struct kb_evaluator *b, const struct kb_task *task,
                              const struct kb_candidate *c, struct kb_error *err);
/* 1 when kb__evaluator_set_baseline() was called for `task_id` (borrowed). */
int kb__evaluator_has_baseline(const struct kb_evaluator *b, const char *task_id);

/* Evaluates candidate `c` of `task` at tier `tier` (index `tier_index`; 0 = compile only) with
 * `flags`, filling the verdict fields of `r` (status, reason, compile_*, sets_checked,
 * max_*_err, timing, baseline_median_us and same_run_speedup, torch_eager_us and
 * torch_compile_us (pytorch-oracle tasks, full tier), the profile's kernel_us,
 * dram_pct, sm_pct, occupancy_pct and l2_hit_pct, cost_ms, device, backend;
 * r->compile_log is replaced, new and owned by `r`). Statuses:
 *  - compile_error: does not build, a disallowed flag, no kb_forward (found from the ELF
 *    symbols at tier 0), a library that does not load;
 *  - rejected: an import outside the allow-list; inputs modified; the evaluator's reference
 *    outputs overwritten (a write out of bounds); outputs right first and wrong after timing; a
 *    timing report the evaluation's wall time cannot hold;
 *  - crash: a signal (named) or exit of the sandbox during the evaluation, a non-zero return
 *    from kb_forward, a CUDA error (named) — with the sandbox's stderr tail;
 *  - timeout: the sandbox outlived tier->timeout_s (its process group is killed);
 *  - wrong_output: values outside tolerance, NaN or infinity (the first bad element named).
 * tier->input_sets sets are checked (0 = all); cost_ms is the device time the item used,
 * rounded up: the setup (a sandbox restart, the oracle build, the task's preparation), the
 * evaluation call and the torch timing call, each under its limit (kb/ladder.h: their sum is
 * the item's reservation), set on errors too; tier 0 and compile errors cost 0. Returns KB_OK
 * whenever a verdict was reached;
 * KB_EINTERRUPTED when the stop flag ended it first (no verdict); KB_ECHILD when the sandbox
 * cannot be started (no device any more: the runner, not the candidate, is broken); another
 * code when the runner failed for this task (oracle, memory): the caller reports infra_error. */
int kb__evaluator_evaluate(struct kb_evaluator *b, const struct kb_task *task,
                        const struct kb_candidate *c, const struct kb_tier *tier, int tier_index,
                        int flags, struct kb_result *r, struct kb_error *err);

/* As kb__evaluator_evaluate() with the candidate already built (a compile pool's `build`,
 * borrowed; its log is copied). */
int kb__evaluator_evaluate_built(struct kb_evaluator *b, const struct kb_task *task,
                              const struct kb__build *build, const struct kb_tier *tier,
                              int tier_index, int flags, struct kb_result *r,
                              struct kb_error *err);

#endif
