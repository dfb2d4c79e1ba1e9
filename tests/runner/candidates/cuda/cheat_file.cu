// expect: rejected fopen
// Reads "precomputed" outputs from a file.
#include <cstdio>
#include <cuda_runtime.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)n_out;
  FILE *f = fopen("/tmp/answers.bin", "rb");
  if (f == nullptr)
    return 1;
  static float host[1 << 20];
  size_t got = fread(host, sizeof(float), 1 << 20, f);
  fclose(f);
  return cudaMemcpyAsync(out[0].data, host, got * sizeof(float), cudaMemcpyHostToDevice,
                         (cudaStream_t)stream) != cudaSuccess;
}
