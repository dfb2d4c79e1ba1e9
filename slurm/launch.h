/* kb-launch's command line once parsed: which launch it asks for, the rules its options obey
 * (kb__launch_check), and the call into --local (local.h) or --slurm, --stop, --cancel (sbatch.h)
 * that carries it out (kb__launch_run). main.c parses argv into a struct kb_launch_args and calls
 * these two; tests reach the rules here without the binary.
 */
#ifndef KB_SLURM_LAUNCH_H
#define KB_SLURM_LAUNCH_H

#include <signal.h>
#include <stdio.h>

#include "sbatch.h"

struct kb_error;

enum kb_launch_mode { KB_LAUNCH_NONE, KB_LAUNCH_LOCAL, KB_LAUNCH_SLURM, KB_LAUNCH_STOP,
                      KB_LAUNCH_CANCEL };

/* Every option of kb-launch as given. The strings are borrowed (argv) for the struct's life. */
struct kb_launch_args {
  enum kb_launch_mode mode; /* the last of --local, --slurm, --stop, --cancel given */
  int n_modes;              /* how many of those were given (one is right) */
  int n_operands;           /* arguments after the options (one, the campaign, is right) */
  const char *campaign;     /* CAMPAIGN.json, the first operand, or NULL */
  const char *redis;        /* --redis ADDR, or NULL */
  int redis_job;            /* --redis-job given */
  const char *gpus;         /* --gpus LIST, or NULL */
  int runners;              /* --runners N; 0 = not given */
  int wait_s;               /* --wait SECONDS; 0 = not given */
  int restart;              /* --restart given */
  int json;                 /* --json given */
  int redis_config;         /* --redis-config given: print the redis settings, nothing else */
  const char *slurm_only;   /* the last option given that only --slurm takes ("--time"), or NULL */
  struct kb_slurm_opts slurm; /* the --slurm-only options (throttle, partition, cpu_partition,
                                 account, gres, backend, setup, dry_run, the per-job #SBATCH
                                 options: kb__slurm_job_option); the rest of it
                                 kb__launch_run() fills from the fields above */
};

/* How main() reports a command line kb__launch_check() refused: the message alone, the message
 * and then the usage, or the usage alone (err's message then only says what is wrong, for
 * tests). */
enum kb_launch_refusal { KB_LAUNCH_SAY, KB_LAUNCH_SAY_USAGE, KB_LAUNCH_USAGE };

/* The rules of kb-launch's options, all in one place: exactly one mode and one campaign;
 * --gpus only with --local, a valid list (kb__gpus_parse), not with --runners; the Slurm-only
 * options only with --slurm, each word one an #SBATCH line can take (kb__slurm_word_ok); not
 * --redis and --redis-job; --local at most 64 runners and no --wait; --stop and --cancel only
 * with --wait and --json. Returns KB_OK, or KB_EINVAL with the message main() prints and in
 * `*how` (never NULL) how to print it. Reads nothing but `a` (borrowed). */
int kb__launch_check(const struct kb_launch_args *a, enum kb_launch_refusal *how,
                    struct kb_error *err);

/* The rule between --gpus/--runners and the campaign's backend (`backend`, enum kb_backend;
 * `cid` borrowed, for the message): with --local, --gpus only for cuda campaigns and --runners
 * only for host ones. Returns KB_OK or KB_EINVAL with the message (a usage error: exit 2). */
int kb__launch_check_backend(const struct kb_launch_args *a, int backend, const char *cid,
                             struct kb_error *err);
/* kb__launch_check_backend() for the campaign file a->campaign, read here; KB_OK when the
 * file does not load (kb__launch_run says why later) or the rule does not apply. */
int kb__launch_check_campaign(const struct kb_launch_args *a, struct kb_error *err);

/* Carries out a checked command line: kb__local_run(), kb__slurm_launch() or kb__slurm_stop(),
 * with `bin_dir` (borrowed: the folder of kb-scheduler, kb-runner, kb-submit) and, for --local,
 * `stop` (borrowed, set by the caller's SIGINT/SIGTERM handlers). Returns what that call
 * returns (see local.h, sbatch.h); KB_EINVAL for mode KB_LAUNCH_NONE. */
int kb__launch_run(const struct kb_launch_args *a, const char *bin_dir,
                  volatile sig_atomic_t *stop, struct kb_error *err);

/* Writes kb_redis_server_settings (kb/redis.h) to `out` (borrowed) as a redis.conf, one
 * "name value" line each: what kb-launch --redis-config prints, so that scripts start a
 * redis-server as kb-launch does. Errors: KB_EIO (a write failed), KB_ENOMEM. */
int kb__launch_redis_config(FILE *out, struct kb_error *err);

#endif
