/* gelu, naive: one libm erff call per element, y = 0.5 x (1 + erf(x / sqrt(2))). */
#include <math.h>
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  for (int64_t i = 0; i < n; i++)
    y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
  return 0;
}
