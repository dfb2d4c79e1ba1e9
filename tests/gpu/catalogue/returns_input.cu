// catalogue: expect wrong_output "expected"
// catalogue: source wafer.ai field guide (semantic attacks: copies an input to the output)
// catalogue: tier full
// Copies the first column of its input into the output instead of summing the rows: the "return
// the input" shortcut, which the ABI's preallocated outputs turn into a copy.
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void rowsum_copy(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  y[r] = x[r * cols];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_copy<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
