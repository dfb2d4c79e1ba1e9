/* Per-row cross-entropy: loss[r] = logsumexp(logits[r]) - logits[r][labels[r] mod C] (floor
 * modulo). One block of BLOCK threads per row, one pass: each thread keeps a running (maximum,
 * sum rescaled to it) over VEC-wide loads; warp shuffles and shared memory merge them. */
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
cross_entropy(const float *__restrict__ logits, const int *__restrict__ labels,
              float *__restrict__ loss, int64_t classes) {
  const float *row = logits + (int64_t)blockIdx.x * classes;
  int64_t nvec = (classes % VEC == 0) ? classes / VEC : 0;
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
  for (int64_t c = nvec * VEC + threadIdx.x; c < classes; c += BLOCK)
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
  if (threadIdx.x == 0) {
    m = -INFINITY;
    s = 0.0f;
    for (int w = 0; w < WARPS; w++)
      combine(m, s, wm[w], ws[w]);
    int64_t t = ((int64_t)labels[blockIdx.x] % classes + classes) % classes;
    loss[blockIdx.x] = (m - row[t]) + logf(s);
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_I32 || out[0].dtype != KB_F32 || in[0].shape[0] > 2147483647)
    return 1;
  cross_entropy<<<(unsigned)in[0].shape[0], BLOCK, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const int *)in[1].data, (float *)out[0].data, in[0].shape[1]);
  return cudaGetLastError() != cudaSuccess;
}
