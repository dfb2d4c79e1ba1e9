/* CUPTI kernel trace and its cross-check (see cupti_trace.h). */
#include "cupti_trace.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "devkern.h"
#include "kb/error.h"

#define BUFFER_BYTES (4u << 20) /* one activity buffer; CUPTI asks for more as needed */
#define BUFFER_ALIGN 8

/* The process's one trace. CUPTI calls the buffer callbacks from its own thread. */
static struct {
  pthread_mutex_t lock;
  int callbacks;               /* 1 once the callbacks are registered */
  int running;                 /* 1 between start and stop */
  struct kb_cupti_kernel *recs; /* records so far (owned) */
  size_t n, cap;
  size_t dropped;              /* records CUPTI lost */
  int oom;                     /* 1 when a record could not be kept */
} trace = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int cupti_fail(struct kb_error *err, const char *call, CUptiResult r) {
  const char *text = NULL;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == NULL)
    text = "unknown";
  return kb_error_set(err, KB_EINTERNAL, "cupti: %s: %s", call, text);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *max_records = 0;
  *size = 0;
  *buffer = NULL;
  void *p = NULL;
  if (posix_memalign(&p, BUFFER_ALIGN, BUFFER_BYTES) != 0)
    return; /* CUPTI counts the records it cannot store as dropped */
  *buffer = p;
  *size = BUFFER_BYTES;
}

static void keep(const CUpti_ActivityKernel10 *k) {
  if (trace.n == trace.cap) {
    size_t cap = trace.cap ? 2 * trace.cap : 256;
    struct kb_cupti_kernel *r = kb_reallocarray(trace.recs, cap, sizeof *r);
    if (r == NULL) {
      trace.oom = 1;
      return;
    }
    trace.recs = r;
    trace.cap = cap;
  }
  struct kb_cupti_kernel *o = &trace.recs[trace.n++];
  memset(o, 0, sizeof *o);
  snprintf(o->name, sizeof o->name, "%s", k->name ? k->name : "?");
  o->start = k->start;
  o->end = k->end;
  o->stream_id = k->streamId;
  o->device_id = k->deviceId;
  o->context_id = k->contextId;
  o->correlation_id = k->correlationId;
  o->grid[0] = k->gridX;
  o->grid[1] = k->gridY;
  o->grid[2] = k->gridZ;
  o->block[0] = k->blockX;
  o->block[1] = k->blockY;
  o->block[2] = k->blockZ;
  o->registers = k->registersPerThread;
  o->static_smem = k->staticSharedMemory;
  o->dynamic_smem = k->dynamicSharedMemory;
  o->local_mem = k->localMemoryPerThread;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid) {
  pthread_mutex_lock(&trace.lock);
  CUpti_Activity *rec = NULL;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        rec->kind == CUPTI_ACTIVITY_KIND_KERNEL)
      keep((const CUpti_ActivityKernel10 *)rec);
  }
  size_t lost = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &lost) == CUPTI_SUCCESS)
    trace.dropped += lost;
  pthread_mutex_unlock(&trace.lock);
  (void)size;
  free(buffer); /* posix_memalign's (buffer_requested): the wrapper has no aligned allocation */
}

int kb__cupti_trace_start(struct kb_error *err) {
  if (trace.running)
    return kb_error_set(err, KB_EINVAL, "cupti: a kernel trace is already running");
  /* the activity kind applies to contexts created later too, but make sure one exists so a
   * CUDA failure shows here rather than at the first launch */
  cudaError_t ce = cudaFree(NULL);
  if (ce != cudaSuccess)
    return kb_error_set(err, KB_EINTERNAL, "cupti: cannot initialize cuda: %s",
                        cudaGetErrorString(ce));
  CUptiResult r;
  if (!trace.callbacks) {
    r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS)
      return cupti_fail(err, "cuptiActivityRegisterCallbacks", r);
    trace.callbacks = 1;
  }
  pthread_mutex_lock(&trace.lock);
  trace.n = 0;
  trace.dropped = 0;
  trace.oom = 0;
  pthread_mutex_unlock(&trace.lock);
  r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS)
    return cupti_fail(err, "cuptiActivityEnable", r);
  trace.running = 1;
  return KB_OK;
}

