/* Trusted device kernels of the CUDA sandbox (see devkern.h).
 *
 * Bit-for-bit agreement with the host (runner/sandbox/inputs.c, runner/sandbox/verify.c) is the point of
 * this file, so:
 *   - every double operation the host does is written with an explicit round-to-nearest
 *     intrinsic (__dadd_rn, __dmul_rn, ... here and through KB_GEN_ADD/SUB/MUL in
 *     inputs_gen.h): nvcc would otherwise contract a + b * c into one fused multiply-add,
 *     which rounds once where the host (strict C11, no FMA contraction) rounds twice;
 *   - the generator and the f16 and bf16 conversions are the host's own code: inputs_gen.h,
 *     included by runner/sandbox/inputs.c too, compiled here for both sides (KB_HD), rather than the
 *     CUDA intrinsics (__float2half_rn agrees on finite values but not on the NaN payload the
 *     host keeps); one source leaves nothing to prove.
 * Every kernel's name starts with kb_dk_ so a CUPTI trace can tell the evaluator's kernels from
 * a candidate's (cupti_trace.h).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "devkern.h"
#include "inputs_gen.h"
#include "kb/alloc.h"
#include "kb_kernel.h"
extern "C" {
#include "kb/task.h" /* a C header without extern "C" of its own */
}

#define THREADS 256

/* The poison patterns of runner/sandbox/verify.c. */
#define POISON_F32 0x7fcbadadu
#define POISON_F64 0x7ff8badbadbadbadULL
#define POISON_F16 0x7eadu
#define POISON_BF16 0x7fedu
#define POISON_BYTE 0xa5u

struct kb_dk_ctx {
  int device;          /* device the scratch lives on */
  int sms;             /* multiprocessors, for grid sizes */
  void *flush;         /* flush buffer (device) */
  size_t flush_bytes;  /* its size, a multiple of 16 */
  unsigned flush_tick; /* value written by the next flush, so no write is a no-op */
  void *scratch;       /* reduction results (device), struct dk_scratch */
};

/* What the reductions leave on the device; read back by one copy. */
struct dk_scratch {
  unsigned long long sum;        /* checksum */
  unsigned long long bad;        /* failing elements */
  unsigned long long first_bad;  /* lowest failing index, ~0 when none */
  unsigned long long max_abs;    /* bits of a non-negative double */
  unsigned long long max_rel;    /* bits of a non-negative double */
};

/* The parameters of one fill, computed on the host (as kb__inputs_fill validates them). */
struct fill_args {
  uint64_t key;  /* kb__rand_key(seed, tensor) */
  double low;    /* uniform, normal */
  double high;   /* uniform, normal */
  int64_t lo;    /* integers: ceil(low) */
  uint64_t span; /* integers: ceil(high) - ceil(low) */
};

/* kb__input_value of runner/sandbox/inputs.c, through the same functions. */
template <int DIST> __device__ static inline double input_value(const fill_args &a, int64_t i) {
  if (DIST == KB_DIST_UNIFORM)
    return kb_gen_uniform(a.key, i, a.low, a.high);
  else if (DIST == KB_DIST_NORMAL)
    return kb_gen_normal(a.key, i, a.low, a.high);
  else
    return kb_gen_integer(a.key, i, a.lo, a.span);
}

/* kb__dtype_store for one element. */
template <int DTYPE> __device__ static inline void store(void *dst, int64_t i, double v) {
  if (DTYPE == KB_F32) {
    ((float *)dst)[i] = __double2float_rn(v);
  } else if (DTYPE == KB_F16) {
    ((uint16_t *)dst)[i] = kb_gen_f32_to_f16(__double2float_rn(v));
  } else if (DTYPE == KB_BF16) {
    ((uint16_t *)dst)[i] = kb_gen_f32_to_bf16(__double2float_rn(v));
  } else if (DTYPE == KB_F64) {
    ((double *)dst)[i] = v;
  } else if (DTYPE == KB_I32) {
    double c = kb_gen_int_clamp(v, -2147483648.0, 2147483647.0);
    ((int32_t *)dst)[i] = (int32_t)__double2ll_rz(c);
  } else if (DTYPE == KB_I64) {
    double c = kb_gen_int_clamp(v, -0x1p63, 0x1p63);
    ((int64_t *)dst)[i] = c >= 0x1p63 ? INT64_MAX : __double2ll_rz(c);
  } else if (DTYPE == KB_U8) {
    ((uint8_t *)dst)[i] = (uint8_t)__double2uint_rz(kb_gen_int_clamp(v, 0.0, 255.0));
  } else {
    ((uint8_t *)dst)[i] = (uint8_t)__double2uint_rz(kb_gen_int_clamp(v, 0.0, 1.0));
  }
}

