/* A plain read kernel for test_devkern.c (which is C): times a pass over a buffer, to see
 * whether kb__dk_flush_l2 evicted it. */
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" int test_read_probe(const void *p, size_t bytes, unsigned *sink, void *stream);

__global__ void read_probe(const uint4 *p, int64_t n16, unsigned *sink) {
  unsigned acc = 0;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
    uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) /* practically never: keeps the loads */
    *sink = acc;
}

/* Enqueues one read of `bytes` (a multiple of 16) at `p` on `stream`. Returns a cudaError_t. */
extern "C" int test_read_probe(const void *p, size_t bytes, unsigned *sink, void *stream) {
  read_probe<<<132 * 8, 256, 0, (cudaStream_t)stream>>>((const uint4 *)p, (int64_t)(bytes / 16),
                                                        sink);
  return cudaGetLastError();
}
