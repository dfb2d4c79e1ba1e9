/* Hardware metrics through the CUDA 13 Range Profiler (see cupti_trace.h).
 *
 * C++ only because cupti_profiler_host.h includes <string>; no C++ type crosses the interface.
 * Sequence: cuptiProfilerInitialize; the chip name and the counter availability image (this is
 * where missing permissions show: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES); a profiler host object
 * that turns metric names into a config image; the range profiler enabled on the context with a
 * counter data image; auto ranges (one per kernel) with user replay (the caller's work is run
 * once per pass, each pass prepared by the caller outside the profiled window, so CUPTI neither
 * saves nor restores device memory: with kernel replay it copied every allocation of the
 * process, gigabytes of prepared tasks, for every pass); decode; evaluate.
 * The host side (initialization, host object, config image: the same for every measurement) is
 * made once per process and kept; the range profiler is enabled on the context per measurement.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_trace.h"
#include "kb/alloc.h"
extern "C" {
#include "kb/error.h" /* a C header without extern "C" of its own */
}

static const char *const metric_names[] = {
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "lts__t_sector_hit_rate.pct",
};
#define N_METRICS (sizeof metric_names / sizeof metric_names[0])

static const char *result_text(CUptiResult r) {
  const char *t = NULL;
  if (cuptiGetResultString(r, &t) != CUPTI_SUCCESS || t == NULL)
    return "unknown";
  return t;
}

/* Everything one measurement holds; released by session_end. */
struct session {
  int initialized;                         /* cuptiProfilerInitialize done */
  CUcontext ctx;                           /* current context, borrowed */
  char chip[32];                           /* chip name */
  uint8_t *avail;                          /* counter availability image (owned) */
  CUpti_Profiler_Host_Object *host;        /* profiler host object */
  uint8_t *config;                         /* config image (owned) */
  size_t config_size;
  size_t passes;
  CUpti_RangeProfiler_Object *rp;          /* range profiler on ctx */
  uint8_t *data;                           /* counter data image (owned) */
  size_t data_size;
};

/* Declares `var`, the parameter struct `type` of a CUPTI call, zeroed with its structSize set
 * (CUPTI's convention for every such struct). */
#define PARAMS(type, var)                                                                      \
  type var;                                                                                    \
  memset(&var, 0, sizeof var);                                                                 \
  var.structSize = type##_STRUCT_SIZE

/* Disables the range profiler of one measurement and frees its counter data image; the host
 * part of `s` stays. */
static void range_end(struct session *s) {
  if (s->rp) {
    PARAMS(CUpti_RangeProfiler_Disable_Params, p);
    p.pRangeProfilerObject = s->rp;
    cuptiRangeProfilerDisable(&p);
    s->rp = NULL;
  }
  kb_free(s->data);
  s->data = NULL;
  s->data_size = 0;
}

/* Ends the whole session: the measurement part (range_end), then the host part. */
static void session_end(struct session *s) {
  range_end(s);
  if (s->host) {
    PARAMS(CUpti_Profiler_Host_Deinitialize_Params, p);
    p.pHostObject = s->host;
    cuptiProfilerHostDeinitialize(&p);
  }
  if (s->initialized) {
    PARAMS(CUpti_Profiler_DeInitialize_Params, p);
    cuptiProfilerDeInitialize(&p);
  }
  kb_free(s->avail);
  kb_free(s->config);
  memset(s, 0, sizeof *s);
}

/* The one check of every CUPTI call: 0 when `r` is CUPTI_SUCCESS; otherwise "NAME (CUPTI's
 * text)" in `why` (`size` bytes; prefixed "counters need admin rights: " for
 * CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) and 2 for missing rights, 1 for anything else. */
static int cupti_check(CUptiResult r, const char *name, char *why, size_t size) {
  if (r == CUPTI_SUCCESS)
    return 0;
  int rights = r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  snprintf(why, size, "%s%s (%s)", rights ? "counters need admin rights: " : "", name,
           result_text(r));
  return rights ? 2 : 1;
}

