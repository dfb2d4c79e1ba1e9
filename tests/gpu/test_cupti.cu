/* CUPTI in the sandbox (runner/sandbox/cupti_trace.h), on a GPU.
 *
 * Not a ctest test (CI has no GPU): tests/gpu/run.sh runs it on the H200. Checks
 *   - the kernel record of a known kernel: name, grid, block, static and dynamic shared memory,
 *     registers, start < end, the stream's id;
 *   - the cross-check: clean for honest work between markers; catches a kernel on another
 *     stream (a created one and the legacy default stream), a kernel still running after the end
 *     marker, and a kernel on the candidate's stream outside the timed window;
 *   - the Range Profiler: a memory-bound copy shows high DRAM throughput, a compute-bound kernel
 *     high SM throughput; or the probe's documented reason why counters cannot be read.
 * Exit 0 when all passed (metrics that cannot be read are reported, not failed).
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_trace.h"
#include "devkern.h"
#include "gpu_check.h"
extern "C" { /* C headers without extern "C" of their own */
#include "kb/alloc.h"
#include "kb/error.h"
}

#define KB_OK_OR_DIE(expr, err)                                                                \
  do {                                                                                         \
    if ((expr) != KB_OK) {                                                                     \
      printf("FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, (err).msg);                   \
      exit(2);                                                                                 \
    }                                                                                          \
  } while (0)

__global__ void test_saxpy(const float *x, float *y, int n, float a) {
  __shared__ float tile[64]; /* 256 bytes of static shared memory, for the record */
  extern __shared__ float dyn[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x < 64)
    tile[threadIdx.x] = a;
  dyn[threadIdx.x] = 1.0f;
  __syncthreads();
  if (i < n)
    y[i] = tile[threadIdx.x % 64] * x[i] + y[i] * dyn[threadIdx.x];
}

/* Busy for about `ns` nanoseconds of GPU time (a candidate's hidden work). */
__global__ void test_busy(unsigned long long ns, int *sink) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
  if (sink)
    *sink = 1;
}

__global__ void test_copy(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = x[i];
}

__global__ void test_fma(float *y, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.999f, d = 0.5f;
  for (int i = 0; i < iters; i++) {
    a = fmaf(a, b, c);
    d = fmaf(d, c, b);
  }
  y[blockIdx.x * blockDim.x + threadIdx.x] = a + d;
}

static const struct kb_cupti_kernel *find(const struct kb_cupti_kernel *r, size_t n,
                                          const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strstr(r[i].name, name))
      return &r[i];
  return NULL;
}

struct traced {
  struct kb_cupti_kernel *recs;
  size_t n;
  struct kb_cupti_window w[8];
  size_t nw;
  struct kb_cupti_check chk;
  int clean;
};

/* Starts a trace into `t` (cleared) and queues the opening marker on `s`. */
static void begin(struct traced *t, cudaStream_t s) {
  struct kb_error err = {};
  memset(t, 0, sizeof *t);
  KB_OK_OR_DIE(kb__cupti_trace_start(&err), err);
  CUDA_OK(kb__dk_spin(1, s));
}

/* Ends the trace of `t`: its records, windows on `s` and the cross-check. */
static void finish(struct traced *t, cudaStream_t s) {
  struct kb_error err = {};
  CUDA_OK(cudaDeviceSynchronize());
  size_t dropped = 0;
  KB_OK_OR_DIE(kb__cupti_trace_stop(&t->recs, &t->n, &dropped, &err), err);
  CHECK(dropped == 0, "cupti dropped %zu records", dropped);
  uint32_t sid = 0;
  KB_OK_OR_DIE(kb__cupti_stream_id(s, &sid, &err), err);
  KB_OK_OR_DIE(kb__cupti_windows(t->recs, t->n, sid, NULL, t->w, 8, &t->nw, &err), err);
  t->clean = kb__cupti_cross_check(t->recs, t->n, sid, t->w, t->nw, NULL, &t->chk);
}

int main(void) {
  struct kb_error err = {};
  cudaStream_t s, other;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  const int n = 1 << 20;
  float *x, *y;
  int *sink;
  CUDA_OK(cudaMalloc(&x, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&y, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&sink, sizeof(int)));
  CUDA_OK(cudaMemset(x, 0, n * sizeof(float)));
  CUDA_OK(cudaMemset(y, 0, n * sizeof(float)));
  test_saxpy<<<n / 256, 256, 1024, s>>>(x, y, n, 2.0f); /* load the module before tracing */
  CUDA_OK(cudaDeviceSynchronize());

  /* 1. honest: marker, known kernel, marker */
  {
    struct traced t;
    begin(&t, s);
    CHECK(kb__cupti_trace_start(&err) == KB_EINVAL, "a second start is refused");
    err.code = 0;
    test_saxpy<<<n / 256, 256, 1024, s>>>(x, y, n, 2.0f);
    CUDA_OK(kb__dk_spin(1, s));
    finish(&t, s);
    const struct kb_cupti_kernel *k = find(t.recs, t.n, "test_saxpy");
    CHECK(k != NULL, "no record of test_saxpy among %zu", t.n);
    if (k) {
      uint32_t sid = 0;
      kb__cupti_stream_id(s, &sid, &err);
      printf("record: %s grid (%d,%d,%d) block (%d,%d,%d) regs %u smem %d+%d B local %u B "
             "%.2f us stream %u\n",
             k->name, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2],
             k->registers, k->static_smem, k->dynamic_smem, k->local_mem,
             (double)(k->end - k->start) / 1e3, k->stream_id);
      CHECK(k->grid[0] == n / 256 && k->grid[1] == 1 && k->grid[2] == 1, "grid %d", k->grid[0]);
      CHECK(k->block[0] == 256 && k->block[1] == 1 && k->block[2] == 1, "block %d", k->block[0]);
      CHECK(k->dynamic_smem == 1024, "dynamic shared memory %d", k->dynamic_smem);
      CHECK(k->static_smem == 256, "static shared memory %d", k->static_smem);
      CHECK(k->registers > 0 && k->registers < 256, "registers %u", k->registers);
      CHECK(k->end > k->start, "start %llu end %llu", (unsigned long long)k->start,
            (unsigned long long)k->end);
      CHECK(k->stream_id == sid, "stream id %u, expected %u", k->stream_id, sid);
    }
    CHECK(t.nw == 1, "%zu windows", t.nw);
    CHECK(t.clean && t.chk.own_kernels == 1, "honest work flagged: %s (own %lld)", t.chk.reason,
          (long long)t.chk.own_kernels);
    printf("honest: clean=%d own %lld kernels %.2f us\n", t.clean, (long long)t.chk.own_kernels,
           t.chk.own_ns / 1e3);
    kb_free(t.recs);
  }
  /* 2. a kernel on a stream the candidate created, inside the window */
  {
    struct traced t;
    begin(&t, s);
    test_saxpy<<<n / 256, 256, 1024, other>>>(x, y, n, 2.0f);
    CUDA_OK(kb__dk_spin(30, s));
    finish(&t, s);
    CHECK(!t.clean && t.chk.other_kernels == 1 && t.chk.other_ns > 0,
          "other stream not caught: other %lld", (long long)t.chk.other_kernels);
    printf("other stream: clean=%d other %.2f us: %s\n", t.clean, t.chk.other_ns / 1e3,
           t.chk.reason);
    kb_free(t.recs);
  }
  /* 3. the legacy default stream (what `<<<g, b>>>` without a stream uses) */
  {
    struct traced t;
    begin(&t, s);
    test_saxpy<<<n / 256, 256, 1024>>>(x, y, n, 2.0f);
    CUDA_OK(kb__dk_spin(30, s));
    finish(&t, s);
    CHECK(!t.clean && t.chk.other_kernels == 1, "legacy stream not caught");
    printf("legacy default stream: clean=%d: %s\n", t.clean, t.chk.reason);
    kb_free(t.recs);
  }
  /* 4. work still running after the end marker: a long kernel on another stream, the candidate
   * returning at once (what "returns before its work is done" looks like) */
  {
    struct traced t;
    begin(&t, s);
    test_busy<<<1, 1, 0, other>>>(200000, sink);
    CUDA_OK(kb__dk_spin(1, s));
    finish(&t, s);
    const struct kb_cupti_kernel *b = find(t.recs, t.n, "test_busy");
    CHECK(b && t.nw == 1 && b->end > t.w[0].end, "busy kernel should outlast the window");
    CHECK(!t.clean && t.chk.other_ns >= 150000, "late work not caught: other %.1f us",
          t.chk.other_ns / 1e3);
    printf("after the end: clean=%d other %.1f us: %s\n", t.clean, t.chk.other_ns / 1e3,
           t.chk.reason);
    kb_free(t.recs);
  }
  /* 5. on the candidate's stream but outside the window (launched after the end marker) */
  {
    struct traced t;
    begin(&t, s);
    test_saxpy<<<n / 256, 256, 1024, s>>>(x, y, n, 2.0f);
    CUDA_OK(kb__dk_spin(1, s));
    test_saxpy<<<n / 256, 256, 1024, s>>>(x, y, n, 2.0f);
    finish(&t, s);
    CHECK(!t.clean && t.chk.late_kernels == 1 && t.chk.own_kernels == 1,
          "outside the window not caught: late %lld own %lld", (long long)t.chk.late_kernels,
          (long long)t.chk.own_kernels);
    printf("outside the window: clean=%d late %.2f us: %s\n", t.clean, t.chk.late_ns / 1e3,
           t.chk.reason);
    kb_free(t.recs);
  }
  /* pure checks of the window pairing */
  {
    struct kb_cupti_kernel r[3];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 3; i++) {
      snprintf(r[i].name, sizeof r[i].name, "kb_dk_spin_kernel");
      r[i].start = 100 * (uint64_t)i;
      r[i].end = r[i].start + 10;
    }
    struct kb_cupti_window w[2];
    size_t nw;
    CHECK(kb__cupti_windows(r, 3, 0, NULL, w, 2, &nw, &err) == KB_EINVAL, "odd markers refused");
    err.code = 0;
  }

  /* 6. the Range Profiler */
  struct kb_error why = {};
  int readable = kb__cupti_metrics_probe(&why) == KB_OK;
  printf("metrics probe: %s%s\n", readable ? "counters readable" : "counters not readable: ",
         readable ? "" : why.msg);
  CHECK(readable || why.msg[0] != '\0', "the probe gave no reason");
  if (readable) {
    const long long n4 = (256LL << 20) / 16; /* 256 MiB copied */
    float4 *a, *b;
    CUDA_OK(cudaMalloc(&a, n4 * 16));
    CUDA_OK(cudaMalloc(&b, n4 * 16));
    CUDA_OK(cudaMemset(a, 0, n4 * 16));
    struct kb_cupti_metrics m;
    struct launch_args {
      float4 *a, *b;
      long long n4;
      float *y;
    } la = {a, b, n4, y};
    int rc = kb__cupti_metrics_measure(
        nullptr, [](void *p) -> int {
          launch_args *q = (launch_args *)p;
          test_copy<<<132 * 8, 256>>>(q->a, q->b, q->n4);
          return cudaGetLastError() != cudaSuccess;
        },
        &la, &m, &err);
    CHECK(rc == KB_OK, "measure copy: %s", err.msg);
    if (rc == KB_OK) {
      printf("metrics copy (chip %s, %d passes, %d ranges): %.1f us, DRAM %.1f%%, SM %.1f%%, "
             "occupancy %.1f%%, L2 hit %.1f%%\n",
             m.chip, m.passes, m.n_ranges, m.main.duration_ns / 1e3, m.main.dram_pct,
             m.main.sm_pct, m.main.occupancy_pct, m.main.l2_hit_pct);
      CHECK(m.n_ranges == 1, "%d ranges", m.n_ranges);
      CHECK(m.main.dram_pct > 50, "a copy should be DRAM-bound: %.1f%%", m.main.dram_pct);
      CHECK(m.main.occupancy_pct > 0 && m.main.occupancy_pct <= 100.5, "occupancy %.1f",
            m.main.occupancy_pct);
    }
    err.code = 0;
    rc = kb__cupti_metrics_measure(
        nullptr, [](void *p) -> int {
          launch_args *q = (launch_args *)p;
          test_fma<<<132 * 16, 256>>>(q->y, 20000);
          test_copy<<<132 * 8, 256>>>(q->a, q->b, q->n4);
          return cudaGetLastError() != cudaSuccess;
        },
        &la, &m, &err);
    CHECK(rc == KB_OK, "measure fma+copy: %s", err.msg);
    if (rc == KB_OK) {
      for (int i = 0; i < m.n_ranges; i++)
        printf("metrics range %s: %.1f us, DRAM %.1f%%, SM %.1f%%, occupancy %.1f%%, L2 hit "
               "%.1f%%\n",
               m.ranges[i].name, m.ranges[i].duration_ns / 1e3, m.ranges[i].dram_pct,
               m.ranges[i].sm_pct, m.ranges[i].occupancy_pct, m.ranges[i].l2_hit_pct);
      CHECK(m.n_ranges == 2, "%d ranges", m.n_ranges);
      if (m.n_ranges == 2)
        CHECK(m.ranges[0].sm_pct > 50 && m.ranges[0].dram_pct < 10,
              "fma kernel should be SM-bound: SM %.1f%% DRAM %.1f%%", m.ranges[0].sm_pct,
              m.ranges[0].dram_pct);
    }
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
  }
  /* tracing still works after the profiler */
  {
    struct traced t;
    begin(&t, s);
    test_saxpy<<<n / 256, 256, 1024, s>>>(x, y, n, 2.0f);
    CUDA_OK(kb__dk_spin(1, s));
    finish(&t, s);
    CHECK(t.clean && t.chk.own_kernels == 1, "trace after the profiler: %s", t.chk.reason);
    kb_free(t.recs);
  }
  CUDA_OK(cudaGetLastError());
  printf("%s: %d checks, %d failed\n", failures ? "FAIL" : "PASS", checks, failures);
  return failures ? 1 : 0;
}
