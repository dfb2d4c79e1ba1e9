// catalogue: expect rejected "wrote outside its outputs"
// catalogue: source pygpubench (exploits/submission_gpu_scan_zeros: writes next to its own buffers)
// catalogue: tier full
// Misbehaves: right sums, plus writes just past the end of its output (256 floats of zeros, as
// an off-by-a-block tail loop would): memory it does not own, maybe the evaluator's.
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void rowsum_overrun(const float *x, float *y, int64_t rows, int64_t cols) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows + 256)
    return;
  if (r >= rows) {
    y[r] = 0.f; /* past the end */
    return;
  }
  float acc = 0.f;
  for (int64_t c = 0; c < cols; c++)
    acc += x[r * cols + c];
  y[r] = acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_overrun<<<(unsigned)((rows + 256 + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (float *)out[0].data, rows, cols);
  return cudaGetLastError() != cudaSuccess;
}
