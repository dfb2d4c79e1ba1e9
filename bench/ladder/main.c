/* kb-bench-ladder: replays candidate pools through the real promotion policy and through flat
 * evaluation, and reports what the ladder saves and what it loses (docs/benchmarks.md,
 * docs/search.md). Prints a table, then one JSON line:
 *   {"gpu_s_ratio": ..., "top5_survival": ..., "false_prune_rate": ...}
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb/campaign.h"
#include "kb/cli.h"
#include "kb/error.h"
#include "ladder.h"
#include "policy.h"
#include "pool.h"
#include "replay.h"

#ifndef KB_BENCH_DATA
#define KB_BENCH_DATA "bench/data"
#endif
#define MAX_POOLS 32

static void usage(FILE *out) {
  fputs("usage: kb-bench-ladder [options] [POOL.csv ...]\n"
        "\n"
        "Replays each pool (default: the synthetic mostly-losers, heavy-tail and near-ties pools\n"
        "of " KB_BENCH_DATA ", and h200-suite.csv there when present) through the scheduler's\n"
        "promotion policy and through flat evaluation (compile, then the top tier), with the\n"
        "default ladder's tier costs.\n"
        "\n"
        "options:\n"
        "      --seeds N        N seeds per pool and task (default 3)\n"
        "      --first-seed S   the first seed (default 1): seeds S..S+N-1\n"
        "      --csv DIR        write anytime curves to DIR/<pool>-<task>-seed<N>.csv\n"
        "      --eta N          search.eta (default: the campaign default, 3)\n"
        "      --z X            search.confidence_z (default: the campaign default)\n"
        "      --stagnation N   search.stagnation_evaluations (default 0 here: every candidate\n"
        "                       is replayed, as flat evaluation does)\n"
        "      --eta-max N      search.eta_max (default: the campaign default)\n"
        "      --keep-top N     search.keep_top (default: the campaign default)\n"
        "      --baseline-gate 0|1  search.baseline_gate (default: the campaign default, 1)\n"
        "      --json-only      print only the JSON line\n"
        "      --explain        after each row, where each method's GPU seconds went (per tier,\n"
        "                       up to the 95% target and in all) and the ladder's promotions\n"
        "  -h, --help           this help\n"
        "      --version        the version and the commit it was built from\n"
        "\n"
        "exit codes: 0 ok, 1 failure, 2 usage\n",
        out);
}

/* What the command line asks for. */
struct args {
  struct kb_search search; /* the promotion policy's settings */
  int n_seeds, first_seed; /* replays per pool and task, and the first one's seed */
  int level;               /* 0 --json-only, 1 the table, 2 --explain */
  const char *csv;         /* --csv DIR, or NULL (borrowed from argv) */
};

/* argv into `a`; returns -1 for a bad command line (the message or the usage printed), 1 for
 * --help (printed), 0 otherwise. */
