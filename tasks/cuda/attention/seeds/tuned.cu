/* Scaled dot-product attention o = softmax(q k^T / sqrt(D)) v, fused (flash-attention style,
 * f32): one thread per query row keeps its q row, a running maximum, a running sum and its
 * output row in registers; a block of BLOCK_Q queries of one (batch, head) walks the keys in
 * tiles of TILE_K rows of k and v staged in shared memory (every thread reads the same key:
 * broadcast). The scores never touch global memory. Head size fixed at HEAD_DIM = 64. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

// kb:param BLOCK_Q 32 64 128 256
#ifndef BLOCK_Q
#define BLOCK_Q 64
#endif

// kb:param TILE_K 16 32 64
#ifndef TILE_K
#define TILE_K 32
#endif

#define HEAD_DIM 64

__global__ void __launch_bounds__(BLOCK_Q)
attention(const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v,
          float *__restrict__ o, int seq, float scale_log2) {
  __shared__ __align__(16) float ks[TILE_K][HEAD_DIM];
  __shared__ __align__(16) float vs[TILE_K][HEAD_DIM];
  const int64_t bh = blockIdx.y;
  const int i = blockIdx.x * BLOCK_Q + threadIdx.x;
  const bool active = i < seq;
  const float *kb = k + bh * seq * HEAD_DIM;
  const float *vb = v + bh * seq * HEAD_DIM;
  float qr[HEAD_DIM], acc[HEAD_DIM];
#pragma unroll
  for (int d = 0; d < HEAD_DIM; d++) {
    qr[d] = active ? q[(bh * seq + i) * HEAD_DIM + d] * scale_log2 : 0.0f;
    acc[d] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f; /* scores in base-2 units: exp2(s - m) */
  for (int j0 = 0; j0 < seq; j0 += TILE_K) {
    for (int e = threadIdx.x; e < TILE_K * HEAD_DIM / 4; e += BLOCK_Q) {
      int r = e / (HEAD_DIM / 4), c4 = e % (HEAD_DIM / 4);
      float4 kz = make_float4(0.f, 0.f, 0.f, 0.f), vz = kz;
      if (j0 + r < seq) {
        kz = ((const float4 *)(kb + (int64_t)(j0 + r) * HEAD_DIM))[c4];
        vz = ((const float4 *)(vb + (int64_t)(j0 + r) * HEAD_DIM))[c4];
      }
      ((float4 *)ks[r])[c4] = kz;
      ((float4 *)vs[r])[c4] = vz;
    }
    __syncthreads();
    int nk = seq - j0 < TILE_K ? seq - j0 : TILE_K;
    for (int j = 0; j < nk; j++) {
      float s = 0.0f;
#pragma unroll
      for (int d = 0; d < HEAD_DIM; d++)
        s = fmaf(qr[d], ks[j][d], s);
      if (s > m) {
        float corr = exp2f(m - s); /* 0 on the first key: m = -inf */
        l *= corr;
#pragma unroll
        for (int d = 0; d < HEAD_DIM; d++)
          acc[d] *= corr;
        m = s;
      }
      float p = exp2f(s - m);
      l += p;
#pragma unroll
      for (int d = 0; d < HEAD_DIM; d++)
        acc[d] = fmaf(p, vs[j][d], acc[d]);
    }
    __syncthreads();
  }
  if (active) {
    float inv = 1.0f / l;
    float *oi = o + (bh * seq + i) * HEAD_DIM;
#pragma unroll
    for (int d = 0; d < HEAD_DIM; d += 4)
      *(float4 *)(oi + d) = make_float4(acc[d] * inv, acc[d + 1] * inv, acc[d + 2] * inv,
                                        acc[d + 3] * inv);
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_F32 || in[2].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      in[0].shape[3] != HEAD_DIM)
    return 1;
  int64_t bh = in[0].shape[0] * in[0].shape[1], seq = in[0].shape[2];
  if (bh > 65535 || seq > 2147483647)
    return 1;
  float scale_log2 = 1.4426950408889634f / sqrtf((float)HEAD_DIM);
  dim3 grid((unsigned)((seq + BLOCK_Q - 1) / BLOCK_Q), (unsigned)bh);
  attention<<<grid, BLOCK_Q, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (const float *)in[2].data,
      (float *)out[0].data, (int)seq, scale_log2);
  return cudaGetLastError() != cudaSuccess;
}
