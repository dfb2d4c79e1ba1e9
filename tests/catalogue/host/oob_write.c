/* catalogue: expect rejected "wrote outside its outputs"
 * catalogue: source pygpubench (exploits/submission_gpu_scan_zeros: overwrites the expected
 *            buffers found next to its own)
 * catalogue: tier smoke
 * Right sums, plus 512 zeros written just past the end of its output, as an off-by-a-block tail
 * loop would: memory it does not own (today the evaluator's reference lies there). */
#include <stdint.h>

#include "kb_kernel.h"

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
      acc += x[r * cols + c];
    y[r] = acc;
  }
  volatile float *past = y + rows;
  for (int64_t r = 0; r < rows; r++)
    past[r] = 0.f;
  return 0;
}
