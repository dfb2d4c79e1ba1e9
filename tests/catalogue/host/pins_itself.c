/* catalogue: expect rejected "stayed loaded"
 * catalogue: source kernelbrain (the check between candidates: a library that keeps itself
 *            in the sandbox's process)
 * catalogue: tier smoke
 * Computes honestly, but holds a GNU unique symbol: the dynamic loader then never unloads the
 * library, so code of it stays in the sandbox process for every candidate evaluated after it
 * there (what timer_forge.c needs for its rewritten clock to keep a target; a hook left in the
 * process's writable data would need the same). The sandbox checks after each evaluation that
 * the candidate's library is gone (runner/sandbox/integrity.h) and ends the process when not. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_pin = 1;
__asm__(".type kb_pin, @gnu_unique_object");

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc + 0.f * (float)kb_pin;
  }
  return 0;
}
