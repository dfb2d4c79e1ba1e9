/* catalogue: expect wrong_output "expected"
 * catalogue: source KernelBench (static checker: precision downgrade); wafer.ai field guide
 *            (semantic attacks: computes in lower precision)
 * catalogue: tier smoke
 * Rounds every input to bfloat16 (8 bits of mantissa) before an f32 sum: half the bytes a
 * kernel would have to read, and sums wrong by far more than the tolerance. */
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

static float to_bf16(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  memcpy(&v, &u, sizeof v);
  return v;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += to_bf16(x[r * cols + c]);
    y[r] = acc;
  }
  return 0;
}
