/* Row-wise softmax of a [rows, cols] f32 matrix: one block of BLOCK threads per row. One pass
 * keeps a running (maximum, sum rescaled to it) per thread, reading VEC floats at a time; warp
 * shuffles and shared memory combine the pairs; a second pass writes exp(x - max) / sum. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

// kb:param BLOCK 128 256 512 1024
#ifndef BLOCK
#define BLOCK 512
#endif

// kb:param VEC 1 2 4
#ifndef VEC
#define VEC 4
#endif

#define WARPS (BLOCK / 32)

#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

union pack {
  vec_t v;
  float f[VEC];
};

/* (m, s) <- (m, s) merged with (m2, s2); a side with m = -inf holds nothing */
__device__ __forceinline__ void combine(float &m, float &s, float m2, float s2) {
  if (m2 == -INFINITY)
    return;
  if (m == -INFINITY) {
    m = m2;
    s = s2;
    return;
  }
  float mx = fmaxf(m, m2);
  s = s * __expf(m - mx) + s2 * __expf(m2 - mx);
  m = mx;
}

__global__ void __launch_bounds__(BLOCK)
softmax_rows(const float *__restrict__ x, float *__restrict__ y, int64_t cols) {
  const float *row = x + (int64_t)blockIdx.x * cols;
  float *out = y + (int64_t)blockIdx.x * cols;
  int64_t nvec = (cols % VEC == 0) ? cols / VEC : 0;
  float m = -INFINITY, s = 0.0f;
  for (int64_t i = threadIdx.x; i < nvec; i += BLOCK) {
    pack p;
    p.v = ((const vec_t *)row)[i];
    float pm = p.f[0];
#pragma unroll
    for (int k = 1; k < VEC; k++)
      pm = fmaxf(pm, p.f[k]);
    float ps = 0.0f;
#pragma unroll
    for (int k = 0; k < VEC; k++)
      ps += __expf(p.f[k] - pm);
    combine(m, s, pm, ps);
  }
  for (int64_t c = nvec * VEC + threadIdx.x; c < cols; c += BLOCK)
    combine(m, s, row[c], 1.0f);
  for (int o = 16; o > 0; o >>= 1) {
    float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    combine(m, s, m2, s2);
  }
  __shared__ float wm[WARPS], ws[WARPS];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    wm[warp] = m;
    ws[warp] = s;
  }
  __syncthreads();
  m = -INFINITY;
  s = 0.0f;
#pragma unroll
  for (int w = 0; w < WARPS; w++)
    combine(m, s, wm[w], ws[w]);
  float inv = 1.0f / s;
  for (int64_t i = threadIdx.x; i < nvec; i += BLOCK) {
    pack p;
    p.v = ((const vec_t *)row)[i];
#pragma unroll
    for (int k = 0; k < VEC; k++)
      p.f[k] = __expf(p.f[k] - m) * inv;
    ((vec_t *)out)[i] = p.v;
  }
  for (int64_t c = nvec * VEC + threadIdx.x; c < cols; c += BLOCK)
    out[c] = __expf(row[c] - m) * inv;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  if (rows > 2147483647)
    return 1;
  softmax_rows<<<(unsigned)rows, BLOCK, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, cols);
  return cudaGetLastError() != cudaSuccess;
}
