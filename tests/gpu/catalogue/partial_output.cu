// catalogue: expect wrong_output "nan"
// catalogue: source robust-kbench (arXiv:2509.14279: kernels that omit part of the work)
// catalogue: tier full
// Misbehaves: computes only the first half of the rows.
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void rowsum(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float acc = 0.f;
  for (int64_t c = 0; c < cols; c++)
    acc += x[r * cols + c];
  y[r] = acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0] / 2, cols = in[0].shape[1];
  rowsum<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
