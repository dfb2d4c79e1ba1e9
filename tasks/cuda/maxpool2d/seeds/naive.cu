/* 2-D max pooling, NCHW, 3x3 window, stride 2, padding 1: one thread per output element. */
#include <cuda_runtime.h>
#include <float.h>

#include "kb_kernel.h"

__global__ void maxpool(const float *x, float *y, int64_t planes, int hgt, int wid, int oh_n,
                        int ow_n) {
  int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= planes * oh_n * ow_n)
    return;
  int ow = (int)(o % ow_n), oh = (int)((o / ow_n) % oh_n);
  int64_t plane = o / ((int64_t)ow_n * oh_n);
  float m = -FLT_MAX;
  for (int r = 0; r < 3; r++)
    for (int s = 0; s < 3; s++) {
      int ih = oh * 2 + r - 1, iw = ow * 2 + s - 1;
      if (ih >= 0 && ih < hgt && iw >= 0 && iw < wid)
        m = fmaxf(m, x[(plane * hgt + ih) * wid + iw]);
    }
  y[o] = m;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 4 || in[0].dtype != KB_F32)
    return 1;
  int64_t planes = in[0].shape[0] * in[0].shape[1];
  int hgt = (int)in[0].shape[2], wid = (int)in[0].shape[3];
  int oh_n = (hgt - 1) / 2 + 1, ow_n = (wid - 1) / 2 + 1;
  int64_t total = planes * oh_n * ow_n;
  maxpool<<<(unsigned)((total + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, planes, hgt, wid, oh_n, ow_n);
  return cudaGetLastError() != cudaSuccess;
}
