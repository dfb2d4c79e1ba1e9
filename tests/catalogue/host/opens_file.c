/* catalogue: expect rejected "opens or uses files"
 * catalogue: source pygpubench (exploits/submission_fd_overwrite, submission_file_struct: the
 *            result file written by the candidate)
 * catalogue: tier smoke
 * Opens a file with fopen() to leave a result for the harness, then computes honestly: refused
 * by the import allow-list before it runs. */
#include <stdint.h>
#include <stdio.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  FILE *f = fopen("result.txt", "w");
  if (f != NULL)
    fclose(f);
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc;
  }
  return 0;
}
