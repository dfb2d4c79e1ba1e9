/* kb-runner: claims candidates of one campaign and evaluates them on this machine. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/cli.h"
#include "kb/error.h"
#include "devices.h"
#include "evaluator.h"
#include "kb/log.h"
#include "kb/signals.h"
#include "kb/task.h"
#include "worker.h"

static volatile sig_atomic_t stop_requested = 0;

static void usage(FILE *out) {
  fputs("usage: kb-runner --campaign ID [options]\n"
        "       kb-runner --list-devices [--json]\n"
        "\n"
        "Claims candidates of a campaign from redis, evaluates them on the fidelity ladder and\n"
        "publishes the results. SIGUSR1, SIGTERM or SIGINT (Slurm's warning before the time\n"
        "limit, preemption, Ctrl-C): stop claiming, finish or release the current item, exit 0.\n"
        "\n"
        "options:\n"
        "  -c, --campaign ID    campaign to serve (required)\n"
        "  -r, --redis ADDR     redis at HOST:PORT or unix:PATH (default $KB_REDIS)\n"
        "  -b, --backend NAME   host (C candidates on the CPU) or cuda (CUDA candidates on one\n"
        "                       GPU, owned by the kb-sandbox-cuda process); default host\n"
        "  -d, --device N       CUDA device ordinal for --backend cuda (default 0)\n"
        "  -C, --cache DIR      compiled libraries and task files (default $KB_CACHE or\n"
        "                       /tmp/kb-cache-$USER)\n"
        "  -n, --name NAME      runner name in leases and results (default HOST:PID)\n"
        "      --min-tier N     lowest tier served (default 0)\n"
        "      --max-tier N     highest tier served (default all)\n"
        "      --wait SECONDS   wait this long for redis and the campaign (default 60)\n"
        "      --max-items N    leave after N evaluations (default no limit; an item whose\n"
        "                       candidate or task cannot be loaded gets an infra_error\n"
        "                       result and is not one of them)\n"
        "      --ahead K        items claimed and compiling ahead of the device (default:\n"
        "                       compiler threads + 1)\n"
        "      --compile-workers N  compiler threads (default: CPUs of this job minus one;\n"
        "                       a cuda runner with 3 CPUs or more evaluates on the first\n"
        "                       and compiles on the others, one thread each)\n"
        "      --grace SECONDS  when asked to stop, let the evaluation under way finish if it\n"
        "                       ends within this time, else release it (default 0)\n"
        "      --metrics MODE   full-tier evaluations that get the hardware-metrics pass\n"
        "                       (CUDA): marked (default: a median under the bound the\n"
        "                       scheduler marked the item with: its task's best so far),\n"
        "                       best (a new best median of its task for this runner),\n"
        "                       every, none\n"
        "      --sample-chunk N timed samples the sandbox queues before one wait, at most\n"
        "                       (default 0: its own choice; 1: a wait after every sample)\n"
        "      --torch-reuse SECONDS  reuse a task's torch.compile time (and torch eager's,\n"
        "                       where the trusted worker times it) this long for its later\n"
        "                       full-tier evaluations on this runner (default 600; 0: time\n"
        "                       them in every one)\n"
        "      --fresh MODE     the fresh samples' schedule (timed calls on unseen inputs):\n"
        "                       tier (default: one at least below the full tier, three at\n"
        "                       least at full), full (three at least at every tier)\n"
        "  -L, --list-devices   print the CUDA devices this runner sees, then exit\n"
        "  -j, --json           with --list-devices: one JSON object\n"
        "  -h, --help           this help\n"
        "      --version        the version and the commit it was built from\n"
        "\n"
        "environment: KB_REDIS, KB_REDIS_PASSWORD or KB_REDIS_PASSWORD_FILE, KB_LOG, KB_CACHE,\n"
        "  KB_SANDBOX_DIR (folder of kb-sandbox and kb-sandbox-cuda; default: next to kb-runner)\n"
        "exit codes: 0 campaign over or asked to stop, 1 failure, 2 usage, 4 redis unreachable,\n"
        "  9 the build cache cannot be written (full disk, quota, read-only): items released\n",
        out);
}

/* --metrics MODE into `*out` (enum kb_metrics_mode), or the error in `err`. */
static void metrics_mode(const char *arg, int *out, struct kb_error *err) {
  if (strcmp(arg, "marked") == 0)
    *out = KB_METRICS_MARKED;
  else if (strcmp(arg, "best") == 0)
    *out = KB_METRICS_BEST;
  else if (strcmp(arg, "every") == 0)
    *out = KB_METRICS_EVERY;
  else if (strcmp(arg, "none") == 0)
    *out = KB_METRICS_NONE;
  else
    kb_error_set(err, KB_EINVAL, "--metrics must be marked, best, every or none, not \"%s\"",
                 arg);
}

