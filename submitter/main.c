/* kb-submit: validate and submit campaigns; show, watch, drain and cancel them; report on and
 * export their results. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "archive_cmd.h"
#include "commands.h"
#include "help.h"
#include "kb/cli.h"
#include "kb/error.h"
#include "kb/log.h"

static void usage(FILE *out) {
  fputs("usage: kb-submit [options] COMMAND ARG\n"
        "\n"
        "commands:\n"
        "  validate CAMPAIGN.json   check the campaign and every task bundle; write nothing\n"
        "  submit CAMPAIGN.json     validate, register in redis, enqueue the seed candidates\n"
        "  status ID|CAMPAIGN.json  one snapshot: state, items, per-tier funnel, budget,\n"
        "                           runners alive, best speedup per task, ETA\n"
        "  watch ID|CAMPAIGN.json   the same, refreshed until the campaign ends (exit 0) or\n"
        "                           Ctrl-C (130); redrawn in place on a terminal, one\n"
        "                           timestamped line per refresh otherwise\n"
        "  drain ID|CAMPAIGN.json   no new evaluations; those under way finish, then it ends\n"
        "  cancel ID|CAMPAIGN.json  stop a campaign: no new claims; results under way are recorded\n"
        "  report ID|CAMPAIGN.json|DIR\n"
        "                           report from the result files (results/<id>/*.h5 and\n"
        "                           summary.json): html (one offline file), md, csv or json\n"
        "  export ID|CAMPAIGN.json|DIR\n"
        "                           evaluated candidates as JSON Lines with the AI CUDA\n"
        "                           Engineer archive's columns\n"
        "  archive list|show ID|add TASK_DIR SOURCE|import FILE.jsonl\n"
        "                           the kernel archive shared by campaigns (kb-submit archive\n"
        "                           --help)\n"
        "\n"
        "kb-submit COMMAND --help: that command's own help.\n"
        "\n"
        "options:\n"
        "  -r, --redis ADDR     redis at HOST:PORT or unix:PATH (default $KB_REDIS or\n"
        "                       127.0.0.1:6379); password from $KB_REDIS_PASSWORD or the 0600\n"
        "                       file named by $KB_REDIS_PASSWORD_FILE, never the command line\n"
        "  -j, --json           machine-readable output on stdout (watch: one JSON object per\n"
        "                       refresh, JSON Lines)\n"
        "  -q, --quiet          no progress lines\n"
        "  -i, --interval S     watch: seconds between refreshes (default 2)\n"
        "  -o, --out FILE       report, export: write FILE (atomically) instead of stdout\n"
        "  -f, --format F       report: html, md, csv or json (default: from the --out\n"
        "                       extension, else html)\n"
        "  -t, --top N          report (html, md): the best N candidates per task (default\n"
        "                       all; json and csv always list all)\n"
        "      --tier NAME      export: only candidates evaluated at tier NAME (e.g. full)\n"
        "      --results DIR    report, export: the campaign's results folder (default: the\n"
        "                       campaign's results_dir/<id>, from the campaign file or redis,\n"
        "                       else ./results/<id>)\n"
        "  -h, --help           this help\n"
        "      --version        the version and the commit it was built from\n"
        "\n"
        "environment: NO_COLOR (no colours), TERM=dumb (watch prints lines, no redraw)\n"
        "\n"
        "exit codes: 0 ok (watch: the campaign ended), 1 failure (no such campaign, no result\n"
        "            files, HDF5 error), 2 usage, 3 malformed input (file:line:col on stderr),\n"
        "            4 redis unreachable or authentication failed, 5 campaign exists or is in\n"
        "            the wrong state, 130 interrupted (watch: Ctrl-C)\n",
        out);
}

static void archive_usage(FILE *out) {
  fputs("usage: kb-submit archive [options] list\n"
        "       kb-submit archive [options] show ID\n"
        "       kb-submit archive [options] add TASK_DIR SOURCE\n"
        "       kb-submit archive [options] import FILE.jsonl|-\n"
        "       kb-submit archive [options] import TASK_DIR SOLUTION.py...\n"
        "\n"
        "  list     entries, best speedup first per task (--json: whole entries as JSON Lines,\n"
        "           what import reads)\n"
        "  show     one entry (an id prefix of 4 or more hex digits) with its source\n"
        "  add      a kernel for the task bundle TASK_DIR, by hand: never timed until a\n"
        "           campaign with this archive proposes it and it passes the ladder\n"
        "  import   entries from JSON Lines (another archive's `list --json`), or KernelBench\n"
        "           solutions (.py files defining ModelNew) for TASK_DIR, a task with a\n"
        "           pytorch oracle; everything is checked before anything is written\n"
        "\n"
        "options:\n"
        "  -a, --archive DIR    the archive folder (default $KB_ARCHIVE)\n"
        "  -j, --json           machine-readable output\n"
        "      --task ID        list: only this task's entries\n"
        "      --name NAME      add: the kernel's name (default: the source file's stem)\n"
        "      --knobs K        add: compile-time knobs, \"-DNAME=value ...\"\n"
        "      --flags F        add: extra compiler flags\n"
        "      --tag TAG        add: a user tag (repeatable, up to 8)\n"
        "  -h, --help           this help\n"
        "\n"
        "exit codes: 0 ok, 1 failure (no archive folder, no such entry, cannot write), 2 usage,\n"
        "            3 malformed input (file:line:col on stderr; nothing written)\n",
        out);
}

/* kb-submit archive ...: its own options, then one of the archive commands. */
static int archive_main(int argc, char **argv) {
  struct kb_archive_opts o = {0};
  static const struct option longopts[] = {{"archive", required_argument, NULL, 'a'},
                                           {"json", no_argument, NULL, 'j'},
                                           {"task", required_argument, NULL, 'T'},
                                           {"name", required_argument, NULL, 'N'},
                                           {"knobs", required_argument, NULL, 'K'},
                                           {"flags", required_argument, NULL, 'F'},
                                           {"tag", required_argument, NULL, 'g'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "a:jh", longopts, NULL)) != -1) {
    switch (ch) {
    case 'a':
      o.dir = optarg;
      break;
    case 'j':
      o.json = 1;
      break;
    case 'T':
      o.task = optarg;
      break;
    case 'N':
      o.name = optarg;
      break;
    case 'K':
      o.knobs = optarg;
      break;
    case 'F':
      o.flags = optarg;
      break;
    case 'g':
      if (o.n_tags == KB_ARCHIVE_CMD_TAGS) {
        fprintf(stderr, "kb-submit: at most %d --tag\n", KB_ARCHIVE_CMD_TAGS);
        return KB_EXIT_USAGE;
      }
      o.tags[o.n_tags++] = optarg;
      break;
    case 'h':
      archive_usage(stdout);
      return KB_EXIT_OK;
    default:
      return kb_cli_try_help("kb-submit archive");
    }
  }
  int n = argc - optind;
  const char *cmd = n > 0 ? argv[optind] : "";
  if (strcmp(cmd, "list") == 0 && n == 1)
    return kb__cmd_archive_list(&o);
  if (strcmp(cmd, "show") == 0 && n == 2)
    return kb__cmd_archive_show(&o, argv[optind + 1]);
  if (strcmp(cmd, "add") == 0 && n == 3)
    return kb__cmd_archive_add(&o, argv[optind + 1], argv[optind + 2]);
  if (strcmp(cmd, "import") == 0 && n == 2)
    return kb__cmd_archive_import(&o, argv[optind + 1]);
  if (strcmp(cmd, "import") == 0 && n > 2)
    return kb__cmd_archive_import_files(&o, argv[optind + 1], n - 2, argv + optind + 2);
  if (n == 0)
    fprintf(stderr, "kb-submit archive: missing the command (list, show, add, import)\n");
  else
    fprintf(stderr, "kb-submit archive: \"%s\" with %d argument%s is not a command\n", cmd,
            n - 1, n == 2 ? "" : "s");
  return kb_cli_try_help("kb-submit archive");
}

