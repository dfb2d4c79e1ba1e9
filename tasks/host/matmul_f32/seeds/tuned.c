/* matmul_f32, tuned: blocked i-p-j loops. A panel of BK rows of b, BJ columns wide, stays in
 * cache while every row of a passes over it; PU rows of b are folded into a row of c per pass,
 * so each element of c is loaded and stored once per PU multiply-adds; the innermost loop runs
 * along rows of b and c, contiguous, and vectorizes. */
#include <stdint.h>

#include "kb_kernel.h"

// kb:param BK 16 32 64 128 256
#ifndef BK
#define BK 64
#endif

// kb:param BJ 32 64 128 256
#ifndef BJ
#define BJ 256
#endif

// kb:param PU 1 2 4 8
#ifndef PU
#define PU 4
#endif

/* c[0:m, j0:j1] += a[0:m, p0:p1] b[p0:p1, j0:j1] for row-major a (m x k), b (k x n), c (m x n). */
static void panel(const float *restrict a, const float *restrict b, float *restrict c, int64_t m,
                  int64_t k, int64_t n, int64_t p0, int64_t p1, int64_t j0, int64_t j1) {
  for (int64_t i = 0; i < m; i++) {
    float *restrict crow = c + i * n;
    int64_t p = p0;
    for (; p + PU <= p1; p += PU) {
      float av[PU];
      const float *restrict brow[PU];
      for (int u = 0; u < PU; u++) {
        av[u] = a[i * k + p + u];
        brow[u] = b + (p + u) * n;
      }
      for (int64_t j = j0; j < j1; j++) {
        float s = crow[j];
        for (int u = 0; u < PU; u++)
          s += av[u] * brow[u][j];
        crow[j] = s;
      }
    }
    for (; p < p1; p++) {
      const float *restrict brow = b + p * n;
      float aip = a[i * k + p];
      for (int64_t j = j0; j < j1; j++)
        crow[j] += aip * brow[j];
    }
  }
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 || in[0].dtype != KB_F32 ||
      in[1].dtype != KB_F32 || out[0].dtype != KB_F32 || in[1].shape[0] != in[0].shape[1])
    return 1;
  int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  const float *a = in[0].data, *b = in[1].data;
  float *c = out[0].data;
  for (int64_t i = 0; i < m * n; i++)
    c[i] = 0.0f;
  for (int64_t p0 = 0; p0 < k; p0 += BK)
    for (int64_t j0 = 0; j0 < n; j0 += BJ)
      panel(a, b, c, m, k, n, p0, p0 + BK < k ? p0 + BK : k, j0, j0 + BJ < n ? j0 + BJ : n);
  return 0;
}
