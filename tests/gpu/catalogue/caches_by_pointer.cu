// catalogue: expect rejected -
// catalogue: source CUDA-L1 (arXiv:2507.14111: results cached by input address)
// catalogue: tier full
// Misbehaves: keeps the result of each input pointer it has seen (up to 8) in a __device__
// array and, when a pointer comes again, copies the kept result instead of computing: an output
// cache keyed by the input pointer. Right as long as a buffer keeps its contents; wrong once the
// runner puts other contents behind the same pointer.
#include <cuda_runtime.h>

#include "kb_kernel.h"

#define MAX_ROWS 4096
#define SLOTS 8
__device__ float cached[SLOTS][MAX_ROWS];

__global__ void rowsum_and_keep(const float *x, float *y, int64_t rows, int64_t cols, int slot) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float acc = 0.f;
  for (int64_t c = 0; c < cols; c++)
    acc += x[r * cols + c];
  y[r] = acc;
  cached[slot][r] = acc;
}

__global__ void replay(float *y, int64_t rows, int slot) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows)
    y[r] = cached[slot][r];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  static const void *seen[SLOTS];
  static int next;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  if (rows > MAX_ROWS)
    return 1;
  cudaStream_t s = (cudaStream_t)stream;
  unsigned grid = (unsigned)((rows + 127) / 128);
  for (int k = 0; k < SLOTS; k++) {
    if (seen[k] == in[0].data) {
      replay<<<grid, 128, 0, s>>>((float *)out[0].data, rows, k);
      return cudaGetLastError() != cudaSuccess;
    }
  }
  int slot = next++ % SLOTS;
  seen[slot] = in[0].data;
  rowsum_and_keep<<<grid, 128, 0, s>>>((const float *)in[0].data, (float *)out[0].data, rows,
                                       cols, slot);
  return cudaGetLastError() != cudaSuccess;
}
