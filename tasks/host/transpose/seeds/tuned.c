/* transpose, tuned: TR x TC tiles, so the TR rows of x read and the TC rows of y written by one
 * tile stay in cache together; inside a tile, the inner loop runs along a row of y (a column
 * of x) and the compiler turns the fixed-size tile into unrolled code. */
#include <stdint.h>

#include "kb_kernel.h"

// kb:param TR 4 8 16 32 64
#ifndef TR
#define TR 16
#endif

// kb:param TC 4 8 16 32 64
#ifndef TC
#define TC 16
#endif

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      out[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *restrict x = in[0].data;
  float *restrict y = out[0].data;
  for (int64_t i0 = 0; i0 < rows; i0 += TR)
    for (int64_t j0 = 0; j0 < cols; j0 += TC) {
      if (i0 + TR <= rows && j0 + TC <= cols) {
        for (int j = 0; j < TC; j++)
          for (int i = 0; i < TR; i++)
            y[(j0 + j) * rows + i0 + i] = x[(i0 + i) * cols + j0 + j];
      } else {
        int64_t i1 = i0 + TR < rows ? i0 + TR : rows, j1 = j0 + TC < cols ? j0 + TC : cols;
        for (int64_t j = j0; j < j1; j++)
          for (int64_t i = i0; i < i1; i++)
            y[j * rows + i] = x[i * cols + j];
      }
    }
  return 0;
}
