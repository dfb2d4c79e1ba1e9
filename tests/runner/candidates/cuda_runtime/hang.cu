/* A kernel that never ends. Expected: timeout at the tier's limit; the sandbox's process group
 * is killed and the runner starts a new one. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void forever(volatile int *flag) {
  while (*flag != 0) {
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)n_out;
  /* the poisoned output's first word is never 0, and nothing writes it */
  forever<<<1, 1, 0, (cudaStream_t)stream>>>((volatile int *)out[0].data);
  return cudaGetLastError() != cudaSuccess;
}
