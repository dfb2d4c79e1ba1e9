/* f16 matrix product c = a b with f32 accumulation on tensor cores (WMMA 16x16x16). A block of
 * WARPS_M x WARPS_N warps computes a (WARPS_M * FRAG_M * 16) x (WARPS_N * FRAG_N * 16) tile of
 * c; each warp holds FRAG_M x FRAG_N f32 accumulator fragments. BK columns of a and rows of b
 * are staged in shared memory per step (16-byte loads); the result goes through a per-warp
 * f32 staging tile to become f16. Shapes must be multiples of the tiles (and of 8): the
 * kernel returns 1 otherwise. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "kb_kernel.h"

using namespace nvcuda;

// kb:param WARPS_M 1 2 4
#ifndef WARPS_M
#define WARPS_M 2
#endif

// kb:param WARPS_N 1 2 4
#ifndef WARPS_N
#define WARPS_N 2
#endif

// kb:param FRAG_M 1 2 4
#ifndef FRAG_M
#define FRAG_M 2
#endif

// kb:param FRAG_N 1 2 4
#ifndef FRAG_N
#define FRAG_N 4
#endif

// kb:param BK 16 32 64
#ifndef BK
#define BK 32
#endif

#define TILE_M (WARPS_M * FRAG_M * 16)
#define TILE_N (WARPS_N * FRAG_N * 16)
#define THREADS (WARPS_M * WARPS_N * 32)
#define PAD 8 /* halves: keeps rows 16-byte aligned and spreads banks */
#define SMEM_BYTES ((TILE_M * (BK + PAD) + BK * (TILE_N + PAD)) * 2 + WARPS_M * WARPS_N * 256 * 4)
#if SMEM_BYTES > 48 * 1024
#error "the tiles must fit in 48 KiB of shared memory"
#endif

__global__ void __launch_bounds__(THREADS)
hgemm(const __half *__restrict__ a, const __half *__restrict__ b, __half *__restrict__ c, int m,
      int n, int k) {
  __shared__ __align__(16) __half as[TILE_M][BK + PAD];
  __shared__ __align__(16) __half bs[BK][TILE_N + PAD];
  __shared__ __align__(16) float stage[WARPS_M * WARPS_N][16 * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int row0 = blockIdx.y * TILE_M, col0 = blockIdx.x * TILE_N;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FRAG_M][FRAG_N];
#pragma unroll
  for (int i = 0; i < FRAG_M; i++)
#pragma unroll
    for (int j = 0; j < FRAG_N; j++)
      wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < k; k0 += BK) {
    /* 8 halves (16 bytes) per load */
    for (int e = threadIdx.x; e < TILE_M * BK / 8; e += THREADS) {
      int r = e / (BK / 8), cc = (e % (BK / 8)) * 8;
      *(uint4 *)&as[r][cc] = *(const uint4 *)&a[(int64_t)(row0 + r) * k + k0 + cc];
    }
    for (int e = threadIdx.x; e < BK * TILE_N / 8; e += THREADS) {
      int r = e / (TILE_N / 8), cc = (e % (TILE_N / 8)) * 8;
      *(uint4 *)&bs[r][cc] = *(const uint4 *)&b[(int64_t)(k0 + r) * n + col0 + cc];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[FRAG_M];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[FRAG_N];
#pragma unroll
      for (int i = 0; i < FRAG_M; i++)
        wmma::load_matrix_sync(fa[i], &as[(wm * FRAG_M + i) * 16][kk], BK + PAD);
#pragma unroll
      for (int j = 0; j < FRAG_N; j++)
        wmma::load_matrix_sync(fb[j], &bs[kk][(wn * FRAG_N + j) * 16], TILE_N + PAD);
#pragma unroll
      for (int i = 0; i < FRAG_M; i++)
#pragma unroll
        for (int j = 0; j < FRAG_N; j++)
          wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }

  float *st = stage[warp];
#pragma unroll
  for (int i = 0; i < FRAG_M; i++)
#pragma unroll
    for (int j = 0; j < FRAG_N; j++) {
      wmma::store_matrix_sync(st, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      int r0 = row0 + (wm * FRAG_M + i) * 16, c0 = col0 + (wn * FRAG_N + j) * 16;
      for (int e = lane; e < 256; e += 32)
        c[(int64_t)(r0 + e / 16) * n + c0 + e % 16] = __float2half(st[e]);
      __syncwarp();
    }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 ||
      in[0].dtype != KB_F16 || in[1].dtype != KB_F16 || out[0].dtype != KB_F16 ||
      in[1].shape[0] != in[0].shape[1])
    return 1;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  if (m % TILE_M != 0 || n % TILE_N != 0 || k % BK != 0 || m > 2147483647 ||
      n > 2147483647 || k > 2147483647)
    return 1; /* written for tile-multiple shapes */
  dim3 grid((unsigned)(n / TILE_N), (unsigned)(m / TILE_M));
  hgemm<<<grid, THREADS, 0, (cudaStream_t)stream>>>((const __half *)in[0].data,
                                                    (const __half *)in[1].data,
                                                    (__half *)out[0].data, (int)m, (int)n, (int)k);
  return cudaGetLastError() != cudaSuccess;
}
