/* Scaled dot-product attention o = softmax(q k^T / sqrt(D)) v, per batch and head: three
 * kernels through a scratch score matrix [B*H, S, S] (cudaMallocAsync on the stream): scores,
 * row softmax in place (one thread per row), then the product with v. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

__global__ void scores(const float *q, const float *k, float *s, int seq, int dim, float scale) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int64_t bh = blockIdx.z;
  if (i < seq && j < seq) {
    const float *qi = q + (bh * seq + i) * dim;
    const float *kj = k + (bh * seq + j) * dim;
    float acc = 0.0f;
    for (int d = 0; d < dim; d++)
      acc += qi[d] * kj[d];
    s[(bh * seq + i) * seq + j] = acc * scale;
  }
}

__global__ void softmax_rows(float *s, int64_t rows, int seq) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float *row = s + r * seq;
  float m = -INFINITY;
  for (int j = 0; j < seq; j++)
    m = fmaxf(m, row[j]);
  float sum = 0.0f;
  for (int j = 0; j < seq; j++) {
    row[j] = expf(row[j] - m);
    sum += row[j];
  }
  for (int j = 0; j < seq; j++)
    row[j] /= sum;
}

__global__ void apply_v(const float *p, const float *v, float *o, int seq, int dim) {
  int d = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int64_t bh = blockIdx.z;
  if (i < seq && d < dim) {
    const float *pi = p + (bh * seq + i) * seq;
    float acc = 0.0f;
    for (int j = 0; j < seq; j++)
      acc += pi[j] * v[(bh * seq + j) * dim + d];
    o[(bh * seq + i) * dim + d] = acc;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || in[0].dtype != KB_F32)
    return 1;
  cudaStream_t st = (cudaStream_t)stream;
  int bh = (int)(in[0].shape[0] * in[0].shape[1]);
  int seq = (int)in[0].shape[2], dim = (int)in[0].shape[3];
  float *s = NULL;
  if (cudaMallocAsync((void **)&s, (size_t)bh * seq * seq * sizeof(float), st) != cudaSuccess)
    return 1;
  dim3 block(16, 16);
  scores<<<dim3((seq + 15) / 16, (seq + 15) / 16, bh), block, 0, st>>>(
      (const float *)in[0].data, (const float *)in[1].data, s, seq, dim, 1.0f / sqrtf((float)dim));
  softmax_rows<<<(unsigned)(((int64_t)bh * seq + 255) / 256), 256, 0, st>>>(s, (int64_t)bh * seq,
                                                                         seq);
  apply_v<<<dim3((dim + 15) / 16, (seq + 15) / 16, bh), block, 0, st>>>(
      s, (const float *)in[2].data, (float *)out[0].data, seq, dim);
  cudaFreeAsync(s, st);
  return cudaGetLastError() != cudaSuccess;
}
