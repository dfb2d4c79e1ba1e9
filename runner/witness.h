/* The witness: the full-tier evaluation of a candidate checked from outside the process it ran
 * in (docs/sandbox.md, "The witness").
 *
 * Everything the confined process reports (the candidate's samples, torch eager's samples beside
 * them, every output check) is computed by code the candidate's own code can reach in its
 * process: a PyTorch worker's Python, or kb-sandbox's C in whose address space a candidate
 * library runs. After an ok full-tier evaluation the runner sends that process a "witness"
 * request: `calls` calls of the candidate on inputs drawn from a seed the runner picks now, each
 * call's outputs written to a file. The runner times that request on its own clock, stops the
 * confined process (SIGSTOP), and sends a trusted process the same request for the task's
 * reference (the trusted PyTorch worker: the task's module; a trusted kb-sandbox: the task's
 * oracle): it draws the same inputs, times its reference calls by itself, and compares the file
 * with its own outputs; the confined process goes on (SIGCONT) after. KB_WITNESS_ROUNDS rounds
 * for a claim that could rank among its task's best, one for a slower one (kb__witness_rounds),
 * each with a new seed; each round is judged on its own (its two requests ran back to back,
 * under the same load) and the median round counts. Same code in both processes around the
 * calls (the draws, the L2 flush, the waits, the copies to the host and the file), so the
 * difference of the two clocks is the difference of the calls. An output too large to be written
 * whole is written at positions drawn from a seed per call that the runner gives each process
 * only when it asks ({"op": "witness_positions", "call": i}, after that call has returned),
 * each call once and in order, the same seeds to both: the confined process cannot know them
 * while its calls run (docs/sandbox.md, "Sampled outputs: positions drawn after each call").
 */
#ifndef KB_RUNNER_WITNESS_H
#define KB_RUNNER_WITNESS_H

#include <jansson.h>
#include <stdint.h>

#include "kb/result.h"

struct kb__sandbox;
struct kb_error;

#define KB_WITNESS_ROUNDS 3
#define KB_WITNESS_MAX_CALLS 256 /* calls per request, at most (the workers take no more) */
/* ... on a host's CPU-time clock: a host request's CPU time (its draw and its calls) is taken
 * on two cores shared with everything else, so its length is kept to what the test suite pays */
#define KB_WITNESS_CPU_MAX_CALLS 64

/* What the two workers' witness requests measured. */
struct kb__witness_obs {
  int calls;                          /* calls per request (both workers made as many) */
  int rounds;                         /* rounds completed (each: one request to each worker) */
  double cand_s[KB_WITNESS_ROUNDS];   /* the confined worker's request, runner's clock, seconds */
  double ref_s[KB_WITNESS_ROUNDS];    /* the trusted worker's, its comparison left out, seconds */
  double module_us[KB_WITNESS_ROUNDS]; /* the trusted worker's own time of one module call,
                                          microseconds (mean over the request's calls) */
  int cpu_clock;                      /* 1: cand_s and ref_s are each process's CPU time (the
                                          plan's cpu_clock): the tight rule of kb__witness_judge */
};

/* The witness's verdict. */
struct kb__witness_verdict {
  int status;        /* enum kb_status: KB_STATUS_OK, or REJECTED / a worker's own status */
  char reason[256];  /* why, when not ok */
  double cand_us;    /* the candidate's time per call the clocks say (a round's module_us + its
                        clocks' difference per call, the median round), microseconds; NAN
                        when not measured */
  double eager_us;   /* the trusted worker's module call, microseconds (median round) */
  double around_us;  /* the trusted worker's time around each module call (its draw, flush,
                        waits and copy), microseconds; NAN when not measured */
  int eager_held;    /* 1: torch eager in the candidate's process was over the trusted
                        worker's by more than 1.5x and the slack: eager_us is reported instead */
  int write_errno;   /* a sandbox could not write its witness file (its folder's disk full,
                        ...): that errno, with status infra_error; 0 */
};

