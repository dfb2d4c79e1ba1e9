/* C = A B for f32 matrices, on the CPU: a host candidate (the built-in task tasks/host/matmul).
 * Task: inputs a (f32, [m, k]) and b (f32, [k, n]); output c (f32, [m, n]).
 * Blocks of TILE rows of B stay in cache while every row of A passes over them; the innermost
 * loop runs along a row of B and of C, contiguous, so the compiler vectorizes it. */
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

// kb:param TILE 16 32 64 128
#ifndef TILE
#define TILE 64
#endif

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream; /* NULL for host candidates */
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 ||
      in[0].dtype != KB_F32 || in[1].dtype != KB_F32 || out[0].dtype != KB_F32 ||
      in[0].shape[1] != in[1].shape[0])
    return 1;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  const float *restrict a = in[0].data;
  const float *restrict b = in[1].data;
  float *restrict c = out[0].data;
  /* the output arrives filled with garbage (NaN and sentinels): write every element */
  memset(c, 0, (size_t)(m * n) * sizeof *c);
  for (int64_t p0 = 0; p0 < k; p0 += TILE) {
    int64_t p1 = p0 + TILE < k ? p0 + TILE : k;
    for (int64_t i = 0; i < m; i++) {
      float *restrict crow = c + i * n;
      for (int64_t p = p0; p < p1; p++) {
        float aip = a[i * k + p];
        const float *restrict brow = b + p * n;
        for (int64_t j = 0; j < n; j++)
          crow[j] += aip * brow[j];
      }
    }
  }
  return 0;
}
