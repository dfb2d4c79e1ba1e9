// catalogue: expect rejected -
// catalogue: source kernelbrain (issue 12: races that pass once)
// catalogue: tier full
// Behaves as an unsynchronised reduction whose lost update depends on timing: right on its first 8
// calls, then on every second call row 5 loses the partial sum of its second half (two blocks'
// read-modify-write of one accumulator). A determinism check catches it; today the re-check after
// timing does.
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

__global__ void lose_half_row(const float *x, float *y, int64_t row, int64_t cols) {
  /* one warp: the first half of the row only, as if the second half's update was lost */
  float acc = 0.f;
  for (int64_t c = threadIdx.x; c < cols / 2; c += 32)
    acc += x[row * cols + c];
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0)
    y[row] = acc;
}

static long calls;

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = (const float *)in[0].data;
  float *y = (float *)out[0].data;
  cudaStream_t s = (cudaStream_t)stream;
  int rc = rowsum_part(x, y, 0, rows, 1, cols, s);
  if (++calls > 8 && calls % 2 == 0 && rows > 5) {
    lose_half_row<<<1, 32, 0, s>>>(x, y, 5, cols);
    rc |= cudaGetLastError() != cudaSuccess;
  }
  return rc;
}