/* Calls per witness request for a candidate claiming `claimed_us` a call and torch eager
 * `eager_us` (either <= 0 or NAN: unknown): enough for KB_WITNESS_TARGET_MS of module calls in
 * each worker, 3 to 32. */
int kb__witness_calls(double claimed_us, double eager_us);

/* Calls per witness request on a host's CPU clock for a candidate claiming `claimed_us` a call,
 * the task's oracle taking `oracle_us`, over inputs of `input_elems` elements in all: as
 * kb__witness_calls, and at least as many as take as long as the request's draw of its inputs
 * (some 7 ns an element: the draw runs in both processes, and its noise, spread over the calls,
 * is the rounds' noise) at the candidate's claim, at most KB_WITNESS_CPU_MAX_CALLS. */
int kb__witness_cpu_calls(double claimed_us, double oracle_us, int64_t input_elems);

/* `calls`, or fewer, so that one witness's requests (both workers, KB_WITNESS_ROUNDS rounds,
 * each call after a draw of its inputs taking `draw_s` seconds, and the call itself: the slower
 * of `claimed_us` and `eager_us`) take at most a quarter of KB_WITNESS_LIMIT_S, the second
 * witness twice that; never under the minimum of 3. A PyTorch task's get_inputs() slower than
 * its call (inputs made in Python, a large input of a cheap operator) made 256 calls overrun
 * the limit: the identity timed out. `draw_s` 0 or NAN: unknown, `calls` as given. */
int kb__witness_fit_calls(int calls, double draw_s, double claimed_us, double eager_us);

/* Judges `o` against the confined worker's claims, `claimed_us` (the candidate's median),
 * `claimed_cpu_us` (its samples' median CPU time of the calling thread, a host's kb-sandbox;
 * NAN or 0 when none) and `eager_same_us` (torch eager timed in its process; NAN when none),
 * into `v`. `cuda`: the
 * device's rule (a host's wall clock is the noisier); `o->cpu_clock`: the CPU-time rule (a
 * host's kb-sandbox, timed by the kernel's count of each process's CPU time); `kind` (enum
 * kb__witness_kind) names the reference in the reasons. The rules (docs/sandbox.md):
 *  - the candidate's witnessed time cand_us over a factor times its claim plus a slack (2x
 *    and 20 us on a host's CPU-time clock, 2x and 30 us on a device, 3x and 100 us on a host's
 *    wall clock) plus the trusted process's time around each of its calls (a PyTorch worker:
 *    all of it; the CPU-time clock: a tenth, its noise): rejected (its samples were faster
 *    than its calls on fresh inputs); on the CPU-time clock the same against `claimed_cpu_us`
 *    (like with like: a host's wall-clock samples grow with the machine's load, and a forged
 *    claim grown so passed the rule against the wall-clock claim);
 *  - on the CPU-time clock, a wall-clock claim under 0.9x its CPU-time claim less 5 us:
 *    rejected (a thread's CPU time in an interval never exceeds the interval: the timer's
 *    state was changed from inside the process);
 *  - torch eager in its process over 3x the trusted worker's plus the same slack: rejected (the
 *    reference was slowed in its process); over 1.5x: eager_held, the trusted one is reported. */
void kb__witness_judge(const struct kb__witness_obs *o, double claimed_us, double claimed_cpu_us,
                       double eager_same_us, int cuda, int kind, struct kb__witness_verdict *v);

/* Whose fault a confined request's overrun of the witness's time is. The rounds completed
 * before it (`o`) and the overrun round, whose request the trusted process was then sent for
 * as long as the confined one ran (`cand_s` seconds; it took `ref_s`, `ref_done` 0 when it did
 * not finish in that time either), each compare the two processes on the same inputs under the
 * same load. 1: the machine's (in every one of them the trusted process, which runs the task's
 * own reference, needed over KB_WITNESS_SLOW_SHARE of the confined one's time: other work on
 * a loaded host slowed both; the verdict is then infra_error, not the candidate's timeout), 0:
 * the candidate's (in one of them its calls alone were slow: the timeout stands). Seen on the
 * development machine: an honest host candidate beside two memory-bound processes, under
 * ASan, overran the 30 s with its calls sized for 1.25 s a request. */
