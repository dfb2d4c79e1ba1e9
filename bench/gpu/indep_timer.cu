/* An independent timer for one candidate: the check on the sandbox's full-tier median (±2%).
 *
 * Built separately from kernelbrain, with the candidate source linked in directly:
 *   nvcc -O3 -arch=sm_90 -cudart shared -I common/include \
 *        bench/gpu/indep_timer.cu CANDIDATE.cu -o indep_timer_CANDIDATE
 * It uses no kernelbrain code (only the ABI header kb_kernel.h, which the candidate includes
 * anyway): its own allocation, its own input generator (a hash of the element index, uniform in
 * [-1, 1)), its own L2 flush, its own statistics. Method, nvbench's: one sample = flush the L2
 * by writing a buffer of twice its size, record an event, call kb_forward, record an event; the
 * sample is the events' interval. Input sets rotate (separate buffers). Calls shorter than
 * --short-us are timed in batches queued behind a spin kernel (so launch gaps do not count),
 * the batch's time divided by its size. Calls from --short-us up to --flushed-us (100 us) are
 * timed in flushed batches, as the sandbox does: a sample is the mean of K calls (K * call time
 * about 600 us, K <= 64), each of them flushed and timed by its own pair of events exactly as a
 * single call; the host waits once per sample. Warm-up first; sampling stops at --samples, or
 * once the relative noise (sample standard deviation / mean) is under --noise after
 * --min-samples, or at --max-seconds of timed work.
 *
 * Usage: indep_timer --in DTYPE:D0xD1x... [--in ...] --out DTYPE:SHAPE [--out ...]
 *          [--sets 4] [--warmup 5] [--min-samples 10] [--samples 1000] [--noise 0.005]
 *          [--max-seconds 2] [--short-us 10] [--flushed-us 100] [--no-flush | --flush-read]
 *          [--rotate K] [--label NAME] [--pool-keep] [--l2-reset] [--device-sync] [--dump]
 * Experiments on where the noise of short kernels comes from: --flush-read evicts by reading the
 * flush buffer instead of writing it; --flushed-us 0 times one flushed call per sample (the old
 * way); --rotate K times K calls back to back after one flush, each on the next input set (cold
 * only when the other sets' data exceed the L2). What the sandbox does around its calls, one at
 * a time (tests/gpu/timing_probe.sh): --pool-keep keeps the stream-ordered pool's memory (its
 * release threshold at the maximum), --l2-reset undoes L2 persistence by host calls before each
 * sample (cudaCtxResetPersistingL2Cache) and queries before each flushed call, --device-sync
 * waits for the whole device after each sample; --dump adds "samples_us" and "calls_us" (every
 * timed call) to the JSON line.
 * Prints a few lines of text, then one JSON line:
 *   {"label":..., "median_us":..., "p10_us":..., "p90_us":..., "mean_us":..., "min_us":...,
 *    "noise":..., "samples":..., "batch":..., "flush_bytes":..., "device":...}
 * Exit status: 0, 1 when kb_forward fails or a CUDA call does, 2 for a bad command line.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "kb_kernel.h"

#define CK(expr)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (expr);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "indep_timer: %s: %s\n", #expr, cudaGetErrorString(e_));                 \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static int parse_tensor(const char *s, kb_tensor *t) {
  static const char *const names[] = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8", "bool"};
  memset(t, 0, sizeof *t);
  const char *colon = strchr(s, ':');
  if (colon == NULL)
    return -1;
  t->dtype = -1;
  for (int i = 0; i < 8; i++)
    if ((size_t)(colon - s) == strlen(names[i]) && strncmp(s, names[i], colon - s) == 0)
      t->dtype = i;
  if (t->dtype < 0)
    return -1;
  const char *p = colon + 1;
  while (*p) {
    char *end = NULL;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 1 || t->ndim == KB_MAX_DIMS)
      return -1;
    t->shape[t->ndim++] = v;
    p = end;
    if (*p == 'x')
      p++;
    else if (*p)
      return -1;
  }
  return 0;
}

/* Uniform [-1, 1) from a hash of (seed, i), stored as the tensor's dtype. */
__global__ void fill_kernel(void *p, int dtype, long long n, unsigned long long seed) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    unsigned long long x = seed + (unsigned long long)i * 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdULL;
    x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    float u = (float)(x >> 40) * (1.0f / 16777216.0f) * 2.f - 1.f;
    switch (dtype) {
    case KB_F32: ((float *)p)[i] = u; break;
    case KB_F64: ((double *)p)[i] = u; break;
    case KB_F16: ((__half_raw *)p)[i] = __half_raw(__float2half(u)); break;
    case KB_BF16: ((unsigned short *)p)[i] = (unsigned short)(__float_as_uint(u) >> 16); break;
    case KB_I32: ((int *)p)[i] = (int)(u * 1000); break;
    case KB_I64: ((long long *)p)[i] = (long long)(u * 1000); break;
    default: ((unsigned char *)p)[i] = (unsigned char)(x & 1); break;
    }
  }
}

