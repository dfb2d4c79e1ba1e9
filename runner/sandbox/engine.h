/* The sandbox's evaluation engine: prepares a task on a device (draws the input sets, runs the
 * trusted oracle for the reference outputs, keeps both) and evaluates candidate libraries
 * against it: verification and timing, written once against the device interface of dev.h.
 *
 * Layout of a prepared task: two device allocations. The candidate's: per input set the
 * inputs, the check outputs (first call) and the timed outputs, then set 0's second check
 * outputs (the determinism call), each tensor on a 256-byte boundary and followed by a
 * checksummed guard. The evaluator's, separate: the references (masked, unmasked only around a
 * compare), the fresh references, scratch. A candidate that writes past a buffer lands in a
 * guard (`rejected`, fatal); one that reads past it finds a guard or masked data.
 *
 * Fresh samples (every timed evaluation, at least three, spread through the sampling): a call on
 * contents never drawn before in the process, timed as any call, its reference made by the
 * oracle after it and compared; each paired with a control sample on repeated contents; fresh
 * times inconsistent with the controls' are `rejected` (results kept between calls). Also a
 * determinism call after the check calls, the speed-of-light bound on flushed GPU timings and
 * the reset of L2 persistence before every sample (docs/sandbox.md).
 *
 * Verification: outputs poisoned before every call; every element of every output of every
 * checked set compared (NaN and infinity never pass); input and reference checksums after the
 * check calls and after timing (a change is `rejected`: the prepared task is then dropped and
 * made again on the next prepare); after timing the timed outputs of every timed set compared
 * again (right first and wrong later is `rejected`). Outputs right on the first check call and
 * left untouched (still all NaN) on a later one are `rejected` too (the work done only once),
 * not `wrong_output`.
 *
 * Input rotation: before timing (with two or more checked sets) the contents of set b + 1 are
 * drawn into the input buffers of set b, cyclically, and the re-check compares each buffer's
 * outputs with the reference of the set it now holds: an output cache keyed by the input
 * pointer returns the old set's answer and is `rejected`. The inputs are put back afterwards.
 *
 * Timing: warm-up calls, then samples on the device's timer, the L2 flushed before each sample
 * when asked, rotating over the checked sets, until min_samples are in and the noise target, the
 * timed-time cap, or the budget is reached, or max_samples. On a device with batch_short set, a
 * candidate whose warm-up call took under KB__SHORT_US is timed in batches of back-to-back calls
 * queued behind a spin kernel, so launch overhead does not count; a sample is then a batch's
 * time over its calls. At tiers that flush, a candidate under KB__FLUSHED_US (and not under
 * KB__SHORT_US) is timed in flushed batches: every call of the batch gets the L2 flushed right
 * before it and its own pair of timer marks, exactly as a single timed call (the outputs are
 * poisoned once per sample, before the batch); the sample is the mean of the batch's calls
 * (enough of them to add up to about 600 us, at most KB__TIMER_SLOTS), so the call-to-call
 * scatter of a cold call of tens of microseconds (a few percent) averages down in each sample
 * (measured on the H200: 3% for one call of 15 us, 0.3 to 1% for the mean of 20). With a
 * baseline library, every candidate sample is followed by one of the baseline under the same
 * conditions (same-run interleaving); the baseline writes into the check outputs, so the
 * candidate's timed outputs survive for the re-check.
 *
 * Kernel trace (CUDA builds with the CUPTI module, cupti_trace.h): when asked, the timed samples
 * run under a CUPTI kernel trace, each sample bracketed by spin markers on the candidate's stream
 * (one right before its first start event, or before its first flush in a flushed batch; one
 * right after its last end event); afterwards every kernel that is
 * not the evaluator's must have run on the candidate's stream inside a window, else `rejected`
 * (work hidden on another stream or after the end event).
 *
 * Metrics (same builds, when asked, after everything else passed): one more call on input set 0
 * under the CUPTI Range Profiler, which replays each kernel as often as its counters need:
 * DRAM and SM throughput, achieved occupancy and L2 hit rate of the longest kernel. Where the
 * counters cannot be read (permissions, another profiler), the reason is reported instead.
 */
#ifndef KB_SANDBOX_ENGINE_H
#define KB_SANDBOX_ENGINE_H

#include <stdint.h>

#include "dev.h"
#include "kb/candidate.h"
#include "kb/result.h"
#include "kb/task.h"

/* A warm-up call under this many microseconds is timed in batches (devices with batch_short). */
#define KB__SHORT_US 10.0
/* At tiers that flush the L2, a call under this many microseconds (and not under KB__SHORT_US)
 * is timed in flushed batches: a sample is the mean of several calls, each flushed and timed on
 * its own (devices with batch_short). */
