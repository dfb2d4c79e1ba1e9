/* Oracle of host task "bmm": c[t] = a[t] b[t] for every batch entry t,
 * c[t][i][j] = sum_p a[t][i][p] * b[t][p][j] (torch.bmm). The host variant of tasks/cuda/bmm.
 *
 * Inputs  a: f32 [8, 128, 256], b: f32 [8, 256, 128]   Output c: f32 [8, 128, 128]
 * (2.5 MiB, 67 MFLOP)
 * Tolerance: atol 1e-3, rtol 1e-4: any f32 accumulation order over K = 256 products passes;
 * entries near 0 need absolute slack. The integers set has exact answers.
 *
 * Each dot product accumulated in double, rounded once. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 2 || n_out != 1 || in[0].ndim != 3 || in[1].ndim != 3 || out[0].ndim != 3 ||
      in[0].dtype != KB_F32 || in[1].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  int64_t batch = in[0].shape[0], m = in[0].shape[1], k = in[0].shape[2], n = in[1].shape[2];
  if (in[1].shape[0] != batch || in[1].shape[1] != k || out[0].shape[0] != batch ||
      out[0].shape[1] != m || out[0].shape[2] != n)
    return 1;
  for (int64_t t = 0; t < batch; t++) {
    const float *a = (const float *)in[0].data + t * m * k;
    const float *b = (const float *)in[1].data + t * k * n;
    float *c = (float *)out[0].data + t * m * n;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double acc = 0.0;
        for (int64_t p = 0; p < k; p++)
          acc += (double)a[i * k + p] * (double)b[p * n + j];
        c[i * n + j] = (float)acc;
      }
  }
  return 0;
}
