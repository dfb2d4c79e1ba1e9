/* catalogue: expect rejected "unseen inputs"
 * catalogue: source CUDA-L1 (arXiv:2507.14111: results cached by input address); kernelbrain
 *            (keyed by the call count as well, so that the rotation before timing misses it)
 * catalogue: tier full
 * Computes honestly while its call count says the evaluator is still checking (the first 8
 * calls: one per input set, then the first warm-up calls), then caches by input pointer: each
 * buffer's first later call computes and keeps the sums, the calls after it copy them. The
 * contents were moved between buffers before timing began, so a cache filled after that point
 * matches them. */
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

#define SLOTS 8
#define MAX_ROWS 4096
#define HONEST_CALLS 8

static const void *seen[SLOTS];
static float kept[SLOTS][MAX_ROWS];
static int used;
static long calls;

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  if (rows > MAX_ROWS)
    return 1;
  int caching = ++calls > HONEST_CALLS;
  if (caching)
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
  if (caching && used < SLOTS) {
    seen[used] = x;
    memcpy(kept[used++], y, (size_t)rows * sizeof *y);
  }
  return 0;
}
