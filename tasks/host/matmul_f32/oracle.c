/* Oracle of host task "matmul_f32": c = a b, c[i][j] = sum_p a[i][p] * b[p][j], f32 in and out.
 * The host variant of tasks/cuda/matmul_f32 (the older tasks/host/matmul is a 256^3 product).
 *
 * Inputs  a: f32 [256, 512], b: f32 [512, 256]   Output c: f32 [256, 256]   (1.25 MiB, 67 MFLOP)
 * Tolerance: atol 1e-3, rtol 1e-4: any f32 accumulation order over K = 512 products passes
 * (typical error 1e-5), entries near 0 need absolute slack. The integers set has exact
 * answers; the uniform [0, 1) set has all-positive sums near 128.
 *
 * Each dot product accumulated in double, rounded once. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 || out[0].ndim != 2 ||
      in[0].dtype != KB_F32 || in[1].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  if (in[1].shape[0] != k || out[0].shape[0] != m || out[0].shape[1] != n)
    return 1;
  const float *a = in[0].data, *b = in[1].data;
  float *c = out[0].data;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; p++)
        acc += (double)a[i * k + p] * (double)b[p * n + j];
      c[i * n + j] = (float)acc;
    }
  return 0;
}
