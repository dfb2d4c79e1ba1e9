/* 2-D convolution, NCHW, 3x3 kernel, stride 1, zero padding 1, with bias. Each thread computes
 * OCB output channels of one pixel, so every input value it loads feeds OCB accumulators; a
 * block covers BLOCK pixels of one image for one group of OCB channels, whose weights
 * (OCB x C x 9 floats, dynamic shared memory) it loads once. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

// kb:param BLOCK 64 128 256 512
#ifndef BLOCK
#define BLOCK 128
#endif

// kb:param OCB 2 4 8 16
#ifndef OCB
#define OCB 8
#endif

__global__ void __launch_bounds__(BLOCK)
conv2d(const float *__restrict__ x, const float *__restrict__ wt, const float *__restrict__ bias,
       float *__restrict__ y, int c_in, int hgt, int wid, int k_out) {
  extern __shared__ float sw[]; /* [OCB][c_in][9] */
  const int k0 = blockIdx.y * OCB;
  const int n = blockIdx.z;
  for (int e = threadIdx.x; e < OCB * c_in * 9; e += BLOCK) {
    int kk = e / (c_in * 9);
    sw[e] = (k0 + kk < k_out) ? wt[(int64_t)(k0 + kk) * c_in * 9 + e % (c_in * 9)] : 0.0f;
  }
  __syncthreads();
  const int p = blockIdx.x * BLOCK + threadIdx.x;
  if (p >= hgt * wid)
    return;
  const int h = p / wid, w = p % wid;
  float acc[OCB];
#pragma unroll
  for (int kk = 0; kk < OCB; kk++)
    acc[kk] = 0.0f;
  const float *xn = x + (int64_t)n * c_in * hgt * wid;
  for (int c = 0; c < c_in; c++) {
    const float *xc = xn + (int64_t)c * hgt * wid;
    float v[9];
#pragma unroll
    for (int r = 0; r < 3; r++)
#pragma unroll
      for (int s = 0; s < 3; s++) {
        int ih = h + r - 1, iw = w + s - 1;
        v[r * 3 + s] = (ih >= 0 && ih < hgt && iw >= 0 && iw < wid) ? xc[ih * wid + iw] : 0.0f;
      }
#pragma unroll
    for (int kk = 0; kk < OCB; kk++) {
      const float *wk = sw + (kk * c_in + c) * 9;
#pragma unroll
      for (int t = 0; t < 9; t++)
        acc[kk] = fmaf(v[t], wk[t], acc[kk]);
    }
  }
#pragma unroll
  for (int kk = 0; kk < OCB; kk++)
    if (k0 + kk < k_out)
      y[(((int64_t)n * k_out + k0 + kk) * hgt + h) * wid + w] = acc[kk] + bias[k0 + kk];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || in[1].ndim != 4 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_F32 || in[2].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      in[1].shape[2] != 3 || in[1].shape[3] != 3 || in[1].shape[1] != in[0].shape[1])
    return 1;
  int nb = (int)in[0].shape[0], c_in = (int)in[0].shape[1], hgt = (int)in[0].shape[2];
  int wid = (int)in[0].shape[3], k_out = (int)in[1].shape[0];
  size_t smem = (size_t)OCB * c_in * 9 * sizeof(float);
  if (smem > 48 * 1024 || nb > 65535)
    return 1; /* more input channels than this kernel stages */
  dim3 grid((unsigned)((hgt * wid + BLOCK - 1) / BLOCK), (unsigned)((k_out + OCB - 1) / OCB),
            (unsigned)nb);
  conv2d<<<grid, BLOCK, smem, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (const float *)in[2].data,
      (float *)out[0].data, c_in, hgt, wid, k_out);
  return cudaGetLastError() != cudaSuccess;
}