static int by_start(const void *a, const void *b) {
  const struct kb_cupti_kernel *x = a, *y = b;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}

int kb__cupti_trace_stop(struct kb_cupti_kernel **recs, size_t *n, size_t *dropped,
                        struct kb_error *err) {
  *recs = NULL;
  *n = 0;
  if (dropped)
    *dropped = 0;
  if (!trace.running)
    return kb_error_set(err, KB_EINVAL, "cupti: no kernel trace is running");
  trace.running = 0;
  int rc = KB_OK;
  CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS)
    rc = cupti_fail(err, "cuptiActivityFlushAll", r);
  r = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS && rc == KB_OK)
    rc = cupti_fail(err, "cuptiActivityDisable", r);
  pthread_mutex_lock(&trace.lock);
  if (rc == KB_OK && trace.oom)
    rc = kb_error_set(err, KB_ENOMEM, "cupti: no memory for the kernel records");
  if (rc == KB_OK && trace.n > 0) {
    qsort(trace.recs, trace.n, sizeof *trace.recs, by_start);
    /* hand the array over; the next trace starts a new one */
    *recs = trace.recs;
    *n = trace.n;
    if (dropped)
      *dropped = trace.dropped;
    trace.recs = NULL;
    trace.cap = 0;
  }
  trace.n = 0;
  pthread_mutex_unlock(&trace.lock);
  return rc;
}

int kb__cupti_stream_id(void *stream, uint32_t *id, struct kb_error *err) {
  CUcontext ctx = NULL;
  cudaError_t ce = cudaFree(NULL);
  if (ce != cudaSuccess)
    return kb_error_set(err, KB_EINTERNAL, "cupti: cannot initialize cuda: %s",
                        cudaGetErrorString(ce));
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == NULL)
    return kb_error_set(err, KB_EINTERNAL, "cupti: no current cuda context");
  CUptiResult r = cuptiGetStreamIdEx(ctx, (CUstream)stream, 0, id);
  if (r != CUPTI_SUCCESS)
    return cupti_fail(err, "cuptiGetStreamIdEx", r);
  return KB_OK;
}

int kb__cupti_windows(const struct kb_cupti_kernel *recs, size_t n, uint32_t stream_id,
                     const char *marker, struct kb_cupti_window *w, size_t max, size_t *nw,
                     struct kb_error *err) {
  if (marker == NULL)
    marker = "kb_dk_spin_kernel";
  *nw = 0;
  size_t markers = 0;
  uint64_t open_end = 0;
  for (size_t i = 0; i < n; i++) {
    if (recs[i].stream_id != stream_id || strstr(recs[i].name, marker) == NULL)
      continue;
    if (markers % 2 == 0) {
      open_end = recs[i].end;
    } else {
      if (*nw == max)
        return kb_error_set(err, KB_EINVAL, "cupti: more than %zu timed windows", max);
      w[*nw].start = open_end;
      w[*nw].end = recs[i].start;
      (*nw)++;
    }
    markers++;
  }
  if (markers % 2 != 0)
    return kb_error_set(err, KB_EINVAL,
                        "cupti: %zu marker kernels on stream %u: one has no partner", markers,
                        stream_id);
  return KB_OK;
}

static int is_trusted(const char *name, const char *const *trusted) {
  static const char *const dflt[] = {"kb_dk_", NULL};
  if (trusted == NULL)
    trusted = dflt;
  for (size_t i = 0; trusted[i] != NULL; i++)
    if (strstr(name, trusted[i]) != NULL)
      return 1;
  return 0;
}

