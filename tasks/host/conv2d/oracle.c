/* Oracle of host task "conv2d": torch.nn.functional.conv2d(x, weight, bias, stride=1,
 * padding=1), NCHW:
 *   y[n][k][h][w] = bias[k]
 *                   + sum over c, r, s of weight[k][c][r][s] * x[n][c][h + r - 1][w + s - 1]
 * with x taken as 0 outside the image. The host variant of tasks/cuda/conv2d.
 *
 * Inputs  x: f32 [4, 16, 32, 32] (256 KiB), weight: f32 [32, 16, 3, 3], bias: f32 [32]
 * Output  y: f32 [4, 32, 32, 32] (512 KiB)   (38 MFLOP)
 * Tolerance: atol 5e-4, rtol 1e-4: any f32 accumulation order over the 144 products passes;
 * entries near 0 need absolute slack. The integers set has exact answers; its borders catch
 * padding errors.
 *
 * One output element at a time, accumulated in double, rounded once. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1 || in[0].ndim != 4 || in[1].ndim != 4 || out[0].ndim != 4 ||
      in[0].dtype != KB_F32 || in[1].dtype != KB_F32 || in[2].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t batch = in[0].shape[0], chans = in[0].shape[1], hgt = in[0].shape[2],
          wid = in[0].shape[3];
  int64_t kout = in[1].shape[0], kr = in[1].shape[2], ks = in[1].shape[3];
  if (in[1].shape[1] != chans || kr != 3 || ks != 3 || kb_tensor_numel(&in[2]) != kout ||
      out[0].shape[0] != batch || out[0].shape[1] != kout || out[0].shape[2] != hgt ||
      out[0].shape[3] != wid)
    return 1;
  const float *x = in[0].data, *wt = in[1].data, *bias = in[2].data;
  float *y = out[0].data;
  for (int64_t n = 0; n < batch; n++)
    for (int64_t k = 0; k < kout; k++)
      for (int64_t h = 0; h < hgt; h++)
        for (int64_t w = 0; w < wid; w++) {
          double acc = (double)bias[k];
          for (int64_t c = 0; c < chans; c++)
            for (int64_t r = 0; r < kr; r++)
              for (int64_t s = 0; s < ks; s++) {
                int64_t ih = h + r - 1, iw = w + s - 1;
                if (ih < 0 || ih >= hgt || iw < 0 || iw >= wid)
                  continue;
                acc += (double)wt[((k * chans + c) * kr + r) * ks + s] *
                       (double)x[((n * chans + c) * hgt + ih) * wid + iw];
              }
          y[((n * kout + k) * hgt + h) * wid + w] = (float)acc;
        }
  return 0;
}
