/* Which GPUs `kb-launch --local` starts runners on: a list the user gives (--gpus 0,2-3) or the
 * devices `kb-runner --list-devices --json` reports. The launcher never initialises CUDA itself
 * (it forks and spawns processes afterwards), so the probe runs in a kb-runner child.
 */
#ifndef KB_SLURM_GPUS_H
#define KB_SLURM_GPUS_H

#include <stddef.h>

struct kb_error;

#define KB_GPUS_MAX 64

/* Parses `list` ("0", "0,1,3", "0-3", "0-1,4"; ordinals 0..1023, no repeats) into `ids`
 * (caller-owned, KB_GPUS_MAX entries), `*n` of them, in the order given.
 * Errors: KB_EINVAL with a message naming the bad part of "--gpus". */
int kb__gpus_parse(const char *list, int *ids, int *n, struct kb_error *err);

/* Runs `runner` (path of kb-runner, borrowed) with --list-devices --json and fills `ids` with the
 * CUDA ordinals it reports, `*n` of them (0 is an answer: then `why` gets the runner's reason,
 * `why_size` bytes, always NUL-terminated). Errors: KB_ECHILD when the runner cannot be started
 * or exits non-zero; KB_EPARSE when its output is not the JSON it documents. */
int kb__gpus_probe(const char *runner, int *ids, int *n, char *why, size_t why_size,
                  struct kb_error *err);

#endif