template <int DTYPE, int DIST>
__global__ void __launch_bounds__(THREADS) kb_dk_fill_kernel(void *dst, int64_t n, fill_args a) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    store<DTYPE>(dst, i, input_value<DIST>(a, i));
}

/* --- launch helpers -------------------------------------------------------------------------- */

static int sm_count(void) {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      sms <= 0)
    return 108;
  return sms;
}

/* Blocks for `work` items of THREADS-thread blocks, capped at `per_sm` blocks a multiprocessor
 * (a grid-stride loop does the rest). */
static unsigned grid_for(int64_t work, int sms, int per_sm) {
  int64_t blocks = (work + THREADS - 1) / THREADS;
  int64_t cap = (int64_t)sms * per_sm;
  if (blocks > cap)
    blocks = cap;
  return blocks < 1 ? 1u : (unsigned)blocks;
}

template <int DTYPE>
static void launch_fill(int dist, void *dev, int64_t n, const fill_args &a, unsigned grid,
                        cudaStream_t s) {
  switch (dist) {
  case KB_DIST_UNIFORM:
    kb_dk_fill_kernel<DTYPE, KB_DIST_UNIFORM><<<grid, THREADS, 0, s>>>(dev, n, a);
    break;
  case KB_DIST_NORMAL:
    kb_dk_fill_kernel<DTYPE, KB_DIST_NORMAL><<<grid, THREADS, 0, s>>>(dev, n, a);
    break;
  default:
    kb_dk_fill_kernel<DTYPE, KB_DIST_INTEGERS><<<grid, THREADS, 0, s>>>(dev, n, a);
    break;
  }
}

int kb__dk_fill(void *dev, int dtype, int64_t n, uint64_t seed, int tensor, int dist, double low,
               double high, void *stream) {
  if (kb_dtype_size(dtype) == 0 || n < 0)
    return cudaErrorInvalidValue;
  fill_args a;
  memset(&a, 0, sizeof a);
  a.key = kb_gen_key(seed, tensor);
  a.low = low;
  a.high = high;
  switch (dist) {
  case KB_DIST_UNIFORM:
  case KB_DIST_NORMAL:
    if (!isfinite(low) || !isfinite(high))
      return cudaErrorInvalidValue;
    break;
  case KB_DIST_INTEGERS: {
    if (!kb_gen_integer_range(low, high, &a.lo, &a.span))
      return cudaErrorInvalidValue;
    break;
  }
  default:
    return cudaErrorInvalidValue;
  }
  if (n == 0)
    return cudaSuccess;
  /* the normal draws cost twelve mixes an element: more blocks in flight help */
  unsigned grid = grid_for(n, sm_count(), dist == KB_DIST_NORMAL ? 32 : 16);
  cudaStream_t s = (cudaStream_t)stream;
  switch ((enum kb_dtype)dtype) {
  case KB_F32: launch_fill<KB_F32>(dist, dev, n, a, grid, s); break;
  case KB_F16: launch_fill<KB_F16>(dist, dev, n, a, grid, s); break;
  case KB_BF16: launch_fill<KB_BF16>(dist, dev, n, a, grid, s); break;
  case KB_F64: launch_fill<KB_F64>(dist, dev, n, a, grid, s); break;
  case KB_I32: launch_fill<KB_I32>(dist, dev, n, a, grid, s); break;
  case KB_I64: launch_fill<KB_I64>(dist, dev, n, a, grid, s); break;
  case KB_U8: launch_fill<KB_U8>(dist, dev, n, a, grid, s); break;
  case KB_BOOL: launch_fill<KB_BOOL>(dist, dev, n, a, grid, s); break;
  }
  return cudaGetLastError();
}

/* --- poison ---------------------------------------------------------------------------------- */

/* 16-byte stores of a pattern that repeats every 8 bytes, over `n16` vectors. */
__global__ void __launch_bounds__(THREADS) kb_dk_poison_vec(uint4 *dst, int64_t n16, uint4 v) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride)
    dst[i] = v;
}