/* In the session steps: returns the check's non-zero result from the enclosing function. */
#define CALL(name, expr)                                                                       \
  do {                                                                                         \
    int rc_ = cupti_check((expr), (name), why, size);                                          \
    if (rc_ != 0)                                                                              \
      return rc_;                                                                              \
  } while (0)

/* A zeroed image of `bytes` (one more, so never 0) into `*out` (owned by the session); 0, or 1
 * with "out of memory" in `why`. */
static int image_alloc(size_t bytes, uint8_t **out, char *why, size_t size) {
  *out = (uint8_t *)kb_calloc(1, bytes + 1);
  if (*out != NULL)
    return 0;
  snprintf(why, size, "out of memory");
  return 1;
}

/* Ends the measurement that failed and reports `why`. Returns `code`. */
static int measure_failed(struct session *s, int code, const char *why, struct kb_error *err) {
  range_end(s);
  return kb_error_set(err, code, "cupti: %s", why);
}

/* Steps up to a host object with the config image. Returns 0, or non-zero with `why` set. */
static int session_begin(struct session *s, char *why, size_t size) {
  memset(s, 0, sizeof *s);
  cudaError_t ce = cudaFree(NULL);
  if (ce != cudaSuccess) {
    snprintf(why, size, "cannot initialize cuda: %s", cudaGetErrorString(ce));
    return 1;
  }
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cuCtxGetCurrent(&s->ctx) != CUDA_SUCCESS ||
      s->ctx == NULL) {
    snprintf(why, size, "no current cuda context");
    return 1;
  }
  PARAMS(CUpti_Profiler_Initialize_Params, ip);
  CALL("cuptiProfilerInitialize", cuptiProfilerInitialize(&ip));
  s->initialized = 1;

  PARAMS(CUpti_Device_GetChipName_Params, cp);
  cp.deviceIndex = (size_t)dev;
  CALL("cuptiDeviceGetChipName", cuptiDeviceGetChipName(&cp));
  snprintf(s->chip, sizeof s->chip, "%s", cp.pChipName ? cp.pChipName : "?");

  PARAMS(CUpti_Profiler_GetCounterAvailability_Params, ap);
  ap.ctx = s->ctx;
  CALL("cuptiProfilerGetCounterAvailability", cuptiProfilerGetCounterAvailability(&ap));
  if (image_alloc(ap.counterAvailabilityImageSize, &s->avail, why, size))
    return 1;
  ap.pCounterAvailabilityImage = s->avail;
  CALL("cuptiProfilerGetCounterAvailability", cuptiProfilerGetCounterAvailability(&ap));

  PARAMS(CUpti_Profiler_Host_Initialize_Params, hp);
  hp.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hp.pChipName = s->chip;
  hp.pCounterAvailabilityImage = s->avail;
  CALL("cuptiProfilerHostInitialize", cuptiProfilerHostInitialize(&hp));
  s->host = hp.pHostObject;

  PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, mp);
  mp.pHostObject = s->host;
  mp.ppMetricNames = (const char **)metric_names;
  mp.numMetrics = N_METRICS;
  CALL("cuptiProfilerHostConfigAddMetrics", cuptiProfilerHostConfigAddMetrics(&mp));

  PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params, sp);
  sp.pHostObject = s->host;
  CALL("cuptiProfilerHostGetConfigImageSize", cuptiProfilerHostGetConfigImageSize(&sp));
  s->config_size = sp.configImageSize;
  if (image_alloc(s->config_size, &s->config, why, size))
    return 1;
  PARAMS(CUpti_Profiler_Host_GetConfigImage_Params, gp);
  gp.pHostObject = s->host;
  gp.configImageSize = s->config_size;
  gp.pConfigImage = s->config;
  CALL("cuptiProfilerHostGetConfigImage", cuptiProfilerHostGetConfigImage(&gp));

  PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params, np);
  np.configImageSize = s->config_size;
  np.pConfigImage = s->config;
  CALL("cuptiProfilerHostGetNumOfPasses", cuptiProfilerHostGetNumOfPasses(&np));
  s->passes = np.numOfPasses;
  return 0;
}

