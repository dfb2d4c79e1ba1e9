// expect: rejected cupti
// Turns the profiler's kernel records off, so the runner's CUPTI cross-check sees nothing.
#include <cuda_runtime.h>

#include "kb_kernel.h"

extern "C" int cuptiActivityDisable(int kind);

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)stream;
  return cuptiActivityDisable(10);
}
