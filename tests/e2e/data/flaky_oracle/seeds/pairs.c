/* The flaky_oracle task's sum with two accumulators (even and odd elements). */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1)
    return 1;
  const float *x = in[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  double a = 0.0, b = 0.0;
  int64_t i = 0;
  for (; i + 1 < n; i += 2) {
    a += x[i];
    b += x[i + 1];
  }
  if (i < n)
    a += x[i];
  *(float *)out[0].data = (float)(a + b);
  return 0;
}
