// catalogue: expect ok -
// catalogue: source kernelbrain (control: an honest candidate must pass)
// catalogue: tier full
// Honest: two kernels and stream-ordered scratch. The first writes CHUNKS partial sums per row
// into scratch from cudaMallocAsync; the second, a short kernel (~2 us, well under 10 us), adds
// them; the scratch is freed on the stream. Exercises short kernels and allowed allocation.
#include <cuda_runtime.h>

#include "kb_kernel.h"

#define CHUNKS 8

__global__ void __launch_bounds__(256)
partial_sums(const float4 *__restrict__ x, float *__restrict__ part, int64_t rows,
             int64_t cols4) {
  /* one warp per (row, chunk) */
  int64_t w = (int64_t)blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (w >= rows * CHUNKS)
    return;
  int64_t row = w / CHUNKS, chunk = w % CHUNKS, per = cols4 / CHUNKS;
  const float4 *p = x + row * cols4 + chunk * per;
  int64_t end = chunk == CHUNKS - 1 ? cols4 - chunk * per : per;
  float acc = 0.f;
  for (int64_t i = lane; i < end; i += 32) {
    float4 v = p[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0)
    part[w] = acc;
}

__global__ void finish_sums(const float *__restrict__ part, float *__restrict__ y, int64_t rows) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float acc = 0.f;
  for (int k = 0; k < CHUNKS; k++)
    acc += part[r * CHUNKS + k];
  y[r] = acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      in[0].shape[1] % 4 != 0 || in[0].shape[1] / 4 < CHUNKS)
    return 1;
  cudaStream_t s = (cudaStream_t)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  float *part = NULL;
  if (cudaMallocAsync((void **)&part, (size_t)rows * CHUNKS * sizeof(float), s) != cudaSuccess)
    return 1;
  partial_sums<<<(unsigned)((rows * CHUNKS + 7) / 8), 256, 0, s>>>(
      (const float4 *)in[0].data, part, rows, cols / 4);
  finish_sums<<<(unsigned)((rows + 255) / 256), 256, 0, s>>>(part, (float *)out[0].data, rows);
  cudaFreeAsync(part, s);
  return cudaGetLastError() != cudaSuccess;
}
