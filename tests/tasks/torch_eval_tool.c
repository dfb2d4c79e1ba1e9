/* kb-test-torch-eval: evaluates candidate files on a task bundle through the runner's evaluator
 * (runner/evaluator.h: compile tier, the sandbox client, the PyTorch worker for a pytorch-oracle
 * task) on the default ladder, without Redis; one JSON object per evaluation on stdout. For the
 * PyTorch oracle's tests (tests/tasks/test_torch_oracle.py, on the CPU) and the H200 script
 * (tests/gpu/kernelbench_l1.sh, CUDA candidates). It is kb-eval (runner/eval_cli.h) with other
 * defaults and this flat output.
 *
 * usage: kb-test-torch-eval --backend host|cuda [--cache DIR] [--tiers 1,3] TASK_DIR
 *                           CANDIDATE_FILE...
 * Each line: {"task", "candidate" (file name), "tier" (name), "status", "reason",
 * "sets_checked", "median_us", "samples", "torch_eager_us", "torch_compile_us", "cost_ms",
 * "wall_s", "starts" (sandbox processes started so far, both kinds), "label" (a ModelNew's static
 * label: "kernel", "torch_compile", "torch_only"; null for C candidates), "same_run_speedup"
 * (over the task's baseline seed, re-timed in the same run at the full tier), "compile_cached"
 * (true: the build came from the cache, no compiler ran)}; unknown numbers are
 * null. A CANDIDATE_FILE ending in .py is a KernelBench-format candidate (class ModelNew).
 * Exit status: 0 when every evaluation reached a verdict, 1 when one could not (infra: the
 * message on stderr), 2 for usage. */
#include "eval_cli.h"

int main(int argc, char **argv) {
  static const struct kb__eval_mode mode = {
      .prog = "kb-test-torch-eval",
      .usage = "usage: kb-test-torch-eval --backend host|cuda [--cache DIR] [--tiers 1,3] "
               "TASK_DIR CANDIDATE_FILE...\n",
      .backend = "host",
      .cache = "/tmp/kb-test-torch-eval-cache",
      .tiers = "1,3",
      .output = KB__EVAL_JSON_FLAT,
      .need_files = 1,
      .exit_rule = KB__EVAL_EXIT_VERDICTS};
  return kb__eval_cli(argc, argv, &mode);
}