__global__ void flush_kernel(int4 *p, long long n, int v) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    p[i] = make_int4(v, v, v, v);
}

/* The other way to evict: read the buffer (the lines it leaves in the L2 are clean, so the
 * timed call does not share the memory with their write-back). */
__global__ void flush_read_kernel(const int4 *p, long long n, int *sink) {
  int acc = 0;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    int4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff)
    *sink = acc;
}

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

static double quantile(const std::vector<double> &v, double q) {
  double pos = q * (double)(v.size() - 1);
  size_t lo = (size_t)floor(pos), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - (double)lo);
}

struct opts {
  std::vector<kb_tensor> ins, outs;
  int sets = 4, warmup = 5, min_samples = 10, max_samples = 1000, flush = 1, rotate = 0;
  /* experiments on what the sandbox does and this timer does not (tests/gpu/timing_probe.sh):
   * keep the stream-ordered pool's memory (release threshold at its maximum), undo L2
   * persistence by host calls before each sample and each flushed call, wait for the whole
   * device after each sample, print every call's time */
  int pool_keep = 0, l2_reset = 0, device_sync = 0, dump = 0;
  double noise_target = 0.005, max_seconds = 2, short_us = 10, flushed_us = 100;
  const char *label = "candidate";
};

/* A whole number or a number in [lo, hi] from `s`, with its end checked; false when it is not. */
static bool parse_int(const char *s, int lo, int hi, int *out) {
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi)
    return false;
  *out = (int)v;
  return true;
}
static bool parse_real(const char *s, double lo, double *out) {
  char *end = NULL;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || !(v >= lo))
    return false;
  *out = v;
  return true;
}

/* The command line into `o`; 0, or 2 (usage) after saying what is wrong. The timer is built
 * apart from kernelbrain (see the top), so it has its own small parser. */
static int parse_args(int argc, char **argv, opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    kb_tensor t;
    bool ok = v != NULL;
    if ((!strcmp(a, "--in") || !strcmp(a, "--out")) && v && parse_tensor(v, &t) == 0)
      (a[2] == 'i' ? o->ins : o->outs).push_back(t);
    else if (!strcmp(a, "--sets") && v)
      ok = parse_int(v, 1, 1 << 20, &o->sets);
    else if (!strcmp(a, "--warmup") && v)
      ok = parse_int(v, 0, 1 << 20, &o->warmup);
    else if (!strcmp(a, "--min-samples") && v)
      ok = parse_int(v, 1, 1 << 24, &o->min_samples);
    else if (!strcmp(a, "--samples") && v)
      ok = parse_int(v, 1, 1 << 24, &o->max_samples);
    else if (!strcmp(a, "--noise") && v)
      ok = parse_real(v, 0, &o->noise_target);
    else if (!strcmp(a, "--max-seconds") && v)
      ok = parse_real(v, 0, &o->max_seconds);
    else if (!strcmp(a, "--short-us") && v)
      ok = parse_real(v, 0, &o->short_us);
    else if (!strcmp(a, "--flushed-us") && v)
      ok = parse_real(v, 0, &o->flushed_us);
    else if (!strcmp(a, "--rotate") && v)
      ok = parse_int(v, 0, 1 << 16, &o->rotate);
    else if (!strcmp(a, "--label") && v)
      o->label = v;
    else if (!strcmp(a, "--pool-keep") || !strcmp(a, "--l2-reset") ||
             !strcmp(a, "--device-sync") || !strcmp(a, "--dump")) {
      int *f = a[2] == 'p' ? &o->pool_keep : a[2] == 'l' ? &o->l2_reset
               : a[3] == 'e' ? &o->device_sync : &o->dump;
      *f = 1;
      continue;
    } else if (!strcmp(a, "--no-flush") || !strcmp(a, "--flush-read")) {
      o->flush = a[2] == 'n' ? 0 : 2;
      continue;
    } else {
      fprintf(stderr, "indep_timer: bad argument \"%s\" (see the comment at the top of "
                      "bench/gpu/indep_timer.cu)\n", a);
      return 2;
    }
    if (!ok) {
      fprintf(stderr, "indep_timer: %s: bad value \"%s\"\n", a, v);
      return 2;
    }
    i++;
  }
  if (o->ins.empty() || o->outs.empty()) {
    fprintf(stderr, "indep_timer: need --in and --out tensors\n");
    return 2;
  }
  return 0;
}

