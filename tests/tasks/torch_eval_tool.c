/* kb-test-torch-eval: evaluates candidate files on a task bundle through the runner's evaluator
 * (runner/evaluator.h: compile tier, the sandbox client, the PyTorch worker for a pytorch-oracle
 * task) on the default ladder, without Redis; one JSON object per evaluation on stdout. For the
 * PyTorch oracle's tests (tests/tasks/test_torch_oracle.py, on the CPU) and the H200 script
 * (tests/gpu/kernelbench_l1.sh, CUDA candidates).
 *
 * usage: kb-test-torch-eval --backend host|cuda [--cache DIR] [--tiers 1,3] TASK_DIR
 *                           CANDIDATE_FILE...
 * Each line: {"task", "candidate" (file name), "tier" (name), "status", "reason",
 * "sets_checked", "median_us", "samples", "torch_eager_us", "torch_compile_us", "cost_ms",
 * "wall_s", "starts" (sandbox processes started so far, both kinds), "label" (a ModelNew's static
 * label: "kernel", "torch_compile", "torch_only"; null for C candidates), "same_run_speedup"
 * (over the task's baseline seed, re-timed in the same run at the full tier)}; unknown numbers are
 * null. A CANDIDATE_FILE ending in .py is a KernelBench-format candidate (class ModelNew).
 * Exit status: 0 when every evaluation reached a verdict, 1 when one could not (infra: the
 * message on stderr), 2 for usage. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval_file.h"
#include "evaluator.h"
#include "kb/campaign.h"
#include "kb/cli.h"
#include "kb/error.h"
#include "kb/log.h"
#include "kb/result.h"
#include "kb/task.h"

static const char usage[] = "usage: kb-test-torch-eval --backend host|cuda [--cache DIR] "
                            "[--tiers 1,3] TASK_DIR CANDIDATE_FILE...\n";

static json_t *number(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* A ModelNew build's static label (the "label: X" line that heads its compile log), or NULL. */
static json_t *label_of(const char *log) {
  if (log == NULL || strncmp(log, "label: ", 7) != 0)
    return json_null();
  size_t n = strcspn(log + 7, "\n");
  return json_stringn(log + 7, n);
}

/* Evaluates the candidate at `path` at tier index `tier`; prints its line. Returns 0 when a
 * verdict was reached, 1 otherwise. */
static int eval_one(struct kb_evaluator *ev, const struct kb_task *task, const char *path,
                    const struct kb_campaign *ladder, int tier) {
  struct kb_error err = {0};
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  struct kb_result r;
  double wall = 0;
  int rc = kb_test_eval_file(ev, task, "cand", path, "", ladder, tier, &r, &wall, &err);
  if (rc == 1) {
    fprintf(stderr, "kb-test-torch-eval: %s: %s\n", path, err.msg);
    kb_result_release(&r);
    return 1;
  }
  if (rc == 2) {
    fprintf(stderr, "kb-test-torch-eval: %s: %s: no verdict: %s\n", task->id, name, err.msg);
    kb_result_release(&r);
    return 1;
  }
  json_t *line = json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:i, s:o, s:i, s:o, s:o, s:I, s:f, s:i}", "task", task->id,
      "candidate", name, "tier", ladder->tiers[tier].name, "status", kb_status_name(r.status),
      "reason", r.reason, "sets_checked", r.sets_checked, "median_us",
      number(r.timing.samples ? r.timing.median_us : NAN), "samples", r.timing.samples,
      "torch_eager_us", number(r.torch_eager_us), "torch_compile_us", number(r.torch_compile_us),
      "cost_ms", (json_int_t)r.cost_ms, "wall_s", wall, "starts",
      kb__evaluator_sandbox_starts(ev));
  if (line != NULL) {
    json_object_set_new(line, "label", label_of(r.compile_log));
    json_object_set_new(line, "same_run_speedup", number(r.same_run_speedup));
  }
  char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
  if (text != NULL)
    printf("%s\n", text);
  fflush(stdout);
  free(text);
  json_decref(line);
  kb_result_release(&r);
  return text == NULL;
}

int main(int argc, char **argv) {
  kb_log_init("kb-test-torch-eval");
  const char *backend = "host", *cache = "/tmp/kb-test-torch-eval-cache", *tiers = "1,3";
  static const struct option longopts[] = {{"backend", required_argument, NULL, 'b'},
                                           {"cache", required_argument, NULL, 'C'},
                                           {"tiers", required_argument, NULL, 't'},
                                           {"help", no_argument, NULL, 'h'},
                                           {"version", no_argument, NULL, 'V'},
                                           {NULL, 0, NULL, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "b:C:t:h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'b': backend = optarg; break;
    case 'C': cache = optarg; break;
    case 't': tiers = optarg; break;
    case 'h': fputs(usage, stdout); return 0;
    case 'V': return kb_cli_version("kb-test-torch-eval");
    default: return kb_cli_try_help("kb-test-torch-eval");
    }
  }
  if (kb_backend_from_name(backend) < 0) {
    fprintf(stderr, "kb-test-torch-eval: --backend must be host or cuda, not \"%s\"\n", backend);
    return kb_cli_try_help("kb-test-torch-eval");
  }
  if (optind + 1 >= argc) {
    fprintf(stderr, "kb-test-torch-eval: missing TASK_DIR and CANDIDATE_FILE\n");
    return kb_cli_try_help("kb-test-torch-eval");
  }
  struct kb_error err = {0};
  struct kb_task task;
  struct kb_campaign ladder;
  struct kb_evaluator *ev = NULL;
  if (kb_test_eval_open(argv[optind], backend, cache, &task, &ladder, &ev, NULL, &err) !=
      KB_OK) {
    fprintf(stderr, "kb-test-torch-eval: %s\n", err.msg);
    return 1;
  }
  int bad = 0;
  for (const char *t = tiers; *t; t++) {
    if (*t < '0' || *t > '9' || *t - '0' >= ladder.n_tiers)
      continue;
    for (int i = optind + 1; i < argc; i++)
      bad |= eval_one(ev, &task, argv[i], &ladder, *t - '0');
  }
  kb__evaluator_free(ev);
  kb_task_release(&task);
  return bad;
}
