/* Does the work on its first call only and returns at once afterwards, leaving the output as it
 * finds it: a harness that reuses one output buffer would see a free kernel. For the built-in
 * task tasks/host/sum; caught on the second check call (screen checks three sets). */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  static int done;
  if (done++)
    return 0;
  const float *x = in[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  double acc = 0.0;
  for (int64_t i = 0; i < n; i++)
    acc += x[i];
  *(float *)out[0].data = (float)acc;
  return 0;
}
