/* Row sums of a [rows, cols] f32 matrix: ROWS_PER_BLOCK rows per block, THREADS_PER_ROW
 * threads per row (a multiple of 32) reading VEC floats at a time, warp shuffles and a little
 * shared memory to combine. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

// kb:param THREADS_PER_ROW 32 64 128 256 512
#ifndef THREADS_PER_ROW
#define THREADS_PER_ROW 128
#endif

// kb:param ROWS_PER_BLOCK 1 2 4 8
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 2
#endif

// kb:param VEC 1 2 4
#ifndef VEC
#define VEC 4
#endif

#define BLOCK (THREADS_PER_ROW * ROWS_PER_BLOCK)
#define WARPS_PER_ROW (THREADS_PER_ROW / 32)
#if BLOCK > 1024
#error "THREADS_PER_ROW * ROWS_PER_BLOCK must be at most 1024"
#endif

#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

union pack {
  vec_t v;
  float f[VEC];
};

__global__ void __launch_bounds__(BLOCK)
row_sum(const float *__restrict__ x, float *__restrict__ sums, int64_t rows, int64_t cols) {
  __shared__ float part[ROWS_PER_BLOCK][WARPS_PER_ROW];
  int local = threadIdx.x / THREADS_PER_ROW;
  int t = threadIdx.x % THREADS_PER_ROW;
  int64_t r = (int64_t)blockIdx.x * ROWS_PER_BLOCK + local;
  float acc = 0.0f;
  if (r < rows) {
    const float *row = x + r * cols;
    int64_t nvec = (cols % VEC == 0) ? cols / VEC : 0; /* rows stay aligned only then */
    const vec_t *rv = (const vec_t *)row;
    for (int64_t i = t; i < nvec; i += THREADS_PER_ROW) {
      pack p;
      p.v = rv[i];
#pragma unroll
      for (int k = 0; k < VEC; k++)
        acc += p.f[k];
    }
    for (int64_t c = nvec * VEC + t; c < cols; c += THREADS_PER_ROW)
      acc += row[c];
  }
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (t % 32 == 0)
    part[local][t / 32] = acc;
  __syncthreads();
  if (t == 0 && r < rows) {
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS_PER_ROW; w++)
      s += part[local][w];
    sums[r] = s;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  int64_t blocks = (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
  row_sum<<<(unsigned)blocks, BLOCK, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