/* Byte stores of the same pattern for a head or tail: byte k of the buffer (counted from an
 * element boundary) is pattern byte k % 8, because every element size divides 8. */
__global__ void __launch_bounds__(THREADS)
kb_dk_poison_bytes(uint8_t *dst, int64_t nbytes, int64_t first, unsigned long long pat) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nbytes; i += stride)
    dst[i] = (uint8_t)(pat >> (8 * ((first + i) & 7)));
}

int kb__dk_poison(void *dev, int dtype, int64_t n, void *stream) {
  int size = kb_dtype_size(dtype);
  if (size == 0 || n < 0)
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  unsigned long long pat;
  switch ((enum kb_dtype)dtype) {
  case KB_F32: pat = ((unsigned long long)POISON_F32 << 32) | POISON_F32; break;
  case KB_F64: pat = POISON_F64; break;
  case KB_F16: pat = 0x0001000100010001ULL * POISON_F16; break;
  case KB_BF16: pat = 0x0001000100010001ULL * POISON_BF16; break;
  default: pat = 0x0101010101010101ULL * POISON_BYTE; break;
  }
  cudaStream_t s = (cudaStream_t)stream;
  int64_t bytes = n * size;
  uint8_t *p = (uint8_t *)dev;
  /* head up to 16-byte alignment, then vectors, then the tail */
  int64_t head = (int64_t)((16 - ((uintptr_t)p & 15)) & 15);
  if (head > bytes)
    head = bytes;
  int sms = sm_count();
  if (head > 0)
    kb_dk_poison_bytes<<<1, THREADS, 0, s>>>(p, head, 0, pat);
  int64_t n16 = (bytes - head) / 16;
  if (n16 > 0) {
    /* the pattern seen from the aligned start: rotate by the head's length */
    unsigned long long r = pat;
    int sh = (int)(8 * (head & 7));
    if (sh)
      r = (pat >> sh) | (pat << (64 - sh));
    uint4 v;
    v.x = (unsigned)r;
    v.y = (unsigned)(r >> 32);
    v.z = v.x;
    v.w = v.y;
    kb_dk_poison_vec<<<grid_for(n16, sms, 16), THREADS, 0, s>>>((uint4 *)(p + head), n16, v);
  }
  int64_t done = head + n16 * 16;
  if (done < bytes)
    kb_dk_poison_bytes<<<1, THREADS, 0, s>>>(p + done, bytes - done, done, pat);
  return cudaGetLastError();
}

/* --- context --------------------------------------------------------------------------------- */

int kb__dk_ctx_new(size_t flush_bytes, struct kb_dk_ctx **out) {
  *out = NULL;
  struct kb_dk_ctx *c = (struct kb_dk_ctx *)kb_calloc(1, sizeof *c);
  if (c == NULL)
    return cudaErrorMemoryAllocation;
  cudaError_t rc = cudaGetDevice(&c->device);
  if (rc == cudaSuccess)
    rc = cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, c->device);
  if (rc == cudaSuccess && flush_bytes == 0) {
    int l2 = 0;
    rc = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, c->device);
    flush_bytes = 2 * (size_t)(l2 > 0 ? l2 : 64 << 20);
  }
  c->flush_bytes = (flush_bytes + 15) & ~(size_t)15;
  if (rc == cudaSuccess)
    rc = cudaMalloc(&c->flush, c->flush_bytes);
  if (rc == cudaSuccess)
    rc = cudaMalloc(&c->scratch, sizeof(struct dk_scratch));
  if (rc != cudaSuccess) {
    kb__dk_ctx_free(c);
    return rc;
  }
  *out = c;
  return cudaSuccess;
}

void kb__dk_ctx_free(struct kb_dk_ctx *c) {
  if (c == NULL)
    return;
  cudaFree(c->flush);
  cudaFree(c->scratch);
  kb_free(c);
}

/* --- checksum -------------------------------------------------------------------------------- */

/* Word i of the buffer: its little-endian bytes [8i, 8i + 8), zero-padded past the end. The
 * checksum is the wrapping sum over i of mix(word_i + (i + 1) * GOLDEN) plus mix(bytes), with
 * kb_gen_mix and KB_GEN_GOLDEN of inputs_gen.h: every term depends on its position, so moved
 * bytes change it, and mix is a bijection, so one changed word changes its term (and the sum) for
 * certain; several changed words cancel with probability about 2^-64. */
