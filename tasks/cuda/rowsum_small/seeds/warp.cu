/* Row sums of a f32 matrix: one warp per row, 16-byte loads, a shuffle reduction.
 * Input x: f32 [rows, cols]; output y: f32 [rows]. Consecutive lanes read consecutive float4s of
 * the row (coalesced); the 32 partial sums are combined with __shfl_xor_sync. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

// kb:param WARPS 4 8 16
#ifndef WARPS
#define WARPS 8
#endif

__global__ void __launch_bounds__(32 * WARPS)
rowsum_warp(const float *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t cols) {
  int64_t row = (int64_t)blockIdx.x * WARPS + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows)
    return;
  const float *p = x + row * cols;
  float acc = 0.f;
  int64_t c4 = (cols % 4 == 0) ? cols / 4 : 0; /* float4 path needs 16-byte aligned rows */
  for (int64_t i = lane; i < c4; i += 32) {
    float4 v = ((const float4 *)p)[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (int64_t c = 4 * c4 + lane; c < cols; c += 32)
    acc += p[c];
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0)
    y[row] = acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  if (rows == 0)
    return 0;
  rowsum_warp<<<(unsigned)((rows + WARPS - 1) / WARPS), 32 * WARPS, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
