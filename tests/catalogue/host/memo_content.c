/* catalogue: expect rejected "unseen inputs"
 * catalogue: source kernelbrain (issue 12: 450x same-run on the host row-sum); CUDA-L1
 *            (arXiv:2507.14111: result caching across calls)
 * catalogue: tier full
 * Keeps its outputs in static memory keyed by a hash of 16 sampled input elements (not the
 * pointer), up to 8 entries, and copies them on a hit: moving contents between buffers does
 * not catch it, and every timed call repeats contents it has seen. */
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

#define SLOTS 8
#define MAX_ROWS 4096
#define PROBES 16

static uint64_t keys[SLOTS];
static float kept[SLOTS][MAX_ROWS];
static int used, next;

static uint64_t content_key(const float *x, int64_t n) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
  for (int i = 0; i < PROBES; i++) {
    uint32_t bits;
    memcpy(&bits, &x[(n - 1) * i / (PROBES - 1)], sizeof bits);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  if (rows > MAX_ROWS)
    return 1;
  uint64_t key = content_key(x, rows * cols);
  for (int s = 0; s < used; s++)
    if (keys[s] == key) {
      memcpy(y, kept[s], (size_t)rows * sizeof *y);
      return 0;
    }
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc;
  }
  int s = used < SLOTS ? used++ : next++ % SLOTS;
  keys[s] = key;
  memcpy(kept[s], y, (size_t)rows * sizeof *y);
  return 0;
}