__device__ static inline unsigned long long word_term(uint64_t w, uint64_t i) {
  return kb_gen_mix(w + (i + 1) * KB_GEN_GOLDEN);
}

__device__ static inline unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* Aligned bulk: `n16` 16-byte vectors, two words each. */
__global__ void __launch_bounds__(THREADS)
kb_dk_checksum_vec(const uint4 *p, int64_t n16, unsigned long long *sum) {
  unsigned long long acc = 0;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
    uint4 v = __ldcs(p + i);
    acc += word_term(((uint64_t)v.y << 32) | v.x, 2 * (uint64_t)i);
    acc += word_term(((uint64_t)v.w << 32) | v.z, 2 * (uint64_t)i + 1);
  }
  acc = warp_sum(acc);
  __shared__ unsigned long long part[THREADS / 32];
  if ((threadIdx.x & 31) == 0)
    part[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long t = 0;
    for (int w = 0; w < THREADS / 32; w++)
      t += part[w];
    atomicAdd(sum, t);
  }
}

/* Any alignment, byte loads: words [w0, w0 + nw) of a buffer of `bytes` bytes. */
__global__ void __launch_bounds__(THREADS)
kb_dk_checksum_bytes(const uint8_t *p, size_t bytes, int64_t w0, int64_t nw,
                     unsigned long long *sum) {
  unsigned long long acc = 0;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nw; k += stride) {
    uint64_t i = (uint64_t)(w0 + k), w = 0;
    for (int b = 0; b < 8; b++) {
      uint64_t at = 8 * i + (uint64_t)b;
      if (at < bytes)
        w |= (uint64_t)p[at] << (8 * b);
    }
    acc += word_term(w, i);
  }
  acc = warp_sum(acc);
  if ((threadIdx.x & 31) == 0)
    atomicAdd(sum, acc);
}

int kb__dk_checksum(struct kb_dk_ctx *c, const void *dev, size_t bytes, uint64_t *sum,
                   void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  struct dk_scratch *sc = (struct dk_scratch *)c->scratch;
  cudaError_t rc = cudaMemsetAsync(&sc->sum, 0, sizeof sc->sum, s);
  if (rc != cudaSuccess)
    return rc;
  const uint8_t *p = (const uint8_t *)dev;
  int64_t words = (int64_t)((bytes + 7) / 8);
  int64_t n16 = 0;
  if (((uintptr_t)p & 15) == 0) {
    n16 = (int64_t)(bytes / 16);
    if (n16 > 0)
      kb_dk_checksum_vec<<<grid_for(n16, c->sms, 8), THREADS, 0, s>>>((const uint4 *)p, n16,
                                                                        &sc->sum);
  }
  int64_t rest = words - 2 * n16;
  if (rest > 0)
    kb_dk_checksum_bytes<<<grid_for(rest, c->sms, 8), THREADS, 0, s>>>(p, bytes, 2 * n16, rest,
                                                                        &sc->sum);
  rc = cudaGetLastError();
  unsigned long long got = 0;
  if (rc == cudaSuccess)
    rc = cudaMemcpyAsync(&got, &sc->sum, sizeof got, cudaMemcpyDeviceToHost, s);
  if (rc == cudaSuccess)
    rc = cudaStreamSynchronize(s);
  if (rc != cudaSuccess)
    return rc;
  *sum = got + kb_gen_mix((uint64_t)bytes);
  return cudaSuccess;
}

/* --- compare --------------------------------------------------------------------------------- */

/* kb__dtype_load for one element, as a double. */
template <int DTYPE> __host__ __device__ static inline double load(const void *p, int64_t i) {
  if (DTYPE == KB_F32)
    return ((const float *)p)[i];
  if (DTYPE == KB_F16)
    return kb_gen_f16_to_f32(((const uint16_t *)p)[i]);
  if (DTYPE == KB_BF16)
    return kb_gen_bf16_to_f32(((const uint16_t *)p)[i]);
  if (DTYPE == KB_F64)
    return ((const double *)p)[i];
  if (DTYPE == KB_I32)
    return ((const int32_t *)p)[i];
  if (DTYPE == KB_I64)
    return (double)((const int64_t *)p)[i];
  return ((const uint8_t *)p)[i];
}

