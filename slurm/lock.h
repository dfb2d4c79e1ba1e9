/* One launcher per campaign (kb-launch --local): a lock in the campaign's results folder, the
 * children started so that they die with the launcher, and what a killed launcher left behind
 * cleaned up before a new one starts (docs/cluster.md, "One launcher per campaign").
 */
#ifndef KB_SLURM_LOCK_H
#define KB_SLURM_LOCK_H

#include <sys/types.h>

struct kb_error;

/* The lock file inside the campaign's results folder. */
#define KB_LAUNCH_LOCK_FILE "launch.lock"
/* The pid file of the redis-server kb-launch starts, in the campaign's redis folder. */
#define KB_LAUNCH_REDIS_PIDFILE "redis.pid"

/* Takes flock(LOCK_EX) on `dir`/launch.lock (created when absent; `dir` borrowed, must exist)
 * without waiting, and writes "pid=<pid> host=<host> since=<UTC time>" into it. The lock lasts
 * while `*fd` is open (kb__launch_unlock) and goes with the process, even on kill -9.
 * Errors: KB_ELOCKED naming the holder's pid, host and start time as its file says, KB_EIO. */
int kb__launch_lock(const char *dir, int *fd, struct kb_error *err);
/* Releases the lock: closes `fd` (negative: nothing). The file stays. */
void kb__launch_unlock(int fd);

/* Starts `argv` (borrowed; argv[0] looked up in PATH) with stdin from /dev/null and stdout and
 * stderr appended to `log_path`, in environment `envp` (borrowed; NULL: ours). The child gets
 * `death_sig` when the launcher dies, kill -9 included (PR_SET_PDEATHSIG), so nothing it
 * started outlives it. `*pid` is the child's. Errors: KB_ECHILD (cannot start, with the
 * reason), KB_EIO (log file). */
int kb__launch_spawn(char *const argv[], const char *log_path, char *const envp[], int death_sig,
                     pid_t *pid, struct kb_error *err);

/* Ends what a launcher killed before it could stop its children left behind: every
 * redis-server, kb-scheduler and kb-runner of ours whose command line names `folder` (borrowed:
 * the campaign's redis folder, which they name), and the redis-server of `folder`/redis.pid,
 * gets SIGTERM (redis-server saves its AOF and leaves), then SIGKILL after `grace_ms`. Call it
 * holding the lock: no other launcher runs the campaign, so they are orphans. Returns how many
 * there were. */
int kb__launch_end_orphans(const char *folder, int grace_ms);

#endif
