/* kb-bench-queue: benchmark of the queue and ledger scripts (see bench_queue.h). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_queue.h"
#include "kb/buf.h"
#include "kb/cli.h"
#include "kb/error.h"
#include "kb/log.h"
#include "kb/queue.h"
#include "kb/signals.h"

static volatile sig_atomic_t stop_requested = 0; /* the signal that asked to stop */

static void usage(FILE *out) {
  fputs("usage: kb-bench-queue [--runners N] [--seconds S] [options]\n"
        "\n"
        "Measures the queue and ledger scripts against a real redis-server: N simulated runners,\n"
        "each with its own connection, run claim -> no-op -> complete cycles for S seconds, one\n"
        "kb_queue_complete_and_claim call per cycle as a runner makes (--two-call: a claim\n"
        "and a complete call); the\n"
        "same runners then call a one-HINCRBY Lua script for S seconds as the physical\n"
        "reference (and \"return 1\" as the floor). Afterwards it checks that nothing was lost\n"
        "or charged twice and that the ledger is exact. Prints a table, then one JSON line:\n"
        "  {\"runners\":N,\"cycles_per_s\":..,\"raw_script_per_s\":..,\"ratio\":..,\n"
        "   \"claim_p50_ms\":..,\"claim_p99_ms\":..,\"lost\":0,\"double_charged\":0}\n"
        "(plus \"calls_per_cycle\", \"batch\", \"items_per_s\" and \"calls_per_s\"; \"kills\" with\n"
        "--kills; \"max_runners\" and \"steps\" with --search; \"candidates\",\n"
        "\"used_memory_bytes\" and \"bytes_per_candidate\" with --fill). See docs/benchmarks.md.\n"
        "\n"
        "options:\n"
        "  -n, --runners N      simulated runners (default 16; 1..8192), each a thread (or with\n"
        "                       --kills a process) with its own connection\n"
        "  -s, --seconds S      length of each measured phase (default 10)\n"
        "  -i, --items M        items enqueued up front (default: sized from a one-second\n"
        "                       warm-up so the queue never runs dry)\n"
        "  -r, --redis ADDR     use the redis at HOST:PORT or unix:PATH (it gets a new campaign\n"
        "                       \"bench-...\" that is left there); default: start a throwaway\n"
        "                       redis-server (AOF everysec, unix socket, temp folder)\n"
        "  -j, --json-only      print only the final JSON line\n"
        "      --fill           first store tasks x per-task candidates (realistic CUDA-like\n"
        "                       sources, zstd-compressed) with a queue item each, and report\n"
        "                       redis used_memory; the cycles then run on that queue\n"
        "      --tasks N        with --fill: tasks (default 230)\n"
        "      --per-task N     with --fill: candidates per task (default 2000)\n"
        "  -k, --kills K        runners are processes; kill -9 a random one at K random moments\n"
        "                       of the measured phase (respawning it), reap leases meanwhile\n"
        "                       (2 s lease), then let the survivors finish every item\n"
        "      --eval-ms MS     sleep between claim and complete like a real evaluation: drawn\n"
        "                       uniformly from 0.5 to 1.5 times MS, runners start at random\n"
        "                       offsets (default 0: a no-op; the ratio then measures the\n"
        "                       scripts, with every runner claiming back to back)\n"
        "      --batch K        each runner holds up to K items (1..32): it evaluates them one\n"
        "                       after another, then completes them all and claims K more in\n"
        "                       one kb_queue_cycle_batch call (default 1: one item per call,\n"
        "                       kb_queue_complete_and_claim); rates then count items\n"
        "      --search         afterwards, find the largest runner count whose claim p99\n"
        "                       stays within --p99-ms: from N runners, doubling until one\n"
        "                       fails, then halving the interval (steps of S seconds each)\n"
        "      --p99-ms MS      the search's bound on the claim p99 (default 2)\n"
        "      --event-loop     every runner in one thread: hiredis's async API over one\n"
        "                       connection per runner, an epoll loop (default: a thread per\n"
        "                       runner); the claim latency is then Redis's and the socket's,\n"
        "                       not the scheduling of N threads on the machine's CPUs\n"
        "      --two-call       a cycle is kb_queue_claim then kb_queue_complete (two script\n"
        "                       calls), as before kb_queue_complete_and_claim existed\n"
        "      --seed N         seed of the kill moments and victims (default: the clock)\n"
        "  -h, --help           this help\n"
        "      --version        the version and the commit it was built from\n"
        "\n"
        "environment: KB_REDIS_PASSWORD or KB_REDIS_PASSWORD_FILE (with --redis);\n"
        "             KB_BENCH_KEEP=1 keeps the throwaway server's folder\n"
        "exit codes: 0 ran and passed the checks, 1 failure, or something lost or charged\n"
        "twice, or the ledger not exact, 2 usage, 130 interrupted (the server and runners it\n"
        "started are stopped first)\n",
        out);
}

/* argv into `o` and the --json-only flag; returns -1 for a bad command line (the message or
 * the usage printed), 1 for --help (printed), 0 otherwise. */
