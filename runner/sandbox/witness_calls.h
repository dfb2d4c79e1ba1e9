/* The witness's calls in kb-sandbox (docs/sandbox.md, "The witness").
 *
 * After an ok full-tier evaluation the runner asks the confined sandbox for `calls` calls of the
 * candidate on inputs drawn from a seed it picks then, and a trusted sandbox (kb-sandbox
 * --trusted: never loads a candidate, not confined) for the same calls of the task's oracle.
 * Both run this code: on a GPU each call's inputs are drawn whole from the seed (input set i's
 * distribution, cycling); on the host each input is drawn once a request (one input set, picked
 * by the seed) and each call gets a window of it at an offset drawn from the seed. Each call's
 * outputs are poisoned, the L2 flushed when asked, a wait for the device, the call, a wait, and
 * its outputs copied to the host (of an output over a third of KB__WITNESS_OUT_BYTES, blocks at
 * starts drawn from a seed asked of the runner once the call has returned: spec.positions).
 * The confined sandbox writes the outputs to its witness file
 * (opened in its folder before it confined itself); the trusted one keeps its own and, when
 * asked, compares the confined sandbox's file with them (the task's tolerance), read while the
 * runner holds that process stopped.
 *
 * The clock of the times in the reply: the thread's CPU time on the host (what the runner
 * reads of the confined process, /proc/PID/schedstat), the monotonic clock on a GPU.
 */
#ifndef KB_SANDBOX_WITNESS_CALLS_H
#define KB_SANDBOX_WITNESS_CALLS_H

#include <stdint.h>

#include "dev.h"
#include "engine.h"

#define KB__WITNESS_MAX_CALLS 256          /* calls per request, at most */
#define KB__WITNESS_OUT_BYTES (64 << 20)   /* outputs written per request, at most */
#define KB__WITNESS_BLOCKS 64              /* an output too large for that: blocks kept ... */
#define KB__WITNESS_BLOCK (1 << 14)        /* ... of this many elements, at starts drawn after
                                              each call (witness_spec.positions) */

/* One witness request (borrowed strings and spec). */
struct kb__witness_spec {
  const struct kb__prep_spec *task; /* the task: tensors, sets, tolerances, oracle */
  kb__forward_fn fn;     /* what is called: the candidate's kb_forward, or the oracle's */
  int oracle;            /* 1: `fn` is the task's oracle (a trusted sandbox) */
  uint64_t seed;         /* the runner's */
  int calls;             /* asked, 1..KB__WITNESS_MAX_CALLS */
  int flush_l2;          /* 1: flush the L2 before each call */
  int out_fd;            /* the confined sandbox's witness file (written from offset 0); -1:
                            the outputs stay in memory */
  const char *check_path; /* the trusted sandbox: the confined one's file, compared after the
                             calls; NULL: no comparison */
  /* The seed of call `call`'s block starts (sampled outputs only), asked of the runner after
   * that call has returned and the device is idle (docs/sandbox.md, "The witness": a candidate
   * that knew the starts before could compute those blocks only). Returns 0, or -1 with `why`
   * set when the runner cannot be asked. NULL: the starts come from `seed` (a request without
   * "ask_positions"). */
  int (*positions)(void *ctx, int call, uint64_t *seed, char *why, size_t size);
  void *positions_ctx;
};

/* Its answer. */
struct kb__witness_reply {
  int status;            /* enum kb_status: ok, crash (the call failed), rejected (the file
                            does not hold the outputs), infra_error (no memory, the oracle
                            failed, the file could not be written) */
  char reason[256];      /* why, when not ok */
  int fatal;             /* 1: the device is unusable, the process must end */
  int calls;             /* calls made: as asked, fewer when their outputs would be over
                            KB__WITNESS_OUT_BYTES, 1 at least */
  int sampled;           /* outputs written as blocks (their starts drawn after each call) */
  int64_t bytes;         /* bytes of outputs written (or kept) */
  double module_us;      /* mean time of one call (the call and the wait after it) */
  double verify_s;       /* the comparison, seconds; 0 when none */
  int write_errno;       /* the errno of the failed write of the witness file (infra_error:
                            the node's disk, not the candidate), 0 */
};

/* The buffers of a witness's calls, kept between its rounds (opaque). */
struct kb__witness_bufs;

/* Runs `w` on `d` into `r`, with the buffers in *kept when they fit the task's tensors, else
 * new ones (the old freed; *kept is then the new, or NULL). Every outcome is in `r->status`;
 * returns KB_OK, or KB_ENOMEM when the host or the device had no room for the calls' buffers
 * (r says infra_error). The caller loads the library and keeps it, and the buffers, between
 * the rounds, so that a first call's one-time cost (lazy module loading, a handle made once,
 * the buffers' first touch) falls in the first round only, which the runner's median round
 * leaves out. */
int kb__witness_calls(struct kb__dev *d, struct kb__witness_bufs **kept,
                      const struct kb__witness_spec *w, struct kb__witness_reply *r);

/* Frees `b` (NULL: nothing) on `d`, which made it. */
void kb__witness_bufs_free(struct kb__dev *d, struct kb__witness_bufs *b);

#endif
