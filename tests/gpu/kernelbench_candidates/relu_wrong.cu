// A wrong ReLU for KernelBench level 1 task 19: it zeroes values up to 0.5 (inputs are
// uniform [0, 1)). Expected: wrong_output.
#include "kb_kernel.h"

__global__ void relu4(const float4 *__restrict__ x, float4 *__restrict__ y, int64_t n4) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4;
       i += (int64_t)gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x = (v.x > 0.5f ? v.x : 0.0f);
    v.y = (v.y > 0.5f ? v.y : 0.0f);
    v.z = (v.z > 0.5f ? v.z : 0.0f);
    v.w = (v.w > 0.5f ? v.w : 0.0f);
    y[i] = v;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32 || kb_tensor_numel(&in[0]) % 4 != 0)
    return 1;
  int64_t n4 = kb_tensor_numel(&in[0]) / 4;
  relu4<<<132 * 8, 256, 0, (cudaStream_t)stream>>>((const float4 *)in[0].data,
                                                     (float4 *)out[0].data, n4);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
