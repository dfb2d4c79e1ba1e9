/* catalogue: expect crash "SIGSEGV"
 * catalogue: source kernelbrain (the host form of the GPU catalogue's illegal_address)
 * catalogue: tier smoke
 * Writes through a wild pointer: the sandbox dies by SIGSEGV and the runner lives on. */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)n_out;
  (void)stream;
  volatile float *wild = (float *)out[0].data + ((int64_t)1 << 40);
  *wild = 1.f;
  return 0;
}
