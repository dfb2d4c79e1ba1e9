/* The evaluation child: what runs inside the sandbox process for one candidate.
 *
 * kb__eval_child() is a kb__proc_fn. It loads the candidate library, calls kb_forward once per
 * checked input set into the "check" outputs, then times it: `warmup` untimed calls and then
 * samples, rotating over the checked sets, each call into that set's "time" outputs, which it
 * poisons before every call (outside the timed interval). Sampling stops after max_samples, or
 * once min_samples are taken and max_seconds of timed time, the time budget, or the noise target
 * is reached. It writes one struct kb__eval_report to the report descriptor and exits 0; the
 * parent judges outputs and inputs, which live in the shared mapping.
 */
#ifndef KB_RUNNER_CHILD_H
#define KB_RUNNER_CHILD_H

#include <stdint.h>

#include "kb/result.h"
#include "kb_kernel.h"

enum kb__eval_outcome {
  KB__EVAL_DONE = 1, /* every call returned 0; timing filled */
  KB__EVAL_LOAD,     /* dlopen failed; msg has dlerror() */
  KB__EVAL_NOSYM,    /* no kb_forward in the library */
  KB__EVAL_FAILED,   /* kb_forward returned non-zero: rc, set, phase */
  KB__EVAL_NOMEM     /* the child could not allocate its sample buffer */
};

enum kb__eval_phase { KB__PHASE_CHECK = 0, KB__PHASE_WARMUP, KB__PHASE_TIMING };

#define KB__EVAL_MAGIC UINT32_C(0x6b626576)

struct kb__eval_report {
  uint32_t magic;          /* KB__EVAL_MAGIC: a complete report */
  int outcome;             /* enum kb__eval_outcome */
  int rc;                  /* kb_forward's return value, for KB__EVAL_FAILED */
  int set;                 /* input set of that call */
  int phase;               /* enum kb__eval_phase of that call */
  uint32_t sets_timed;     /* bit s set: set s received at least one timed or warm-up call */
  struct kb_timing timing; /* microseconds; samples 0 when not timed */
  char msg[256];           /* dlerror() text for KB__EVAL_LOAD */
};

struct kb__eval_job {
  const char *lib_path;        /* the candidate library (borrowed) */
  int n_in;                    /* inputs per set */
  int n_out;                   /* outputs per set */
  int n_sets;                  /* sets to check and time, 1..KB_MAX_SETS */
  const kb_tensor *in;         /* n_sets * n_in tensors, set-major (borrowed) */
  const kb_tensor *out_check;  /* n_sets * n_out: where the check calls write (borrowed) */
  const kb_tensor *out_time;   /* n_sets * n_out: where the timed calls write (borrowed) */
  int timed;                   /* 0: check calls only */
  int warmup;                  /* untimed calls before sampling */
  int min_samples;             /* timed calls at least */
  int max_samples;             /* timed calls at most */
  double max_seconds;          /* stop once this much timed time is spent, seconds */
  double noise;                /* stop once stddev/mean is below this */
  double budget_s;             /* stop sampling (past min_samples) this long after the start */
};

/* The child's body: runs `arg` (a struct kb__eval_job, borrowed) and _exit()s. */
void kb__eval_child(void *arg);

/* Fills `t` from `n` samples (microseconds, sorted in place) and `warmup`: median, p10 and p90
 * by linear interpolation between order statistics, mean, min, and noise = sample standard
 * deviation / mean. n = 0 gives an untimed struct (samples 0, values 0). */
void kb__timing_stats(double *samples, int n, int warmup, struct kb_timing *t);

#endif
