// catalogue: expect wrong_output "expected"
// catalogue: source pygpubench (exploits/submission_gpu_scan_zeros); KernelBench (zero_out_kernel.py)
// catalogue: tier full
// Writes zeros, the cheapest constant output (right for a task whose outputs are near zero within
// a loose atol).
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void rowsum_zero(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  (void)x;
  (void)cols;
  y[r] = 0.f;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_zero<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
