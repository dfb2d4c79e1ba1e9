/* The command line of kb-eval (runner/eval_main.c): candidate files evaluated on one task bundle
 * through the runner's evaluator (evaluator.h: the compile tier, the sandbox, the PyTorch worker
 * for a pytorch-oracle task) on the default ladder, without Redis; one line or one JSON object
 * per evaluation. User docs: docs/cli.md, "kb-eval".
 *
 * The test tools kb-test-eval (tests/runner/eval_tool.c) and kb-test-torch-eval
 * (tests/tasks/torch_eval_tool.c) are the same program with other defaults, output and exit
 * rule (struct kb__eval_mode), kept for the test scripts and GPU scripts that call them.
 */
#ifndef KB_RUNNER_EVAL_CLI_H
#define KB_RUNNER_EVAL_CLI_H

enum kb__eval_output {
  KB__EVAL_TEXT = 0,  /* one text line per evaluation (kb-test-eval's columns), a header first */
  KB__EVAL_JSON,      /* --json: {"file", "task", "tier", "wall_s", "starts", "result"} */
  KB__EVAL_JSON_FLAT, /* kb-test-torch-eval's flat object (its header comment lists the keys) */
};

enum kb__eval_exit {
  KB__EVAL_EXIT_ALL_OK = 0, /* 0 when every evaluation's verdict is ok, else 1 */
  KB__EVAL_EXIT_SEEDS_OK,   /* 0 when every seed's verdict is ok (the files' do not count) */
  KB__EVAL_EXIT_VERDICTS,   /* 0 when every evaluation reached a verdict, whatever it is */
};

/* What differs between the programs; every string is static. */
struct kb__eval_mode {
  const char *prog;    /* name in messages, --help and --version: "kb-eval" */
  const char *usage;   /* the --help text, starting "usage: <prog> " */
  const char *backend; /* --backend when not given; NULL: the task's own backend */
  const char *cache;   /* --cache when not given; NULL: $KB_CACHE, else /tmp/kb-cache-$USER */
  const char *tiers;   /* --tiers when not given */
  int output;          /* enum kb__eval_output without --json (--json: KB__EVAL_JSON) */
  int seeds;           /* 1: the task's seeds are always evaluated too; 0: with --seeds, or when
                          no file is given */
  int need_files;      /* 1: at least one CANDIDATE_FILE is required */
  int ladder;          /* 1: a candidate whose verdict is not ok is not evaluated at its later
                          tiers, as in a campaign's ladder; 0: every tier is run */
  int exit_rule;       /* enum kb__eval_exit */
};

/* The whole program: parses `argv` (getopt_long: --backend, --tiers, --cache, --seeds,
 * --repeat, --json, --help, --version), loads the bundle, starts the evaluator and evaluates
 * every file (and seed) at every tier asked, printing as `mode` says. Returns the process exit
 * code (docs/cli.md): 0 or 1 by mode->exit_rule, 2 for a bad command line, or kb_exit_code() of
 * the error that stopped it before any evaluation (3 for a malformed task bundle). Messages go
 * to stderr. `argv` and `mode` are borrowed. */
int kb__eval_cli(int argc, char **argv, const struct kb__eval_mode *mode);

#endif