/* Nanoseconds of [s, e] outside every window (windows do not overlap). */
static uint64_t outside(uint64_t s, uint64_t e, const struct kb_cupti_window *w, size_t nw) {
  if (e < s)
    e = s;
  uint64_t inside = 0;
  for (size_t i = 0; i < nw; i++) {
    uint64_t a = s > w[i].start ? s : w[i].start;
    uint64_t b = e < w[i].end ? e : w[i].end;
    if (b > a)
      inside += b - a;
  }
  return (e - s) - (inside > e - s ? e - s : inside);
}

int kb__cupti_cross_check(const struct kb_cupti_kernel *recs, size_t n, uint32_t stream_id,
                         const struct kb_cupti_window *w, size_t nw, const char *const *trusted,
                         struct kb_cupti_check *out) {
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < n; i++) {
    const struct kb_cupti_kernel *k = &recs[i];
    if (is_trusted(k->name, trusted))
      continue;
    uint64_t dur = k->end > k->start ? k->end - k->start : 0;
    if (k->stream_id != stream_id) {
      out->other_kernels++;
      out->other_ns += dur;
      if (out->reason[0] == '\0')
        snprintf(out->reason, sizeof out->reason,
                 "kernel \"%.200s\" ran %.1f us on stream %u, not the candidate's stream %u",
                 k->name, (double)dur / 1e3, k->stream_id, stream_id);
      continue;
    }
    uint64_t late = outside(k->start, k->end, w, nw);
    if (late > 0) {
      out->late_kernels++;
      out->late_ns += late;
      if (out->reason[0] == '\0')
        snprintf(out->reason, sizeof out->reason,
                 "kernel \"%.200s\" ran %.1f us outside the timed interval on stream %u",
                 k->name, (double)late / 1e3, stream_id);
      continue;
    }
    out->own_kernels++;
    out->own_ns += dur;
  }
  return out->other_ns == 0 && out->late_ns == 0 && out->other_kernels == 0 &&
         out->late_kernels == 0;
}

size_t kb__cupti_keep_candidate(struct kb_cupti_kernel *recs, size_t n, uint32_t stream_id,
                               const struct kb_cupti_window *w, size_t nw, size_t period,
                               const char *const *trusted) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    const struct kb_cupti_kernel *k = &recs[i];
    if (is_trusted(k->name, trusted))
      continue;
    int baseline = 0;
    for (size_t j = 0; period > 0 && k->stream_id == stream_id && j < nw; j++)
      if (k->start >= w[j].start && k->start < w[j].end) {
        baseline = (j / period) % 2 == 1;
        break;
      }
    if (baseline)
      continue;
    if (kept != i)
      recs[kept] = *k;
    kept++;
  }
  return kept;
}

/* ---- kb__cupti_prewarm ----------------------------------------------------------------------- */
static int prewarm_launch(void *arg) {
  (void)arg;
  return kb__dk_spin(5.0, NULL);
}

int kb__cupti_prewarm(struct kb_error *err) {
  int rc = kb__cupti_trace_start(err);
  if (rc == KB_OK) {
    int spun = kb__dk_spin(5.0, NULL);
    cudaDeviceSynchronize();
    struct kb_cupti_kernel *recs = NULL;
    size_t n = 0;
    rc = kb__cupti_trace_stop(&recs, &n, NULL, err);
    kb_free(recs);
    if (rc == KB_OK && spun != 0)
      rc = kb_error_set(err, KB_EINTERNAL, "cupti: the marker kernel did not launch");
  }
  if (rc != KB_OK)
    return rc;
  if (kb__cupti_metrics_probe(NULL) != KB_OK)
    return KB_OK; /* no counters to read: nothing of the Range Profiler to set up */
  struct kb_cupti_metrics m;
  return kb__cupti_metrics_measure(NULL, prewarm_launch, NULL, &m, err);
}
