/* row_sum, tuned: ACC independent f32 accumulators per row, so the adds of one step do not
 * wait on each other and the fixed-length inner loop becomes vector adds; ROWS rows are summed
 * in the same pass over the columns. The accumulators are combined pairwise at the end. */
#include <stdint.h>

#include "kb_kernel.h"

// kb:param ACC 4 8 16 32 64
#ifndef ACC
#define ACC 16
#endif

// kb:param ROWS 1 2 4
#ifndef ROWS
#define ROWS 2
#endif

#if ACC & (ACC - 1)
#error "ACC must be a power of two (pairwise combination)"
#endif

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *restrict x = in[0].data;
  float *restrict sums = out[0].data;
  int64_t r0 = 0;
  for (; r0 < rows; r0 += ROWS) {
    int nr = rows - r0 < ROWS ? (int)(rows - r0) : ROWS;
    float acc[ROWS][ACC];
    for (int k = 0; k < ROWS; k++)
      for (int j = 0; j < ACC; j++)
        acc[k][j] = 0.0f;
    int64_t c = 0;
    for (; c + ACC <= cols; c += ACC)
      for (int k = 0; k < nr; k++) {
        const float *row = x + (r0 + k) * cols + c;
        for (int j = 0; j < ACC; j++)
          acc[k][j] += row[j];
      }
    for (int k = 0; k < nr; k++) {
      for (int64_t cc = c; cc < cols; cc++)
        acc[k][0] += x[(r0 + k) * cols + cc];
      for (int width = ACC / 2; width > 0; width /= 2)
        for (int j = 0; j < width; j++)
          acc[k][j] += acc[k][j + width];
      sums[r0 + k] = acc[k][0];
    }
  }
  return 0;
}
