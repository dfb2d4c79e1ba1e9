/* Oracle of task "attention": for each batch b, head h and query i (no mask, no dropout),
 *   s[j] = (q[b][h][i] . k[b][h][j]) / sqrt(D),  p = softmax(s),  o[b][h][i] = sum_j p[j] v[b][h][j]
 * i.e. torch.nn.functional.scaled_dot_product_attention(q, k, v).
 *
 * Inputs  q, k, v: f32 [16, 16, 1024, 64] (64 MiB each)   Output o: f32 [16, 16, 1024, 64]
 * 68.7 GFLOP per call (two 1024 x 1024 x 64 products per head); the score matrices alone would
 * take 1 GiB, which a fused kernel never writes.
 * Tolerance: atol 1e-3, rtol 1e-4; outputs are averages of v, so |o| <= max |v|. The stddev-4
 * set gives scores up to ~100 (exp overflows f32 past 88 unless the row maximum is subtracted)
 * and nearly one-hot rows, which amplify the f32 rounding of the scores: two honest f32 kernels
 * (the naive and the fused seed) land 1.6e-4 from the double result there, over the f32
 * default atol of 1e-4; 1e-3 leaves a margin.
 *
 * One block of 64 threads per (b, h, i), all in double: the threads compute the S scores into
 * shared memory, every thread finds their maximum, the threads turn the scores into weights
 * exp(s - max), every thread adds them up, and thread d accumulates output column d. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

#define THREADS 64

__global__ void attention_oracle(const float *q, const float *k, const float *v, float *o,
                                 int64_t seq, int64_t dim) {
  extern __shared__ double score[]; /* [seq] */
  int64_t bh = blockIdx.y, i = blockIdx.x;
  const float *qi = q + (bh * seq + i) * dim;
  const float *kb = k + bh * seq * dim;
  const float *vb = v + bh * seq * dim;
  double scale = 1.0 / sqrt((double)dim);
  for (int64_t j = threadIdx.x; j < seq; j += THREADS) {
    double dot = 0.0;
    for (int64_t d = 0; d < dim; d++)
      dot += (double)qi[d] * (double)kb[j * dim + d];
    score[j] = dot * scale;
  }
  __syncthreads();
  double m = -INFINITY;
  for (int64_t j = 0; j < seq; j++)
    m = fmax(m, score[j]);
  __syncthreads(); /* everyone has read the scores before they become weights */
  for (int64_t j = threadIdx.x; j < seq; j += THREADS)
    score[j] = exp(score[j] - m);
  __syncthreads();
  double sum = 0.0;
  for (int64_t j = 0; j < seq; j++)
    sum += score[j];
  for (int64_t d = threadIdx.x; d < dim; d += THREADS) {
    double acc = 0.0;
    for (int64_t j = 0; j < seq; j++)
      acc += score[j] * (double)vb[j * dim + d];
    o[(bh * seq + i) * dim + d] = (float)(acc / sum);
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_F32 || in[2].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  for (int t = 1; t < 3; t++)
    for (int d = 0; d < 4; d++)
      if (in[t].ndim != 4 || in[t].shape[d] != in[0].shape[d])
        return 1;
  int64_t bh = in[0].shape[0] * in[0].shape[1], seq = in[0].shape[2], dim = in[0].shape[3];
  size_t smem = (size_t)seq * sizeof(double);
  if (smem > 48 * 1024 || bh > 65535)
    return 1;
  dim3 grid((unsigned)seq, (unsigned)bh);
  attention_oracle<<<grid, THREADS, smem, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (const float *)in[2].data,
      (float *)out[0].data, seq, dim);
  return cudaGetLastError() != cudaSuccess;
}