/* The commands that take one campaign (or a file) after the options. */
static const struct {
  const char *name;
  int (*run)(const struct kb_submit_opts *o, const char *arg);
} commands[] = {
    {"validate", kb__cmd_validate}, {"submit", kb__cmd_submit}, {"status", kb__cmd_status},
    {"drain", kb__cmd_drain},       {"cancel", kb__cmd_cancel}, {"watch", kb__cmd_watch},
    {"report", kb__cmd_report},     {"export", kb__cmd_export},
};

int main(int argc, char **argv) {
  kb_log_init("kb-submit");
  if (argc >= 2 && strcmp(argv[1], "archive") == 0)
    return archive_main(argc - 1, argv + 1);
  struct kb_submit_opts o = {0};
  static const struct option longopts[] = {{"redis", required_argument, NULL, 'r'},
                                           {"json", no_argument, NULL, 'j'},
                                           {"quiet", no_argument, NULL, 'q'},
                                           {"interval", required_argument, NULL, 'i'},
                                           {"out", required_argument, NULL, 'o'},
                                           {"format", required_argument, NULL, 'f'},
                                           {"results", required_argument, NULL, 'R'},
                                           {"top", required_argument, NULL, 't'},
                                           {"tier", required_argument, NULL, 'T'},
                                           {"help", no_argument, NULL, 'h'},
                                           {"version", no_argument, NULL, 'V'},
                                           {NULL, 0, NULL, 0}};
  struct kb_error err = {0};
  int ch, help = 0;
  while ((ch = getopt_long(argc, argv, "r:jqi:o:f:t:h", longopts, NULL)) != -1) {
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
    case 'i':
      if (kb_cli_parse_double("--interval", optarg, 0.05, 86400, &o.interval, &err))
        return kb_cli_usage("kb-submit", &err);
      break;
    case 'o':
      o.out = optarg;
      break;
    case 'f':
      o.format = optarg;
      break;
    case 'R':
      o.results = optarg;
      break;
    case 't': {
      long n = 0;
      if (kb_cli_parse_long("--top", optarg, 0, 1000000, &n, &err))
        return kb_cli_usage("kb-submit", &err);
      o.top = (int)n;
      break;
    }
    case 'T':
      o.tier = optarg;
      break;
    case 'h':
      help = 1; /* after the loop: the command's own help when one is named */
      break;
    case 'V':
      return kb_cli_version("kb-submit");
    default:
      return kb_cli_try_help("kb-submit");
    }
  }
  if (help) {
    if (optind == argc || kb__submit_command_usage(argv[optind], stdout) != 0)
      usage(stdout);
    return KB_EXIT_OK;
  }
  int known = 0; /* the first argument names a command */
  for (size_t i = 0; optind < argc && i < sizeof commands / sizeof *commands; i++)
    known |= strcmp(argv[optind], commands[i].name) == 0;
  if (optind < argc && !known) {
    if (strcmp(argv[optind], "archive") == 0)
      fprintf(stderr, "kb-submit: archive takes its options after it (kb-submit archive "
              "[options] ...)\n");
    else
      fprintf(stderr, "kb-submit: unknown command \"%s\"\n", argv[optind]);
    return kb_cli_try_help("kb-submit");
  }
  if (argc - optind != 2) {
    if (argc - optind == 0)
      fprintf(stderr, "kb-submit: missing the command and the campaign file\n");
    else if (argc - optind == 1)
      fprintf(stderr, "kb-submit: %s: missing the campaign file\n", argv[optind]);
    else
      fprintf(stderr, "kb-submit: one command and one campaign file, not %d arguments\n",
              argc - optind);
    return kb_cli_try_help("kb-submit");
  }
  const char *cmd = argv[optind], *arg = argv[optind + 1];
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (strcmp(cmd, commands[i].name) == 0)
      return commands[i].run(&o, arg);
  return kb_cli_try_help("kb-submit"); /* not reached: the command is known */
}
