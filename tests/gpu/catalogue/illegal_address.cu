// catalogue: expect crash "illegal memory access"
// catalogue: source kernelbrain (issue 4: a context-killing fault)
// catalogue: tier full
// Misbehaves: writes through a wild pointer (an illegal address): the context dies.
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void wild(float *y, int64_t rows) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows)
    y[r + ((int64_t)1 << 40)] = 1.f; /* 4 TiB past the output: unmapped */
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0];
  wild<<<(unsigned)((rows + 255) / 256), 256, 0, (cudaStream_t)stream>>>((float *)out[0].data,
                                                                         rows);
  return cudaGetLastError() != cudaSuccess;
}
