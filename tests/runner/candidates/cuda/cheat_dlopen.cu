// expect: rejected dlopen
// Reaches the driver API behind the runtime's back.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)stream;
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  void *fn = cuda ? dlsym(cuda, "cuCtxSynchronize") : nullptr;
  return fn == nullptr;
}
