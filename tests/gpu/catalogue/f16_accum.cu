// catalogue: expect wrong_output "expected"
// catalogue: source KernelBench (static checker: precision downgrade)
// catalogue: tier full
// Misbehaves: silently accumulates in half precision (fast on paper, wrong in the digits).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void __launch_bounds__(256)
rowsum_half(const float4 *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t cols4) {
  int64_t row = (int64_t)blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows)
    return;
  __half acc = __float2half(0.f);
  for (int64_t i = lane; i < cols4; i += 32) {
    float4 v = x[row * cols4 + i];
    acc = __hadd(acc, __float2half(v.x));
    acc = __hadd(acc, __float2half(v.y));
    acc = __hadd(acc, __float2half(v.z));
    acc = __hadd(acc, __float2half(v.w));
  }
  for (int o = 16; o > 0; o >>= 1)
    acc = __hadd(acc, __shfl_xor_sync(0xffffffffu, acc, o));
  if (lane == 0)
    y[row] = __half2float(acc);
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_half<<<(unsigned)((rows + 7) / 8), 256, 0, (cudaStream_t)stream>>>(
      (const float4 *)in[0].data, (float *)out[0].data, rows, cols / 4);
  return cudaGetLastError() != cudaSuccess;
}
