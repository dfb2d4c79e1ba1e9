/* Oracle of task "transpose": y[j][i] = x[i][j].
 *
 * Input  x: f32 [8192, 32768] (1 GiB)   Output y: f32 [32768, 8192] (1 GiB)
 * Tolerance: exact (atol 0, rtol 0): a transpose only moves values. The matrix is not square,
 * so swapped extents read out of bounds or land elements in the wrong place.
 *
 * One thread per output element. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void transpose_oracle(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t n = rows * cols;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n;
       o += (int64_t)gridDim.x * blockDim.x) {
    int64_t j = o / rows, i = o % rows; /* y is [cols, rows]: y[j][i] */
    y[o] = x[i * cols + j];
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || out[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || out[0].shape[0] != in[0].shape[1] ||
      out[0].shape[1] != in[0].shape[0])
    return 1;
  transpose_oracle<<<8192, 256, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, in[0].shape[0], in[0].shape[1]);
  return cudaGetLastError() != cudaSuccess;
}
