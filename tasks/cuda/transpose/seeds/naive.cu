/* Transpose of a [rows, cols] f32 matrix into [cols, rows]: one thread per element, reading
 * along rows of x (coalesced), writing down columns of y. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void transpose(const float *x, float *y, int rows, int cols) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < rows && j < cols)
    y[(int64_t)j * rows + i] = x[(int64_t)i * cols + j];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int rows = (int)in[0].shape[0], cols = (int)in[0].shape[1];
  dim3 block(32, 8);
  dim3 grid((cols + 31) / 32, (rows + 7) / 8);
  transpose<<<grid, block, 0, (cudaStream_t)stream>>>((const float *)in[0].data,
                                                      (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
