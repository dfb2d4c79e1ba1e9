/* The naive seed of the catalogue's test task "scale_large": y = 2 x, one element at a time. */
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
  for (int64_t i = 0; i < n; i++)
    y[i] = 2.0f * x[i];
  return 0;
}
