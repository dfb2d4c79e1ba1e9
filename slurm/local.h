/* kb-launch --local: a whole campaign on this machine. Starts its own redis-server (unix socket
 * and AOF in the campaign's results folder) unless one is given, submits the campaign (or
 * resumes it from the AOF), starts one kb-scheduler and the runners, shows progress on a
 * terminal, and when the campaign ends stops everything and prints the leaderboard.
 * A cuda campaign runs one `kb-runner --backend cuda` per GPU (each sees only its own GPU through
 * CUDA_VISIBLE_DEVICES); a host campaign runs --runners host-backend runners.
 * Ctrl-C (SIGINT) or SIGTERM: runners release their leases, everything stops, the campaign can
 * be resumed by running the same command again.
 */
#ifndef KB_SLURM_LOCAL_H
#define KB_SLURM_LOCAL_H

#include <signal.h>

struct kb_error;

struct kb_local_opts {
  const char *campaign_path; /* campaign.json (borrowed) */
  const char *redis;         /* use this redis instead of starting one, or NULL */
  const char *bin_dir;       /* folder of kb-scheduler and kb-runner (borrowed) */
  int runners;               /* host-backend runners to start; 0 = 1 (host campaigns only) */
  const char *gpus;          /* cuda campaigns: GPU list "0,2-3" (borrowed), NULL = every GPU
                                kb-runner sees; one runner per GPU, CUDA_VISIBLE_DEVICES set */
  int restart;               /* 1: delete the campaign's previous results and redis data */
  int json;                  /* 1: print the summary JSON instead of the table */
  volatile sig_atomic_t *stop; /* set by SIGINT/SIGTERM handlers */
};

/* Runs the campaign to its end. Returns KB_OK when it finished (leaderboard printed on stdout);
 * KB_EINTERRUPTED when stopped by a signal; KB_EPARSE for a bad campaign; KB_EINVAL for a bad
 * --gpus list, --gpus with a host campaign, --runners with a cuda one, or a cuda campaign on a
 * machine without GPUs; KB_ECHILD when a process it started failed: the scheduler, or every
 * runner exited while the campaign is not over and one of them failed (the message names its
 * log); KB_ECONN when redis did not come up; KB_ELOCKED when another kb-launch holds the
 * campaign's lock (lock.h; the message names its pid, host and start time) or a redis-server it
 * did not start listens on the campaign's socket; KB_EWRITE when summary.json cannot be
 * written. Holds the lock while it runs; first ends what a killed launcher left running. */
int kb__local_run(const struct kb_local_opts *o, struct kb_error *err);

#endif
