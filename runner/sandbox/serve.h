/* The sandbox's message loop: reads requests from the runner, answers each (docs/sandbox.md).
 *
 * Requests: hello, prepare, eval, quit. A request that is not well formed gets an "error" reply
 * naming the field and the loop goes on; the loop ends on quit, on end of input, or after a
 * reply that says the process is unusable ("fatal": a sticky CUDA error, or a candidate that
 * wrote into the evaluator's memory).
 */
#ifndef KB_SANDBOX_SERVE_H
#define KB_SANDBOX_SERVE_H

#include "dev.h"

/* Serves requests from `in_fd` with replies to `out_fd` on the opened device `d` (borrowed)
 * until quit (returns 0), end of input (0), a fatal verdict (3), or a broken channel (1).
 * `ordinal` is the CUDA device number, reported by hello. */
int kb__sandbox_serve(struct kb__dev *d, int ordinal, int in_fd, int out_fd);

/* The input distribution named `name` ("uniform", "normal", "integers": enum kb_dist of
 * inputs.h), or -1 for another name; exposed for tests. */
int kb__sandbox_dist_from_name(const char *name);

#endif
