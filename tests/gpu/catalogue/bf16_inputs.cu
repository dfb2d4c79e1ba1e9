// catalogue: expect wrong_output "expected"
// catalogue: source KernelBench (static checker: precision downgrade); wafer.ai field guide
// catalogue: tier full
// Rounds every input to bfloat16 (8 bits of mantissa) before an f32 sum: the bytes of a bf16
// kernel, and sums wrong by far more than the tolerance.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void rowsum_bf16(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float acc = 0.f;
  for (int64_t c = 0; c < cols; c++)
    acc += __bfloat162float(__float2bfloat16(x[r * cols + c]));
  y[r] = acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_bf16<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
