// expect: rejected cudaMalloc
// Keeps a device buffer across calls: the first call's result, served again later.
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void copy(const float *x, float *y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  static float *saved;
  int64_t n = kb_tensor_numel(&in[0]);
  cudaStream_t s = (cudaStream_t)stream;
  if (saved == nullptr) {
    cudaMalloc((void **)&saved, n * sizeof(float));
    copy<<<(unsigned)((n + 255) / 256), 256, 0, s>>>((const float *)in[0].data, saved, n);
  }
  cudaMemcpyAsync(out[0].data, saved, n * sizeof(float), cudaMemcpyDeviceToDevice, s);
  return 0;
}
