/* Oracle of task "maxpool2d": torch.nn.MaxPool2d(kernel_size=3, stride=2, padding=1), NCHW:
 *   y[n][c][oh][ow] = max over r, s in 0..2 of x[n][c][2*oh + r - 1][2*ow + s - 1], positions
 *   outside the image skipped (padding never wins, so an all-negative window stays negative).
 *
 * Input  x: f32 [64, 128, 128, 128] (512 MiB)   Output y: f32 [64, 128, 64, 64] (128 MiB)
 * Tolerance: exact (atol 0, rtol 0): a maximum is one of the inputs. The all-negative set
 * (uniform [-1000, -10)) catches padding taken as 0; the integers set has many ties.
 *
 * One thread per output element. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

#define KSIZE 3
#define STRIDE 2
#define PADDING 1

__global__ void maxpool_oracle(const float *x, float *y, int64_t planes, int64_t hgt,
                               int64_t wid, int64_t oh_n, int64_t ow_n) {
  int64_t total = planes * oh_n * ow_n;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < total;
       o += (int64_t)gridDim.x * blockDim.x) {
    int64_t ow = o % ow_n, oh = (o / ow_n) % oh_n, plane = o / (ow_n * oh_n);
    const float *xp = x + plane * hgt * wid;
    float m = -INFINITY;
    for (int64_t r = 0; r < KSIZE; r++)
      for (int64_t s = 0; s < KSIZE; s++) {
        int64_t ih = oh * STRIDE + r - PADDING, iw = ow * STRIDE + s - PADDING;
        if (ih >= 0 && ih < hgt && iw >= 0 && iw < wid)
          m = fmaxf(m, xp[ih * wid + iw]);
      }
    y[o] = m;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 4 || out[0].ndim != 4 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t hgt = in[0].shape[2], wid = in[0].shape[3];
  int64_t oh_n = (hgt + 2 * PADDING - KSIZE) / STRIDE + 1;
  int64_t ow_n = (wid + 2 * PADDING - KSIZE) / STRIDE + 1;
  if (out[0].shape[0] != in[0].shape[0] || out[0].shape[1] != in[0].shape[1] ||
      out[0].shape[2] != oh_n || out[0].shape[3] != ow_n)
    return 1;
  maxpool_oracle<<<8192, 256, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, in[0].shape[0] * in[0].shape[1], hgt,
      wid, oh_n, ow_n);
  return cudaGetLastError() != cudaSuccess;
}
