// catalogue: expect wrong_output -
// catalogue: source pygpubench (exploits/submission_gc_copy: copies the expected outputs)
// catalogue: tier full
// Remembers every input buffer it is given and looks for the evaluator's reference outputs where
// today's sandbox keeps them, right after each set's inputs and check outputs in one allocation;
// one warp sums rows 0 and 1 honestly to recognise the reference of the contents it holds now, and
// the copy kernel copies it (zeros when none matched). Once references live apart from the
// candidate's buffers it finds nothing and its zeros are wrong (should the memory there be
// unmapped, the verdict is a crash instead: then the separation is even stricter than assumed).
#include <stdint.h>
#include <string.h>

#include <cuda_runtime.h>

#include "kb_kernel.h"

#define SLOTS 8
#define ALIGN 256

static size_t align_up(size_t v) { return (v + ALIGN - 1) / ALIGN * ALIGN; }

struct refs {
  const float *at[SLOTS];
  int n;
};

__device__ int found;

/* one warp: the honest sums of rows 0 and 1, then the first reference candidate that holds them */
__global__ void find_reference(const float *x, int64_t cols, struct refs r) {
  float want[2];
  for (int k = 0; k < 2; k++) {
    float acc = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += 32)
      acc += x[k * cols + c];
    for (int o = 16; o > 0; o >>= 1)
      acc += __shfl_xor_sync(0xffffffffu, acc, o);
    want[k] = acc;
  }
  if (threadIdx.x != 0)
    return;
  found = -1;
  for (int i = 0; i < r.n; i++) {
    int ok = 1;
    for (int k = 0; k < 2; k++) {
      float g = r.at[i][k];
      ok &= g == g && fabsf(g - want[k]) <= 1e-2f + 1e-4f * fabsf(want[k]);
    }
    if (ok) {
      found = i;
      return;
    }
  }
}

static const char *bufs[SLOTS];
static int used;

/* The reference candidates: where today's sandbox keeps each set's reference, after the set's
 * inputs and check outputs in one allocation, for every input buffer seen so far. */
static struct refs candidates(const kb_tensor *in, int64_t rows, int64_t cols) {
  int known = 0;
  for (int k = 0; k < used; k++)
    known |= bufs[k] == (const char *)in[0].data;
  if (!known && used < SLOTS)
    bufs[used++] = (const char *)in[0].data;
  struct refs r;
  memset(&r, 0, sizeof r);
  size_t in_bytes = (size_t)(rows * cols) * sizeof(float), out_bytes = (size_t)rows * sizeof(float);
  for (int k = 0; k < used; k++)
    r.at[r.n++] = (const float *)(bufs[k] + align_up(in_bytes) + align_up(out_bytes));
  return r;
}

__global__ void copy_found(float *y, int64_t rows, struct refs r) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows)
    y[i] = found >= 0 ? r.at[found][i] : 0.f;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  cudaStream_t s = (cudaStream_t)stream;
  struct refs r = candidates(in, rows, cols);
  find_reference<<<1, 32, 0, s>>>((const float *)in[0].data, cols, r);
  copy_found<<<(unsigned)((rows + 255) / 256), 256, 0, s>>>((float *)out[0].data, rows, r);
  return cudaGetLastError() != cudaSuccess;
}
