/* kb-eval's command line and evaluation loop (see eval_cli.h). */
#include "eval_cli.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evaluator.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/cli.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/log.h"
#include "kb/result.h"
#include "kb/task.h"

#define MAX_RUN_TIERS 64 /* entries of --tiers at most (a tier may repeat) */

struct opts {
  const char *backend;       /* NULL: the task's */
  const char *cache;
  char cache_default[256];
  const char *tiers;
  long repeat;               /* rounds over every tier */
  int json;                  /* --json */
  int seeds;                 /* evaluate the task's seeds too */
  int first_file;            /* argv index of the first CANDIDATE_FILE */
  int n_files;
  const char *task_dir;
};

/* What one program run holds. */
struct session {
  const struct kb__eval_mode *m;
  struct opts o;
  int output;                /* enum kb__eval_output */
  struct kb_task task;
  struct kb_campaign ladder;
  struct kb_evaluator *ev;
  int tiers[MAX_RUN_TIERS];  /* indices into ladder.tiers, in the order asked */
  int n_tiers;
};

/* Parses --tiers `text`: comma-separated tier names of `ladder` or tier numbers, where a run of
 * digits is one tier per digit ("123" = 1,2,3, as the test scripts write it). */
static int parse_tiers(const char *text, const struct kb_campaign *ladder, int *tiers, int *n,
                       struct kb_error *err) {
  *n = 0;
  const char *p = text;
  while (*p) {
    size_t len = strcspn(p, ",");
    int digits = len > 0 && strspn(p, "0123456789") >= len;
    for (size_t k = 0; digits && k < len; k++) {
      int t = p[k] - '0';
      if (t >= ladder->n_tiers)
        return kb_error_set(err, KB_EINVAL, "--tiers: no tier %d (the ladder has 0 to %d)", t,
                            ladder->n_tiers - 1);
      if (*n >= MAX_RUN_TIERS)
        return kb_error_set(err, KB_EINVAL, "--tiers: more than %d tiers", MAX_RUN_TIERS);
      tiers[(*n)++] = t;
    }
    if (!digits) {
      int found = -1;
      for (int t = 0; t < ladder->n_tiers && found < 0; t++)
        if (strlen(ladder->tiers[t].name) == len && strncmp(ladder->tiers[t].name, p, len) == 0)
          found = t;
      if (found < 0)
        return kb_error_set(err, KB_EINVAL, "--tiers: unknown tier \"%.*s\"", (int)len, p);
      if (*n >= MAX_RUN_TIERS)
        return kb_error_set(err, KB_EINVAL, "--tiers: more than %d tiers", MAX_RUN_TIERS);
      tiers[(*n)++] = found;
    }
    p += len;
    if (*p == ',')
      p++;
  }
  if (*n == 0)
    return kb_error_set(err, KB_EINVAL, "--tiers: no tier given");
  return KB_OK;
}