#define KB__FLUSHED_US 100.0
/* Fresh samples per timed evaluation at least, and the share of the evaluation's time past
 * which no more are taken, when the request leaves them out (the full schedule; a cheap tier
 * asks for fewer: docs/sandbox.md, "Fresh samples"). */
#define KB__FRESH_MIN 3
#define KB__FRESH_SHARE 0.10

/* What a task needs on the device; strings and tensor arrays borrowed (kb__prepare copies what
 * it keeps). */
struct kb__prep_spec {
  const char *key;          /* identifies the task's data (the runner's fingerprint) */
  const char *oracle;       /* path of the oracle library */
  const struct kb_tensor_spec *inputs; /* n_in of them */
  int n_in;                 /* 1..KB_MAX_TENSORS */
  const struct kb_tensor_spec *outputs; /* n_out of them */
  int n_out;                /* 1..KB_MAX_TENSORS */
  struct kb_input_set sets[KB_MAX_SETS];
  int n_sets;               /* 1..KB_MAX_SETS */
  double atol, rtol;        /* tolerances */
  double must_read;         /* share of the input bytes a correct kernel reads, 0..1 */
};

struct kb__prepared; /* opaque */

/* A candidate's or an oracle's entry point (kb_kernel.h). */
typedef int (*kb__forward_fn)(const kb_tensor *in, int n_in, kb_tensor *out, int n_out,
                              void *stream);

/* Fills `t` (caller-owned) as the descriptor of a tensor of spec `s` at `data` (borrowed): a
 * fresh one for each call, so a candidate that scribbles on it does not steer the next. */
void kb__tensor_describe(kb_tensor *t, const struct kb_tensor_spec *s, void *data);

/* Loads the library at `path` in the confinement's load window and finds kb_forward into `*fn`.
 * Returns the handle (the caller dlcloses it), or NULL with the reason in `err`: KB_ELOAD when
 * the library does not load (dlerror's text without the path), KB_ENOTFOUND when it does not
 * export kb_forward. */
void *kb__load_forward(const char *path, kb__forward_fn *fn, struct kb_error *err);
struct kb_cupti_kernel; /* cupti_trace.h */

/* One evaluation's settings. */
struct kb__eval_spec {
  const char *library;      /* the candidate library (borrowed) */
  const char *baseline;     /* the baseline library for same-run interleaving, or NULL */
  int sets;                 /* input sets to check and time, 1..n_sets (0 = all) */
  int warmup;               /* untimed calls before sampling */
  int min_samples;          /* at least */
  int max_samples;          /* at most; 0 = check only, no timing */
  double noise;             /* stop once stddev/mean is below this */
  double max_seconds;       /* stop once this much timed time is spent, seconds */
  double budget_s;          /* stop (past min_samples) this long after the start, seconds */
  int flush_l2;             /* 1: flush the L2 before each sample */
  int recheck;              /* 1: compare the timed outputs after timing */
  int trace;                /* 1: record a kernel trace (CUPTI) when available */
  int metrics;              /* 1: hardware metrics of one call (CUPTI Range Profiler, replayed) */
  double metrics_below_us;  /* with metrics: only when the median is below this (a new best of
                               the task); 0 = always */
  int dump_samples;         /* 1: the verdict keeps every sample (samples, n_samples) */
  int sample_chunk;         /* timed samples queued before one wait, at most; 0 = the engine's
                               CHUNK_MAX, 1 = a wait after every sample */
  int fresh_min;            /* fresh samples (each with its controls) at least, >= 1; 0 =
                               KB__FRESH_MIN */
  double fresh_share;       /* past fresh_min, more fresh samples while they took under this
                               share of the evaluation's time so far, 0..1; negative =
                               KB__FRESH_SHARE */
};

