/* kb-launch: start a campaign's processes, here (--local) or as Slurm jobs (--slurm); end the
 * Slurm jobs (--stop, --cancel). */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb/cli.h"
#include "kb/error.h"
#include "kb/log.h"
#include "kb/signals.h"
#include "launch.h"

static volatile sig_atomic_t stop_requested = 0; /* the signal that asked to stop */

static void usage(FILE *out) {
  fputs("usage: kb-launch --local CAMPAIGN.json [--runners N | --gpus LIST] [--redis ADDR]\n"
        "                 [--restart]\n"
        "       kb-launch --slurm CAMPAIGN.json [--runners N] [--throttle M] [--partition P]\n"
        "                 [--time T] [--account A] [--gres gpu:1] [--backend host|cuda]\n"
        "                 [--qos Q] [--constraint C] [--mem M] [--cpus-per-task N]\n"
        "                 [--sbatch-arg=--OPTION=VALUE]...\n"
        "                 [--redis HOST:PORT | --redis-job] [options]\n"
        "       kb-launch --stop CAMPAIGN.json | --cancel CAMPAIGN.json\n"
        "       kb-launch --redis-config\n"
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
        "--cancel also cancels the campaign in redis (as kb-submit cancel). --redis-config prints\n"
        "the redis-server settings kb-launch starts redis with (AOF, no eviction, ...) as a\n"
        "redis.conf, for scripts that start a redis-server of their own the same way.\n"
        "\n"
        "options:\n"
        "  -l, --local          run on this machine\n"
        "  -s, --slurm          submit Slurm jobs\n"
        "      --stop           end the campaign's Slurm jobs; a later --slurm resumes\n"
        "      --cancel         cancel the campaign and end its Slurm jobs\n"
        "  -r, --redis ADDR     use this redis instead of starting one (with --slurm: a\n"
        "                       HOST:PORT every node reaches)\n"
        "      --redis-job      with --slurm: run redis as a job (the default)\n"
        "      --redis-config   print the redis-server settings as a redis.conf and exit\n"
        "  -n, --runners N      runners: host-backend processes (--local, default 1) or array\n"
        "                       tasks (--slurm, default 1)\n"
        "  -g, --gpus LIST      with --local and a cuda campaign: the GPUs to use, one runner\n"
        "                       each (\"0,1\", \"0-3\"; default: every GPU kb-runner sees)\n"
        "      --throttle M     at most M runner tasks at once (--array=...%M)\n"
        "  -p, --partition P    partition of the runner jobs\n"
        "      --cpu-partition P  partition of the redis and scheduler jobs (default: -p,\n"
        "                       with a note on stderr)\n"
        "  -t, --time [JOB=]T   time limit (Slurm's format, e.g. 4:00:00) of every job, or\n"
        "                       with JOB= (redis=, scheduler=, runners=) of that one; a job's\n"
        "                       own setting wins; repeat for several jobs. So do these:\n"
        "      --qos [JOB=]Q    quality of service\n"
        "      --constraint [JOB=]C  node features (\"h200\", \"a100|h100\")\n"
        "      --mem [JOB=]M    memory per node (8G, 500M)\n"
        "      --cpus-per-task [JOB=]N  CPUs (default: runners of a cuda campaign 4, three\n"
        "                       nvcc for the compile-ahead pool and one for the evaluation;\n"
        "                       host campaigns 2; redis and the scheduler 1)\n"
        "      --sbatch-arg [JOB=]--OPT[=V]  any other sbatch option, as an #SBATCH line\n"
        "                       (repeatable; one word starting with --)\n"
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
        "      --version        the version and the commit it was built from\n"
        "\n"
        "environment: KB_REDIS_PASSWORD_FILE or KB_REDIS_PASSWORD for a given redis;\n"
        "             SLURM_CONF and the other Slurm variables for sbatch, squeue, scancel\n"
        "exit codes: 0 done (campaign finished, jobs submitted or ended), 1 failure, 2 usage,\n"
        "            3 malformed campaign, 4 redis unreachable, 5 jobs still queued or\n"
        "            another kb-launch --local runs the campaign (its pid, host, since),\n"
        "            9 results cannot be written (disk full, read-only), 130 interrupted\n",
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

/* A bad number: the message, then -1 for parse_args(). */
static int bad(const struct kb_error *err) {
  kb_cli_usage("kb-launch", err);
  return -1;
}

/* argv into `a`; returns -1 (the problem said in one line) for an option getopt refused or a
 * bad number, 1 for --help or --version (printed), 0 otherwise. The rules across options are kb__launch_check()'s. */
static int parse_args(int argc, char **argv, struct kb_launch_args *a) {
  enum {
    OPT_RESTART = 1000, OPT_STOP, OPT_CANCEL, OPT_REDIS_JOB, OPT_THROTTLE, OPT_CPU_PARTITION,
    OPT_GRES, OPT_SETUP, OPT_WAIT, OPT_DRY_RUN, OPT_REDIS_CONFIG, OPT_QOS, OPT_CONSTRAINT,
    OPT_MEM, OPT_CPUS, OPT_SBATCH_ARG
  };
  static const struct option longopts[] = {
      {"local", no_argument, NULL, 'l'},
      {"slurm", no_argument, NULL, 's'},
      {"stop", no_argument, NULL, OPT_STOP},
      {"cancel", no_argument, NULL, OPT_CANCEL},
      {"redis", required_argument, NULL, 'r'},
      {"redis-job", no_argument, NULL, OPT_REDIS_JOB},
      {"redis-config", no_argument, NULL, OPT_REDIS_CONFIG},
      {"runners", required_argument, NULL, 'n'},
      {"gpus", required_argument, NULL, 'g'},
      {"throttle", required_argument, NULL, OPT_THROTTLE},
      {"partition", required_argument, NULL, 'p'},
      {"cpu-partition", required_argument, NULL, OPT_CPU_PARTITION},
      {"time", required_argument, NULL, 't'},
      {"qos", required_argument, NULL, OPT_QOS},
      {"constraint", required_argument, NULL, OPT_CONSTRAINT},
      {"mem", required_argument, NULL, OPT_MEM},
      {"cpus-per-task", required_argument, NULL, OPT_CPUS},
      {"sbatch-arg", required_argument, NULL, OPT_SBATCH_ARG},
      {"account", required_argument, NULL, 'A'},
      {"gres", required_argument, NULL, OPT_GRES},
      {"backend", required_argument, NULL, 'b'},
      {"setup", required_argument, NULL, OPT_SETUP},
      {"wait", required_argument, NULL, OPT_WAIT},
      {"dry-run", no_argument, NULL, OPT_DRY_RUN},
      {"restart", no_argument, NULL, OPT_RESTART},
      {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  struct kb_slurm_opts *so = &a->slurm;
  struct kb_error err = {0};
  long v = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, "lsr:n:g:p:t:A:b:jh", longopts, NULL)) != -1) {
    switch (ch) {
    case 'l': a->mode = KB_LAUNCH_LOCAL; a->n_modes++; break;
    case 's': a->mode = KB_LAUNCH_SLURM; a->n_modes++; break;
    case OPT_STOP: a->mode = KB_LAUNCH_STOP; a->n_modes++; break;
    case OPT_CANCEL: a->mode = KB_LAUNCH_CANCEL; a->n_modes++; break;
    case 'r': a->redis = optarg; break;
    case OPT_REDIS_JOB: a->redis_job = 1; a->slurm_only = "--redis-job"; break;
    case OPT_REDIS_CONFIG: a->redis_config = 1; break;
    case 'n':
      if (kb_cli_parse_long("--runners", optarg, 1, 10000, &v, &err)) return bad(&err);
      a->runners = (int)v;
      break;
    case 'g': a->gpus = optarg; break;
    case OPT_THROTTLE:
      if (kb_cli_parse_long("--throttle", optarg, 1, 10000, &v, &err)) return bad(&err);
      so->throttle = (int)v;
      a->slurm_only = "--throttle";
      break;
    case 'p': so->partition = optarg; a->slurm_only = "--partition"; break;
    case OPT_CPU_PARTITION: so->cpu_partition = optarg; a->slurm_only = "--cpu-partition"; break;
    case 't':
    case OPT_QOS:
    case OPT_CONSTRAINT:
    case OPT_MEM:
    case OPT_CPUS:
    case OPT_SBATCH_ARG: {
      const char *name = ch == 't' ? "--time" : ch == OPT_QOS ? "--qos"
                         : ch == OPT_CONSTRAINT ? "--constraint" : ch == OPT_MEM ? "--mem"
                         : ch == OPT_CPUS ? "--cpus-per-task" : "--sbatch-arg";
      if (kb__slurm_job_option(so, name, optarg, &err)) return bad(&err);
      a->slurm_only = name;
      break;
    }
    case 'A': so->account = optarg; a->slurm_only = "--account"; break;
    case OPT_GRES: so->gres = optarg; a->slurm_only = "--gres"; break;
    case 'b': so->backend = optarg; a->slurm_only = "--backend"; break;
    case OPT_SETUP: so->setup = optarg; a->slurm_only = "--setup"; break;
    case OPT_WAIT:
      if (kb_cli_parse_long("--wait", optarg, 1, 86400, &v, &err)) return bad(&err);
      a->wait_s = (int)v;
      break;
    case OPT_DRY_RUN: so->dry_run = 1; a->slurm_only = "--dry-run"; break;
    case OPT_RESTART: a->restart = 1; break;
    case 'j': a->json = 1; break;
    case 'h': usage(stdout); return 1;
    case 'V': kb_cli_version("kb-launch"); return 1;
    default: kb_cli_try_help("kb-launch"); return -1;
    }
  }
  a->n_operands = argc - optind;
  a->campaign = optind < argc ? argv[optind] : NULL;
  return 0;
}

int main(int argc, char **argv) {
  kb_harden_process(); /* first: nothing of ours readable through /proc by our children */
  kb_log_init("kb-launch");
  struct kb_launch_args a = {0};
  int parsed = parse_args(argc, argv, &a);
  if (parsed)
    return parsed > 0 ? KB_EXIT_OK : KB_EXIT_USAGE;
  struct kb_error err = {0};
  if (a.redis_config)
    return kb__launch_redis_config(stdout, &err) ? kb_cli_fail("kb-launch", &err) : KB_EXIT_OK;
  enum kb_launch_refusal how;
  if (kb__launch_check(&a, &how, &err)) {
    fprintf(stderr, "kb-launch: %s\n", err.msg);
    return how == KB_LAUNCH_SAY ? KB_EXIT_USAGE : kb_cli_try_help("kb-launch");
  }
  if (kb__launch_check_campaign(&a, &err))
    return kb_cli_usage("kb-launch", &err);
  static char dir[PATH_MAX];
  if (bin_dir(dir, sizeof dir) != 0) {
    fprintf(stderr, "kb-launch: cannot find my own folder through /proc/self/exe\n");
    return KB_EXIT_FAILURE;
  }
  if (a.mode == KB_LAUNCH_LOCAL) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP}; /* SIGHUP: its terminal went away */
    kb_signals_catch(&stop_requested, sigs, (int)(sizeof sigs / sizeof sigs[0]));
  }
  if (kb__launch_run(&a, dir, &stop_requested, &err))
    return kb_cli_fail("kb-launch", &err);
  return KB_EXIT_OK;
}
