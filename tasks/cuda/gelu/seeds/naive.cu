/* GELU, y = 0.5 * x * (1 + erf(x / sqrt(2))): one thread per element. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void gelu(const float *x, float *y, int64_t n) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  int64_t n = kb_tensor_numel(&in[0]);
  int64_t blocks = (n + 255) / 256;
  gelu<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>((const float *)in[0].data,
                                                           (float *)out[0].data, n);
  return cudaGetLastError() != cudaSuccess;
}
