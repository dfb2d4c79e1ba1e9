/* Row-wise softmax of a [rows, cols] f32 matrix: one thread per row, three passes (maximum,
 * sum of exponentials, normalize). */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

__global__ void softmax(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  const float *row = x + r * cols;
  float *out = y + r * cols;
  float m = -INFINITY;
  for (int64_t c = 0; c < cols; c++)
    m = fmaxf(m, row[c]);
  float s = 0.0f;
  for (int64_t c = 0; c < cols; c++)
    s += expf(row[c] - m);
  for (int64_t c = 0; c < cols; c++)
    out[c] = expf(row[c] - m) / s;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  softmax<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
