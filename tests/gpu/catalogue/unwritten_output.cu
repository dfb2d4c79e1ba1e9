// catalogue: expect wrong_output "nan"
// catalogue: source AI CUDA Engineer (the retracted 150x kernel: memory holding the reference)
// catalogue: tier full
// Misbehaves: writes nothing at all, relying on a stale output buffer that still holds the
// reference's result (the AI CUDA Engineer's 150x "speed-up").
#include <cuda_runtime.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)stream;
  return 0;
}
