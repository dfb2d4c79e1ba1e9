/* sum, naive: one sequential f32 accumulator (one add per element, latency-bound). */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  const float *x = in[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  float acc = 0.0f;
  for (int64_t i = 0; i < n; i++)
    acc += x[i];
  *(float *)out[0].data = acc;
  return 0;
}
