/* Row-wise softmax of a 2-D f32 tensor: y[r][c] = exp(x[r][c] - max_r) / sum_r.
 * Task: input x (f32, [rows, cols]); output y (f32, [rows, cols]).
 * One block per row; each thread keeps a running maximum and a sum rescaled to it (one pass
 * over the row), then the block combines them with warp shuffles and a little shared memory. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

// kb:param BLOCK 128 256 512 1024
#ifndef BLOCK
#define BLOCK 256
#endif

#define WARPS (BLOCK / 32)

/* Combines (max, sum) pairs: the sums are rescaled to the larger maximum. A side that saw no
 * element has m = -inf and s = 0 and changes nothing (-inf - -inf would be NaN). */
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
  float m = -INFINITY, s = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK)
    combine(m, s, row[c], 1.f);
  for (int o = 16; o > 0; o >>= 1)
    combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  __shared__ float wm[WARPS], ws[WARPS];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    wm[warp] = m;
    ws[warp] = s;
  }
  __syncthreads();
  m = -INFINITY;
  s = 0.f;
  for (int w = 0; w < WARPS; w++)
    combine(m, s, wm[w], ws[w]);
  float inv = 1.f / s;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK)
    out[c] = __expf(row[c] - m) * inv;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  if (rows == 0 || cols == 0)
    return 0;
  if (rows > 2147483647)
    return 1; /* one block per row: the grid's x dimension is the limit */
  softmax_rows<<<(unsigned)rows, BLOCK, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, cols);
  return cudaGetLastError() != cudaSuccess;
}
