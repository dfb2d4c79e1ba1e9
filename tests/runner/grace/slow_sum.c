/* The sum of a f32 vector, slowly on the first call of each evaluation (a second or more of busy work:
 * the library is loaded fresh for every evaluation), at normal speed after. For grace.sh. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  static int calls;
  if (calls++ == 0)
    for (volatile long spin = 0; spin < 1000000000L; spin++) {
    }
  const float *x = in[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  double acc = 0.0;
  for (int64_t i = 0; i < n; i++)
    acc += x[i];
  *(float *)out[0].data = (float)acc;
  return 0;
}