static int parse_args(int argc, char **argv, struct args *a) {
  enum {
    OPT_SEEDS = 1000, OPT_CSV, OPT_ETA, OPT_Z, OPT_STAG, OPT_JSON, OPT_EXPLAIN, OPT_GATE,
    OPT_ETA_MAX, OPT_FIRST, OPT_KEEP
  };
  static const struct option longopts[] = {
      {"seeds", required_argument, NULL, OPT_SEEDS}, {"csv", required_argument, NULL, OPT_CSV},
      {"eta", required_argument, NULL, OPT_ETA},     {"z", required_argument, NULL, OPT_Z},
      {"stagnation", required_argument, NULL, OPT_STAG},
      {"baseline-gate", required_argument, NULL, OPT_GATE},
      {"eta-max", required_argument, NULL, OPT_ETA_MAX},
      {"first-seed", required_argument, NULL, OPT_FIRST},
      {"keep-top", required_argument, NULL, OPT_KEEP},
      {"json-only", no_argument, NULL, OPT_JSON},    {"explain", no_argument, NULL, OPT_EXPLAIN},
      {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  /* The whole-number options: code, name, range, where the value goes. */
  const struct { int ch; const char *name; long min, max; int *to; } ints[] = {
      {OPT_SEEDS, "--seeds", 1, 1000, &a->n_seeds},
      {OPT_ETA, "--eta", 2, 100, &a->search.eta},
      {OPT_STAG, "--stagnation", 0, 1000000, &a->search.stagnation},
      {OPT_KEEP, "--keep-top", 1, 1000, &a->search.keep_top},
      {OPT_FIRST, "--first-seed", 1, 1000000, &a->first_seed},
      {OPT_ETA_MAX, "--eta-max", 1, 100, &a->search.eta_max},
      {OPT_GATE, "--baseline-gate", 0, 1, &a->search.baseline_gate}};
  struct kb_error err = {0};
  int ch;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    size_t k = 0;
    while (k < sizeof ints / sizeof *ints && ints[k].ch != ch)
      k++;
    if (k < sizeof ints / sizeof *ints) {
      long v = 0;
      if (kb_cli_parse_long(ints[k].name, optarg, ints[k].min, ints[k].max, &v, &err)) {
        kb_cli_usage("kb-bench-ladder", &err);
        return -1;
      }
      *ints[k].to = (int)v;
      continue;
    }
    switch (ch) {
    case OPT_CSV: a->csv = optarg; break;
    case OPT_Z:
      if (kb_cli_parse_double("--z", optarg, 0, 10, &a->search.confidence_z, &err)) {
        kb_cli_usage("kb-bench-ladder", &err);
        return -1;
      }
      break;
    case OPT_JSON: a->level = 0; break;
    case OPT_EXPLAIN: a->level = 2; break;
    case 'h': usage(stdout); return 1;
    case 'V': kb_cli_version("kb-bench-ladder"); return 1;
    default: kb_cli_try_help("kb-bench-ladder"); return -1;
    }
  }
  return 0;
}

/* The table's head: the policy, the ladder, the pools (`missing`: a default pool not there
 * yet, or NULL). */
static void print_header(const struct kb_search *s, const struct kb_campaign *c,
                         const char *const *pools, int n_pools, const char *missing) {
  printf("kb-bench-ladder: eta %d, eta_max %d, keep_top %d, confidence_z %.2f, "
         "baseline_gate %d, stagnation %d; ladder", s->eta, s->eta_max, s->keep_top,
         s->confidence_z, s->baseline_gate, s->stagnation);
  for (int k = 0; k < c->n_tiers; k++)
    printf(" %s:%lldms", c->tiers[k].name, (long long)c->tiers[k].cost_ms);
  printf("\npools:");
  for (int i = 0; i < n_pools; i++)
    printf(" %s", pools[i]);
  if (missing)
    printf(" (no %s yet)", missing);
  printf("\n%-17s %-8s %4s %9s %9s %8s %8s  %7s %5s %9s %8s\n", "pool", "task", "seed",
         "flat_gpu_s", "ours_gpu_s", "flat_t95", "ours_t95", "ratio", "top5", "pruned/win",
         "best/flat");
}

int main(int argc, char **argv) {
  struct args a = {.n_seeds = 3, .first_seed = 1, .level = 1};
  kb_search_defaults(&a.search);
  a.search.stagnation = 0;
  int parsed = parse_args(argc, argv, &a);
  if (parsed)
    return parsed > 0 ? 0 : 2;
  /* The recorded H200 pool joins the defaults once it is committed (bench/data/README.md). */
  const char *defaults[] = {KB_BENCH_DATA "/mostly-losers.csv", KB_BENCH_DATA "/heavy-tail.csv",
                            KB_BENCH_DATA "/near-ties.csv", KB_BENCH_DATA "/h200-suite.csv"};
  int n_defaults = access(defaults[3], R_OK) == 0 ? 4 : 3;
  int n_pools = optind < argc ? argc - optind : n_defaults;
  if (n_pools > MAX_POOLS) {
    fprintf(stderr, "kb-bench-ladder: at most %d pools\n", MAX_POOLS);
    return 2;
  }
  if (a.csv && mkdir(a.csv, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "kb-bench-ladder: cannot make \"%s\": %s\n", a.csv, strerror(errno));
    return 1;
  }
  struct kb_campaign c;
  memset(&c, 0, sizeof c);
  kb_campaign_default_ladder(&c);
  struct kb_bench_replay_opts o = {.tiers = c.tiers, .n_tiers = c.n_tiers};
  kb__policy_init(&o.policy, &a.search, c.n_tiers, 0);
  const char *pools[MAX_POOLS];
  for (int i = 0; i < n_pools; i++)
    pools[i] = optind < argc ? argv[optind + i] : defaults[i];
  if (a.level >= 1)
    print_header(&a.search, &c, pools, n_pools,
                 optind >= argc && n_defaults == 3 ? defaults[3] : NULL);
  struct kb_bench_totals all = {0};
  struct kb_error err = {0};
  int rc = KB_OK;
  for (int i = 0; rc == KB_OK && i < n_pools; i++) {
    const char *path = pools[i];
    struct kb_bench_pool p;
    rc = kb__bench_pool_load(path, &p, &err);
    if (rc == KB_OK && p.n_tiers != c.n_tiers)
      rc = kb_error_set(&err, KB_EPARSE, "%s: %d tiers, the default ladder has %d", path,
                        p.n_tiers, c.n_tiers);
    if (rc == KB_OK)
      rc = kb__bench_ladder_pool(&p, &o, a.first_seed, a.n_seeds, a.csv, a.level, &all, &err);
    kb__bench_pool_release(&p);
  }
  if (rc) {
    fprintf(stderr, "kb-bench-ladder: %s\n", err.msg);
    return 1;
  }
  if (a.level >= 1)
    printf("* = the ladder never reached 95%% of flat's final best; counted as flat's whole "
           "spend\nt95 = GPU seconds until the reported best's true time was within 5%% of "
           "flat's final best\n");
  kb__bench_ladder_json(stdout, &all);
  return 0;
}
