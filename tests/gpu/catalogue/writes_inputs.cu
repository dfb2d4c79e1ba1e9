// catalogue: expect rejected "modified its inputs"
// catalogue: source KernelBench (src/unit_tests/test_kernels/zero_out_kernel.py)
// catalogue: tier full
// Misbehaves: computes the right sums, then scribbles on its input (and does not restore it).
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void rowsum_then_scribble(float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float acc = 0.f;
  for (int64_t c = 0; c < cols; c++)
    acc += x[r * cols + c];
  y[r] = acc;
  x[r * cols] = 0.f; /* the first element of every row */
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_then_scribble<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
