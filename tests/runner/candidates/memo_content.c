/* Keeps its outputs in static memory keyed by a hash of a few sampled input elements (not by
 * the pointer, so moving contents between buffers does not catch it): a hit copies the kept
 * row sums, a miss computes them and keeps them. Every repeated call is nearly free, and right.
 * Caught by the timed calls on unseen inputs: those miss, and their times are hundreds of times
 * those of the repeated calls. For tasks/host/row_sum. */
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

#define SLOTS 8
#define MAX_ROWS 4096

static struct {
  uint64_t key;
  int used;
  float sums[MAX_ROWS];
} memo[SLOTS];
static int next_slot;

static uint64_t sampled_hash(const float *x, int64_t n) {
  const int64_t at[5] = {0, 1, n / 3, n / 2, n - 1};
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (int k = 0; k < 5; k++) {
    uint32_t bits;
    memcpy(&bits, &x[at[k]], sizeof bits);
    h = (h ^ bits) * UINT64_C(0x100000001b3);
  }
  return h;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].shape[0] > MAX_ROWS)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *sums = out[0].data;
  uint64_t key = sampled_hash(x, rows * cols);
  for (int k = 0; k < SLOTS; k++)
    if (memo[k].used && memo[k].key == key) {
      memcpy(sums, memo[k].sums, (size_t)rows * sizeof *sums);
      return 0;
    }
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.0f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    sums[r] = acc;
  }
  int k = next_slot++ % SLOTS;
  memo[k].key = key;
  memo[k].used = 1;
  memcpy(memo[k].sums, sums, (size_t)rows * sizeof *sums);
  return 0;
}
