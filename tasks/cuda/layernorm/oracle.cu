/* Oracle of task "layernorm": for each row r of x,
 *   mean_r = sum_c x[r][c] / cols,  var_r = sum_c (x[r][c] - mean_r)^2 / cols  (biased, as in
 *   torch.nn.LayerNorm),  y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + 1e-5) * weight[c] + bias[c]
 *
 * Inputs  x: f32 [32768, 8192] (1 GiB), weight: f32 [8192], bias: f32 [8192]
 * Output  y: f32 [32768, 8192] (1 GiB)
 * Tolerance: atol 1e-4, rtol 1e-4 (f32 default). The set "normal, mean 10, stddev 1" has a mean
 * 10 times the spread: var = E[x^2] - E[x]^2 in f32 loses about 2 digits there and fails, a
 * two-pass or Welford variance passes. weight and bias are drawn from each set like x.
 *
 * One block of 256 threads per row; mean, then variance around it (two passes), each reduced in
 * double through a plain shared-memory tree; outputs computed in double, rounded once. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

#define THREADS 256
#define EPS 1e-5

__device__ double block_sum(double v, double *part) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  double total = part[0];
  __syncthreads(); /* part is reused by the next call */
  return total;
}

__global__ void layernorm_oracle(const float *x, const float *w, const float *b, float *y,
                                 int64_t cols) {
  __shared__ double part[THREADS];
  const float *row = x + (int64_t)blockIdx.x * cols;
  float *out = y + (int64_t)blockIdx.x * cols;
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += THREADS)
    s += (double)row[c];
  double mean = block_sum(s, part) / (double)cols;
  double q = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += THREADS) {
    double d = (double)row[c] - mean;
    q += d * d;
  }
  double var = block_sum(q, part) / (double)cols;
  double inv = 1.0 / sqrt(var + EPS);
  for (int64_t c = threadIdx.x; c < cols; c += THREADS)
    out[c] = (float)(((double)row[c] - mean) * inv * (double)w[c] + (double)b[c]);
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_F32 || in[2].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      kb_tensor_numel(&in[1]) != in[0].shape[1] || kb_tensor_numel(&in[2]) != in[0].shape[1])
    return 1;
  layernorm_oracle<<<(unsigned)in[0].shape[0], THREADS, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (const float *)in[2].data,
      (float *)out[0].data, in[0].shape[1]);
  return cudaGetLastError() != cudaSuccess;
}
