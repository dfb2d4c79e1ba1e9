/* Oracle of host task "gelu": y = x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2))), the exact
 * (erf) GELU, not the tanh approximation. The host variant of tasks/cuda/gelu.
 *
 * Input  x: f32 [512, 1024] (2 MiB)   Output y: f32 [512, 1024] (2 MiB)
 * Tolerance: atol 1e-4, rtol 1e-4 (f32 default). The tanh approximation differs by up to ~1e-3
 * and does not pass. The large-range sets (uniform [-12, 12], normal with stddev 40) reach the
 * tails where y == x or y == -0.
 *
 * Each element computed in double and rounded once. The runner calls kb_forward on the CPU
 * with stream = NULL. */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      kb_tensor_numel(&in[0]) != kb_tensor_numel(&out[0]))
    return 1;
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  for (int64_t i = 0; i < n; i++) {
    double v = (double)x[i];
    y[i] = (float)(0.5 * v * (1.0 + erf(v / sqrt(2.0))));
  }
  return 0;
}
