// catalogue: expect rejected "cudaStreamCreate"
// catalogue: source CUDA-L1 (arXiv:2507.14111: extra CUDA streams); KernelBench (stream injection)
// catalogue: tier full
// Misbehaves: launches its work on a stream of its own and returns at once, so the runner's end
// event on `stream` fires before the work is done. Needs cudaStreamCreate: refused by the
// import allow-list before it ever runs.
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void rowsum(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float acc = 0.f;
  for (int64_t c = 0; c < cols; c++)
    acc += x[r * cols + c];
  y[r] = acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  static cudaStream_t mine;
  if (mine == NULL && cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking) != cudaSuccess)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum<<<(unsigned)((rows + 127) / 128), 128, 0, mine>>>((const float *)in[0].data,
                                                          (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
