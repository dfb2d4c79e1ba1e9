/* Inclusive prefix sum along each row of a [rows, cols] f32 matrix: one block of BLOCK threads
 * per row walks it in chunks of BLOCK * ITEMS elements. Each thread loads ITEMS consecutive
 * elements (through shared memory, so the global loads stay coalesced), scans them serially,
 * the block scans the thread totals with warp shuffles, and a running carry joins the chunks. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

// kb:param BLOCK 128 256 512 1024
#ifndef BLOCK
#define BLOCK 256
#endif

// kb:param ITEMS 2 4 8 16
#ifndef ITEMS
#define ITEMS 8
#endif

#define WARPS (BLOCK / 32)
#define CHUNK (BLOCK * ITEMS)
#if CHUNK * 4 > 48 * 1024
#error "BLOCK * ITEMS floats must fit in 48 KiB of shared memory"
#endif

__global__ void __launch_bounds__(BLOCK)
scan_rows(const float *__restrict__ x, float *__restrict__ y, int64_t cols) {
  __shared__ float buf[CHUNK + CHUNK / 32]; /* one pad float every 32 against bank conflicts */
  __shared__ float warp_tot[WARPS];
  __shared__ float carry_s;
  const float *row = x + (int64_t)blockIdx.x * cols;
  float *out = y + (int64_t)blockIdx.x * cols;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float carry = 0.0f;
  for (int64_t c0 = 0; c0 < cols; c0 += CHUNK) {
    /* coalesced load: element e of the chunk goes to buf[e + e / 32] */
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      int e = it * BLOCK + threadIdx.x;
      buf[e + e / 32] = (c0 + e < cols) ? row[c0 + e] : 0.0f;
    }
    __syncthreads();
    float v[ITEMS];
    float run = 0.0f;
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      int e = threadIdx.x * ITEMS + it;
      run += buf[e + e / 32];
      v[it] = run;
    }
    /* exclusive scan of the thread totals over the block */
    float incl = run;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      float t = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o)
        incl += t;
    }
    if (lane == 31)
      warp_tot[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      float wt = lane < WARPS ? warp_tot[lane] : 0.0f;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        float t = __shfl_up_sync(0xffffffffu, wt, o);
        if (lane >= o)
          wt += t;
      }
      if (lane < WARPS)
        warp_tot[lane] = wt; /* inclusive over warps */
    }
    __syncthreads();
    float offset = carry + (incl - run) + (warp > 0 ? warp_tot[warp - 1] : 0.0f);
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      int e = threadIdx.x * ITEMS + it;
      buf[e + e / 32] = v[it] + offset;
    }
    if (threadIdx.x == BLOCK - 1)
      carry_s = offset + run;
    __syncthreads();
#pragma unroll
    for (int it = 0; it < ITEMS; it++) {
      int e = it * BLOCK + threadIdx.x;
      if (c0 + e < cols)
        out[c0 + e] = buf[e + e / 32];
    }
    carry = carry_s;
    __syncthreads();
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || in[0].shape[0] > 2147483647)
    return 1;
  scan_rows<<<(unsigned)in[0].shape[0], BLOCK, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, in[0].shape[1]);
  return cudaGetLastError() != cudaSuccess;
}
