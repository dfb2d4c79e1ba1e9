/* Evaluation results: one candidate at one tier, as the runner publishes it to the results
 * stream and the scheduler stores it. Spec: schemas/result.schema.json.
 *
 * JSON form: {"schema": "kernelbrain.result/1", "campaign", "task", "candidate": 64 hex,
 *   "tier": int, "tier_name": string, "attempt": int>=1, "charge_id": string, "runner": string,
 *   "backend": "host"|"cuda", "device": string, "status": see kb_status, "reason": string,
 *   "compile": {"seconds": number, "cached": bool, "registers": int, "spills": int,
 *               "shared_bytes": int, "log": string},
 *   "check": {"sets": int, "max_abs_err": number, "max_rel_err": number},
 *   "timing": {"median_us", "p10_us", "p90_us", "mean_us", "min_us", "noise": number,
 *              "samples": int, "warmup": int,
 *              "baseline_median_us", "same_run_speedup": number,
 *              "torch_eager_us", "torch_compile_us": number}  (absent when not timed; the
 *              baseline pair only when the baseline was re-timed in the same run, the torch
 *              pair only for pytorch-oracle tasks at the full tier)
 *   "profile": {"kernel_us", "dram_pct", "sm_pct", "occupancy_pct", "l2_hit_pct": number,
 *               "trace": {"kernels", "own_kernels", "own_ns", "other_ns", "late_ns",
 *                         "dropped": int>=0},
 *               "kernels": [{"name": string, "grid": [x,y,z], "block": [x,y,z],
 *                            "registers", "static_smem", "dynamic_smem": int>=0,
 *                            "start_ns", "end_ns", "stream", "correlation": int>=0}, ...],
 *               "kernels_dropped": int>=0}
 *              (optional, every member optional: hardware metrics of the longest kernel of one
 *              call; the CUPTI kernel trace's cross-check summary and its candidate kernel
 *              records, at most KB_KERNELS_MAX, the rest counted in kernels_dropped; full tier,
 *              CUDA)
 *   "cost_ms": int>=0 (what to settle), "started": number, "finished": number (unix seconds)}
 * Numbers that are unknown are omitted rather than sent as NaN (JSON has no NaN): every member of
 * "compile", "check" (but "sets"), "timing" (but "samples" and "warmup"), and "started" and
 * "finished" are optional; "compile" is absent when nothing about compiling is known, "check"
 * when no set was checked, "timing" when samples is 0. Required: schema, campaign, task,
 * candidate, tier (0..7), tier_name, attempt (1..1000), charge_id (1..159 printable ASCII), runner
 * (1..63 printable ASCII), backend, device (0..63 printable ASCII), status, reason, cost_ms.
 * "reason" and "compile.log" are free text; a reason longer than 255 bytes is cut on decoding.
 */
#ifndef KB_RESULT_H
#define KB_RESULT_H

#include <stdint.h>

#include "kb/candidate.h"
#include "kb/task.h"

struct kb_error;

/* X(name-in-C, "name in JSON and HDF5") */
#define KB_STATUS_MAP(X)                                                                       \
  X(OK, "ok")                                                                                  \
  X(COMPILE_ERROR, "compile_error")                                                            \
  X(WRONG_OUTPUT, "wrong_output")                                                              \
  X(CRASH, "crash")                                                                            \
  X(TIMEOUT, "timeout")                                                                        \
  X(REJECTED, "rejected")                                                                      \
  X(INFRA_ERROR, "infra_error")

enum kb_status {
#define KB_STATUS_ENUM(n, s) KB_STATUS_##n,
  KB_STATUS_MAP(KB_STATUS_ENUM)
#undef KB_STATUS_ENUM
  KB_STATUS_COUNT
};

const char *kb_status_name(int status); /* "ok" (static); "unknown" for bad values */
int kb_status_from_name(const char *name); /* -1 when unknown */

struct kb_timing {
  int samples;      /* timed calls; 0 = not timed */
  int warmup;       /* untimed calls before */
  double median_us; /* microseconds */
  double p10_us;    /* microseconds */
  double p90_us;    /* microseconds */
  double mean_us;   /* microseconds */
  double min_us;    /* microseconds */
  double noise;     /* relative: standard deviation / mean */
};

#define KB_KERNELS_MAX 256 /* kernel records one result carries at most */
#define KB_KERNEL_NAME_MAX 256 /* bytes of a kernel name, NUL included; longer names are cut */

/* One kernel of the timed calls, as CUPTI's CONCURRENT_KERNEL activity recorded it. */
struct kb_kernel_rec {
  char name[KB_KERNEL_NAME_MAX]; /* mangled name */
  int grid[3];                   /* blocks per dimension */
  int block[3];                  /* threads per dimension */
  int registers;                 /* per thread */
  int static_smem;               /* bytes of static shared memory per block */
  int dynamic_smem;              /* bytes of dynamic shared memory per block */
  int64_t start_ns;              /* CUPTI's clock, nanoseconds */
  int64_t end_ns;                /* CUPTI's clock, nanoseconds */
  int64_t stream;                /* CUPTI's stream id */
  int64_t correlation;           /* CUPTI's correlation id (ties the record to its launch) */
};

/* The kernel trace's cross-check (runner/sandbox/cupti_trace.h); -1 everywhere when there was
 * no trace. */
