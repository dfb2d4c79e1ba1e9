// expect: rejected cudaGetDriverEntryPoint
// Asks the runtime for driver functions by name: anything, with no import to show for it.
#include <cuda_runtime.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)stream;
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPoint("cuCtxSynchronize", &fn, cudaEnableDefault, &q);
  return fn == nullptr;
}
