// catalogue: expect ok -
// catalogue: source kernelbrain (control: an honest candidate must pass)
// catalogue: tier full
// Honest: one thread per row, sequential f32 sum (uncoalesced, slow, correct).
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void rowsum_naive(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float acc = 0.f;
  for (int64_t c = 0; c < cols; c++)
    acc += x[r * cols + c];
  y[r] = acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_naive<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
