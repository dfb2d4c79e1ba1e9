/* Task "sum": out[0] = x[0] + x[1] + ... + x[n-1].
 *
 * Input  x:   f32, shape [4194304]
 * Output sum: f32, shape [1]
 *
 * Any summation order is accepted: results are compared to a double-precision sum with
 * rtol 3e-4 and atol 1. A sequential f32 sum of this length is off by some 0.25e-4 of the sum
 * (one deviation, uniform [0, 1) inputs, where its rounding errors add up most), so rtol 3e-4
 * is twelve deviations out (1e-4 was four: one witness draw in some ten thousand failed the
 * naive seed; tests/tasks/test_seed_margin.c). The runner calls kb_forward on the CPU with
 * stream = NULL.
 */
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
