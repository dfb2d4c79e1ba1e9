/* Writes far outside its output: an illegal address, a sticky CUDA error that leaves the
 * context unusable. Expected: crash naming the CUDA error; the sandbox exits and the runner
 * starts a new one (tests/gpu/sandbox.sh measures that restart). Any task with an f32 output. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void scribble(float *y) { y[(size_t)1 << 40] = 1.0f; }

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)n_out;
  scribble<<<1, 1, 0, (cudaStream_t)stream>>>((float *)out[0].data);
  return cudaGetLastError() != cudaSuccess;
}
