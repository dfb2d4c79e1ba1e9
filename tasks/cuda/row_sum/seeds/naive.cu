/* Row sums of a [rows, cols] f32 matrix: one thread per row, a plain loop. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void row_sum(const float *x, float *sums, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    float acc = 0.0f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    sums[r] = acc;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  row_sum<<<(unsigned)((rows + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
