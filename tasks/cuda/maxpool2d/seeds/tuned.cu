/* 2-D max pooling, NCHW, 3x3 window, stride 2, padding 1. Each thread computes OPT adjacent
 * outputs of one row, so the shared window columns are read once (2 * OPT + 1 input columns
 * for OPT outputs); BLOCK threads per block. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

// kb:param BLOCK 128 256 512 1024
#ifndef BLOCK
#define BLOCK 256
#endif

// kb:param OPT 1 2 4 8
#ifndef OPT
#define OPT 4
#endif

__global__ void __launch_bounds__(BLOCK)
maxpool(const float *__restrict__ x, float *__restrict__ y, int64_t planes, int hgt, int wid,
        int oh_n, int ow_n) {
  int groups = (ow_n + OPT - 1) / OPT; /* OPT-wide groups per output row */
  int64_t t = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (t >= planes * oh_n * groups)
    return;
  int g = (int)(t % groups), oh = (int)((t / groups) % oh_n);
  int64_t plane = t / ((int64_t)groups * oh_n);
  int ow0 = g * OPT;
  const float *xp = x + plane * hgt * wid;
  float m[OPT];
#pragma unroll
  for (int q = 0; q < OPT; q++)
    m[q] = -INFINITY;
#pragma unroll
  for (int r = 0; r < 3; r++) {
    int ih = oh * 2 + r - 1;
    if (ih < 0 || ih >= hgt)
      continue;
    const float *row = xp + (int64_t)ih * wid;
    int iw0 = ow0 * 2 - 1;
    float v[2 * OPT + 1];
#pragma unroll
    for (int q = 0; q < 2 * OPT + 1; q++) {
      int iw = iw0 + q;
      v[q] = (iw >= 0 && iw < wid) ? row[iw] : -INFINITY;
    }
#pragma unroll
    for (int q = 0; q < OPT; q++)
      m[q] = fmaxf(m[q], fmaxf(v[2 * q], fmaxf(v[2 * q + 1], v[2 * q + 2])));
  }
  float *yp = y + (plane * oh_n + oh) * ow_n;
#pragma unroll
  for (int q = 0; q < OPT; q++)
    if (ow0 + q < ow_n)
      yp[ow0 + q] = m[q];
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 4 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t planes = in[0].shape[0] * in[0].shape[1];
  int hgt = (int)in[0].shape[2], wid = (int)in[0].shape[3];
  int oh_n = (hgt - 1) / 2 + 1, ow_n = (wid - 1) / 2 + 1;
  int64_t threads = planes * oh_n * ((ow_n + OPT - 1) / OPT);
  maxpool<<<(unsigned)((threads + BLOCK - 1) / BLOCK), BLOCK, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, planes, hgt, wid, oh_n, ow_n);
  return cudaGetLastError() != cudaSuccess;
}
