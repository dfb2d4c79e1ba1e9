/* LayerNorm over the last dimension, eps 1e-5, with weight and bias: one block of BLOCK threads
 * per row, VEC floats per load. Each thread keeps Welford statistics (count, mean, M2) of its
 * elements; warps and then the block merge them (Chan's formula), which stays accurate when the
 * mean is large against the spread; a second pass normalizes (the row is then in L1/L2). */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

// kb:param BLOCK 128 256 512 1024
#ifndef BLOCK
#define BLOCK 256
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

struct stats {
  float n, mean, m2;
};

__device__ __forceinline__ void merge(stats &a, float nb, float meanb, float m2b) {
  if (nb == 0.0f)
    return;
  float n = a.n + nb;
  float d = meanb - a.mean;
  float fb = nb / n;
  a.mean += d * fb;
  a.m2 += m2b + d * d * a.n * fb;
  a.n = n;
}

__device__ __forceinline__ void push(stats &a, float v) {
  a.n += 1.0f;
  float d = v - a.mean;
  a.mean += d / a.n;
  a.m2 += d * (v - a.mean);
}

__global__ void __launch_bounds__(BLOCK)
layernorm(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
          float *__restrict__ y, int64_t cols) {
  const float *row = x + (int64_t)blockIdx.x * cols;
  float *out = y + (int64_t)blockIdx.x * cols;
  int64_t nvec = (cols % VEC == 0) ? cols / VEC : 0;
  stats st = {0.0f, 0.0f, 0.0f};
  for (int64_t i = threadIdx.x; i < nvec; i += BLOCK) {
    pack p;
    p.v = ((const vec_t *)row)[i];
#pragma unroll
    for (int k = 0; k < VEC; k++)
      push(st, p.f[k]);
  }
  for (int64_t c = nvec * VEC + threadIdx.x; c < cols; c += BLOCK)
    push(st, row[c]);
  for (int o = 16; o > 0; o >>= 1) {
    float n2 = __shfl_xor_sync(0xffffffffu, st.n, o);
    float mean2 = __shfl_xor_sync(0xffffffffu, st.mean, o);
    float m22 = __shfl_xor_sync(0xffffffffu, st.m2, o);
    merge(st, n2, mean2, m22);
  }
  __shared__ float sn[WARPS], smean[WARPS], sm2[WARPS];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    sn[warp] = st.n;
    smean[warp] = st.mean;
    sm2[warp] = st.m2;
  }
  __syncthreads();
  stats all = {0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int k = 0; k < WARPS; k++)
    merge(all, sn[k], smean[k], sm2[k]);
  float mean = all.mean;
  float inv = rsqrtf(all.m2 / (float)cols + 1e-5f);
  for (int64_t i = threadIdx.x; i < nvec; i += BLOCK) {
    pack p, pw, pb;
    p.v = ((const vec_t *)row)[i];
    pw.v = ((const vec_t *)w)[i];
    pb.v = ((const vec_t *)b)[i];
#pragma unroll
    for (int k = 0; k < VEC; k++)
      p.f[k] = (p.f[k] - mean) * inv * pw.f[k] + pb.f[k];
    ((vec_t *)out)[i] = p.v;
  }
  for (int64_t c = nvec * VEC + threadIdx.x; c < cols; c += BLOCK)
    out[c] = (row[c] - mean) * inv * w[c] + b[c];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_F32 || in[2].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      kb_tensor_numel(&in[1]) != in[0].shape[1] || kb_tensor_numel(&in[2]) != in[0].shape[1])
    return 1;
  layernorm<<<(unsigned)in[0].shape[0], BLOCK, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (const float *)in[2].data,
      (float *)out[0].data, in[0].shape[1]);
  return cudaGetLastError() != cudaSuccess;
}
