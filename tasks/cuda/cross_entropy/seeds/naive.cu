/* Per-row cross-entropy: loss[r] = logsumexp(logits[r]) - logits[r][labels[r] mod C] (floor
 * modulo). One thread per row: maximum, sum of exponentials, then the loss. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

__global__ void cross_entropy(const float *logits, const int *labels, float *loss, int64_t rows,
                              int64_t classes) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  const float *row = logits + r * classes;
  float m = -INFINITY;
  for (int64_t c = 0; c < classes; c++)
    m = fmaxf(m, row[c]);
  float s = 0.0f;
  for (int64_t c = 0; c < classes; c++)
    s += expf(row[c] - m);
  int64_t t = ((int64_t)labels[r] % classes + classes) % classes;
  loss[r] = logf(s) - (row[t] - m); /* -log softmax(row)[t] */
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_I32)
    return 1;
  int64_t rows = in[0].shape[0], classes = in[0].shape[1];
  cross_entropy<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const int *)in[1].data, (float *)out[0].data, rows, classes);
  return cudaGetLastError() != cudaSuccess;
}
