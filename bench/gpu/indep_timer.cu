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
 *          [--rotate K] [--label NAME]
 * Experiments on where the noise of short kernels comes from: --flush-read evicts by reading the
 * flush buffer instead of writing it; --flushed-us 0 times one flushed call per sample (the old
 * way); --rotate K times K calls back to back after one flush, each on the next input set (cold
 * only when the other sets' data exceed the L2).
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

int main(int argc, char **argv) {
  std::vector<kb_tensor> ins, outs;
  int sets = 4, warmup = 5, min_samples = 10, max_samples = 1000, flush = 1;
  double noise_target = 0.005, max_seconds = 2, short_us = 10, flushed_us = 100;
  int rotate = 0;
  const char *label = "candidate";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    kb_tensor t;
    if ((!strcmp(a, "--in") || !strcmp(a, "--out")) && v && parse_tensor(v, &t) == 0) {
      (a[2] == 'i' ? ins : outs).push_back(t);
      i++;
    } else if (!strcmp(a, "--sets") && v) {
      sets = atoi(argv[++i]);
    } else if (!strcmp(a, "--warmup") && v) {
      warmup = atoi(argv[++i]);
    } else if (!strcmp(a, "--min-samples") && v) {
      min_samples = atoi(argv[++i]);
    } else if (!strcmp(a, "--samples") && v) {
      max_samples = atoi(argv[++i]);
    } else if (!strcmp(a, "--noise") && v) {
      noise_target = atof(argv[++i]);
    } else if (!strcmp(a, "--max-seconds") && v) {
      max_seconds = atof(argv[++i]);
    } else if (!strcmp(a, "--short-us") && v) {
      short_us = atof(argv[++i]);
    } else if (!strcmp(a, "--flushed-us") && v) {
      flushed_us = atof(argv[++i]);
    } else if (!strcmp(a, "--rotate") && v) {
      rotate = atoi(argv[++i]);
    } else if (!strcmp(a, "--label") && v) {
      label = argv[++i];
    } else if (!strcmp(a, "--no-flush")) {
      flush = 0;
    } else if (!strcmp(a, "--flush-read")) {
      flush = 2;
    } else {
      fprintf(stderr, "indep_timer: bad argument \"%s\" (see the comment at the top of "
                      "bench/gpu/indep_timer.cu)\n", a);
      return 2;
    }
  }
  if (ins.empty() || outs.empty() || sets < 1 || max_samples < 1) {
    fprintf(stderr, "indep_timer: need --in and --out tensors\n");
    return 2;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  /* per set: its own inputs and outputs */
  std::vector<std::vector<kb_tensor>> in_sets(sets, ins), out_sets(sets, outs);
  for (int k = 0; k < sets; k++) {
    for (size_t j = 0; j < ins.size(); j++) {
      kb_tensor &t = in_sets[k][j];
      size_t bytes = (size_t)kb_tensor_numel(&t) * kb_dtype_size(t.dtype);
      CK(cudaMalloc(&t.data, bytes));
      fill_kernel<<<prop.multiProcessorCount * 8, 256, 0, s>>>(t.data, t.dtype,
                                                               kb_tensor_numel(&t),
                                                               1000003ULL * k + j);
    }
    for (size_t j = 0; j < outs.size(); j++) {
      kb_tensor &t = out_sets[k][j];
      CK(cudaMalloc(&t.data, (size_t)kb_tensor_numel(&t) * kb_dtype_size(t.dtype)));
    }
  }
  size_t flush_bytes = 2 * (size_t)prop.l2CacheSize;
  int4 *fbuf = NULL;
  CK(cudaMalloc(&fbuf, flush_bytes));
  enum { SLOTS = 64 };
  cudaEvent_t e0[SLOTS], e1[SLOTS];
  for (int k = 0; k < SLOTS; k++) {
    CK(cudaEventCreate(&e0[k]));
    CK(cudaEventCreate(&e1[k]));
  }
  CK(cudaStreamSynchronize(s));
  int next = 0, tick = 0;
  auto call = [&](void) {
    int k = next++ % sets;
    int rc = kb_forward(in_sets[k].data(), (int)ins.size(), out_sets[k].data(),
                        (int)outs.size(), (void *)s);
    if (rc != 0) {
      fprintf(stderr, "indep_timer: kb_forward returned %d\n", rc);
      exit(1);
    }
  };
  auto evict = [&](void) {
    if (flush == 1)
      flush_kernel<<<prop.multiProcessorCount * 8, 256, 0, s>>>(
          fbuf, (long long)(flush_bytes / 16), ++tick);
    else if (flush == 2)
      flush_read_kernel<<<prop.multiProcessorCount * 8, 256, 0, s>>>(
          fbuf, (long long)(flush_bytes / 16), (int *)fbuf);
  };
  /* queued: one eviction, then `batch` calls between one pair of events (behind a spin when
   * batch > 1); flushed: `batch` calls, each evicted and between its own events */
  auto sample = [&](int batch, int flushed) -> double {
    int pairs = flushed ? batch : 1;
    if (!flushed) {
      evict();
      if (batch > 1)
        spin_kernel<<<1, 1, 0, s>>>((unsigned long long)((20.0 + 6.0 * batch) * 1000));
      CK(cudaEventRecord(e0[0], s));
    }
    for (int b = 0; b < batch; b++) {
      if (flushed) {
        evict();
        CK(cudaEventRecord(e0[b], s));
      }
      call();
      if (flushed)
        CK(cudaEventRecord(e1[b], s));
    }
    if (!flushed)
      CK(cudaEventRecord(e1[0], s));
    CK(cudaEventSynchronize(e1[pairs - 1]));
    double us = 0;
    for (int k = 0; k < pairs; k++) {
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0[k], e1[k]));
      us += ms * 1e3;
    }
    CK(cudaGetLastError());
    return us / batch;
  };
  double est = 0;
  for (int i = 0; i < warmup || i < 1; i++)
    est = sample(1, 0);
  int batch = 1, flushed = 0;
  if (rotate > 0)
    batch = rotate;
  else if (est < short_us)
    batch = std::min(256, std::max(2, (int)ceil(50.0 / std::max(est, 0.5))));
  else if (flush && est < flushed_us) {
    flushed = 1;
    batch = std::min((int)SLOTS, std::max(2, (int)ceil(600.0 / est)));
  }
  std::vector<double> v;
  double timed = 0, noise = 0;
  while ((int)v.size() < max_samples) {
    double us = sample(batch, flushed);
    v.push_back(us);
    timed += us * batch * 1e-6;
    if ((int)v.size() >= min_samples) {
      double mean = 0, ss = 0;
      for (double x : v)
        mean += x;
      mean /= v.size();
      for (double x : v)
        ss += (x - mean) * (x - mean);
      noise = sqrt(ss / (v.size() - 1)) / mean;
      if (noise < noise_target || timed > max_seconds)
        break;
    }
  }
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double x : v)
    mean += x;
  mean /= v.size();
  double ss = 0;
  for (double x : v)
    ss += (x - mean) * (x - mean);
  noise = v.size() > 1 ? sqrt(ss / (v.size() - 1)) / mean : 0;
  printf("%s on %s: median %.3f us (p10 %.3f, p90 %.3f), noise %.2f%%, %zu samples, batch %d "
         "(%s), L2 flush %s\n",
         label, prop.name, quantile(sorted, 0.5), quantile(sorted, 0.1), quantile(sorted, 0.9),
         100 * noise, v.size(), batch,
         flushed ? "each call flushed" : rotate ? "rotated, one flush" : "queued",
         flush == 1 ? "by writes" : flush == 2 ? "by reads" : "off");
  printf("{\"label\":\"%s\",\"median_us\":%.4f,\"p10_us\":%.4f,\"p90_us\":%.4f,\"mean_us\":%.4f,"
         "\"min_us\":%.4f,\"noise\":%.5f,\"samples\":%zu,\"batch\":%d,\"batch_flushed\":%d,"
         "\"flush_bytes\":%zu,\"device\":\"%s\"}\n",
         label, quantile(sorted, 0.5), quantile(sorted, 0.1), quantile(sorted, 0.9), mean,
         sorted[0], noise, v.size(), batch, flushed, flush ? flush_bytes : (size_t)0, prop.name);
  return 0;
}