/* The host's rule for one element (verify.c, kb__verify's loop body). Returns 1 when it passes;
 * `abs_err` and `rel_err` get the element's contribution to the maxima (0 when none). */
template <int DTYPE>
__device__ static inline int check(const void *got, const void *want, int64_t i, double atol,
                                   double rtol, double rel_max, double *abs_err,
                                   double *rel_err) {
  double g = load<DTYPE>(got, i);
  double e = load<DTYPE>(want, i);
  *abs_err = 0;
  *rel_err = 0;
  if (!isfinite(g) || !isfinite(e))
    return 0;
  double err;
  if (DTYPE == KB_I64) {
    int64_t gi = ((const int64_t *)got)[i], ei = ((const int64_t *)want)[i];
    if (gi == ei) {
      err = 0;
    } else {
      err = fabs(__dsub_rn((double)gi, (double)ei));
      if (!(err > 0))
        err = 1;
    }
  } else {
    err = fabs(__dsub_rn(g, e));
  }
  *abs_err = err;
  double ae = fabs(e);
  /* The division is the costliest step, and only a new maximum matters: it is skipped when
   * err / ae certainly does not exceed `rel_max` (the caller's running maximum). The margin
   * (1 - 2^-40) dwarfs the rounding of the products and of the division (2^-53 each) as long
   * as the products are normal numbers, hence the lower bound. */
  if (e != 0 && err > 0) {
    double lim = __dmul_rn(__dmul_rn(rel_max, ae), 1.0 - 0x1p-40);
    if (!(lim >= 0x1p-1000 && err <= lim))
      *rel_err = __ddiv_rn(err, ae);
  }
  int ok = err <= __dadd_rn(atol, __dmul_rn(rtol, ae));
  if (DTYPE == KB_BOOL && g != 0 && g != 1)
    ok = 0;
  return ok;
}

__device__ static inline unsigned long long warp_min(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w < v ? w : v;
  }
  return v;
}