enum { SLOTS = 64 };

/* The device side of one run: the input and output sets, the flush buffer, the events. */
struct rig {
  const opts *o;
  cudaDeviceProp prop;
  cudaStream_t s;
  std::vector<std::vector<kb_tensor>> in_sets, out_sets;
  size_t flush_bytes;
  int4 *fbuf = NULL;
  cudaEvent_t e0[SLOTS], e1[SLOTS];
  int next = 0, tick = 0;
  int dumping = 0;            /* 1 once sampling began (--dump: warm-up calls are not kept) */
  std::vector<double> calls;  /* --dump: each timed call's time, us */
};

static void rig_init(rig *r, const opts *o) {
  r->o = o;
  CK(cudaGetDeviceProperties(&r->prop, 0));
  CK(cudaStreamCreateWithFlags(&r->s, cudaStreamNonBlocking));
  r->in_sets.assign(o->sets, o->ins);
  r->out_sets.assign(o->sets, o->outs);
  for (int k = 0; k < o->sets; k++) {
    for (size_t j = 0; j < o->ins.size(); j++) {
      kb_tensor &t = r->in_sets[k][j];
      size_t bytes = (size_t)kb_tensor_numel(&t) * kb_dtype_size(t.dtype);
      CK(cudaMalloc(&t.data, bytes));
      fill_kernel<<<r->prop.multiProcessorCount * 8, 256, 0, r->s>>>(
          t.data, t.dtype, kb_tensor_numel(&t), 1000003ULL * k + j);
    }
    for (size_t j = 0; j < o->outs.size(); j++) {
      kb_tensor &t = r->out_sets[k][j];
      CK(cudaMalloc(&t.data, (size_t)kb_tensor_numel(&t) * kb_dtype_size(t.dtype)));
    }
  }
  r->flush_bytes = 2 * (size_t)r->prop.l2CacheSize;
  CK(cudaMalloc(&r->fbuf, r->flush_bytes));
  for (int k = 0; k < SLOTS; k++) {
    CK(cudaEventCreate(&r->e0[k]));
    CK(cudaEventCreate(&r->e1[k]));
  }
  if (o->pool_keep) {
    cudaMemPool_t pool;
    uint64_t keep = UINT64_MAX;
    CK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  CK(cudaStreamSynchronize(r->s));
}

/* The sandbox's L2-persistence undo (runner/sandbox/dev_cuda.c, c_l2_reset), host calls only;
 * `full` 1: the reset always, as at the start of its samples. */
static void rig_l2_reset(rig *r, int full) {
  if (!r->o->l2_reset)
    return;
  size_t limit = 0;
  cudaStreamAttrValue v;
  memset(&v, 0, sizeof v);
  CK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
  CK(cudaStreamGetAttribute(r->s, cudaStreamAttributeAccessPolicyWindow, &v));
  if (full || limit != 0 || v.accessPolicyWindow.num_bytes != 0)
    CK(cudaCtxResetPersistingL2Cache());
}

/* One call of the candidate on the next input set; exits 1 when it fails. */
static void rig_call(rig *r) {
  int k = r->next++ % r->o->sets;
  int rc = kb_forward(r->in_sets[k].data(), (int)r->o->ins.size(), r->out_sets[k].data(),
                      (int)r->o->outs.size(), (void *)r->s);
  if (rc != 0) {
    fprintf(stderr, "indep_timer: kb_forward returned %d\n", rc);
    exit(1);
  }
}

static void rig_evict(rig *r) {
  long long n = (long long)(r->flush_bytes / 16);
  int grid = r->prop.multiProcessorCount * 8;
  if (r->o->flush == 1)
    flush_kernel<<<grid, 256, 0, r->s>>>(r->fbuf, n, ++r->tick);
  else if (r->o->flush == 2)
    flush_read_kernel<<<grid, 256, 0, r->s>>>(r->fbuf, n, (int *)r->fbuf);
}

/* One sample in microseconds per call. Queued: one eviction, then `batch` calls between one pair
 * of events (behind a spin when batch > 1); flushed: `batch` calls, each evicted and between its
 * own events. */
static double rig_sample(rig *r, int batch, int flushed) {
  int pairs = flushed ? batch : 1;
  rig_l2_reset(r, 1);
  if (!flushed) {
    rig_evict(r);
    if (batch > 1)
      spin_kernel<<<1, 1, 0, r->s>>>((unsigned long long)((20.0 + 6.0 * batch) * 1000));
    CK(cudaEventRecord(r->e0[0], r->s));
  }
  for (int b = 0; b < batch; b++) {
    if (flushed) {
      if (b > 0)
        rig_l2_reset(r, 0);
      rig_evict(r);
      CK(cudaEventRecord(r->e0[b], r->s));
    }
    rig_call(r);
    if (flushed)
      CK(cudaEventRecord(r->e1[b], r->s));
  }
  if (!flushed)
    CK(cudaEventRecord(r->e1[0], r->s));
  CK(cudaEventSynchronize(r->e1[pairs - 1]));
  double us = 0;
  for (int k = 0; k < pairs; k++) {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, r->e0[k], r->e1[k]));
    us += ms * 1e3;
    if (r->o->dump && r->dumping)
      r->calls.push_back(ms * 1e3 / (flushed ? 1 : batch));
  }
  if (r->o->device_sync)
    CK(cudaDeviceSynchronize());
  CK(cudaGetLastError());
  return us / batch;
}