#define KB_WITNESS_SLOW_SHARE 0.5
int kb__witness_slow_machine(const struct kb__witness_obs *o, double cand_s, double ref_s,
                             int ref_done);

/* What the witness compares with: the PyTorch workers' (the task's module, torch eager) or
 * kb-sandbox's (the task's C or CUDA oracle in a trusted kb-sandbox). */
enum kb__witness_kind { KB__WITNESS_TORCH = 0, KB__WITNESS_ORACLE };

/* One witness: the two processes and their requests. */
struct kb__witness_plan {
  struct kb__sandbox *confined; /* its last evaluation was ok */
  struct kb__sandbox *trusted;  /* the trusted worker or sandbox */
  const json_t *cand_req;       /* "witness" request fields for each (the task's key or spec,
                                   the candidate's library), without seed, calls, path, flush */
  const json_t *ref_req;
  int calls;                    /* calls per request */
  int flush;                    /* 1: the L2 flushed before each call */
  int cpu_clock;                /* 1: each process's CPU time (/proc/PID/task/N/schedstat, kept
                                   by the kernel) instead of the wall clock: a host's C
                                   sandbox, whose candidate cannot run threads or processes */
  int rounds;                   /* rounds to run, 1 to KB_WITNESS_ROUNDS (kb__witness_rounds);
                                   0: KB_WITNESS_ROUNDS */
};

/* Rounds for a claim of `claimed_us` a call whose candidate must beat `rank_bound_us` to rank
 * among its task's best (the scheduler's mark, kb__evaluator_set_mark: < 0 unknown, 0 any time
 * ranks): KB_WITNESS_ROUNDS when the claim could rank (or the bound is unknown), 1 when even
 * the claim is no faster than the bound. Every ok full-tier result is witnessed (its outputs
 * checked outside its process, its time judged on the runner's clock); the median of three
 * rounds, which no single round slowed by a loaded host moves, is spent on the claims that
 * decide a ranking, whose speedups are the ones reported as a task's best (docs/sandbox.md,
 * "The witness"). */
int kb__witness_rounds(double claimed_us, double rank_bound_us);

/* Runs the rounds of `p` until `deadline` (kb_now_mono()); the confined process's output file
 * in its own folder. Fills `o` and, when a process's reply is not ok (the candidate's call
 * failed, or the trusted side's comparison found its outputs wrong), `v->status` and
 * `v->reason` (else leaves `v` as it is). The confined process is stopped only between its
 * reply and the trusted one's. Returns KB_OK when both answered every round (or one's verdict
 * ended it: a confined process that dies or runs past the deadline is its crash or timeout in
 * `v`); KB_ETIMEOUT when the deadline passed otherwise, KB_ECHILD when the trusted process
 * died or a process could not be reached, KB_ENOMEM. */
int kb__witness_run(const struct kb__witness_plan *p, double deadline, struct kb__witness_obs *o,
                    struct kb__witness_verdict *v, struct kb_error *err);

/* After the rounds, untimed: asks the confined kb-sandbox `sb` (not a PyTorch worker) whether
 * its process is still as it was before any candidate (runner/sandbox/integrity.h; the check
 * is a request of its own so that no witness request's clock holds it). A changed process (the
 * sandbox then ends itself), a crash or a timeout replaces `v`; else `v` stays. Returns KB_OK,
 * or what ask() returns for a process that cannot be reached (KB_ETIMEOUT, KB_ECHILD,
 * KB_EINTERRUPTED, KB_ENOMEM). */
int kb__witness_check(struct kb__sandbox *sb, double deadline, struct kb__witness_verdict *v,
                      struct kb_error *err);

#endif
