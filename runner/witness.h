/* The witness: the full-tier evaluation of a candidate in the confined PyTorch worker checked
 * from outside that process (docs/sandbox.md, "The witness").
 *
 * Everything the confined worker reports (the candidate's samples, torch eager's samples beside
 * them, every output check) is computed by code the candidate's own code can reach in its
 * process. After an ok full-tier evaluation the runner sends the confined worker a "witness"
 * request: `calls` calls of the candidate on inputs drawn from a seed the runner picks now, each
 * call's outputs written to a file. The runner times that request on its own clock, stops the
 * confined process (SIGSTOP), and sends the trusted worker the same request for the task's
 * module: it draws the same inputs, times its module calls by itself, and compares the file
 * with its own outputs; the confined process goes on (SIGCONT) after. KB_WITNESS_ROUNDS rounds,
 * each with a new seed; the fastest of each worker's counts. Same code in both workers around
 * the calls (the draws, the L2 flush, the waits, the copies to the host and the file), so the
 * difference of the two clocks is the difference of the calls.
 */
#ifndef KB_RUNNER_WITNESS_H
#define KB_RUNNER_WITNESS_H

#include "kb/result.h"

struct kb__sandbox;
struct kb_error;

#define KB_WITNESS_ROUNDS 3
#define KB_WITNESS_MAX_CALLS 256 /* calls per request, at most (the workers take no more) */

/* What the two workers' witness requests measured. */
struct kb__witness_obs {
  int calls;                          /* calls per request (both workers made as many) */
  int rounds;                         /* rounds completed (each: one request to each worker) */
  double cand_s[KB_WITNESS_ROUNDS];   /* the confined worker's request, runner's clock, seconds */
  double ref_s[KB_WITNESS_ROUNDS];    /* the trusted worker's, its comparison left out, seconds */
  double module_us[KB_WITNESS_ROUNDS]; /* the trusted worker's own time of one module call,
                                          microseconds (mean over the request's calls) */
};

/* The witness's verdict. */
struct kb__witness_verdict {
  int status;        /* enum kb_status: KB_STATUS_OK, or REJECTED / a worker's own status */
  char reason[256];  /* why, when not ok */
  double cand_us;    /* the candidate's time per call the clocks say (module_us + the clocks'
                        difference per call, fastest rounds), microseconds; NAN when not
                        measured */
  double eager_us;   /* the trusted worker's module call, microseconds (fastest round) */
  double around_us;  /* the trusted worker's time around each module call (its draw, flush,
                        waits and copy), microseconds; NAN when not measured */
  int eager_held;    /* 1: torch eager in the candidate's process was over the trusted
                        worker's by more than 1.5x and the slack: eager_us is reported instead */
};

/* Calls per witness request for a candidate claiming `claimed_us` a call and torch eager
 * `eager_us` (either <= 0 or NAN: unknown): enough for KB_WITNESS_TARGET_MS of module calls in
 * each worker, 3 to 32. */
int kb__witness_calls(double claimed_us, double eager_us);

/* Judges `o` against the confined worker's claims, `claimed_us` (the candidate's median) and
 * `eager_same_us` (torch eager timed in its process; NAN when none), into `v`. `cuda`: the
 * device's rule (a host's clock is the noisier). The rules (docs/sandbox.md):
 *  - the candidate's witnessed time cand_us over a factor times its claim plus a slack (2x and
 *    30 us on a device, 3x and 100 us on a host) plus the trusted worker's time around each of
 *    its module calls: rejected (its samples were faster than its calls on fresh inputs);
 *  - torch eager in its process over 3x the trusted worker's plus the same slack: rejected (the
 *    reference was slowed in its process); over 1.5x: eager_held, the trusted one is reported. */
void kb__witness_judge(const struct kb__witness_obs *o, double claimed_us, double eager_same_us,
                       int cuda, struct kb__witness_verdict *v);

/* Runs the rounds: `confined` (its last evaluation, of task `key`, was ok) and `trusted` (task
 * prepared under `trusted_key`), `calls` calls each, L2 flushed before each call when `flush`,
 * until `deadline` (kb_now_mono()); the confined worker's output file in its own folder. Fills
 * `o` and, when a worker's reply is not ok (the candidate's call failed, or the trusted
 * worker's comparison found its outputs wrong), `v->status` and `v->reason` (else leaves `v`
 * as it is). The confined process is stopped only between its reply and the trusted worker's.
 * Returns KB_OK when both answered every round (or one's verdict ended it: a confined worker
 * that dies or runs past the deadline is its crash or timeout in `v`); KB_ETIMEOUT when the
 * deadline passed otherwise, KB_ECHILD when the trusted worker died or a worker could not be
 * reached, KB_ENOMEM. */
int kb__witness_run(struct kb__sandbox *confined, const char *key, struct kb__sandbox *trusted,
                    const char *trusted_key, int calls, int flush, double deadline,
                    struct kb__witness_obs *o, struct kb__witness_verdict *v,
                    struct kb_error *err);

#endif
