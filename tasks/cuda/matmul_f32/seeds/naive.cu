/* f32 matrix product c = a b: one thread per element of c. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void matmul(const float *a, const float *b, float *c, int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < m && col < n) {
    float acc = 0.0f;
    for (int p = 0; p < k; p++)
      acc += a[(int64_t)row * k + p] * b[(int64_t)p * n + col];
    c[(int64_t)row * n + col] = acc;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 ||
      in[0].dtype != KB_F32 || in[1].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  int m = (int)in[0].shape[0], k = (int)in[0].shape[1], n = (int)in[1].shape[1];
  dim3 block(16, 16);
  dim3 grid((n + 15) / 16, (m + 15) / 16);
  matmul<<<grid, block, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (float *)out[0].data, m, n, k);
  return cudaGetLastError() != cudaSuccess;
}