/* Sample standard deviation over the mean; 0 for fewer than two samples. */
static double rel_noise(const std::vector<double> &v, double *mean_out) {
  double mean = 0, ss = 0;
  for (double x : v)
    mean += x;
  mean /= v.size();
  for (double x : v)
    ss += (x - mean) * (x - mean);
  *mean_out = mean;
  return v.size() > 1 ? sqrt(ss / (v.size() - 1)) / mean : 0;
}

/* Warm-up, then the batch size and mode from the call's estimated time (see the top). */
static void choose_batch(rig *r, int *batch, int *flushed) {
  const opts *o = r->o;
  double est = 0;
  for (int i = 0; i < o->warmup || i < 1; i++)
    est = rig_sample(r, 1, 0);
  *batch = 1;
  *flushed = 0;
  if (o->rotate > 0)
    *batch = o->rotate;
  else if (est < o->short_us)
    *batch = std::min(256, std::max(2, (int)ceil(50.0 / std::max(est, 0.5))));
  else if (o->flush && est < o->flushed_us) {
    *flushed = 1;
    *batch = std::min((int)SLOTS, std::max(2, (int)ceil(600.0 / est)));
  }
}

int main(int argc, char **argv) {
  opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc)
    return rc;
  rig r;
  rig_init(&r, &o);
  int batch, flushed;
  choose_batch(&r, &batch, &flushed);
  std::vector<double> v;
  double timed = 0, mean = 0;
  r.dumping = 1;
  while ((int)v.size() < o.max_samples) {
    double us = rig_sample(&r, batch, flushed);
    v.push_back(us);
    timed += us * batch * 1e-6;
    if ((int)v.size() >= o.min_samples &&
        (rel_noise(v, &mean) < o.noise_target || timed > o.max_seconds))
      break;
  }
  double noise = rel_noise(v, &mean);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const char *name = r.prop.name;
  printf("%s on %s: median %.3f us (p10 %.3f, p90 %.3f), noise %.2f%%, %zu samples, batch %d "
         "(%s), L2 flush %s\n",
         o.label, name, quantile(sorted, 0.5), quantile(sorted, 0.1), quantile(sorted, 0.9),
         100 * noise, v.size(), batch,
         flushed ? "each call flushed" : o.rotate ? "rotated, one flush" : "queued",
         o.flush == 1 ? "by writes" : o.flush == 2 ? "by reads" : "off");
  printf("{\"label\":\"%s\",\"median_us\":%.4f,\"p10_us\":%.4f,\"p90_us\":%.4f,\"mean_us\":%.4f,"
         "\"min_us\":%.4f,\"noise\":%.5f,\"samples\":%zu,\"batch\":%d,\"batch_flushed\":%d,"
         "\"flush_bytes\":%zu,\"device\":\"%s\"",
         o.label, quantile(sorted, 0.5), quantile(sorted, 0.1), quantile(sorted, 0.9), mean,
         sorted[0], noise, v.size(), batch, flushed, o.flush ? r.flush_bytes : (size_t)0, name);
  if (o.dump) {
    printf(",\"samples_us\":[");
    for (size_t i = 0; i < v.size(); i++)
      printf("%s%.4f", i ? "," : "", v[i]);
    printf("],\"calls_us\":[");
    for (size_t i = 0; i < r.calls.size(); i++)
      printf("%s%.4f", i ? "," : "", r.calls[i]);
    printf("]");
  }
  printf("}\n");
  return 0;
}
