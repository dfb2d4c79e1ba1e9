/* CUPTI in the sandbox: the kernel trace of a timed region and its cross-check, and hardware
 * metrics of one launch through the CUDA 13 Range Profiler.
 *
 * Kernel trace (cupti_trace.c): the Activity API's CONCURRENT_KERNEL records (which keep kernels
 * concurrent) between kb__cupti_trace_start() and kb__cupti_trace_stop(), copied into plain
 * structs. CUPTI's activity state is process-wide: one trace at a time per process, started and
 * stopped from one thread (the sandbox's). Timestamps are CUPTI's (nanoseconds,
 * cuptiGetTimestamp's clock), the same for every record of a trace.
 *
 * Cross-check: the sandbox brackets every timed call of the candidate with marker kernels on the
 * candidate's stream (kb__dk_spin of devkern.h, kernel name "kb_dk_spin_kernel"), launched right
 * before the start event and right after the end event, so the events' interval appears in
 * CUPTI's clock as the gap between two markers (kb__cupti_windows). kb__cupti_cross_check then
 * sums the time of every kernel that is not the evaluator's own (names containing "kb_dk_") and
 * that ran on another stream, or on the candidate's stream outside every window: work the
 * events did not time. Any such time means `rejected`.
 *
 * Metrics (cupti_range.cu): the Range Profiler in auto-range, kernel-replay mode over the
 * kernels one callback launches: CUPTI replays each kernel as often as its passes need, saving
 * and restoring the memory it writes. Counters need the driver's permission
 * (NVreg_RestrictProfilingToAdminUsers=0, or root) and no other profiler attached;
 * kb__cupti_metrics_probe says whether they can be read and why not, and a caller records that
 * reason rather than failing an evaluation.
 *
 * Errors: functions return KB_OK or a kb error code (kb/error.h) with a message in `err`
 * ("cupti: cuptiActivityEnable: CUPTI_ERROR_...: text"): KB_EINVAL for misuse (a second start,
 * a stop without a start), KB_ENOMEM, KB_EINTERNAL for a CUPTI or CUDA failure.
 */
#ifndef KB_SANDBOX_CUPTI_TRACE_H
#define KB_SANDBOX_CUPTI_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kb_error;

#define KB_CUPTI_NAME_MAX 256 /* kernel names are truncated to this (NUL included) */

/* One kernel execution as CUPTI saw it. */
struct kb_cupti_kernel {
  char name[KB_CUPTI_NAME_MAX]; /* mangled name, truncated */
  uint64_t start;               /* nanoseconds, CUPTI clock */
  uint64_t end;                 /* nanoseconds, CUPTI clock */
  uint32_t stream_id;           /* CUPTI's stream id (kb__cupti_stream_id) */
  uint32_t device_id;           /* CUDA device ordinal */
  uint32_t context_id;          /* CUPTI's context id */
  uint32_t correlation_id;      /* ties the record to its launch call */
  int32_t grid[3];              /* blocks per dimension */
  int32_t block[3];             /* threads per dimension */
  uint16_t registers;           /* registers per thread */
  int32_t static_smem;          /* bytes of static shared memory per block */
  int32_t dynamic_smem;         /* bytes of dynamic shared memory per block */
  uint32_t local_mem;           /* bytes of local memory per thread */
};

/* Starts recording kernels: enables CONCURRENT_KERNEL activity and forgets records of an earlier
 * trace. Initializes CUDA's current context if needed. Errors: KB_EINVAL when a trace is
 * already running, KB_EINTERNAL. */
int kb__cupti_trace_start(struct kb_error *err);

/* Stops recording after the caller synchronized the work it wants recorded: flushes CUPTI's
 * buffers and disables the activity kind. `*recs` gets a new array of `*n` records sorted by
 * start time (free it with kb_free; NULL when none), `*dropped` (may be NULL) the records CUPTI
 * reported lost. Errors: KB_EINVAL without a running trace, KB_ENOMEM, KB_EINTERNAL. */
int kb__cupti_trace_stop(struct kb_cupti_kernel **recs, size_t *n, size_t *dropped,
                        struct kb_error *err);

/* CUPTI's id of `stream` (a cudaStream_t of the current context; NULL = legacy default
 * stream) into `*id`, as kernel records carry it. Errors: KB_EINTERNAL. */
int kb__cupti_stream_id(void *stream, uint32_t *id, struct kb_error *err);

/* A time interval in CUPTI's clock, nanoseconds: [start, end]. */
struct kb_cupti_window {
  uint64_t start;
  uint64_t end;
};

/* Timed windows on stream `stream_id`: the records (borrowed, sorted by start) whose name
 * contains `marker` (borrowed; NULL = "kb_dk_spin_kernel") on that stream are taken in pairs,
 * first and second, third and fourth, ...; each pair gives the window from the end of the first
 * to the start of the second. Writes up to `max` windows into `w` (caller-owned) and their count
 * into `*nw`. Errors: KB_EINVAL for an odd number of markers or more pairs than `max`. */
int kb__cupti_windows(const struct kb_cupti_kernel *recs, size_t n, uint32_t stream_id,
                     const char *marker, struct kb_cupti_window *w, size_t max, size_t *nw,
                     struct kb_error *err);

