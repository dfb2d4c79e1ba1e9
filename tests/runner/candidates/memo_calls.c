/* Keyed by call count: computes honestly on its first three calls (a one-set evaluation's check
 * call, determinism call and warm-up) and from then on returns the outputs of its last honest
 * call without reading the inputs. Right on every repeated call of a one-set tier; caught by the
 * first timed call on unseen inputs, whose outputs are checked against a reference made after
 * the call. For tasks/host/row_sum at smoke. */
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

#define MAX_ROWS 4096

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  static int calls;
  static float kept[MAX_ROWS];
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].shape[0] > MAX_ROWS)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  float *sums = out[0].data;
  if (calls++ >= 3) {
    memcpy(sums, kept, (size_t)rows * sizeof *sums);
    return 0;
  }
  const float *x = in[0].data;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.0f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    sums[r] = acc;
  }
  memcpy(kept, sums, (size_t)rows * sizeof *sums);
  return 0;
}