/* Parses the command line into s->o. Returns -1 to go on, else the exit code. */
static int parse_args(struct session *s, int argc, char **argv) {
  const struct kb__eval_mode *m = s->m;
  struct opts *o = &s->o;
  o->backend = m->backend;
  o->tiers = m->tiers;
  o->repeat = 1;
  o->seeds = m->seeds;
  kb_cli_user_tmp("kb-cache", o->cache_default, sizeof o->cache_default);
  const char *env = getenv("KB_CACHE"); /* set but empty: as unset */
  o->cache = m->cache ? m->cache : env && *env ? env : o->cache_default;
  static const struct option longopts[] = {
      {"backend", required_argument, NULL, 'b'}, {"cache", required_argument, NULL, 'C'},
      {"tiers", required_argument, NULL, 't'},   {"repeat", required_argument, NULL, 'r'},
      {"seeds", no_argument, NULL, 's'},         {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},          {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  struct kb_error err = {0};
  int ch;
  while ((ch = getopt_long(argc, argv, "b:C:t:r:h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'b': o->backend = optarg; break;
    case 'C': o->cache = optarg; break;
    case 't': o->tiers = optarg; break;
    case 'r':
      if (kb_cli_parse_long("--repeat", optarg, 1, 1000000, &o->repeat, &err))
        return kb_cli_usage(m->prog, &err);
      break;
    case 's': o->seeds = 1; break;
    case 'j': o->json = 1; break;
    case 'h': fputs(m->usage, stdout); return KB_EXIT_OK;
    case 'V': return kb_cli_version(m->prog);
    default: return kb_cli_try_help(m->prog);
    }
  }
  if (o->backend != NULL && kb_backend_from_name(o->backend) < 0) {
    fprintf(stderr, "%s: --backend must be host or cuda, not \"%s\"\n", m->prog, o->backend);
    return kb_cli_try_help(m->prog);
  }
  if (optind >= argc || (m->need_files && optind + 1 >= argc)) {
    fprintf(stderr, "%s: missing TASK_DIR%s\n", m->prog,
            m->need_files ? " and CANDIDATE_FILE" : "");
    return kb_cli_try_help(m->prog);
  }
  o->task_dir = argv[optind];
  o->first_file = optind + 1;
  o->n_files = argc - optind - 1;
  if (o->n_files == 0)
    o->seeds = 1;
  kb_campaign_default_ladder(&s->ladder);
  if (parse_tiers(o->tiers, &s->ladder, s->tiers, &s->n_tiers, &err))
    return kb_cli_usage(m->prog, &err);
  s->output = o->json ? KB__EVAL_JSON : m->output;
  return -1;
}

/* The candidate `name` of `task` from the file at `path`, built with `flags`, into `c`
 * (kb_candidate_release). The format follows the file's extension (kb_cand_format_of_path):
 * ".py" is a KernelBench ModelNew (KB_FORMAT_KERNELBENCH), anything else native C/CUDA.
 * Returns KB_OK or the error (the file unreadable, the candidate refused) in `err`, whose
 * message names `path`. */
static int make_candidate(const struct kb_task *task, const char *name, const char *path,
                          const char *flags, struct kb_candidate *c, struct kb_error *err) {
  struct kb_buf src;
  kb_buf_init(&src);
  int rc = kb_buf_read_file(&src, path, err);
  struct kb_error ce = {0};
  if (rc == KB_OK && kb_candidate_init(c, task->id, name, "seed", src.data, "", flags, &ce))
    rc = kb_error_set(err, ce.code, "%s: %s", path, ce.msg);
  else if (rc == KB_OK && kb_cand_format_of_path(path) != KB_FORMAT_NATIVE &&
           kb_candidate_set_format(c, kb_cand_format_of_path(path), &ce) != KB_OK) {
    rc = kb_error_set(err, ce.code, "%s: %s", path, ce.msg);
    kb_candidate_release(c);
  }
  kb_buf_release(&src);
  return rc;
}

/* Prints one kb-test-eval line for `r` (no_verdict: the reason in `err`). */
static void print_text(const struct session *s, const char *name, int tier,
                       const struct kb_result *r, int no_verdict, double wall,
                       const struct kb_error *err) {
  const char *tname = s->ladder.tiers[tier].name;
  if (no_verdict) {
    printf("%-12s %-22s %-6s infra_error: %s\n", s->task.id, name, tname, err->msg);
    return;
  }
  char profile[160] = "";
  if (isfinite(r->dram_pct) || isfinite(r->sm_pct))
    snprintf(profile, sizeof profile,
             " | profile: kernel %.1f us, dram %.1f%%, sm %.1f%%, occupancy %.1f%%, l2 hit %.1f%%",
             r->kernel_us, r->dram_pct, r->sm_pct, r->occupancy_pct, r->l2_hit_pct);
  const struct kb_timing *t = &r->timing;
  double timed_ms = t->samples ? t->mean_us * t->samples / 1000.0 : 0;
  if (isfinite(r->baseline_median_us) && t->samples)
    timed_ms += r->baseline_median_us * t->samples / 1000.0;
  printf("%-12s %-22s %-6s %-13s median %10.2f p10 %10.2f p90 %10.2f noise %.4f n %4d "
         "same-run %5.2fx cost %6lld ms wall %7.3f s overhead %8.2f ms starts %d (%.3f s)%s%s%s\n",
         s->task.id, name, tname, kb_status_name(r->status), t->samples ? t->median_us : 0,
         t->samples ? t->p10_us : 0, t->samples ? t->p90_us : 0, t->samples ? t->noise : 0,
         t->samples, isfinite(r->same_run_speedup) ? r->same_run_speedup : 0,
         (long long)r->cost_ms, wall, wall * 1000.0 - timed_ms,
         kb__evaluator_sandbox_starts(s->ev), kb__evaluator_sandbox_start_s(s->ev), profile,
         r->reason[0] ? " | " : "", r->reason);
}

static json_t *number(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* A ModelNew build's static label (the "label: X" line that heads its compile log), or null. */
static json_t *label_of(const char *log) {
  if (log == NULL || strncmp(log, "label: ", 7) != 0)
    return json_null();
  return json_stringn(log + 7, strcspn(log + 7, "\n"));
}

/* The flat line of kb-test-torch-eval (enum kb__eval_output), or NULL on ENOMEM. */
static json_t *flat_json(const struct session *s, const char *name, const char *tname,
                         const struct kb_result *r, double wall) {
  json_t *o = json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:i, s:o, s:i, s:o, s:o, s:I, s:f, s:i}", "task", s->task.id,
      "candidate", name, "tier", tname, "status", kb_status_name(r->status), "reason",
      r->reason, "sets_checked", r->sets_checked, "median_us",
      number(r->timing.samples ? r->timing.median_us : NAN), "samples", r->timing.samples,
      "torch_eager_us", number(r->torch_eager_us), "torch_compile_us",
      number(r->torch_compile_us), "cost_ms", (json_int_t)r->cost_ms, "wall_s", wall, "starts",
      kb__evaluator_sandbox_starts(s->ev));
  if (o != NULL) {
    json_object_set_new(o, "label", label_of(r->compile_log));
    json_object_set_new(o, "same_run_speedup", number(r->same_run_speedup));
    json_object_set_new(o, "compile_cached", json_boolean(r->compile_cached));
  }
  return o;
}

/* The JSON object of one evaluation (see enum kb__eval_output), or NULL on ENOMEM. */
static json_t *eval_json(const struct session *s, const char *path, const char *name, int tier,
                         const struct kb_result *r, int no_verdict, double wall,
                         const struct kb_error *err) {
  const char *tname = s->ladder.tiers[tier].name;
  if (s->output == KB__EVAL_JSON_FLAT)
    return flat_json(s, name, tname, r, wall);
  json_t *o = json_pack("{s:s, s:s, s:s, s:f, s:i}", "file", path, "task", s->task.id, "tier",
                        tname, "wall_s", wall, "starts", kb__evaluator_sandbox_starts(s->ev));
  if (o == NULL)
    return NULL;
  struct kb_error je = {0};
  char *text = NULL;
  json_t *result = NULL;
  if (!no_verdict && kb_result_to_json(r, &text, &je) == KB_OK)
    result = json_loads(text, 0, NULL);
  kb_free(text);
  if (result != NULL)
    json_object_set_new(o, "result", result);
  else
    json_object_set_new(o, "error", json_string(no_verdict ? err->msg : je.msg));
  return o;
}

/* The fields of `r` a campaign's runner sets (worker.c) and the evaluator keeps: the campaign is
 * "kb-eval", the runner "kb-eval:<pid>", attempt 1. */
static void fill_identity(const struct session *s, const struct kb_candidate *c, int tier,
                          struct kb_result *r) {
  snprintf(r->campaign, sizeof r->campaign, "kb-eval");
  snprintf(r->task, sizeof r->task, "%s", s->task.id);
  snprintf(r->candidate, sizeof r->candidate, "%s", c->id);
  r->tier = tier;
  snprintf(r->tier_name, sizeof r->tier_name, "%s", s->ladder.tiers[tier].name);
  r->attempt = 1;
  snprintf(r->charge_id, sizeof r->charge_id, "%.64s:%d#1", c->id, tier);
  snprintf(r->runner, sizeof r->runner, "kb-eval:%ld", (long)getpid());
  r->backend = s->task.backend;
}

/* Evaluates the file at `path` as candidate `name` at tier index `tier` and prints it. Returns
 * 0 when its verdict is ok, 1 for another verdict, 2 when there is none (the candidate could
 * not be made, the evaluator failed: said on stderr, and in the line or object). */
static int eval_one(struct session *s, const char *name, const char *path, const char *flags,
                    int tier) {
  struct kb_error err = {0};
  struct kb_result r;
  kb_result_init(&r);
  struct kb_candidate c;
  double wall = 0;
  int made = make_candidate(&s->task, name, path, flags ? flags : "", &c, &err) == KB_OK;
  int rc = !made;
  if (made) {
    const struct kb_tier *t = &s->ladder.tiers[tier];
    int flags_eval = tier == s->ladder.n_tiers - 1 ? KB_EVAL_FULL : 0;
    fill_identity(s, &c, tier, &r);
    double t0 = kb_now_mono();
    rc = kb__evaluator_evaluate(s->ev, &s->task, &c, t, tier, flags_eval, &r, &err) != KB_OK;
    wall = kb_now_mono() - t0;
    kb_candidate_release(&c);
  }
  if (rc)
    fprintf(stderr, "%s: %s%s%s\n", s->m->prog, made ? name : "", made ? ": no verdict: " : "",
            err.msg);
  if (s->output == KB__EVAL_TEXT && (made || s->m->exit_rule != KB__EVAL_EXIT_SEEDS_OK)) {
    print_text(s, name, tier, &r, rc, wall, &err);
  } else if (s->output != KB__EVAL_TEXT && (!rc || s->output == KB__EVAL_JSON)) {
    json_t *o = eval_json(s, path, name, tier, &r, rc, wall, &err);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (text != NULL)
      printf("%s\n", text);
    free(text);
    json_decref(o);
  }
  fflush(stdout);
  int status = r.status;
  kb_result_release(&r);
  return rc ? 2 : status == KB_STATUS_OK ? 0 : 1;
}

/* A candidate's name from its file name: the base name, cut to 63 characters. */
static void file_name(const char *path, char *out, size_t size) {
  const char *slash = strrchr(path, '/');
  snprintf(out, size, "%s", slash ? slash + 1 : path);
}

/* Every round, tier, seed and file; returns the exit code by the mode's rule. */
static int run_all(struct session *s, char **argv) {
  const struct opts *o = &s->o;
  int n = o->n_files, bad = 0;
  int *out = kb_calloc((size_t)n + (size_t)s->task.n_seeds, sizeof *out); /* ladder: left */
  if (out == NULL) {
    fprintf(stderr, "%s: out of memory\n", s->m->prog);
    return KB_EXIT_FAILURE;
  }
  for (long k = 0; k < o->repeat; k++)
    for (int ti = 0; ti < s->n_tiers; ti++) {
      int tier = s->tiers[ti];
      for (int i = 0; o->seeds && i < s->task.n_seeds; i++) {
        const struct kb_seed_source *seed = &s->task.seeds[i];
        if (out[n + i])
          continue;
        int v = eval_one(s, seed->name, seed->path, seed->flags, tier);
        out[n + i] = s->m->ladder && v != 0;
        bad |= s->m->exit_rule == KB__EVAL_EXIT_VERDICTS ? v == 2 : v != 0;
      }
      for (int i = 0; i < n; i++) {
        const char *path = argv[o->first_file + i];
        char name[KB_ID_MAX];
        file_name(path, name, sizeof name);
        if (out[i])
          continue;
        int v = eval_one(s, name, path, "", tier);
        out[i] = s->m->ladder && v != 0;
        if (s->m->exit_rule == KB__EVAL_EXIT_ALL_OK)
          bad |= v != 0;
        else if (s->m->exit_rule == KB__EVAL_EXIT_VERDICTS)
          bad |= v == 2;
      }
    }
  kb_free(out);
  return bad ? KB_EXIT_FAILURE : KB_EXIT_OK;
}

int kb__eval_cli(int argc, char **argv, const struct kb__eval_mode *mode) {
  kb_log_init(mode->prog);
  struct session s;
  memset(&s, 0, sizeof s);
  s.m = mode;
  int code = parse_args(&s, argc, argv);
  if (code >= 0)
    return code;
  struct kb_error err = {0};
  if (kb_task_load(s.o.task_dir, &s.task, &err) != KB_OK)
    return kb_cli_fail(mode->prog, &err);
  const char *backend = s.o.backend ? s.o.backend : kb_backend_name(s.task.backend);
  struct kb_evaluator_opts eo = {.kind = kb_backend_from_name(backend), .cache_dir = s.o.cache};
  double t0 = kb_now_mono();
  if (kb__evaluator_new(&eo, &s.ev, &err) != KB_OK) {
    kb_task_release(&s.task);
    return kb_cli_fail(mode->prog, &err);
  }
  if (s.output == KB__EVAL_TEXT)
    printf("# backend %s, device %s, sandbox started in %.3f s (backend ready in %.3f s)\n",
           backend, kb__evaluator_device(s.ev), kb__evaluator_sandbox_start_s(s.ev),
           kb_now_mono() - t0);
  code = run_all(&s, argv);
  kb__evaluator_free(s.ev);
  kb_task_release(&s.task);
  return code;
}
