/* catalogue: expect rejected "environment"
 * catalogue: source pygpubench (csrc/landlock.cpp and the exploits that read the harness's
 *            environment and files); kernelbrain issue 12 (an API key in the runner's
 *            environment)
 * catalogue: tier smoke
 * Looks for a secret in its own environment with getenv(), then computes honestly: refused by
 * the import allow-list before it runs (the sandbox's environment is scrubbed anyway). */
#include <stdint.h>
#include <stdlib.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  volatile const char *key = getenv("OPENAI_API_KEY");
  (void)key;
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
