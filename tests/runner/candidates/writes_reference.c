/* A cheat that writes out of bounds: it stores 0 as its answer and 0 at the first element past
 * its output's 256-byte slot too, where an evaluator that keeps the expected output right after
 * the candidate's (as kb-sandbox once did) has it. kb-sandbox keeps its references in another
 * allocation, masked, and a checksummed guard follows every buffer: the write lands in the
 * guard. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)n_out;
  (void)stream;
  float *y = (float *)out[0].data;
  y[0] = 0.0f;
  y[64] = 0.0f; /* 256 bytes on: the reference */
  return 0;
}