/* The engine's answer. */
struct kb__verdict {
  int status;               /* enum kb_status */
  char reason[256];         /* why, for any status but ok */
  int sets_checked;
  double max_abs_err, max_rel_err; /* NAN when nothing was compared */
  struct kb_timing timing;  /* samples 0 when not timed */
  struct kb_timing baseline; /* the baseline's, samples 0 when none */
  double cpu_median_us;     /* the timed samples' median CPU time of the calling thread per call,
                               where the device has that clock (the host); NAN elsewhere: the
                               witness compares its CPU-clock time with it (runner/witness.h) */
  int batch;                /* calls per sample: 1, or the batch size for short kernels */
  int batch_flushed;        /* 1: each call of a batch was flushed and timed on its own */
  int chunks;               /* waits of the host for the timed samples (one per chunk) */
  int fatal;                /* 1: the device or process is unusable; exit after replying */
  char trace_note[256];     /* why no trace was recorded, "" when none was asked or it was */
  int traced;               /* 1: a kernel trace of the timed calls was recorded and checked */
  int64_t trace_kernels;    /* kernels in it, the evaluator's own included */
  int64_t trace_own_kernels; /* the candidate's, on its stream, inside the timed windows */
  uint64_t trace_own_ns;    /* their time, nanoseconds */
  uint64_t trace_other_ns;  /* candidate kernel time on other streams, nanoseconds */
  uint64_t trace_late_ns;   /* candidate kernel time outside the timed windows, nanoseconds */
  int64_t trace_dropped;    /* records CUPTI lost */
  struct kb_cupti_kernel *trace_recs; /* the trace's records, sorted by start (owned: the caller
                                         frees them with kb_free; NULL when none) */
  size_t n_trace_recs;      /* records in trace_recs */
  int has_metrics;          /* 1: the fields below hold the longest kernel's metrics */
  double duration_ns;       /* gpu__time_duration of that kernel, nanoseconds */
  double dram_pct;          /* DRAM throughput, % of peak */
  double sm_pct;            /* SM throughput, % of peak */
  double occupancy_pct;     /* achieved occupancy, % */
  double l2_hit_pct;        /* L2 hit rate, % */
  int metric_passes;        /* replay passes the metrics took */
  char metrics_note[256];   /* why no metrics were read, "" when none were asked or they were */
  /* where the evaluation's wall time went, seconds (CLOCK_MONOTONIC; 0 for a phase not run):
   * loading the libraries, the check calls with the integrity and output checks, warm-up,
   * the timed samples (under the trace when one was asked), the trace's cross-check, the
   * re-check after timing, the metrics pass */
  double t_load, t_check, t_warmup, t_samples, t_trace, t_recheck, t_metrics;
  double *samples;          /* dump_samples: each sample's time per call, us, in order (owned:
                               the caller frees it with kb_free; NULL otherwise) */
  int n_samples;            /* entries in samples */
  double *calls;            /* dump_samples: each timed call's time, us (flushed batches: every
                               call; otherwise each sample's mean per call), in order (owned:
                               the caller frees it with kb_free; NULL otherwise) */
  int n_calls;              /* entries in calls */
  double t_fresh;           /* the fresh samples: draws, checksums, oracle runs, compares, the
                               draws back, their timed calls and control samples */
  int fresh_samples;        /* fresh samples taken (each paired with its controls) */
};

/* Prepares `s` on `d` into `*out` (new, owned by the caller: kb__prepared_free with the same
 * `d`; NULL on failure). Fills inputs on the device, runs the oracle on each set (its outputs
 * must be finite), computes checksums. Returns KB_OK, or with the reason in `err`: KB_ENOMEM
 * (host or device memory), KB_EINVAL (a bad tensor spec), KB_ELOAD / KB_ENOTFOUND (the oracle
 * does not load or has no kb_forward), KB_EINTERNAL (the oracle fails or gives non-finite
 * outputs), KB_EIO (another device error); `*fatal` is set when the device is unusable
 * afterwards. */
int kb__prepare(struct kb__dev *d, const struct kb__prep_spec *s, struct kb__prepared **out,
                int *fatal, struct kb_error *err);
/* Frees `p` (NULL is fine): its device memory on `d`, the one it was prepared on, and the
 * oracle library. */
void kb__prepared_free(struct kb__dev *d, struct kb__prepared *p);
/* The task key `p` was prepared for (borrowed: lives as long as `p`). */
const char *kb__prepared_key(const struct kb__prepared *p);
/* Device memory `p` holds, bytes (its one allocation and its scratch). */
size_t kb__prepared_bytes(const struct kb__prepared *p);
/* The slowest run of the oracle on one input set at prepare, seconds. */
double kb__prepared_oracle_s(const struct kb__prepared *p);
/* 1 when the candidate damaged `p` (its inputs or references changed): drop it. */
int kb__prepared_damaged(const struct kb__prepared *p);

/* 1 when the code or function table of `p`'s oracle (loaded in this process) changed since it
 * was loaded; `p` is then damaged (kb__prepared_damaged), to be prepared anew. Else 0. */
int kb__prepared_oracle_changed(struct kb__prepared *p);

/* Evaluates `e` against `p` on `d`, filling `v`. Every outcome about the candidate is a verdict
 * (returns KB_OK); KB_ENOMEM only when the engine itself ran out of memory, with v->reason set
 * (the verdict then says infra_error). */
int kb__evaluate(struct kb__dev *d, struct kb__prepared *p, const struct kb__eval_spec *e,
                 struct kb__verdict *v);

#endif
