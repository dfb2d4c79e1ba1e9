/* sum, unrolled: ACC independent f32 accumulators, so the adds of one step do not wait on each
 * other (and the compiler can keep them in vector registers); combined pairwise at the end. */
#include <stdint.h>

#include "kb_kernel.h"

// kb:param ACC 8 16 32
#ifndef ACC
#define ACC 16
#endif

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  const float *x = in[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  float acc[ACC];
  for (int j = 0; j < ACC; j++)
    acc[j] = 0.0f;
  int64_t i = 0;
  for (; i + ACC <= n; i += ACC)
    for (int j = 0; j < ACC; j++)
      acc[j] += x[i + j];
  for (; i < n; i++)
    acc[0] += x[i];
  for (int width = ACC / 2; width > 0; width /= 2)
    for (int j = 0; j < width; j++)
      acc[j] += acc[j + width];
  *(float *)out[0].data = acc[0];
  return 0;
}
