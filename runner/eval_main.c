/* kb-eval TASK_DIR [CANDIDATE_FILE...]: evaluates candidate files on one task bundle, as a
 * campaign would, without Redis (eval_cli.h; docs/cli.md, "kb-eval"). */
#include "eval_cli.h"

static const char usage[] =
    "usage: kb-eval [options] TASK_DIR [CANDIDATE_FILE...]\n"
    "Evaluates each candidate file on the task bundle in TASK_DIR through the runner's\n"
    "evaluator and sandbox, tier by tier as a campaign's ladder does (a candidate whose verdict\n"
    "is not ok stops there); without files, the task's seeds. A .c or .cu file is a C/CUDA\n"
    "candidate (docs/candidate-abi.md); a .py file a KernelBench ModelNew.\n"
    "  -b, --backend host|cuda  where to run (default: the task's backend)\n"
    "  -t, --tiers LIST         tiers by name or number, comma-separated (default\n"
    "                           smoke,screen,full; 0 = compile ... 3 = full)\n"
    "  -C, --cache DIR          compiled libraries (default $KB_CACHE or /tmp/kb-cache-$USER)\n"
    "      --seeds              evaluate the task's seeds too\n"
    "  -r, --repeat N           evaluate everything N times (default 1)\n"
    "      --json               one JSON object per evaluation: {\"file\", \"task\", \"tier\",\n"
    "                           \"wall_s\", \"starts\", \"result\"} (\"result\" as a campaign's\n"
    "                           result; \"error\" instead when there is no verdict)\n"
    "  -h, --help               this help\n"
    "      --version            the version and commit\n"
    "exit: 0 every verdict ok; 1 a verdict not ok, none reached, or no evaluator; 2 bad\n"
    "command line; 3 malformed task bundle (docs/cli.md)\n";

int main(int argc, char **argv) {
  static const struct kb__eval_mode mode = {.prog = "kb-eval",
                                            .usage = usage,
                                            .tiers = "smoke,screen,full",
                                            .output = KB__EVAL_TEXT,
                                            .ladder = 1,
                                            .exit_rule = KB__EVAL_EXIT_ALL_OK};
  return kb__eval_cli(argc, argv, &mode);
}
