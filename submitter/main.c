/* kb-submit: validate and submit campaigns, show their status, cancel them. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kb/error.h"
#include "kb/log.h"

static void usage(FILE *out) {
  fputs("usage: kb-submit [options] COMMAND ARG\n"
        "\n"
        "commands:\n"
        "  validate CAMPAIGN.json   check the campaign and every task bundle; write nothing\n"
        "  submit CAMPAIGN.json     validate, register in redis, enqueue the seed candidates\n"
        "  status ID|CAMPAIGN.json  state, queue, budget and runners of a campaign\n"
        "  drain ID|CAMPAIGN.json   no new evaluations; those under way finish, then it ends\n"
        "  cancel ID|CAMPAIGN.json  stop a campaign: no new claims; results under way are recorded\n"
        "\n"
        "options:\n"
        "  -r, --redis ADDR   redis at HOST:PORT or unix:PATH (default $KB_REDIS or\n"
        "                     127.0.0.1:6379); password from $KB_REDIS_PASSWORD or the 0600\n"
        "                     file named by $KB_REDIS_PASSWORD_FILE, never the command line\n"
        "  -j, --json         machine-readable output on stdout\n"
        "  -q, --quiet        no progress lines\n"
        "  -h, --help         this help\n"
        "\n"
        "exit codes: 0 ok, 1 failure, 2 usage, 3 malformed input (file:line:col on stderr),\n"
        "            4 redis unreachable or authentication failed, 5 campaign exists or is in\n"
        "            the wrong state\n",
        out);
}

int main(int argc, char **argv) {
  kb_log_init("kb-submit");
  struct kb_submit_opts o = {0};
  static const struct option longopts[] = {{"redis", required_argument, NULL, 'r'},
                                           {"json", no_argument, NULL, 'j'},
                                           {"quiet", no_argument, NULL, 'q'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "r:jqh", longopts, NULL)) != -1) {
    switch (ch) {
    case 'r':
      o.redis = optarg;
      break;
    case 'j':
      o.json = 1;
      break;
    case 'q':
      o.quiet = 1;
      break;
    case 'h':
      usage(stdout);
      return KB_EXIT_OK;
    default:
      usage(stderr);
      return KB_EXIT_USAGE;
    }
  }
  if (argc - optind != 2) {
    usage(stderr);
    return KB_EXIT_USAGE;
  }
  const char *cmd = argv[optind], *arg = argv[optind + 1];
  if (strcmp(cmd, "validate") == 0)
    return kb_cmd_validate(&o, arg);
  if (strcmp(cmd, "submit") == 0)
    return kb_cmd_submit(&o, arg);
  if (strcmp(cmd, "status") == 0)
    return kb_cmd_status(&o, arg);
  if (strcmp(cmd, "drain") == 0)
    return kb_cmd_drain(&o, arg);
  if (strcmp(cmd, "cancel") == 0)
    return kb_cmd_cancel(&o, arg);
  fprintf(stderr, "kb-submit: unknown command \"%s\"\n", cmd);
  usage(stderr);
  return KB_EXIT_USAGE;
}
