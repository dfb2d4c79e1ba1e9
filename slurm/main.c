/* kb-launch: start a campaign's processes, here (--local) or as Slurm jobs (--slurm); end the
 * Slurm jobs (--stop, --cancel). */
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
#include "gpus.h"
#include "local.h"
#include "sbatch.h"

static volatile sig_atomic_t stop_requested = 0;

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static void usage(FILE *out) {
  fputs("usage: kb-launch --local CAMPAIGN.json [--runners N | --gpus LIST] [--redis ADDR]\n"
        "                 [--restart]\n"
        "       kb-launch --slurm CAMPAIGN.json [--runners N] [--throttle M] [--partition P]\n"
        "                 [--time T] [--account A] [--gres gpu:1] [--backend host|cuda]\n"
        "                 [--redis HOST:PORT | --redis-job] [options]\n"
        "       kb-launch --stop CAMPAIGN.json | --cancel CAMPAIGN.json\n"
        "\n"
        "--local runs a whole campaign on this machine: its own redis-server (unix socket and\n"
        "AOF in <results>/<campaign>/redis/), the campaign submitted (or resumed from that AOF),\n"
        "one kb-scheduler and the runners (host campaigns: --runners of them; cuda campaigns: one\n"
        "per GPU, each seeing only its own); prints the leaderboard and the HDF5 files at the end.\n"
        "Ctrl-C stops everything cleanly; the same command resumes.\n"
        "\n"
        "--slurm writes job scripts into <results>/<campaign>/slurm/ (shared storage) and submits\n"
        "them: a redis job (unless --redis), the scheduler job and an array of runners, one per\n"
        "GPU; prints the job ids. Runners wait for redis, leave when the campaign is over, and\n"
        "on Slurm's time-limit warning release their work and requeue themselves. Run it again\n"
        "after the jobs ended (time limit, --stop) to resume. --stop ends the jobs, resumable;\n"
        "--cancel also cancels the campaign in redis (as kb-submit cancel).\n"
        "\n"
        "options:\n"
        "  -l, --local          run on this machine\n"
        "  -s, --slurm          submit Slurm jobs\n"
        "      --stop           end the campaign's Slurm jobs; a later --slurm resumes\n"
        "      --cancel         cancel the campaign and end its Slurm jobs\n"
        "  -r, --redis ADDR     use this redis instead of starting one (with --slurm: a\n"
        "                       HOST:PORT every node reaches)\n"
        "      --redis-job      with --slurm: run redis as a job (the default)\n"
        "  -n, --runners N      runners: host-backend processes (--local, default 1) or array\n"
        "                       tasks (--slurm, default 1)\n"
        "  -g, --gpus LIST      with --local and a cuda campaign: the GPUs to use, one runner\n"
        "                       each (\"0,1\", \"0-3\"; default: every GPU kb-runner sees)\n"
        "      --throttle M     at most M runner tasks at once (--array=...%M)\n"
        "  -p, --partition P    partition of the runner jobs\n"
        "      --cpu-partition P  partition of the redis and scheduler jobs (default: -p)\n"
        "  -t, --time T         time limit of every job (Slurm's format, e.g. 4:00:00)\n"
        "  -A, --account A      account charged\n"
        "      --gres G         per runner task (default gpu:1; \"none\" for none)\n"
        "  -b, --backend B      kb-runner --backend (default: the campaign's)\n"
        "      --setup FILE     shell file each job sources first (e.g. module load lines)\n"
        "      --wait SECONDS   how long jobs wait for redis and the campaign (default 600);\n"
        "                       with --stop/--cancel: for the jobs to end (default 120)\n"
        "      --dry-run        with --slurm: write the scripts, submit nothing\n"
        "      --restart        delete the campaign's earlier results and redis data first\n"
        "  -j, --json           print JSON instead of text\n"
        "  -h, --help           this help\n"
        "\n"
        "environment: KB_REDIS_PASSWORD_FILE or KB_REDIS_PASSWORD for a given redis;\n"
        "             SLURM_CONF and the other Slurm variables for sbatch, squeue, scancel\n"
        "exit codes: 0 done (campaign finished, jobs submitted or ended), 1 failure, 2 usage,\n"
        "            3 malformed campaign, 4 redis unreachable, 5 jobs still queued,\n"
        "            130 interrupted\n",
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

static int parse_int(const char *opt, const char *s, long min, long max, int *out) {
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < min || v > max) {
    fprintf(stderr, "kb-launch: %s must be %ld..%ld, not \"%s\"\n", opt, min, max, s);
    return -1;
  }
  *out = (int)v;
  return 0;
}

static int fail(const struct kb_error *err) {
  fprintf(stderr, "kb-launch: %s\n", err->msg);
  return kb_exit_code(err->code);
}

int main(int argc, char **argv) {
  kb_harden_process(); /* first: nothing of ours readable through /proc by our children */
  kb_log_init("kb-launch");
  static char dir[PATH_MAX];
  struct kb_local_opts lo = {.stop = &stop_requested};
  struct kb_slurm_opts so = {0};
  struct kb_slurm_stop_opts to = {0};
  enum { M_NONE, M_LOCAL, M_SLURM, M_STOP, M_CANCEL } mode = M_NONE;
  int n_modes = 0, runners = 0, wait_s = 0, json = 0, restart = 0, redis_job = 0;
  const char *redis = NULL, *slurm_only = NULL, *gpus = NULL;
  enum {
    OPT_RESTART = 1000, OPT_STOP, OPT_CANCEL, OPT_REDIS_JOB, OPT_THROTTLE, OPT_CPU_PARTITION,
    OPT_GRES, OPT_SETUP, OPT_WAIT, OPT_DRY_RUN
  };
  static const struct option longopts[] = {
      {"local", no_argument, NULL, 'l'},
      {"slurm", no_argument, NULL, 's'},
      {"stop", no_argument, NULL, OPT_STOP},
      {"cancel", no_argument, NULL, OPT_CANCEL},
      {"redis", required_argument, NULL, 'r'},
      {"redis-job", no_argument, NULL, OPT_REDIS_JOB},
      {"runners", required_argument, NULL, 'n'},
      {"gpus", required_argument, NULL, 'g'},
      {"throttle", required_argument, NULL, OPT_THROTTLE},
      {"partition", required_argument, NULL, 'p'},
      {"cpu-partition", required_argument, NULL, OPT_CPU_PARTITION},
      {"time", required_argument, NULL, 't'},
      {"account", required_argument, NULL, 'A'},
      {"gres", required_argument, NULL, OPT_GRES},
      {"backend", required_argument, NULL, 'b'},
      {"setup", required_argument, NULL, OPT_SETUP},
      {"wait", required_argument, NULL, OPT_WAIT},
      {"dry-run", no_argument, NULL, OPT_DRY_RUN},
      {"restart", no_argument, NULL, OPT_RESTART},
      {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "lsr:n:g:p:t:A:b:jh", longopts, NULL)) != -1) {
    switch (ch) {
    case 'l': mode = M_LOCAL; n_modes++; break;
    case 's': mode = M_SLURM; n_modes++; break;
    case OPT_STOP: mode = M_STOP; n_modes++; break;
    case OPT_CANCEL: mode = M_CANCEL; n_modes++; break;
    case 'r': redis = optarg; break;
    case OPT_REDIS_JOB: redis_job = 1; slurm_only = "--redis-job"; break;
    case 'n':
      if (parse_int("--runners", optarg, 1, 10000, &runners)) return KB_EXIT_USAGE;
      break;
    case 'g': gpus = optarg; break;
    case OPT_THROTTLE:
      if (parse_int("--throttle", optarg, 1, 10000, &so.throttle)) return KB_EXIT_USAGE;
      slurm_only = "--throttle";
      break;
    case 'p': so.partition = optarg; slurm_only = "--partition"; break;
    case OPT_CPU_PARTITION: so.cpu_partition = optarg; slurm_only = "--cpu-partition"; break;
    case 't': so.time = optarg; slurm_only = "--time"; break;
    case 'A': so.account = optarg; slurm_only = "--account"; break;
    case OPT_GRES: so.gres = optarg; slurm_only = "--gres"; break;
    case 'b': so.backend = optarg; slurm_only = "--backend"; break;
    case OPT_SETUP: so.setup = optarg; slurm_only = "--setup"; break;
    case OPT_WAIT:
      if (parse_int("--wait", optarg, 1, 86400, &wait_s)) return KB_EXIT_USAGE;
      break;
    case OPT_DRY_RUN: so.dry_run = 1; slurm_only = "--dry-run"; break;
    case OPT_RESTART: restart = 1; break;
    case 'j': json = 1; break;
    case 'h': usage(stdout); return KB_EXIT_OK;
    default: usage(stderr); return KB_EXIT_USAGE;
    }
  }
  if (n_modes != 1 || argc - optind != 1) {
    if (n_modes > 1)
      fprintf(stderr, "kb-launch: give one of --local, --slurm, --stop, --cancel\n");
    usage(stderr);
    return KB_EXIT_USAGE;
  }
  const char *campaign = argv[optind];
  if (gpus && mode != M_LOCAL) {
    fprintf(stderr, "kb-launch: --gpus goes with --local (with --slurm, Slurm assigns GPUs)\n");
    return KB_EXIT_USAGE;
  }
  if (gpus) {
    int ids[KB_GPUS_MAX], n;
    struct kb_error gerr = {0};
    if (kb_gpus_parse(gpus, ids, &n, &gerr)) {
      fprintf(stderr, "kb-launch: %s\n", gerr.msg);
      return KB_EXIT_USAGE;
    }
  }
  if (gpus && runners) {
    fprintf(stderr, "kb-launch: give --runners (host campaigns) or --gpus (cuda campaigns), "
            "not both\n");
    return KB_EXIT_USAGE;
  }
  if (slurm_only && mode != M_SLURM) {
    fprintf(stderr, "kb-launch: %s goes with --slurm\n", slurm_only);
    return KB_EXIT_USAGE;
  }
  const char *words[][2] = {{"--partition", so.partition}, {"--cpu-partition", so.cpu_partition},
                            {"--time", so.time}, {"--account", so.account},
                            {"--gres", so.gres}};
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (words[i][1] && !kb_slurm_word_ok(words[i][1])) {
      fprintf(stderr, "kb-launch: %s \"%s\" cannot go into an #SBATCH line: use letters, "
              "digits and _ . / : + , = @ -\n", words[i][0], words[i][1]);
      return KB_EXIT_USAGE;
    }
  if (redis && redis_job) {
    fprintf(stderr, "kb-launch: give --redis or --redis-job, not both\n");
    return KB_EXIT_USAGE;
  }
  if (bin_dir(dir, sizeof dir) != 0) {
    fprintf(stderr, "kb-launch: cannot find my own folder through /proc/self/exe\n");
    return KB_EXIT_FAILURE;
  }
  struct kb_error err = {0};
  switch (mode) {
  case M_LOCAL:
    if (runners > 64 || wait_s) {
      fprintf(stderr, runners > 64 ? "kb-launch: --local runs 1..64 runners\n"
                                   : "kb-launch: --wait goes with --slurm, --stop, --cancel\n");
      return KB_EXIT_USAGE;
    }
    break;
  case M_SLURM:
    so.campaign_path = campaign;
    so.bin_dir = dir;
    so.redis = redis;
    so.runners = runners;
    so.wait_s = wait_s;
    so.restart = restart;
    so.json = json;
    if (kb_slurm_launch(&so, &err))
      return fail(&err);
    return KB_EXIT_OK;
  case M_STOP:
  case M_CANCEL:
    if (redis || runners || restart) {
      fprintf(stderr, "kb-launch: --stop and --cancel take only --wait and --json\n");
      return KB_EXIT_USAGE;
    }
    to.campaign_path = campaign;
    to.cancel = mode == M_CANCEL;
    to.wait_s = wait_s;
    to.json = json;
    if (kb_slurm_stop(&to, &err))
      return fail(&err);
    return KB_EXIT_OK;
  case M_NONE:
    usage(stderr);
    return KB_EXIT_USAGE;
  }
  lo.campaign_path = campaign;
  lo.bin_dir = dir;
  lo.redis = redis;
  lo.runners = runners;
  lo.gpus = gpus;
  lo.restart = restart;
  lo.json = json;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  if (kb_local_run(&lo, &err))
    return fail(&err);
  return KB_EXIT_OK;
}
