/* catalogue: expect ok -
 * catalogue: source kernelbrain (control: an honest candidate whose outputs the witness samples
 *            must pass)
 * catalogue: task tests/catalogue/tasks/scale_large
 * catalogue: tier full
 * Honest: y = 2 x, four elements a step. Its output (22 MiB a call) is over a third of the
 * witness's 64 MiB a request, so the witness keeps 64 blocks of each call's, at starts drawn
 * from a seed the runner gives after the call has returned (runner/witness.c).
 */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32)
    return 1;
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t n = kb_tensor_numel(&in[0]), i = 0;
  for (; i + 4 <= n; i += 4) {
    y[i] = 2.0f * x[i];
    y[i + 1] = 2.0f * x[i + 1];
    y[i + 2] = 2.0f * x[i + 2];
    y[i + 3] = 2.0f * x[i + 3];
  }
  for (; i < n; i++)
    y[i] = 2.0f * x[i];
  return 0;
}