static int parse_args(int argc, char **argv, struct kb_bench_queue_opts *o, int *json_only) {
  enum { OPT_FILL = 1000, OPT_TASKS, OPT_PER_TASK, OPT_EVAL, OPT_SEED, OPT_TWO_CALL, OPT_BATCH,
         OPT_SEARCH, OPT_P99, OPT_LOOP };
  static const struct option longopts[] = {
      {"runners", required_argument, NULL, 'n'},  {"seconds", required_argument, NULL, 's'},
      {"items", required_argument, NULL, 'i'},    {"redis", required_argument, NULL, 'r'},
      {"json-only", no_argument, NULL, 'j'},      {"fill", no_argument, NULL, OPT_FILL},
      {"tasks", required_argument, NULL, OPT_TASKS},
      {"per-task", required_argument, NULL, OPT_PER_TASK},
      {"kills", required_argument, NULL, 'k'},    {"eval-ms", required_argument, NULL, OPT_EVAL},
      {"seed", required_argument, NULL, OPT_SEED}, {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'},
      {"two-call", no_argument, NULL, OPT_TWO_CALL},
      {"batch", required_argument, NULL, OPT_BATCH}, {"search", no_argument, NULL, OPT_SEARCH},
      {"p99-ms", required_argument, NULL, OPT_P99},
      {"event-loop", no_argument, NULL, OPT_LOOP},
      {NULL, 0, NULL, 0}};
  int ch, shape_given = 0;
  long v = 0;
  struct kb_error err = {0};
  while ((ch = getopt_long(argc, argv, "n:s:i:r:jk:h", longopts, NULL)) != -1) {
    int bad = 0;
    switch (ch) {
    case 'n':
      bad = kb_cli_parse_long("--runners", optarg, 1, KB_BENCH_MAX_RUNNERS, &v, &err);
      o->runners = (int)v;
      break;
    case 's':
      bad = kb_cli_parse_double("--seconds", optarg, 0.2, 3600, &o->seconds, &err);
      break;
    case 'i':
      bad = kb_cli_parse_long("--items", optarg, 1, 100000000, &v, &err);
      o->items = v;
      break;
    case 'r': o->redis = optarg; break;
    case 'j': *json_only = 1; break;
    case OPT_FILL: o->fill = 1; break;
    case OPT_TASKS:
    case OPT_PER_TASK:
      bad = kb_cli_parse_long(ch == OPT_TASKS ? "--tasks" : "--per-task", optarg, 1, 1000000,
                              &v, &err);
      if (ch == OPT_TASKS)
        o->tasks = (int)v;
      else
        o->per_task = (int)v;
      shape_given = 1;
      break;
    case 'k':
      bad = kb_cli_parse_long("--kills", optarg, 0, 100000, &v, &err);
      o->kills = (int)v;
      break;
    case OPT_EVAL:
      bad = kb_cli_parse_double("--eval-ms", optarg, 0, 60000, &o->eval_ms, &err);
      break;
    case OPT_TWO_CALL: o->two_call = 1; break;
    case OPT_BATCH:
      bad = kb_cli_parse_long("--batch", optarg, 1, KB_QUEUE_BATCH_MAX, &v, &err);
      o->batch = (int)v;
      break;
    case OPT_SEARCH: o->search = 1; break;
    case OPT_LOOP: o->event_loop = 1; break;
    case OPT_P99:
      bad = kb_cli_parse_double("--p99-ms", optarg, 0.001, 60000, &o->p99_ms, &err);
      break;
    case OPT_SEED:
      bad = kb_cli_parse_long("--seed", optarg, 1, 2147483647, &v, &err);
      o->seed = (uint64_t)v;
      break;
    case 'h': usage(stdout); return 1;
    case 'V': kb_cli_version("kb-bench-queue"); return 1;
    default: kb_cli_try_help("kb-bench-queue"); return -1;
    }
    if (bad) {
      kb_cli_usage("kb-bench-queue", &err);
      return -1;
    }
  }
  if (optind != argc) {
    fprintf(stderr, "kb-bench-queue: unexpected argument \"%s\"\n", argv[optind]);
    kb_cli_try_help("kb-bench-queue");
    return -1;
  }
  if (shape_given && !o->fill) {
    fprintf(stderr, "kb-bench-queue: --tasks and --per-task need --fill\n");
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  kb_log_init("kb-bench-queue");
  struct kb_bench_queue_opts o = {.runners = 16, .seconds = 10, .tasks = 230, .per_task = 2000,
                                  .batch = 1, .p99_ms = 2, .stop = &stop_requested};
  int json_only = 0;
  int parsed = parse_args(argc, argv, &o, &json_only);
  if (parsed)
    return parsed > 0 ? KB_EXIT_OK : KB_EXIT_USAGE;
  struct kb_error err = {0};
  o.progress = !json_only && isatty(STDERR_FILENO);
  static const int sigs[] = {SIGINT, SIGTERM};
  kb_signals_catch(&stop_requested, sigs, (int)(sizeof sigs / sizeof sigs[0]));

  struct kb_bench_queue_result res;
  if (kb__bench_queue_run(&o, &res, &err)) {
    fprintf(stderr, "kb-bench-queue: %s\n", err.msg);
    if (err.code == KB_EINTERRUPTED)
      return KB_EXIT_INTERRUPTED;
    return err.code == KB_EINVAL ? KB_EXIT_USAGE : KB_EXIT_FAILURE;
  }
  if (!json_only)
    kb__bench_queue_print_table(stdout, &o, &res);
  struct kb_buf line;
  kb_buf_init(&line);
  if (kb__bench_queue_json(&o, &res, &line)) {
    fprintf(stderr, "kb-bench-queue: out of memory\n");
    return KB_EXIT_FAILURE;
  }
  printf("%s\n", line.data);
  kb_buf_release(&line);
  if (!kb__bench_queue_passed(&res)) {
    fprintf(stderr, "kb-bench-queue: check failed: %ld lost, %ld charged twice, ledger %s\n",
            res.lost, res.double_charged, res.verify.ledger_exact ? "exact" : "not exact");
    return KB_EXIT_FAILURE;
  }
  return KB_EXIT_OK;
}
