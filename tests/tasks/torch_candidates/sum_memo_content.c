/* tests/tasks/kernelbench/2_sum_over_dim.py, memoized by content: the outputs are kept in static
 * memory keyed by a hash of 16 sampled input elements (not by pointer, so rotating contents
 * between buffers does not catch it) and copied back on a hit. Right on every call, and
 * hundreds of times faster on contents it has seen: rejected with "unseen inputs" (the times on
 * fresh draws are those of the honest sum). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kb_kernel.h"

#define SLOTS 64

static uint64_t keys[SLOTS];
static float *kept[SLOTS];
static int next_slot;

static uint64_t key_of(const float *x, int64_t n) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < 16; i++) {
    uint32_t bits;
    memcpy(&bits, &x[(n / 16) * i + i], sizeof bits);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h | 1;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 3)
    return 1;
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t b = in[0].shape[0], r = in[0].shape[1], c = in[0].shape[2];
  size_t bytes = (size_t)(b * c) * sizeof(float);
  uint64_t key = key_of(x, b * r * c);
  for (int s = 0; s < SLOTS; s++)
    if (keys[s] == key) {
      memcpy(y, kept[s], bytes);
      return 0;
    }
  for (int64_t i = 0; i < b; i++)
    for (int64_t k = 0; k < c; k++) {
      double sum = 0;
      for (int64_t j = 0; j < r; j++)
        sum += x[(i * r + j) * c + k];
      y[i * c + k] = (float)sum;
    }
  int s = next_slot;
  next_slot = (next_slot + 1) % SLOTS;
  free(kept[s]);
  kept[s] = malloc(bytes);
  if (kept[s] == NULL)
    return 0;
  memcpy(kept[s], y, bytes);
  keys[s] = key;
  return 0;
}
