/* kb-launch --slurm: a campaign as Slurm jobs; --stop and --cancel end them.
 *
 * Launch writes, into <results>/<campaign>/slurm/ (which must be on storage every node shares),
 * the job scripts rendered from the templates in slurm/templates/ (embedded at build time):
 *   kb-job.sh        helpers the scripts source (signals, the redis address, self-requeue)
 *   redis.sbatch     optional: a redis-server with its AOF in redis/, a 0600 password file there,
 *                    its "HOST:PORT" written to redis/address once it answers
 *   scheduler.sbatch submits the campaign (or resumes it), runs kb-scheduler
 *   runners.sbatch   the runner array: --array=0-(N-1)%M --gres=gpu:1 --signal=B:USR1@120
 *                    --requeue, one kb-runner per task
 * and submits them with `sbatch --parsable`: the scheduler after the redis job started, the
 * runners after the scheduler started (--dependency=after:..., --kill-on-invalid-dep=yes).
 * The job ids go to jobs.json (and jobs.env, for the scripts); logs to logs/.
 */
#ifndef KB_SLURM_SBATCH_H
#define KB_SLURM_SBATCH_H

struct kb_error;

/* The three jobs of a campaign, in the order they are submitted. */
enum kb_slurm_job { KB_SLURM_REDIS, KB_SLURM_SCHEDULER, KB_SLURM_RUNNERS, KB_SLURM_JOBS };
#define KB_SLURM_EXTRA_MAX 16 /* --sbatch-arg lines per job */

/* The #SBATCH settings of one job that kb-launch's per-job options give (all borrowed; NULL =
 * not given). kb-launch --time 4:00:00 sets every job's; --time runners=8:00:00 one job's. */
struct kb_slurm_job_opts {
  const char *time;       /* --time (Slurm's format) */
  const char *qos;        /* --qos */
  const char *constraint; /* --constraint (features) */
  const char *mem;        /* --mem (Slurm's format: 8G, 500M) */
  const char *cpus;       /* --cpus-per-task; NULL = the default (kb__slurm_default_cpus) */
  const char *extra[KB_SLURM_EXTRA_MAX]; /* --sbatch-arg: whole options ("--mail-type=END") */
  int n_extra;
};

struct kb_slurm_opts {
  const char *campaign_path; /* campaign.json (borrowed) */
  const char *bin_dir;       /* folder of kb-runner, kb-scheduler, kb-submit (borrowed) */
  const char *redis;         /* HOST:PORT every node reaches, or NULL: a redis job serves */
  int runners;               /* array tasks, one runner each; 0 = 1 */
  int throttle;              /* at most this many tasks run at once; 0 = no limit */
  const char *partition;     /* runners' partition, or NULL for the default (borrowed) */
  const char *cpu_partition; /* redis and scheduler jobs' partition; NULL = `partition` */
  struct kb_slurm_job_opts all;                /* per-job options given for every job */
  struct kb_slurm_job_opts job[KB_SLURM_JOBS]; /* ... for one job (enum kb_slurm_job): these
                                                  win; --sbatch-arg lines add up */
  const char *account;       /* --account of every job, or NULL */
  const char *gres;          /* per runner; NULL = "gpu:1"; "none" = no --gres */
  const char *backend;       /* kb-runner --backend; NULL = the campaign's */
  const char *setup;         /* a shell file every job sources first (module loads), or NULL */
  int wait_s;                /* how long jobs wait for redis and the campaign; 0 = 600 */
  int restart;               /* 1: delete the campaign's results and redis data first */
  int dry_run;               /* 1: write the scripts and say what would be submitted */
  int json;                  /* 1: print one JSON object instead of lines */
};

/* Validates the campaign (as kb-submit validate), writes the scripts, submits them and prints
 * the job ids on stdout. Refuses when jobs recorded for the campaign are still queued.
 * Errors: KB_EPARSE (campaign), KB_EINVAL (an option sbatch could not take safely),
 * KB_EEXISTS (jobs still queued), KB_ECHILD (sbatch failed: its message; jobs already submitted
 * are cancelled), KB_EIO, KB_ENOMEM. */
int kb__slurm_launch(const struct kb_slurm_opts *o, struct kb_error *err);

/* The runners' --cpus-per-task when none is given: the compile-ahead pool's compilers plus
 * one for the evaluation. A cuda runner gets 4 (3 nvcc: docs/cluster.md says how that was
 * measured), a host runner 2 (cc builds take milliseconds); redis and the scheduler 1. */
int kb__slurm_default_cpus(enum kb_slurm_job job, int cuda);

/* Takes one per-job option of kb-launch into `o`: `opt` is "--time", "--qos", "--constraint",
 * "--mem", "--cpus-per-task" or "--sbatch-arg" and `value` (borrowed, kept in `o`) either the
 * setting for every job or "redis=...", "scheduler=...", "runners=..." for one; a job's own
 * setting wins over the one for all, whatever the order. Each value is checked to go into an
 * #SBATCH line: --cpus-per-task a whole number 1..1024; --constraint Slurm's feature syntax
 * (letters, digits and _ . - plus & | [ ] * ( ) ! ,); --sbatch-arg one word starting with "--",
 * no spaces or control characters, and not an option kb-launch writes itself (--array,
 * --output, ...: its message names the one to use). Returns KB_OK or KB_EINVAL (the message
 * names the option and the value). */
int kb__slurm_job_option(struct kb_slurm_opts *o, const char *opt, const char *value,
                         struct kb_error *err);

/* 1 when `s` (borrowed) can be written into an #SBATCH line as is: Slurm reads those lines
 * without a shell, so only letters, digits and _ . / : + , = @ - are taken. */
int kb__slurm_word_ok(const char *s);

struct kb_slurm_stop_opts {
  const char *campaign_path; /* campaign.json (borrowed) */
  int cancel;                /* 1: also cancel the campaign in redis (kb-submit cancel) */
  int wait_s;                /* how long to wait for the jobs to leave the queue; 0 = 120 */
  int json;                  /* 1: print one JSON object */
};

/* Ends the jobs kb__slurm_launch() recorded for the campaign. With `cancel`, first moves the
 * campaign to "cancelled" in redis (as kb-submit cancel), so nothing new starts and nothing
 * resumes it. Then scancels the runners (SIGTERM: they release their leases, refunded) and
 * waits for them to leave the queue; then the scheduler (after a cancel it is given up to 30 s
 * to record the last results and end the campaign by itself); then the redis job (its server
 * saves the AOF). Without `cancel` a later launch resumes the campaign. Prints what it did on
 * stdout. Errors: KB_ENOTFOUND (no jobs recorded), KB_ETIMEOUT (jobs still queued after
 * wait_s), KB_ECHILD, KB_EIO, KB_ENOMEM; an unreachable redis is reported on stdout, not an
 * error. */
int kb__slurm_stop(const struct kb_slurm_stop_opts *o, struct kb_error *err);

#endif