struct kb_trace_summary {
  int64_t kernels;     /* kernels in the trace, the evaluator's own markers included */
  int64_t own_kernels; /* the candidate's, on its stream inside the timed windows */
  int64_t own_ns;      /* their time, nanoseconds */
  int64_t other_ns;    /* candidate kernel time on other streams, nanoseconds */
  int64_t late_ns;     /* candidate kernel time outside the timed windows, nanoseconds */
  int64_t dropped;     /* records CUPTI lost */
};

struct kb_result {
  char campaign[KB_ID_MAX];
  char task[KB_ID_MAX];
  char candidate[KB_CAND_ID_LEN + 1];
  int tier;                  /* index into the campaign's ladder */
  char tier_name[KB_ID_MAX];
  int attempt;               /* 1 for the first try */
  char charge_id[160];       /* idempotency key of the ledger charge: "<item>#<attempt>" */
  char runner[KB_ID_MAX];    /* runner name, "host:pid" style */
  int backend;               /* enum kb_backend */
  char device[KB_ID_MAX];    /* "cpu", "NVIDIA H200" */
  char confinement[24];      /* the evaluating sandbox's confinement level: "none", "seccomp",
                                "seccomp+landlock" (docs/sandbox.md); "" unknown */
  int status;                /* enum kb_status */
  char reason[256];          /* why, for any status but ok; "" for ok */
  double compile_s;          /* seconds; 0 when cached */
  int compile_cached;        /* 1 when the library came from the cache */
  int registers;             /* per thread, -1 unknown */
  int spills;                /* bytes, -1 unknown */
  int shared_bytes;          /* static shared memory, -1 unknown */
  char *compile_log;         /* trimmed compiler output (owned; NULL when none) */
  int sets_checked;          /* input sets verified */
  double max_abs_err;        /* over all checked outputs; NAN when not checked */
  double max_rel_err;        /* NAN when not checked */
  struct kb_timing timing;
  double baseline_median_us; /* the task's baseline re-timed in the same run, interleaved with
                                the candidate (full tier), microseconds; NAN when not timed */
  double same_run_speedup;   /* baseline_median_us / timing.median_us; NAN when not timed */
  double torch_eager_us;     /* pytorch-oracle tasks, full tier: the module in torch eager,
                                median, timed in the same process; microseconds; NAN unknown */
  double torch_compile_us;   /* the same for torch.compile of the module (inductor) */
  /* hardware metrics of the longest kernel of one call (CUPTI Range Profiler); NAN unknown */
  double kernel_us;          /* its duration as the profiler measured it, microseconds */
  double dram_pct;           /* DRAM throughput, % of peak sustained */
  double sm_pct;             /* SM throughput, % of peak sustained */
  double occupancy_pct;      /* achieved occupancy, % of the peak */
  double l2_hit_pct;         /* L2 hit rate, % */
  struct kb_trace_summary trace; /* -1 everywhere when not traced */
  struct kb_kernel_rec *kernels; /* the candidate's kernel records (owned; NULL when none) */
  int n_kernels;             /* records in `kernels`, 0..KB_KERNELS_MAX */
  int64_t kernels_dropped;   /* candidate kernel records left out past KB_KERNELS_MAX */
  int64_t cost_ms;           /* GPU (or CPU, host backend) milliseconds to settle */
  double started;            /* unix seconds */
  double finished;           /* unix seconds */
};

/* Sets every field of `r` (caller-owned) to its "unknown" value: -1 for tier, attempt, backend,
 * status, registers, spills, shared_bytes and the trace counts; NAN for every double; "" for
 * strings; 0 samples, 0 sets, 0 cost_ms, 0 kernels; compile_log and kernels NULL. Does not
 * free anything (see kb_result_release). */
void kb_result_init(struct kb_result *r);
/* Keeps the torch times `r` (borrowed) carries as a task's latest: each of `*eager_us` and
 * `*compile_us` (caller-owned) takes r's when r has a finite positive one, and `*tier` takes
 * r's tier when either did. The one rule of the scheduler's population and the watch's
 * progress. */
void kb_result_keep_torch(const struct kb_result *r, double *eager_us, double *compile_us,
                          int *tier);
/* Encodes `r` (borrowed) into `*out` (new compact one-line JSON, free with kb_free; NULL on
 * failure). Free text (reason, compile log) is made valid UTF-8 first. Emits only what
 * kb_result_from_json accepts: KB_EINVAL, with its reason, for a result that would not pass
 * (e.g. an unset status or tier). KB_ENOMEM. */
int kb_result_to_json(const struct kb_result *r, char **out, struct kb_error *err);
/* Decodes and validates `text` (borrowed) into `r` (caller-owned; initialized first with
 * kb_result_init, so release an earlier content before). Unknown fields are errors. `where`
 * (borrowed) names the origin for messages. Errors: KB_EPARSE "where:line:col: what is wrong",
 * KB_ENOMEM; on failure `r` holds nothing to release. */
int kb_result_from_json(const char *text, const char *where, struct kb_result *r,
                        struct kb_error *err);
/* Decodes `text` (borrowed), a JSON object with any of the members of "profile" above, into the
 * matching fields of `r` (caller-owned, initialized), replacing its kernel records; fields whose
 * member is absent keep their values. `where` (borrowed) names the origin. Used by the runner
 * for the sandbox's reply. Errors: KB_EPARSE "where:line:col: what is wrong" (then `r` is
 * unchanged), KB_ENOMEM. */
int kb_result_profile_from_json(struct kb_result *r, const char *text, const char *where,
                                struct kb_error *err);
/* Frees the contents of `r` (the compile log, the kernel records); NULL is fine. */
void kb_result_release(struct kb_result *r);

#endif
