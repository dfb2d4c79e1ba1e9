// expect: ok
// Sizes its grid from device queries and the occupancy API, opts into more than 48 KiB of
// dynamic shared memory, and reports errors the way LLM-written CUDA often does.
#include <algorithm>
#include <cstdio>
#include <cuda_runtime.h>

#include "kb_kernel.h"

#define CHECK(x)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                               \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

extern __shared__ float tile[];

__global__ void scale(const float *x, float *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    tile[threadIdx.x] = x[i];
    y[i] = 2 * tile[threadIdx.x];
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int dev, sms, per_sm, min_grid, block;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaFuncSetAttribute(scale, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, scale, 256, 256 * 4));
  CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, scale, 1024, 0));
  cudaFuncAttributes fa;
  CHECK(cudaFuncGetAttributes(&fa, scale));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  int64_t n = kb_tensor_numel(&in[0]);
  scale<<<std::min(sms * per_sm, 65535), 256, 256 * 4, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, n);
  CHECK(cudaGetLastError());
  return 0;
}
