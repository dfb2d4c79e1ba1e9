/* Oracle of task "gelu": y = x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2))), the exact (erf)
 * GELU, not the tanh approximation.
 *
 * Input  x: f32 [16384, 8192]   Output y: f32 [16384, 8192]   (512 MiB each)
 * Tolerance: atol 1e-4, rtol 1e-4 (f32 default). The tanh approximation differs by up to ~1e-3
 * and does not pass. The large-range sets (uniform [-12, 12], normal with stddev 40) reach the
 * tails where y == x or y == -0 and where a careless erf loses its relative accuracy.
 *
 * One thread per element, computed in double and rounded once. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

__global__ void gelu_oracle(const float *x, float *y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    double v = (double)x[i];
    y[i] = (float)(0.5 * v * (1.0 + erf(v / sqrt(2.0))));
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      kb_tensor_numel(&in[0]) != kb_tensor_numel(&out[0]))
    return 1;
  int64_t n = kb_tensor_numel(&in[0]);
  gelu_oracle<<<4096, 256, 0, (cudaStream_t)stream>>>((const float *)in[0].data,
                                                       (float *)out[0].data, n);
  return cudaGetLastError() != cudaSuccess;
}
