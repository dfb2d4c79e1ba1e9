/* kb-runner: claims candidates of one campaign and evaluates them on this machine. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/error.h"
#include "devices.h"
#include "kb/log.h"
#include "kb/signals.h"
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
        "  -b, --backend NAME   host (C candidates on the CPU); default host\n"
        "  -C, --cache DIR      compiled libraries and task files (default $KB_CACHE or\n"
        "                       /tmp/kb-cache-$USER)\n"
        "  -n, --name NAME      runner name in leases and results (default HOST:PID)\n"
        "      --min-tier N     lowest tier served (default 0)\n"
        "      --max-tier N     highest tier served (default all)\n"
        "      --wait SECONDS   wait this long for redis and the campaign (default 60)\n"
        "      --max-items N    leave after N evaluations (default no limit)\n"
        "  -L, --list-devices   print the CUDA devices this runner sees, then exit\n"
        "  -j, --json           with --list-devices: one JSON object\n"
        "  -h, --help           this help\n"
        "\n"
        "environment: KB_REDIS, KB_REDIS_PASSWORD or KB_REDIS_PASSWORD_FILE, KB_LOG\n"
        "exit codes: 0 campaign over or asked to stop, 1 failure, 2 usage, 4 redis unreachable\n",
        out);
}

static int parse_int(const char *s, const char *what, long min, long max, long *out) {
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < min || v > max) {
    fprintf(stderr, "kb-runner: %s must be an integer in %ld..%ld, not \"%s\"\n", what, min,
            max, s);
    return -1;
  }
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  kb_log_init("kb-runner");
  static char cache_default[256];
  const char *user = getenv("USER");
  snprintf(cache_default, sizeof cache_default, "/tmp/kb-cache-%s", user ? user : "user");
  const char *cache = getenv("KB_CACHE");
  struct kb_worker_opts o = {.backend = "host", .cache_dir = cache ? cache : cache_default,
                             .min_tier = 0, .max_tier = -1, .wait_s = 60,
                             .stop = &stop_requested};
  enum { OPT_MIN = 1000, OPT_MAX, OPT_WAIT, OPT_ITEMS };
  static const struct option longopts[] = {
      {"campaign", required_argument, NULL, 'c'}, {"redis", required_argument, NULL, 'r'},
      {"backend", required_argument, NULL, 'b'},  {"cache", required_argument, NULL, 'C'},
      {"name", required_argument, NULL, 'n'},     {"min-tier", required_argument, NULL, OPT_MIN},
      {"max-tier", required_argument, NULL, OPT_MAX}, {"wait", required_argument, NULL, OPT_WAIT},
      {"max-items", required_argument, NULL, OPT_ITEMS}, {"help", no_argument, NULL, 'h'},
      {"list-devices", no_argument, NULL, 'L'}, {"json", no_argument, NULL, 'j'},
      {NULL, 0, NULL, 0}};
  int ch, list = 0, json = 0;
  long v;
  while ((ch = getopt_long(argc, argv, "c:r:b:C:n:hLj", longopts, NULL)) != -1) {
    switch (ch) {
    case 'c': o.campaign = optarg; break;
    case 'r': o.redis = optarg; break;
    case 'b': o.backend = optarg; break;
    case 'C': o.cache_dir = optarg; break;
    case 'n': o.name = optarg; break;
    case OPT_MIN:
      if (parse_int(optarg, "--min-tier", 0, 7, &v)) return KB_EXIT_USAGE;
      o.min_tier = (int)v;
      break;
    case OPT_MAX:
      if (parse_int(optarg, "--max-tier", 0, 7, &v)) return KB_EXIT_USAGE;
      o.max_tier = (int)v;
      break;
    case OPT_WAIT:
      if (parse_int(optarg, "--wait", 0, 86400, &v)) return KB_EXIT_USAGE;
      o.wait_s = (int)v;
      break;
    case OPT_ITEMS:
      if (parse_int(optarg, "--max-items", 0, 1000000000L, &v)) return KB_EXIT_USAGE;
      o.max_items = v;
      break;
    case 'L': list = 1; break;
    case 'j': json = 1; break;
    case 'h': usage(stdout); return KB_EXIT_OK;
    default: usage(stderr); return KB_EXIT_USAGE;
    }
  }
  if (list && optind == argc) {
    struct kb_device_list devices;
    kb_devices_probe(&devices);
    kb_devices_print(&devices, stdout, json);
    return KB_EXIT_OK;
  }
  if (o.campaign == NULL || optind != argc) {
    usage(stderr);
    return KB_EXIT_USAGE;
  }
  static const int sigs[] = {SIGUSR1, SIGTERM, SIGINT};
  kb_signals_catch(&stop_requested, sigs, (int)(sizeof sigs / sizeof sigs[0]));
  struct kb_error err = {0};
  int why = 0;
  if (kb_worker_run(&o, &why, &err)) {
    fprintf(stderr, "kb-runner: %s\n", err.msg);
    return kb_exit_code(err.code);
  }
  return KB_EXIT_OK;
}
