/* ReLU of tests/tasks/kernelbench/1_relu.py whose first call is right and whose later calls
 * each get one element wrong, as a race that happens to pass once does: the second call on the
 * same inputs disagrees with the first, rejected as "not deterministic". */
#include "kb_kernel.h"

static unsigned long calls;

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32)
    return 1;
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  if (calls++ > 0)
    y[(int64_t)((calls * 7919u) % (unsigned long)n)] += 1.0f;
  return 0;
}
