/* Transpose of a [rows, cols] f32 matrix into [cols, rows] through a TILE x TILE shared-memory
 * tile (one padding column against bank conflicts): reads and writes both coalesced. A block
 * has TILE x BLOCK_ROWS threads; each moves TILE / BLOCK_ROWS elements. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

// kb:param TILE 16 32 64
#ifndef TILE
#define TILE 32
#endif

// kb:param BLOCK_ROWS 4 8 16 32
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif

#if TILE % BLOCK_ROWS != 0 || TILE * BLOCK_ROWS > 1024
#error "BLOCK_ROWS must divide TILE, and TILE * BLOCK_ROWS be at most 1024"
#endif

__global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int j0 = blockIdx.x * TILE, i0 = blockIdx.y * TILE;
  int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
#pragma unroll
  for (int r = ty; r < TILE; r += BLOCK_ROWS) {
    int i = i0 + r, j = j0 + tx;
    if (i < rows && j < cols)
      tile[r][tx] = x[(int64_t)i * cols + j];
  }
  __syncthreads();
#pragma unroll
  for (int r = ty; r < TILE; r += BLOCK_ROWS) {
    int j = j0 + r, i = i0 + tx; /* y[j][i] = x[i][j] */
    if (j < cols && i < rows)
      y[(int64_t)j * rows + i] = tile[tx][r];
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || in[0].shape[0] > 2147483647 || in[0].shape[1] > 2147483647)
    return 1;
  int rows = (int)in[0].shape[0], cols = (int)in[0].shape[1];
  dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
  transpose<<<grid, TILE * BLOCK_ROWS, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
