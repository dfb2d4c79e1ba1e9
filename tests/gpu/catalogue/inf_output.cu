// catalogue: expect wrong_output "inf"
// catalogue: source pygpubench (exploits/submission_gc_nan); kernelbrain (the infinite cousin)
// catalogue: tier full
// Right sums except row 3, which overflows to +infinity: allclose(inf, inf) is true, so a checker
// whose reference also overflows lets it pass; kernelbrain's never passes infinity.
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void rowsum_inf(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float acc = 0.f;
  for (int64_t c = 0; c < cols; c++)
    acc += x[r * cols + c];
  y[r] = r == 3 ? acc * 0.f + __int_as_float(0x7f800000) : acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_inf<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
