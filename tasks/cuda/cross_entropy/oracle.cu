/* Oracle of task "cross_entropy": for each row r,
 *   t_r = labels[r] mod C (floor modulo, so 0 <= t_r < C for any integer label),
 *   loss[r] = log(sum_c exp(logits[r][c])) - logits[r][t_r]
 * i.e. torch.nn.functional.cross_entropy(logits, t, reduction="none").
 * Every input set draws labels from its own range (the input generator applies one range to
 * all inputs of a set), hence the modulo: negative labels wrap around to the last classes.
 *
 * Inputs  logits: f32 [32768, 8192] (1 GiB), labels: i32 [32768]   Output loss: f32 [32768]
 * Tolerance: atol 1e-4, rtol 1e-4 (f32 default); losses are >= 0 and ~9 for small logits. The
 * uniform [-40, 40) and integers [0, 8192) sets overflow exp() unless the row maximum is
 * subtracted (log-sum-exp); the integers set also spreads the labels over every class.
 *
 * One block of 256 threads per row: maximum, then sum of exp(x - max), each reduced in double
 * through a plain shared-memory tree. */
#include <cuda_runtime.h>
#include <math.h>

#include "kb_kernel.h"

#define THREADS 256

__global__ void cross_entropy_oracle(const float *logits, const int32_t *labels, float *loss,
                                     int64_t classes) {
  __shared__ double part[THREADS];
  const float *row = logits + (int64_t)blockIdx.x * classes;
  double m = -INFINITY;
  for (int64_t c = threadIdx.x; c < classes; c += THREADS)
    m = fmax(m, (double)row[c]);
  part[threadIdx.x] = m;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] = fmax(part[threadIdx.x], part[threadIdx.x + half]);
    __syncthreads();
  }
  m = part[0];
  __syncthreads();
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < classes; c += THREADS)
    s += exp((double)row[c] - m);
  part[threadIdx.x] = s;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    int64_t t = ((int64_t)labels[blockIdx.x] % classes + classes) % classes;
    loss[blockIdx.x] = (float)(m + log(part[0]) - (double)row[t]);
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_I32 || out[0].dtype != KB_F32 ||
      kb_tensor_numel(&in[1]) != in[0].shape[0] || kb_tensor_numel(&out[0]) != in[0].shape[0])
    return 1;
  cross_entropy_oracle<<<(unsigned)in[0].shape[0], THREADS, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const int32_t *)in[1].data, (float *)out[0].data,
      in[0].shape[1]);
  return cudaGetLastError() != cudaSuccess;
}
