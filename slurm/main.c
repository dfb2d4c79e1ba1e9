/* kb-launch: start a campaign's processes, here (--local) or on Slurm (issue 6). */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb/error.h"
#include "kb/log.h"
#include "kb/signals.h"
#include "local.h"

static volatile sig_atomic_t stop_requested = 0;

static void usage(FILE *out) {
  fputs("usage: kb-launch --local CAMPAIGN.json [options]\n"
        "\n"
        "Runs a whole campaign on this machine: its own redis-server (unix socket and AOF in\n"
        "<results>/<campaign>/redis/), the campaign submitted (or resumed from that AOF), one\n"
        "kb-scheduler and the runners; prints the leaderboard and the HDF5 files at the end.\n"
        "Ctrl-C stops everything cleanly; the same command resumes.\n"
        "\n"
        "options:\n"
        "  -l, --local          run on this machine (the only mode so far)\n"
        "  -r, --redis ADDR     use this redis instead of starting one\n"
        "  -n, --runners N      host-backend runners to start (default 1)\n"
        "      --restart        delete the campaign's earlier results and redis data first\n"
        "  -j, --json           print the summary as JSON instead of the leaderboard\n"
        "  -h, --help           this help\n"
        "\n"
        "exit codes: 0 campaign finished, 1 failure, 2 usage, 3 malformed campaign,\n"
        "            4 redis unreachable, 130 interrupted\n",
        out);
}

/* The folder this program lives in: kb-scheduler and kb-runner are its siblings. */
static int bin_dir(char *out, size_t size) {
  ssize_t n = readlink("/proc/self/exe", out, size - 1);
  if (n <= 0)
    return -1;
  out[n] = '\0';
  char *slash = strrchr(out, '/');
  if (slash == NULL)
    return -1;
  *slash = '\0';
  return 0;
}

int main(int argc, char **argv) {
  kb_log_init("kb-launch");
  static char dir[PATH_MAX];
  struct kb_local_opts o = {.runners = 1, .stop = &stop_requested};
  int local = 0;
  enum { OPT_RESTART = 1000 };
  static const struct option longopts[] = {
      {"local", no_argument, NULL, 'l'},         {"redis", required_argument, NULL, 'r'},
      {"runners", required_argument, NULL, 'n'}, {"restart", no_argument, NULL, OPT_RESTART},
      {"json", no_argument, NULL, 'j'},          {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "lr:n:jh", longopts, NULL)) != -1) {
    char *end = NULL;
    long v;
    switch (ch) {
    case 'l': local = 1; break;
    case 'r': o.redis = optarg; break;
    case 'n':
      v = strtol(optarg, &end, 10);
      if (end == optarg || *end != '\0' || v < 1 || v > 64) {
        fprintf(stderr, "kb-launch: --runners must be 1..64, not \"%s\"\n", optarg);
        return KB_EXIT_USAGE;
      }
      o.runners = (int)v;
      break;
    case OPT_RESTART: o.restart = 1; break;
    case 'j': o.json = 1; break;
    case 'h': usage(stdout); return KB_EXIT_OK;
    default: usage(stderr); return KB_EXIT_USAGE;
    }
  }
  if (!local || argc - optind != 1) {
    usage(stderr);
    return KB_EXIT_USAGE;
  }
  o.campaign_path = argv[optind];
  if (bin_dir(dir, sizeof dir) != 0) {
    fprintf(stderr, "kb-launch: cannot find my own folder through /proc/self/exe\n");
    return KB_EXIT_FAILURE;
  }
  o.bin_dir = dir;
  static const int sigs[] = {SIGINT, SIGTERM};
  kb_signals_catch(&stop_requested, sigs, (int)(sizeof sigs / sizeof sigs[0]));
  struct kb_error err = {0};
  if (kb_local_run(&o, &err)) {
    fprintf(stderr, "kb-launch: %s\n", err.msg);
    return kb_exit_code(err.code);
  }
  return KB_EXIT_OK;
}