/* What the cross-check found. */
struct kb_cupti_check {
  int64_t own_kernels;    /* candidate kernels on its stream inside a window */
  uint64_t own_ns;        /* their time, nanoseconds */
  int64_t other_kernels;  /* candidate kernels on any other stream */
  uint64_t other_ns;      /* their time */
  int64_t late_kernels;   /* candidate kernels on its stream running (partly) outside every
                             window: before the start or after the end event */
  uint64_t late_ns;       /* their time outside the windows */
  char reason[320];       /* the first offender, e.g. "kernel \"_Z4copyPKfPfl\" ran 1.2 us on
                             stream 7, not the candidate's stream 13"; "" when clean */
};

/* Cross-checks a trace (`recs`, borrowed) of timed calls against their windows (`w`, `nw`,
 * borrowed; see kb__cupti_windows): kernels whose name contains one of the NULL-terminated
 * `trusted` substrings (borrowed; NULL = {"kb_dk_"}) are the evaluator's and ignored; every
 * other kernel is the candidate's and must lie on stream `stream_id` inside a window. Fills
 * `*out` (caller-owned). Returns 1 when nothing ran elsewhere or outside (other_ns and late_ns
 * both 0), 0 otherwise. Pure; no CUDA call. */
int kb__cupti_cross_check(const struct kb_cupti_kernel *recs, size_t n, uint32_t stream_id,
                         const struct kb_cupti_window *w, size_t nw, const char *const *trusted,
                         struct kb_cupti_check *out);

/* Keeps, in place and in order, the candidate's records of a trace (`recs`, `n`, sorted by
 * start) and returns how many: every record but the evaluator's own (`trusted` as in
 * kb__cupti_cross_check) and, when the baseline was timed interleaved with the candidate
 * (`period` > 0: each sample of `period` windows, the candidate's first, then the baseline's),
 * but those that started in a baseline window on stream `stream_id` (windows `w`, `nw`; window j
 * is the baseline's when (j / period) is odd). Records on other streams or outside every window
 * stay: they are the candidate's. Pure; no CUDA call. */
size_t kb__cupti_keep_candidate(struct kb_cupti_kernel *recs, size_t n, uint32_t stream_id,
                               const struct kb_cupti_window *w, size_t nw, size_t period,
                               const char *const *trusted);

/* --- hardware metrics (cupti_range.cu) ------------------------------------------------------ */

#define KB_CUPTI_MAX_RANGES 16

/* Metrics of one kernel; NaN where the profiler gave none. */
struct kb_cupti_range {
  char name[64];        /* CUPTI's range name (the kernel's launch order, "0", "1", ...) */
  double duration_ns;   /* gpu__time_duration.sum */
  double dram_pct;      /* dram__throughput.avg.pct_of_peak_sustained_elapsed */
  double sm_pct;        /* sm__throughput.avg.pct_of_peak_sustained_elapsed */
  double occupancy_pct; /* sm__warps_active.avg.pct_of_peak_sustained_active */
  double l2_hit_pct;    /* lts__t_sector_hit_rate.pct */
};

struct kb_cupti_metrics {
  int n_ranges;                                   /* kernels profiled (<= KB_CUPTI_MAX_RANGES) */
  int passes;                                     /* replay passes the metrics needed */
  struct kb_cupti_range ranges[KB_CUPTI_MAX_RANGES]; /* in launch order */
  struct kb_cupti_range main;                     /* the longest kernel's (a copy) */
  char chip[32];                                  /* "GH100" */
};

/* Whether hardware counters of the current device can be read here. Returns KB_OK when they
 * can; KB_EINTERNAL when not, with the reason in `err` (may be NULL), e.g. "counters need admin
 * rights (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): ...". Initializes CUDA's current context. */
int kb__cupti_metrics_probe(struct kb_error *err);

/* Runs the work of `launch(arg)` under the Range Profiler and reads the metrics above for each
 * kernel it launched (at most KB_CUPTI_MAX_RANGES; later ones are not profiled). User replay:
 * the work runs once per pass (kb_cupti_metrics.passes), so it must give the same kernels every
 * time; `prepare(arg)` (optional, NULL for none) runs before each pass outside the profiled
 * window (e.g. an L2 flush, so that every pass starts cold). Both enqueue work and return 0, or
 * non-zero to abort; the device is synchronized after each. `arg` is borrowed. Fills `*m`
 * (caller-owned). The profiler's host side is made on the first call and kept for the process.
 * Errors: KB_EINVAL when `prepare` or `launch` failed or no kernel ran, KB_EINTERNAL for a
 * CUPTI failure (the message names the call and CUPTI's reason; insufficient privileges among
 * them). Do not run it while a kernel trace is running. */
int kb__cupti_metrics_measure(int (*prepare)(void *arg), int (*launch)(void *arg), void *arg,
                             struct kb_cupti_metrics *m, struct kb_error *err);

/* Sets up, before the sandbox confines itself (confine.h), what CUPTI and the Range Profiler
 * would otherwise set up lazily on first use (loading libnvperf_host/target, the activity
 * buffers, CUPTI's threads): one kernel trace of a short marker kernel and one metrics
 * measurement of it (none where the counters cannot be read). Returns KB_OK, or the failing
 * step's code with its reason in `err`; a failure is not fatal to the caller (the evaluations
 * then say why they have no trace or metrics). */
int kb__cupti_prewarm(struct kb_error *err);

#ifdef __cplusplus
}
#endif
#endif
