// catalogue: expect rejected "did not see"
// catalogue: source KernelBench (src/unit_tests/test_kernels/non_default_stream_kernel.py)
// catalogue: tier full
// Misbehaves: does its work on the legacy default stream (stream 0), not on `stream`: the
// runner's events on `stream` time nothing, yet the outputs are right once the device is idle.
// Imports nothing new (a <<<>>> launch without a stream), so only the CUPTI cross-check sees it.
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void __launch_bounds__(256)
rowsum_vec4(const float4 *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t cols4) {
  int64_t row = (int64_t)blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows)
    return;
  float acc = 0.f;
  for (int64_t i = lane; i < cols4; i += 32) {
    float4 v = x[row * cols4 + i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0)
    y[row] = acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_vec4<<<(unsigned)((rows + 7) / 8), 256>>>((const float4 *)in[0].data,
                                                  (float *)out[0].data, rows, cols / 4);
  return cudaGetLastError() != cudaSuccess;
}
