/* Oracle of task "softmax": y[r][c] = exp(x[r][c] - m_r) / sum_c' exp(x[r][c'] - m_r), with
 * m_r the maximum of row r (the result does not depend on m_r; subtracting it keeps exp finite).
 *
 * Input  x: f32 [16384, 16384] (1 GiB)   Output y: f32 [16384, 16384] (1 GiB)
 * Tolerance: atol 1e-6, rtol 1e-4. Outputs lie in [0, 1] and average 1/16384 ~ 6e-5, so the f32
 * default atol of 1e-4 would accept any output under 1e-4, e.g. all zeros: atol is tightened to
 * 1e-6. The uniform [500, 1000) set overflows exp() unless the row maximum is subtracted; it and
 * the normal set with stddev 8 make peaked rows, where a few hundred outputs carry the mass
 * (stddev 30 was tried: under 0.1% of the outputs then depend on the input, kb-task-check
 * flags that as degenerate).
 *
 * One block of 256 threads per row: maximum, then sum of exp, both reduced in double through a
 * plain shared-memory tree, then each output computed in double and rounded once. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

#define THREADS 256

__global__ void softmax_oracle(const float *x, float *y, int64_t cols) {
  __shared__ double part[THREADS];
  const float *row = x + (int64_t)blockIdx.x * cols;
  float *out = y + (int64_t)blockIdx.x * cols;
  double m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += THREADS)
    m = fmax(m, (double)row[c]);
  part[threadIdx.x] = m;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] = fmax(part[threadIdx.x], part[threadIdx.x + half]);
    __syncthreads();
  }
  m = part[0];
  __syncthreads();
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += THREADS)
    s += exp((double)row[c] - m);
  part[threadIdx.x] = s;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  s = part[0];
  for (int64_t c = threadIdx.x; c < cols; c += THREADS)
    out[c] = (float)(exp((double)row[c] - m) / s);
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32 || kb_tensor_numel(&out[0]) != kb_tensor_numel(&in[0]))
    return 1;
  softmax_oracle<<<(unsigned)in[0].shape[0], THREADS, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, in[0].shape[1]);
  return cudaGetLastError() != cudaSuccess;
}
