/* kb-test-eval: evaluates a task bundle's seeds and given candidate files through the sandbox,
 * without Redis, on the default ladder; one line per evaluation. For measurements on the GPU
 * machine (tests/gpu/sandbox.sh) and a smoke test of the whole evaluation path in CI. It is
 * kb-eval (runner/eval_cli.h) with other defaults: the seeds always, every tier run, host.
 *
 * usage: kb-test-eval --backend host|cuda [--cache DIR] [--tiers 1,2,3] [--repeat N] TASK_DIR
 *                     [CANDIDATE_FILE...]
 * Prints, per evaluation: task, name, tier, status, median/p10/p90 (us), noise, samples,
 * same-run speedup, cost (ms), the evaluation's wall time, the runner's overhead (wall time
 * minus the timed time, ms), sandbox starts and the last start's seconds, and the reason.
 * Exit status: 0 when every seed was ok at every tier, 1 otherwise, 2 for usage. */
#include "eval_cli.h"

int main(int argc, char **argv) {
  static const struct kb__eval_mode mode = {
      .prog = "kb-test-eval",
      .usage = "usage: kb-test-eval --backend host|cuda [--cache DIR] [--tiers 1,2,3] "
               "[--repeat N] TASK_DIR [CANDIDATE_FILE...]\n",
      .backend = "host",
      .cache = "/tmp/kb-test-eval-cache",
      .tiers = "1,2,3",
      .output = KB__EVAL_TEXT,
      .seeds = 1,
      .exit_rule = KB__EVAL_EXIT_SEEDS_OK};
  return kb__eval_cli(argc, argv, &mode);
}
