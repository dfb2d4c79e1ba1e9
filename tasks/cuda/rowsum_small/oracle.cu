/* Oracle of the "rowsum_small" task: y[r] = sum over c of x[r][c], accumulated in double and rounded
 * once. One warp per row: each lane adds a strided slice of the row in double, the warp combines
 * the 32 partial sums with shuffles in a fixed order, so the result is deterministic and its only
 * f32 rounding is the last one (a f32 sum of 4096 terms rounds 4095 times). */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void rowsum_oracle(const float *__restrict__ x, float *__restrict__ y, int64_t rows,
                              int64_t cols) {
  int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows)
    return;
  const float *p = x + row * cols;
  double acc = 0.0;
  for (int64_t c = lane; c < cols; c += 32)
    acc += (double)p[c];
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0)
    y[row] = (float)acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || kb_tensor_numel(&out[0]) != in[0].shape[0])
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  if (rows == 0)
    return 0;
  const int warps = 8; /* rows per block */
  rowsum_oracle<<<(unsigned)((rows + warps - 1) / warps), 32 * warps, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
