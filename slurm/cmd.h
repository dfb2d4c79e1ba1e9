/* Running the Slurm commands (sbatch, squeue, scancel) and collecting what they print.
 */
#ifndef KB_SLURM_CMD_H
#define KB_SLURM_CMD_H

struct kb_buf;
struct kb_error;

/* Runs argv[0] (looked up in PATH) with `argv` (borrowed, NULL-terminated), stdin from
 * /dev/null; appends its stdout to `out` and its stderr to `errout` (each may be NULL: then that
 * output is discarded). `*status` gets its exit code, or 128 + the signal that ended it.
 * Returns KB_OK once it ended, whatever its status. Errors: KB_ECHILD when it could not be
 * started ("cannot run sbatch: No such file or directory"), KB_ENOMEM. */
int kb__cmd_run(char *const argv[], struct kb_buf *out, struct kb_buf *errout, int *status,
                struct kb_error *err);

#endif
