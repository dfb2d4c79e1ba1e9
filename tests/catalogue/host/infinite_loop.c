/* catalogue: expect timeout -
 * catalogue: source kernelbrain (the host form of the GPU catalogue's infinite_loop)
 * catalogue: tier smoke
 * Never returns (spins on a condition the inputs never meet): the watchdog kills the sandbox. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  volatile const float *x = in[0].data;
  float acc = 0.f;
  while (x[0] < 1e30f) /* the inputs are bounded: always true */
    acc += x[1];
  ((float *)out[0].data)[0] = acc;
  return 0;
}
