/* kb-submit's help texts (see help.h): the global help and each command's own. */
#include "help.h"

#include <string.h>

/* The options every command takes. */
static const char common_opts[] =
    "  -r, --redis ADDR     redis at HOST:PORT or unix:PATH (default $KB_REDIS or\n"
    "                       127.0.0.1:6379); password from $KB_REDIS_PASSWORD or the 0600\n"
    "                       file named by $KB_REDIS_PASSWORD_FILE, never the command line\n"
    "  -h, --help           this help\n";

static const struct {
  const char *name;  /* the command */
  const char *usage; /* its usage line(s) and what it does */
  const char *opts;  /* its own options, beyond common_opts */
  const char *exits; /* its exit codes */
} commands[] = {
    {"validate",
     "usage: kb-submit [options] validate CAMPAIGN.json\n\n"
     "Checks the campaign file and every task bundle it names; writes nothing anywhere and\n"
     "needs no redis.\n",
     "  -j, --json           one JSON object: campaign, backend, tasks, candidates, tiers,\n"
     "                       budget, \"valid\": true\n",
     "exit codes: 0 valid, 1 failure, 2 usage, 3 malformed input (file:line:col on stderr)\n"},
    {"submit",
     "usage: kb-submit [options] submit CAMPAIGN.json\n\n"
     "Validates, registers the campaign in redis and enqueues its seed candidates; a campaign\n"
     "already registered with the same file is resumed.\n",
     "  -j, --json           one JSON object (validate's, with \"submitted\", \"resumed\",\n"
     "                       \"redis\")\n",
     "exit codes: 0 submitted or resumed, 1 failure, 2 usage, 3 malformed input, 4 redis\n"
     "            unreachable, 5 a different campaign with this id exists\n"},
    {"status",
     "usage: kb-submit [options] status ID|CAMPAIGN.json\n\n"
     "One snapshot of the campaign: state, items, per-tier funnel, budget, runners alive,\n"
     "best speedup per task, ETA.\n",
     "  -j, --json           one JSON object\n",
     "exit codes: 0 ok, 1 no such campaign, 2 usage, 3 malformed campaign file, 4 redis\n"
     "            unreachable\n"},
    {"watch",
     "usage: kb-submit [options] watch ID|CAMPAIGN.json\n\n"
     "The status snapshot refreshed until the campaign ends: redrawn in place on a terminal,\n"
     "one timestamped line per refresh otherwise (TERM=dumb too; NO_COLOR: no colours).\n",
     "  -i, --interval S     seconds between refreshes (default 2)\n"
     "  -j, --json           one JSON object per refresh (JSON Lines)\n",
     "exit codes: 0 the campaign ended, 1 no such campaign, 2 usage, 3 malformed campaign\n"
     "            file, 4 redis unreachable, 130 interrupted (Ctrl-C)\n"},
    {"drain",
     "usage: kb-submit [options] drain ID|CAMPAIGN.json\n\n"
     "No new evaluations; those under way finish and are recorded, then the campaign ends.\n",
     "  -q, --quiet          no confirmation line\n",
     "exit codes: 0 draining, 1 no such campaign, 2 usage, 4 redis unreachable, 5 the\n"
     "            campaign is not running\n"},
    {"cancel",
     "usage: kb-submit [options] cancel ID|CAMPAIGN.json\n\n"
     "Stops the campaign: no new claims; results under way are recorded.\n",
     "  -q, --quiet          no confirmation line\n",
     "exit codes: 0 cancelled, 1 no such campaign, 2 usage, 4 redis unreachable, 5 the\n"
     "            campaign is already over\n"},
    {"report",
     "usage: kb-submit [options] report ID|CAMPAIGN.json|DIR\n\n"
     "A report from the campaign's result files (results/<id>/*.h5 and summary.json): html\n"
     "(one offline file), md, csv or json (docs/report.md).\n",
     "  -o, --out FILE       write FILE (atomically) instead of stdout\n"
     "  -f, --format F       html, md, csv or json (default: from the --out extension, else\n"
     "                       html)\n"
     "  -t, --top N          html, md: the best N candidates per task (default all)\n"
     "      --results DIR    the campaign's results folder (default: the campaign's\n"
     "                       results_dir/<id>, from the campaign file or redis, else\n"
     "                       ./results/<id>)\n",
     "exit codes: 0 written, 1 failure (no result files, HDF5 error), 2 usage, 3 malformed\n"
     "            input\n"},
    {"export",
     "usage: kb-submit [options] export ID|CAMPAIGN.json|DIR\n\n"
     "The evaluated candidates as JSON Lines with the AI CUDA Engineer archive's columns, one\n"
     "line per candidate (docs/report.md says which columns are filled and which are not).\n",
     "  -o, --out FILE       write FILE (atomically) instead of stdout\n"
     "      --tier NAME      only candidates evaluated at tier NAME (e.g. full), their\n"
     "                       numbers from that tier\n"
     "      --results DIR    the campaign's results folder (as report)\n",
     "exit codes: 0 written, 1 failure (no result files, HDF5 error), 2 usage (also: no such\n"
     "            --tier), 3 malformed input\n"},
};

int kb__submit_command_usage(const char *cmd, FILE *out) {
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (strcmp(cmd, commands[i].name) == 0) {
      fprintf(out, "%s\noptions:\n%s%s\n%s", commands[i].usage, commands[i].opts, common_opts,
              commands[i].exits);
      return 0;
    }
  return -1;
}
