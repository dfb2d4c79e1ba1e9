// catalogue: expect rejected "did not see"
// catalogue: source KernelBench (src/unit_tests/test_kernels/non_default_stream_kernel.py)
// catalogue: tier full
// Launches its work on the per-thread default stream (cudaStreamPerThread, a constant handle: no
// import, so the allow-list passes it), not on `stream`: a kernel left running on another stream,
// which the runner's events on `stream` do not time. The CUPTI trace sees a kernel on another
// stream.
#include <cuda_runtime.h>

#include "kb_kernel.h"

/* rows row0, row0 + step, ... (nrows of them): one warp per row, float4 loads, a shuffle sum */
__global__ void __launch_bounds__(256)
rowsum_rows(const float4 *__restrict__ x, float *__restrict__ y, int64_t row0, int64_t nrows,
            int64_t step, int64_t cols4) {
  int64_t w = (int64_t)blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (w >= nrows)
    return;
  int64_t row = row0 + w * step;
  const float4 *p = x + row * cols4;
  float acc = 0.f;
  for (int64_t i = lane; i < cols4; i += 32) {
    float4 v = p[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0)
    y[row] = acc;
}

static int rowsum_part(const float *x, float *y, int64_t row0, int64_t nrows, int64_t step,
                       int64_t cols, cudaStream_t s) {
  if (nrows <= 0)
    return 0;
  rowsum_rows<<<(unsigned)((nrows + 7) / 8), 256, 0, s>>>((const float4 *)x, y, row0, nrows, step,
                                                          cols / 4);
  return cudaGetLastError() != cudaSuccess;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  return rowsum_part((const float *)in[0].data, (float *)out[0].data, 0, rows, 1, cols,
                     cudaStreamPerThread);
}
