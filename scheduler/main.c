/* kb-scheduler: the brain of one campaign (see sched.h). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/cli.h"
#include "kb/error.h"
#include "kb/log.h"
#include "kb/signals.h"
#include "kb/task.h"
#include "sched.h"
#include "store.h"

static volatile sig_atomic_t stop_requested = 0;

static void usage(FILE *out) {
  fputs("usage: kb-scheduler --campaign ID [options]\n"
        "\n"
        "Consumes a campaign's results, writes one HDF5 file per task, promotes candidates up\n"
        "the ladder, reaps expired leases, and ends the campaign when everything is evaluated,\n"
        "the budget is spent or the deadline passed. SIGTERM/SIGINT: leave; a restart resumes.\n"
        "\n"
        "options:\n"
        "  -c, --campaign ID    campaign (required)\n"
        "  -r, --redis ADDR     redis at HOST:PORT or unix:PATH (default $KB_REDIS)\n"
        "  -o, --results DIR    results folder (default: the campaign's results_dir)\n"
        "  -C, --cache DIR      working folder for task files (default /tmp/kb-sched-$USER)\n"
        "      --eta N          promotion keeps the top 1/N of each tier (default: the\n"
        "                       campaign's search.eta, 3 unless set)\n"
        "      --wait SECONDS   wait this long for redis and the campaign (default 60)\n"
        "  -h, --help           this help\n"
        "      --version        the version and the commit it was built from\n"
        "\n"
        "exit codes: 0 campaign over or asked to stop, 1 failure, 2 usage, 4 redis unreachable,\n"
        "9 results cannot be written (disk full, quota, read-only, i/o error): they stay in\n"
        "redis; fix it and run again\n",
        out);
}

int main(int argc, char **argv) {
  kb_harden_process(); /* first: nothing of ours readable through /proc by our children */
  kb__store_library_init();
  kb_log_init("kb-scheduler");
  static char work_default[256];
  kb_cli_user_tmp("kb-sched", work_default, sizeof work_default);
  struct kb_sched_opts o = {.work_dir = work_default, .wait_s = 60, .eta = 0,
                            .stop = &stop_requested};
  enum { OPT_ETA = 1000, OPT_WAIT };
  static const struct option longopts[] = {
      {"campaign", required_argument, NULL, 'c'}, {"redis", required_argument, NULL, 'r'},
      {"results", required_argument, NULL, 'o'},  {"cache", required_argument, NULL, 'C'},
      {"eta", required_argument, NULL, OPT_ETA},  {"wait", required_argument, NULL, OPT_WAIT},
      {"help", no_argument, NULL, 'h'},           {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  struct kb_error err = {0};
  int ch;
  while ((ch = getopt_long(argc, argv, "c:r:o:C:h", longopts, NULL)) != -1) {
    long v = 0;
    switch (ch) {
    case 'c': o.campaign = optarg; break;
    case 'r': o.redis = optarg; break;
    case 'o': o.results_dir = optarg; break;
    case 'C': o.work_dir = optarg; break;
    case OPT_ETA:
      if (kb_cli_parse_long("--eta", optarg, 2, 86400, &v, &err))
        return kb_cli_usage("kb-scheduler", &err);
      o.eta = (int)v;
      break;
    case OPT_WAIT:
      if (kb_cli_parse_long("--wait", optarg, 0, 86400, &v, &err))
        return kb_cli_usage("kb-scheduler", &err);
      o.wait_s = (int)v;
      break;
    case 'h': usage(stdout); return KB_EXIT_OK;
    case 'V': return kb_cli_version("kb-scheduler");
    default: return kb_cli_try_help("kb-scheduler");
    }
  }
  if (o.campaign == NULL || optind != argc) {
    if (optind != argc)
      fprintf(stderr, "kb-scheduler: unexpected argument \"%s\"\n", argv[optind]);
    else
      fprintf(stderr, "kb-scheduler: missing --campaign ID\n");
    return kb_cli_try_help("kb-scheduler");
  }
  if (!kb_id_valid(o.campaign)) {
    fprintf(stderr, "kb-scheduler: --campaign \"%s\": not a campaign id (1 to 63 characters of a-z, "
            "0-9, \"_\", \".\", \"-\", starting with a letter or digit)\n", o.campaign);
    return kb_cli_try_help("kb-scheduler");
  }
  static const int sigs[] = {SIGTERM, SIGINT, SIGHUP}; /* SIGHUP: its terminal went away */
  kb_signals_catch(&stop_requested, sigs, (int)(sizeof sigs / sizeof sigs[0]));
  int finished = 0;
  int rc = kb__sched_run(&o, &finished, &err);
  if (kb__store_library_end() > 0)
    kb_warn("HDF5 left to the exit after a failed write: every result acknowledged is in the "
            "files, the others stay in redis");
  if (rc)
    return kb_cli_fail("kb-scheduler", &err);
  return KB_EXIT_OK;
}
