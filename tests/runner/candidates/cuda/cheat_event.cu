// expect: rejected cudaEvent
// Times itself with CUDA events (to report a flattering time, or to skip work when "fast").
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
  cudaStream_t s = (cudaStream_t)stream;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a, s);
  int64_t n = kb_tensor_numel(&in[0]);
  copy<<<(unsigned)((n + 255) / 256), 256, 0, s>>>((const float *)in[0].data,
                                                   (float *)out[0].data, n);
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms;
  cudaEventElapsedTime(&ms, a, b);
  return 0;
}
