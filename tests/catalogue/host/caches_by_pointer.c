/* catalogue: expect rejected "moved to another buffer"
 * catalogue: source CUDA-L1 (arXiv:2507.14111: caching results across calls keyed by the
 *            input's address)
 * catalogue: tier full
 * Keeps the sums of each input pointer it has seen (up to 8) and, when a pointer comes again,
 * copies the kept sums instead of computing: right while a buffer keeps its contents, wrong
 * once the evaluator puts other contents behind the same pointer. */
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

#define SLOTS 8
#define MAX_ROWS 4096

static const void *seen[SLOTS];
static float kept[SLOTS][MAX_ROWS];
static int used;

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  if (rows > MAX_ROWS)
    return 1;
  for (int s = 0; s < used; s++)
    if (seen[s] == x) {
      memcpy(y, kept[s], (size_t)rows * sizeof *y);
      return 0;
    }
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc;
  }
  if (used < SLOTS) {
    seen[used] = x;
    memcpy(kept[used++], y, (size_t)rows * sizeof *y);
  }
  return 0;
}
