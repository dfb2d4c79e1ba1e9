/* Oracle of task "bmm": c[z] = a[z] b[z] for each batch z, c[z][i][j] = sum_p a[z][i][p] *
 * b[z][p][j].
 *
 * Inputs  a: f32 [32, 1024, 1024], b: f32 [32, 1024, 1024] (128 MiB each)
 * Output  c: f32 [32, 1024, 1024] (128 MiB); 68.7 GFLOP per call.
 * Tolerance: atol 1e-3, rtol 1e-4: any f32 accumulation order over K = 1024 passes (a sequential
 * f32 dot product of normal values is typically off by ~3e-5; entries near 0 need the absolute
 * slack). TF32 does not pass. The integers set has an exact answer.
 *
 * One thread per output element, accumulating in double, rounded once. */
#include <cuda_runtime.h>

#include "kb_kernel.h"

__global__ void bmm_oracle(const float *a, const float *b, float *c, int64_t m, int64_t n,
                           int64_t k) {
  int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
  int64_t z = blockIdx.z;
  if (i >= m || j >= n)
    return;
  const float *az = a + z * m * k;
  const float *bz = b + z * k * n;
  double acc = 0.0;
  for (int64_t p = 0; p < k; p++)
    acc += (double)az[i * k + p] * (double)bz[p * n + j];
  c[z * m * n + i * n + j] = (float)acc;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 3 || in[1].ndim != 3 || out[0].ndim != 3 ||
      in[0].dtype != KB_F32 || in[1].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  int64_t batch = in[0].shape[0], m = in[0].shape[1], k = in[0].shape[2], n = in[1].shape[2];
  if (in[1].shape[0] != batch || in[1].shape[1] != k || out[0].shape[0] != batch ||
      out[0].shape[1] != m || out[0].shape[2] != n || batch > 65535)
    return 1;
  dim3 block(32, 8);
  dim3 grid((unsigned)((n + 31) / 32), (unsigned)((m + 7) / 8), (unsigned)batch);
  bmm_oracle<<<grid, block, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (float *)out[0].data, m, n, k);
  return cudaGetLastError() != cudaSuccess;
}
