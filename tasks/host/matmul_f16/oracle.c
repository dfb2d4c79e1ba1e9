/* Oracle of host task "matmul_f16": c = a b with f16 inputs and output, c[i][j] = sum_p
 * a[i][p] * b[p][j] accumulated in (at least) f32 and rounded to f16 once. The host variant of
 * tasks/cuda/matmul_f16.
 *
 * Inputs  a: f16 [128, 256], b: f16 [256, 128]   Output c: f16 [128, 128]   (8.4 MFLOP)
 * f16 is IEEE binary16 stored in 2 bytes (kb_kernel.h); in C it is _Float16, which GCC and
 * Clang support on x86-64 and AArch64 (without F16C the conversions are libgcc calls, about
 * 10 ns each, hence the smaller shapes than the f32 products).
 * Tolerance: atol 1e-2, rtol 1e-2 (f16 default): one f16 rounding of the result is 5e-4
 * relative. The uniform [0, 1) set has all-positive sums near 64.
 *
 * Each dot product accumulated in double, rounded to f16 once (double to _Float16 directly,
 * round to nearest even). */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 || out[0].ndim != 2 ||
      in[0].dtype != KB_F16 || in[1].dtype != KB_F16 || out[0].dtype != KB_F16)
    return 1;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  if (in[1].shape[0] != k || out[0].shape[0] != m || out[0].shape[1] != n)
    return 1;
  const _Float16 *a = in[0].data, *b = in[1].data;
  _Float16 *c = out[0].data;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; p++)
        acc += (double)a[i * k + p] * (double)b[p * n + j];
      c[i * n + j] = (_Float16)acc;
    }
  return 0;
}
