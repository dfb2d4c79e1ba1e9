/* The sandbox's message loop: reads framed requests from the runner and answers each
 * (docs/sandbox.md, "Requests").
 *
 * Requests: hello (the device's facts and the confinement level), prepare (a task's inputs and
 * references made on the device, engine.h, and kept: at most 64 prepared tasks, the least
 * recently used replaced first, holding at most a quarter of the device memory, over which the
 * quickest to prepare are dropped first; a prepare that fails on a usable device drops them all
 * and tries once more), eval (a candidate library against a
 * prepared task, engine.h), witness (calls of a candidate, or in a trusted sandbox of the
 * task's oracle, on inputs drawn from a seed: witness_calls.h) and quit (answered "bye"). A request that is not well formed gets an
 * "error" reply naming the field and the loop goes on. The loop ends on quit, on end of input,
 * on a frame over the size limit (after an error reply: the stream cannot be framed any more),
 * on a broken channel, or after a reply that says the process is unusable ("fatal": a sticky
 * CUDA error, or a candidate that wrote into the evaluator's memory).
 */
#ifndef KB_SANDBOX_SERVE_H
#define KB_SANDBOX_SERVE_H

#include "dev.h"

struct kb__serve_opts {
  int ordinal;     /* the CUDA device number, reported by hello */
  int in_fd;       /* requests */
  int out_fd;      /* replies */
  int trusted;     /* 1: kb-sandbox --trusted: eval is refused, a witness runs the oracle */
  int witness_fd;  /* the witness file (opened in the working folder before confinement), -1:
                      none (witness requests are refused) */
  int maps_fd;     /* /proc/self/maps, opened before confinement (integrity.h; owned from here
                      on), -1: the process is not checked between candidates */
};

/* Serves requests as `o` says on the opened device `d` (borrowed; the caller closes it) until
 * quit or end of input (returns 0), a fatal verdict (3: the prepared tasks are left as they
 * are, the process must end), or a broken channel or unframable input (1). Otherwise the
 * prepared tasks are freed before returning. */
int kb__sandbox_serve(struct kb__dev *d, const struct kb__serve_opts *o);

#endif
