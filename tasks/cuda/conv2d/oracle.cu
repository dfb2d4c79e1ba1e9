/* Oracle of task "conv2d": cross-correlation as torch.nn.Conv2d computes it, NCHW, kernel R x S,
 * stride 1, zero padding (R / 2, S / 2) so the output keeps H x W:
 *   y[n][k][h][w] = bias[k] + sum_{c, r, s} x[n][c][h + r - R/2][w + s - S/2] * weight[k][c][r][s]
 * (terms outside the image are 0).
 *
 * Inputs  x: f32 [32, 64, 128, 128] (128 MiB), weight: f32 [128, 64, 3, 3], bias: f32 [128]
 * Output  y: f32 [32, 128, 128, 128] (256 MiB); 77 GFLOP per call.
 * Tolerance: atol 5e-4, rtol 1e-4: any f32 order over the 576 products per output passes (an
 * f32 sum of normal terms, |y| ~ 24, is typically off by ~2e-5); entries near 0 need the
 * absolute slack. TF32 does not pass. The integers set has an exact answer.
 *
 * One thread per output element, accumulating in double, rounded once. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void conv2d_oracle(const float *x, const float *wt, const float *bias, float *y,
                              int64_t nb, int64_t c_in, int64_t hgt, int64_t wid, int64_t k_out,
                              int64_t kr, int64_t ks) {
  int64_t total = nb * k_out * hgt * wid;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < total;
       o += (int64_t)gridDim.x * blockDim.x) {
    int64_t w = o % wid, h = (o / wid) % hgt, k = (o / (wid * hgt)) % k_out;
    int64_t n = o / (wid * hgt * k_out);
    double acc = (double)bias[k];
    for (int64_t c = 0; c < c_in; c++)
      for (int64_t r = 0; r < kr; r++)
        for (int64_t s = 0; s < ks; s++) {
          int64_t ih = h + r - kr / 2, iw = w + s - ks / 2;
          if (ih < 0 || ih >= hgt || iw < 0 || iw >= wid)
            continue;
          acc += (double)x[((n * c_in + c) * hgt + ih) * wid + iw] *
                 (double)wt[((k * c_in + c) * kr + r) * ks + s];
        }
    y[o] = (float)acc;
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || in[1].ndim != 4 || out[0].ndim != 4 ||
      in[0].dtype != KB_F32 || in[1].dtype != KB_F32 || in[2].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t nb = in[0].shape[0], c_in = in[0].shape[1], hgt = in[0].shape[2], wid = in[0].shape[3];
  int64_t k_out = in[1].shape[0], kr = in[1].shape[2], ks = in[1].shape[3];
  if (in[1].shape[1] != c_in || kb_tensor_numel(&in[2]) != k_out || kr % 2 == 0 || ks % 2 == 0 ||
      out[0].shape[0] != nb || out[0].shape[1] != k_out || out[0].shape[2] != hgt ||
      out[0].shape[3] != wid)
    return 1;
  conv2d_oracle<<<16384, 256, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (const float *)in[2].data,
      (float *)out[0].data, nb, c_in, hgt, wid, k_out, kr, ks);
  return cudaGetLastError() != cudaSuccess;
}
