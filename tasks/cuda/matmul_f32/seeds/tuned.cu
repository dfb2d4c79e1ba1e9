/* f32 matrix product c = a b: a BM x BN tile of c per block, staged through shared memory BK
 * columns of a and BK rows of b at a time; each thread computes a TM x TN sub-tile in
 * registers (the classic register-blocked SGEMM, plain f32 FMA, no tensor cores). */
#include <cuda_runtime.h>

#include "kb_kernel.h"

// kb:param BM 32 64 128
#ifndef BM
#define BM 128
#endif

// kb:param BN 32 64 128
#ifndef BN
#define BN 128
#endif

// kb:param BK 8 16 32
#ifndef BK
#define BK 8
#endif

// kb:param TM 2 4 8
#ifndef TM
#define TM 8
#endif

// kb:param TN 2 4 8
#ifndef TN
#define TN 8
#endif

#define THREADS ((BM / TM) * (BN / TN))
#if BM % TM != 0 || BN % TN != 0 || THREADS > 1024 || THREADS < 32
#error "BM/TM * BN/TN must be 32..1024 threads"
#endif
#if (BM + BN) * BK * 4 > 48 * 1024
#error "the tiles must fit in 48 KiB of shared memory"
#endif

__global__ void __launch_bounds__(THREADS)
sgemm(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c, int m,
      int n, int k) {
  __shared__ float as[BK][BM]; /* a's tile, transposed: as[p][i] = a[row0 + i][k0 + p] */
  __shared__ float bs[BK][BN];
  const int tid = threadIdx.x;
  const int tr = tid / (BN / TN), tc = tid % (BN / TN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++)
      acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int e = tid; e < BM * BK; e += THREADS) {
      int i = e / BK, p = e % BK;
      int gi = row0 + i, gp = k0 + p;
      as[p][i] = (gi < m && gp < k) ? a[(int64_t)gi * k + gp] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += THREADS) {
      int p = e / BN, j = e % BN;
      int gp = k0 + p, gj = col0 + j;
      bs[p][j] = (gp < k && gj < n) ? b[(int64_t)gp * n + gj] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < BK; p++) {
      float ra[TM], rb[TN];
#pragma unroll
      for (int i = 0; i < TM; i++)
        ra[i] = as[p][tr * TM + i];
#pragma unroll
      for (int j = 0; j < TN; j++)
        rb[j] = bs[p][tc * TN + j];
#pragma unroll
      for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
          acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; i++) {
    int gi = row0 + tr * TM + i;
#pragma unroll
    for (int j = 0; j < TN; j++) {
      int gj = col0 + tc * TN + j;
      if (gi < m && gj < n)
        c[(int64_t)gi * n + gj] = acc[i][j];
    }
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 ||
      in[0].dtype != KB_F32 || in[1].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      in[1].shape[0] != in[0].shape[1])
    return 1;
  int m = (int)in[0].shape[0], k = (int)in[0].shape[1], n = (int)in[1].shape[1];
  dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
  sgemm<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (float *)out[0].data, m, n, k);
  return cudaGetLastError() != cudaSuccess;
}
