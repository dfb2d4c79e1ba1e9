/* GELU, y = 0.5 * x * (1 + erf(x / sqrt(2))): vector loads of VEC floats, UNROLL vectors per
 * thread per grid-stride step, a grid of WAVES blocks per SM. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

// kb:param BLOCK 128 256 512 1024
#ifndef BLOCK
#define BLOCK 256
#endif

// kb:param VEC 1 2 4
#ifndef VEC
#define VEC 4
#endif

// kb:param UNROLL 1 2 4
#ifndef UNROLL
#define UNROLL 2
#endif

// kb:param WAVES 4 8 16 32
#ifndef WAVES
#define WAVES 8
#endif

#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#elif VEC == 1
typedef float vec_t;
#else
#error "VEC must be 1, 2 or 4"
#endif

union pack {
  vec_t v;
  float f[VEC];
};

__device__ __forceinline__ float gelu1(float v) {
  return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

__global__ void __launch_bounds__(BLOCK)
gelu_vec(const vec_t *__restrict__ x, vec_t *__restrict__ y, int64_t nvec) {
  int64_t stride = (int64_t)gridDim.x * BLOCK;
  for (int64_t base = (int64_t)blockIdx.x * BLOCK + threadIdx.x; base < nvec;
       base += stride * UNROLL) {
    pack p[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
      if (base + u * stride < nvec)
        p[u].v = x[base + u * stride];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
#pragma unroll
      for (int k = 0; k < VEC; k++)
        p[u].f[k] = gelu1(p[u].f[k]);
      if (base + u * stride < nvec)
        y[base + u * stride] = p[u].v;
    }
  }
}

/* the elements past the last whole vector */
__global__ void gelu_tail(const float *__restrict__ x, float *__restrict__ y, int64_t from,
                          int64_t n) {
  int64_t i = from + threadIdx.x;
  if (i < n)
    y[i] = gelu1(x[i]);
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  cudaStream_t s = (cudaStream_t)stream;
  int64_t n = kb_tensor_numel(&in[0]);
  int64_t nvec = n / VEC;
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return 1;
  int64_t want = (nvec + BLOCK - 1) / BLOCK;
  int64_t blocks = (int64_t)sms * WAVES;
  if (blocks > want)
    blocks = want;
  if (blocks > 0)
    gelu_vec<<<(unsigned)blocks, BLOCK, 0, s>>>((const vec_t *)in[0].data,
                                                (vec_t *)out[0].data, nvec);
  if (nvec * VEC < n)
    gelu_tail<<<1, VEC, 0, s>>>((const float *)in[0].data, (float *)out[0].data, nvec * VEC, n);
  return cudaGetLastError() != cudaSuccess;
}