__device__ static inline unsigned long long warp_max(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

/* The storage type of a dtype's element. */
template <int DTYPE> struct dk_elem { typedef uint8_t type; };
template <> struct dk_elem<KB_F32> { typedef float type; };
template <> struct dk_elem<KB_F16> { typedef uint16_t type; };
template <> struct dk_elem<KB_BF16> { typedef uint16_t type; };
template <> struct dk_elem<KB_F64> { typedef double type; };
template <> struct dk_elem<KB_I32> { typedef int32_t type; };
template <> struct dk_elem<KB_I64> { typedef int64_t type; };

/* Non-negative doubles (infinity included) order like their bit patterns, so the maxima are
 * unsigned maxima of the bits. */
template <int DTYPE>
__global__ void __launch_bounds__(THREADS)
kb_dk_compare_kernel(const void *got, const void *want, int64_t n, double atol, double rtol,
                     int vec, struct dk_scratch *out) {
  unsigned long long bad = 0, first = ~0ULL, mabs = 0, mrel = 0;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  /* one element's verdict folded into the thread's running results */
#define KB_DK_FOLD(gp, wp, k, index)                                                           \
  do {                                                                                         \
    double a_, r_;                                                                             \
    if (!check<DTYPE>(gp, wp, k, atol, rtol, __longlong_as_double((long long)mrel), &a_,      \
                      &r_)) {                                                                  \
      bad++;                                                                                   \
      if ((unsigned long long)(index) < first)                                                 \
        first = (unsigned long long)(index);                                                   \
    }                                                                                          \
    unsigned long long ab_ = (unsigned long long)__double_as_longlong(a_);                     \
    unsigned long long rb_ = (unsigned long long)__double_as_longlong(r_);                     \
    mabs = ab_ > mabs ? ab_ : mabs;                                                            \
    mrel = rb_ > mrel ? rb_ : mrel;                                                            \
  } while (0)
  int64_t done = 0;
  if (vec) {
    /* both arrays 16-byte aligned: 16-byte loads, E elements each, then the tail one by one */
    const int E = 16 / (int)sizeof(typename dk_elem<DTYPE>::type);
    int64_t chunks = n / E;
    for (int64_t c = tid; c < chunks; c += stride) {
      uint4 gv = __ldcs((const uint4 *)got + c);
      uint4 wv = __ldcs((const uint4 *)want + c);
#pragma unroll
      for (int k = 0; k < E; k++)
        KB_DK_FOLD(&gv, &wv, k, c * E + k);
    }
    done = chunks * E;
  }
  for (int64_t i = done + tid; i < n; i += stride)
    KB_DK_FOLD(got, want, i, i);
#undef KB_DK_FOLD
  bad = warp_sum(bad);
  first = warp_min(first);
  mabs = warp_max(mabs);
  mrel = warp_max(mrel);
  if ((threadIdx.x & 31) == 0) {
    if (bad) {
      atomicAdd(&out->bad, bad);
      atomicMin(&out->first_bad, first);
    }
    if (mabs)
      atomicMax(&out->max_abs, mabs);
    if (mrel)
      atomicMax(&out->max_rel, mrel);
  }
}

template <int DTYPE> static double load_one_host(const unsigned char *bytes) {
  return load<DTYPE>(bytes, 0);
}

static double host_load(int dtype, const unsigned char *bytes) {
  switch ((enum kb_dtype)dtype) {
  case KB_F32: return load_one_host<KB_F32>(bytes);
  case KB_F16: return load_one_host<KB_F16>(bytes);
  case KB_BF16: return load_one_host<KB_BF16>(bytes);
  case KB_F64: return load_one_host<KB_F64>(bytes);
  case KB_I32: return load_one_host<KB_I32>(bytes);
  case KB_I64: return load_one_host<KB_I64>(bytes);
  case KB_U8: return load_one_host<KB_U8>(bytes);
  case KB_BOOL: return load_one_host<KB_BOOL>(bytes);
  }
  return NAN;
}

template <int DTYPE>
static void launch_compare(const void *g, const void *w, int64_t n, double atol, double rtol,
                           struct dk_scratch *sc, unsigned grid, cudaStream_t s) {
  int vec = ((uintptr_t)g & 15) == 0 && ((uintptr_t)w & 15) == 0;
  kb_dk_compare_kernel<DTYPE><<<grid, THREADS, 0, s>>>(g, w, n, atol, rtol, vec, sc);
}

int kb__dk_compare(struct kb_dk_ctx *c, const void *got_dev, const void *want_dev, int dtype,
                  int64_t n, double atol, double rtol, struct kb_verify_report *rep, int *pass,
                  void *stream) {
  memset(rep, 0, sizeof *rep);
  rep->first_bad = -1;
  *pass = 0;
  int size = kb_dtype_size(dtype);
  if (size == 0 || n < 0) {
    /* what kb__verify reports for an unknown dtype */
    rep->first_bad = 0;
    rep->got = NAN;
    rep->expected = NAN;
    return cudaErrorInvalidValue;
  }
  cudaStream_t s = (cudaStream_t)stream;
  struct dk_scratch *sc = (struct dk_scratch *)c->scratch;
  struct dk_scratch init;
  memset(&init, 0, sizeof init);
  init.first_bad = ~0ULL;
  /* a pageable source: the copy is staged before the call returns, so `init` may go */
  cudaError_t rc = cudaMemcpyAsync(sc, &init, sizeof init, cudaMemcpyHostToDevice, s);
  if (rc != cudaSuccess)
    return rc;
  if (n > 0) {
    unsigned grid = grid_for(n, c->sms, 8);
    switch ((enum kb_dtype)dtype) {
    case KB_F32: launch_compare<KB_F32>(got_dev, want_dev, n, atol, rtol, sc, grid, s); break;
    case KB_F16: launch_compare<KB_F16>(got_dev, want_dev, n, atol, rtol, sc, grid, s); break;
    case KB_BF16: launch_compare<KB_BF16>(got_dev, want_dev, n, atol, rtol, sc, grid, s); break;
    case KB_F64: launch_compare<KB_F64>(got_dev, want_dev, n, atol, rtol, sc, grid, s); break;
    case KB_I32: launch_compare<KB_I32>(got_dev, want_dev, n, atol, rtol, sc, grid, s); break;
    case KB_I64: launch_compare<KB_I64>(got_dev, want_dev, n, atol, rtol, sc, grid, s); break;
    case KB_U8: launch_compare<KB_U8>(got_dev, want_dev, n, atol, rtol, sc, grid, s); break;
    case KB_BOOL: launch_compare<KB_BOOL>(got_dev, want_dev, n, atol, rtol, sc, grid, s); break;
    }
    rc = cudaGetLastError();
  }
  struct dk_scratch res;
  if (rc == cudaSuccess)
    rc = cudaMemcpyAsync(&res, sc, sizeof res, cudaMemcpyDeviceToHost, s);
  if (rc == cudaSuccess)
    rc = cudaStreamSynchronize(s);
  if (rc != cudaSuccess)
    return rc;
  rep->checked = n;
  rep->bad = (int64_t)res.bad;
  memcpy(&rep->max_abs_err, &res.max_abs, sizeof rep->max_abs_err);
  memcpy(&rep->max_rel_err, &res.max_rel, sizeof rep->max_rel_err);
  if (res.bad > 0) {
    rep->first_bad = (int64_t)res.first_bad;
    unsigned char g[8], w[8];
    const unsigned char *gp = (const unsigned char *)got_dev + res.first_bad * (size_t)size;
    const unsigned char *wp = (const unsigned char *)want_dev + res.first_bad * (size_t)size;
    rc = cudaMemcpyAsync(g, gp, (size_t)size, cudaMemcpyDeviceToHost, s);
    if (rc == cudaSuccess)
      rc = cudaMemcpyAsync(w, wp, (size_t)size, cudaMemcpyDeviceToHost, s);
    if (rc == cudaSuccess)
      rc = cudaStreamSynchronize(s);
    if (rc != cudaSuccess)
      return rc;
    rep->got = host_load(dtype, g);
    rep->expected = host_load(dtype, w);
  }
  *pass = rep->bad == 0;
  return cudaSuccess;
}

/* --- mask ------------------------------------------------------------------------------------ */

__device__ static inline unsigned long long dk_mask_word(unsigned long long key,
                                                         unsigned long long w) {
  unsigned long long z = key + (w + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* `p` need not be 8-byte aligned as a whole: the evaluator's buffers are 256-byte aligned, so
 * word w sits at byte 8 w; the tail is done bytewise by thread 0 of block 0 */
__global__ void __launch_bounds__(THREADS) kb_dk_mask_kernel(unsigned char *p, int64_t words,
                                                             int64_t tail, unsigned long long key) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  unsigned long long *q = (unsigned long long *)p;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride)
    q[i] ^= dk_mask_word(key, (unsigned long long)i);
  if (tail > 0 && blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long m = dk_mask_word(key, (unsigned long long)words);
    for (int64_t b = 0; b < tail; b++)
      p[words * 8 + b] ^= (unsigned char)(m >> (8 * b));
  }
}

int kb__dk_mask(void *dev, size_t bytes, uint64_t key, void *stream) {
  if (bytes == 0)
    return cudaSuccess;
  if (((uintptr_t)dev & 7) != 0)
    return cudaErrorInvalidValue;
  int64_t words = (int64_t)(bytes / 8), tail = (int64_t)(bytes % 8);
  kb_dk_mask_kernel<<<grid_for(words > 0 ? words : 1, sm_count(), 8), THREADS, 0,
                      (cudaStream_t)stream>>>((unsigned char *)dev, words, tail,
                                               (unsigned long long)key);
  return cudaGetLastError();
}

/* --- L2 flush and spin ----------------------------------------------------------------------- */

__global__ void __launch_bounds__(THREADS) kb_dk_flush_kernel(uint4 *p, int64_t n16, unsigned v) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride)
    p[i] = make_uint4(v, v, v, v);
}

int kb__dk_flush_l2(struct kb_dk_ctx *c, void *stream) {
  int64_t n16 = (int64_t)(c->flush_bytes / 16);
  c->flush_tick++;
  kb_dk_flush_kernel<<<grid_for(n16, c->sms, 8), THREADS, 0, (cudaStream_t)stream>>>(
      (uint4 *)c->flush, n16, c->flush_tick);
  return cudaGetLastError();
}

extern "C" __global__ void kb_dk_spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

int kb__dk_spin(double us, void *stream) {
  if (!(us >= 0) || us > 60e6)
    return cudaErrorInvalidValue;
  kb_dk_spin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned long long)(us * 1000.0));
  return cudaGetLastError();
}