/* --fresh MODE into `*out` (enum kb_fresh_mode), or the error in `err`. */
static void fresh_mode(const char *arg, int *out, struct kb_error *err) {
  if (strcmp(arg, "tier") == 0)
    *out = KB_FRESH_TIER;
  else if (strcmp(arg, "full") == 0)
    *out = KB_FRESH_FULL;
  else
    kb_error_set(err, KB_EINVAL, "--fresh must be tier or full, not \"%s\"", arg);
}

/* argv into `o` and the --list-devices, --json flags; returns -1 for a bad command line (the
 * message printed), 1 for --help or --version (printed), 0 otherwise. */
static int parse_args(int argc, char **argv, struct kb_worker_opts *o, int *list, int *json) {
  enum { OPT_MIN = 1000, OPT_MAX, OPT_WAIT, OPT_ITEMS, OPT_AHEAD, OPT_WORKERS, OPT_GRACE,
         OPT_METRICS, OPT_CHUNK, OPT_FRESH, OPT_REUSE };
  static const struct option longopts[] = {
      {"campaign", required_argument, NULL, 'c'}, {"redis", required_argument, NULL, 'r'},
      {"backend", required_argument, NULL, 'b'},  {"cache", required_argument, NULL, 'C'},
      {"name", required_argument, NULL, 'n'},     {"min-tier", required_argument, NULL, OPT_MIN},
      {"max-tier", required_argument, NULL, OPT_MAX}, {"wait", required_argument, NULL, OPT_WAIT},
      {"max-items", required_argument, NULL, OPT_ITEMS}, {"help", no_argument, NULL, 'h'},
      {"list-devices", no_argument, NULL, 'L'}, {"json", no_argument, NULL, 'j'},
      {"device", required_argument, NULL, 'd'}, {"ahead", required_argument, NULL, OPT_AHEAD},
      {"compile-workers", required_argument, NULL, OPT_WORKERS},
      {"grace", required_argument, NULL, OPT_GRACE}, {"version", no_argument, NULL, 'V'},
      {"metrics", required_argument, NULL, OPT_METRICS},
      {"sample-chunk", required_argument, NULL, OPT_CHUNK},
      {"torch-reuse", required_argument, NULL, OPT_REUSE},
      {"fresh", required_argument, NULL, OPT_FRESH},
      {NULL, 0, NULL, 0}};
  /* The whole-number options: code, name, range, where the value goes. */
  const struct { int ch; const char *name; long min, max; int *to; } ints[] = {
      {'d', "--device", 0, KB_MAX_DEVICES - 1, &o->device},
      {OPT_AHEAD, "--ahead", 1, 64, &o->ahead},
      {OPT_WORKERS, "--compile-workers", 1, 256, &o->compile_workers},
      {OPT_MIN, "--min-tier", 0, 7, &o->min_tier},
      {OPT_MAX, "--max-tier", 0, 7, &o->max_tier},
      {OPT_WAIT, "--wait", 0, 86400, &o->wait_s},
      {OPT_CHUNK, "--sample-chunk", 0, 1000000, &o->sample_chunk},
      {OPT_REUSE, "--torch-reuse", 0, 86400, &o->torch_reuse_s}};
  struct kb_error err = {0};
  int ch;
  long v = 0;
  while ((ch = getopt_long(argc, argv, "c:r:b:C:n:d:hLj", longopts, NULL)) != -1) {
    size_t k = 0;
    while (k < sizeof ints / sizeof *ints && ints[k].ch != ch)
      k++;
    if (k < sizeof ints / sizeof *ints) {
      if (kb_cli_parse_long(ints[k].name, optarg, ints[k].min, ints[k].max, &v, &err))
        break;
      *ints[k].to = (int)v;
      continue;
    }
    switch (ch) {
    case 'c': o->campaign = optarg; break;
    case 'r': o->redis = optarg; break;
    case 'b':
      if (strcmp(optarg, "host") != 0 && strcmp(optarg, "cuda") != 0)
        kb_error_set(&err, KB_EINVAL, "--backend must be host or cuda, not \"%s\"", optarg);
      o->backend = optarg;
      break;
    case OPT_GRACE:
      if (kb_cli_parse_long("--grace", optarg, 0, 86400, &v, &err) == KB_OK)
        o->grace_s = (double)v;
      break;
    case OPT_METRICS: metrics_mode(optarg, &o->metrics, &err); break;
    case OPT_FRESH: fresh_mode(optarg, &o->fresh, &err); break;
    case OPT_ITEMS:
      if (kb_cli_parse_long("--max-items", optarg, 0, 1000000000L, &v, &err) == KB_OK)
        o->max_items = v;
      break;
    case 'C': o->cache_dir = optarg; break;
    case 'n': o->name = optarg; break;
    case 'L': *list = 1; break;
    case 'j': *json = 1; break;
    case 'h': usage(stdout); return 1;
    case 'V': kb_cli_version("kb-runner"); return 1;
    default: kb_cli_try_help("kb-runner"); return -1;
    }
    if (err.code)
      break;
  }
  if (err.code == 0 && o->max_tier >= 0 && o->max_tier < o->min_tier)
    kb_error_set(&err, KB_EINVAL, "--max-tier %d is below --min-tier %d: no tier to serve",
                 o->max_tier, o->min_tier);
  if (err.code) {
    kb_cli_usage("kb-runner", &err);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  kb_harden_process(); /* first: nothing of ours readable through /proc by our children */
  kb_log_init("kb-runner");
  static char cache_default[256];
  kb_cli_user_tmp("kb-cache", cache_default, sizeof cache_default);
  const char *cache = getenv("KB_CACHE");
  if (cache == NULL || *cache == '\0') /* set but empty: as unset */
    cache = cache_default;
  struct kb_worker_opts o = {.backend = "host", .cache_dir = cache,
                             .min_tier = 0, .max_tier = -1, .wait_s = 60,
                             .torch_reuse_s = KB_TORCH_REUSE_S,
                             .metrics = KB_METRICS_MARKED,
                             .stop = &stop_requested};
  int list = 0, json = 0;
  int parsed = parse_args(argc, argv, &o, &list, &json);
  if (parsed)
    return parsed > 0 ? KB_EXIT_OK : KB_EXIT_USAGE;
  if (list && optind == argc) {
    struct kb_device_list devices;
    kb__devices_probe(&devices);
    kb__devices_print(&devices, stdout, json);
    return KB_EXIT_OK;
  }
  if (o.campaign == NULL || optind != argc) {
    if (optind != argc)
      fprintf(stderr, "kb-runner: unexpected argument \"%s\"\n", argv[optind]);
    else
      fprintf(stderr, "kb-runner: missing --campaign ID\n");
    return kb_cli_try_help("kb-runner");
  }
  if (!kb_id_valid(o.campaign)) {
    fprintf(stderr, "kb-runner: --campaign \"%s\": not a campaign id (1 to 63 characters of a-z, "
            "0-9, \"_\", \".\", \"-\", starting with a letter or digit)\n", o.campaign);
    return kb_cli_try_help("kb-runner");
  }
  /* SIGHUP: the terminal or ssh session it was started from went away; a clean leave (leases
   * released) rather than dying mid-evaluation */
  static const int sigs[] = {SIGUSR1, SIGTERM, SIGINT, SIGHUP};
  kb_signals_catch(&stop_requested, sigs, (int)(sizeof sigs / sizeof sigs[0]));
  struct kb_error err = {0};
  int why = 0;
  if (kb__worker_run(&o, &why, &err))
    return kb_cli_fail("kb-runner", &err);
  return KB_EXIT_OK;
}