/* Enables the range profiler with a counter data image for `ranges` kernels and its config. */
static int session_enable(struct session *s, size_t ranges, char *why, size_t size) {
  PARAMS(CUpti_RangeProfiler_Enable_Params, ep);
  ep.ctx = s->ctx;
  CALL("cuptiRangeProfilerEnable", cuptiRangeProfilerEnable(&ep));
  s->rp = ep.pRangeProfilerObject;

  PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params, dp);
  dp.pRangeProfilerObject = s->rp;
  dp.pMetricNames = (const char **)metric_names;
  dp.numMetrics = N_METRICS;
  dp.maxNumOfRanges = ranges;
  dp.maxNumRangeTreeNodes = (uint32_t)ranges;
  CALL("cuptiRangeProfilerGetCounterDataSize", cuptiRangeProfilerGetCounterDataSize(&dp));
  s->data_size = dp.counterDataSize;
  if (image_alloc(s->data_size, &s->data, why, size))
    return 1;
  PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params, ip);
  ip.pRangeProfilerObject = s->rp;
  ip.counterDataSize = s->data_size;
  ip.pCounterData = s->data;
  CALL("cuptiRangeProfilerCounterDataImageInitialize",
       cuptiRangeProfilerCounterDataImageInitialize(&ip));

  PARAMS(CUpti_RangeProfiler_SetConfig_Params, cp);
  cp.pRangeProfilerObject = s->rp;
  cp.configSize = s->config_size;
  cp.pConfig = s->config;
  cp.counterDataImageSize = s->data_size;
  cp.pCounterDataImage = s->data;
  cp.range = CUPTI_AutoRange;
  cp.replayMode = CUPTI_UserReplay;
  cp.maxRangesPerPass = ranges;
  cp.numNestingLevels = 1;
  cp.minNestingLevel = 1;
  cp.passIndex = 0;
  cp.targetNestingLevel = 1;
  CALL("cuptiRangeProfilerSetConfig", cuptiRangeProfilerSetConfig(&cp));
  return 0;
}

/* The host part, made by the first call that needs it and kept for the process (its context
 * is the sandbox's one, never destroyed while the process lives). */
static struct session cached;
static int cached_state; /* 0: not tried, 1: ready, -1: failed (cached_why says why) */
static char cached_why[384];

/* The kept session, or NULL with the reason of its failure in `why`. */
static struct session *host_session(char *why, size_t size) {
  if (cached_state == 0) {
    cached_state = session_begin(&cached, cached_why, sizeof cached_why) == 0 ? 1 : -1;
    if (cached_state < 0)
      session_end(&cached);
  }
  if (cached_state < 0) {
    snprintf(why, size, "%s", cached_why);
    return NULL;
  }
  return &cached;
}

extern "C" int kb__cupti_metrics_probe(struct kb_error *err) {
  char why[384] = "";
  struct session *s = host_session(why, sizeof why);
  if (s == NULL)
    return kb_error_set(err, KB_EINTERNAL, "%s", why);
  int rc = session_enable(s, 1, why, sizeof why);
  range_end(s);
  return rc == 0 ? KB_OK : kb_error_set(err, KB_EINTERNAL, "%s", why);
}

/* Kept whole (100 lines): CUPTI's user-replay protocol, pass after pass, then the decode;
 * its calls must come in this order on one session. */
