// expect: ok
// Hopper launches: a kernel with compile-time cluster dimensions, cudaLaunchKernelEx with a
// cluster attribute, and a cooperative launch for a grid-wide sync.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "kb_kernel.h"

namespace cg = cooperative_groups;

__global__ void __cluster_dims__(2, 1, 1) scaled(const float *x, float *y, int64_t n) {
  cg::cluster_group cluster = cg::this_cluster();
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] * (1 + cluster.block_rank());
}

__global__ void copy(const float *x, float *y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i];
}

__global__ void copy_synced(const float *x, float *y, int64_t n) {
  cg::grid_group grid = cg::this_grid();
  for (int64_t i = grid.thread_rank(); i < n; i += grid.size())
    y[i] = x[i];
  grid.sync();
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  cudaStream_t s = (cudaStream_t)stream;
  int64_t n = kb_tensor_numel(&in[0]);
  const float *x = (const float *)in[0].data;
  float *y = (float *)out[0].data;
  scaled<<<2 * (unsigned)((n + 511) / 512), 256, 0, s>>>(x, y, n);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)((n + 255) / 256));
  cfg.blockDim = dim3(256);
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaLaunchKernelEx(&cfg, copy, x, y, n);
  void *args[] = {(void *)&x, (void *)&y, (void *)&n};
  cudaLaunchCooperativeKernel((void *)copy_synced, dim3(132), dim3(256), args, 0, s);
  return cudaGetLastError() != cudaSuccess;
}