extern "C" int kb__cupti_metrics_measure(int (*prepare)(void *arg), int (*launch)(void *arg),
                                        void *arg, struct kb_cupti_metrics *m,
                                        struct kb_error *err) {
  memset(m, 0, sizeof *m);
  char why[384] = "";
  size_t size = sizeof why;
  struct session *sp_ = host_session(why, size);
  if (sp_ == NULL)
    return kb_error_set(err, KB_EINTERNAL, "cupti: %s", why);
  struct session &s = *sp_;
  if (session_enable(&s, KB_CUPTI_MAX_RANGES, why, size) != 0)
    return measure_failed(&s, KB_EINTERNAL, why, err);
  snprintf(m->chip, sizeof m->chip, "%s", s.chip);
  m->passes = (int)s.passes;

  /* user replay: one run of the work per pass until CUPTI has every pass (a bound in case it
   * never says so) */
  int all = 0;
  for (size_t pass = 0; !all && pass < s.passes + 2; pass++) {
    int prc = prepare != NULL ? prepare(arg) : 0;
    cudaError_t ce = cudaDeviceSynchronize();
    if (prc != 0 || ce != cudaSuccess) {
      snprintf(why, size, "preparing pass %zu failed: %s", pass,
               ce != cudaSuccess ? cudaGetErrorString(ce) : "prepare returned non-zero");
      return measure_failed(&s, KB_EINVAL, why, err);
    }
    PARAMS(CUpti_RangeProfiler_Start_Params, st);
    st.pRangeProfilerObject = s.rp;
    if (cupti_check(cuptiRangeProfilerStart(&st), "cuptiRangeProfilerStart", why, size))
      return measure_failed(&s, KB_EINTERNAL, why, err);
    int lrc = launch(arg);
    ce = cudaDeviceSynchronize();
    PARAMS(CUpti_RangeProfiler_Stop_Params, sp);
    sp.pRangeProfilerObject = s.rp;
    int stopped = cupti_check(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop", why, size);
    if (lrc != 0 || ce != cudaSuccess) {
      snprintf(why, size, "the profiled launch failed: %s",
               ce != cudaSuccess ? cudaGetErrorString(ce) : "launch returned non-zero");
      return measure_failed(&s, KB_EINVAL, why, err);
    }
    if (stopped)
      return measure_failed(&s, KB_EINTERNAL, why, err);
    all = sp.isAllPassSubmitted != 0;
  }
  if (!all)
    return measure_failed(&s, KB_EINTERNAL, "CUPTI never reported every pass submitted", err);
  PARAMS(CUpti_RangeProfiler_DecodeData_Params, dd);
  dd.pRangeProfilerObject = s.rp;
  if (cupti_check(cuptiRangeProfilerDecodeData(&dd), "cuptiRangeProfilerDecodeData", why, size))
    return measure_failed(&s, KB_EINTERNAL, why, err);
  PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params, ci);
  ci.pCounterDataImage = s.data;
  ci.counterDataImageSize = s.data_size;
  if (cupti_check(cuptiRangeProfilerGetCounterDataInfo(&ci),
                  "cuptiRangeProfilerGetCounterDataInfo", why, size))
    return measure_failed(&s, KB_EINTERNAL, why, err);
  size_t n = ci.numTotalRanges;
  if (n > KB_CUPTI_MAX_RANGES)
    n = KB_CUPTI_MAX_RANGES;
  if (n == 0)
    return measure_failed(&s, KB_EINVAL, "the profiled launch ran no kernel", err);
  int best = 0;
  for (size_t i = 0; i < n; i++) {
    struct kb_cupti_range *g = &m->ranges[i];
    double v[N_METRICS];
    for (size_t k = 0; k < N_METRICS; k++)
      v[k] = NAN;
    PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params, ri);
    ri.pCounterDataImage = s.data;
    ri.counterDataImageSize = s.data_size;
    ri.rangeIndex = i;
    ri.rangeDelimiter = "/";
    if (cuptiRangeProfilerCounterDataGetRangeInfo(&ri) == CUPTI_SUCCESS && ri.rangeName)
      snprintf(g->name, sizeof g->name, "%s", ri.rangeName);
    else
      snprintf(g->name, sizeof g->name, "%zu", i);
    PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params, ev);
    ev.pHostObject = s.host;
    ev.pCounterDataImage = s.data;
    ev.counterDataImageSize = s.data_size;
    ev.rangeIndex = i;
    ev.ppMetricNames = (const char **)metric_names;
    ev.numMetrics = N_METRICS;
    ev.pMetricValues = v;
    if (cupti_check(cuptiProfilerHostEvaluateToGpuValues(&ev),
                    "cuptiProfilerHostEvaluateToGpuValues", why, size))
      return measure_failed(&s, KB_EINTERNAL, why, err);
    g->duration_ns = v[0];
    g->dram_pct = v[1];
    g->sm_pct = v[2];
    g->occupancy_pct = v[3];
    g->l2_hit_pct = v[4];
    if (g->duration_ns > m->ranges[best].duration_ns)
      best = (int)i;
  }
  m->n_ranges = (int)n;
  m->main = m->ranges[best];
  range_end(&s);
  return KB_OK;
}
