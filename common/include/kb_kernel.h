/* kernelbrain candidate ABI, version 1.
 *
 * A candidate is a shared library that exports kb_forward(). The runner passes every input
 * (parameters are inputs too) read-only and every output preallocated, all contiguous and
 * row-major. A CUDA candidate does all its work on `stream` (a cudaStream_t) and may return
 * before the work finishes; a host candidate ignores `stream` (NULL) and works on the CPU.
 * Return 0 on success, non-zero to report failure. Do not allocate long-lived state, start
 * threads, open files, or time yourself: the runner rejects candidates that do.
 * See docs/candidate-abi.md for a worked example.
 */
#ifndef KB_KERNEL_H
#define KB_KERNEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KB_ABI_VERSION 1
#define KB_MAX_DIMS 8

/* Element types. The numbers are part of the ABI. */
enum kb_dtype {
  KB_F32 = 0,
  KB_F16 = 1,
  KB_BF16 = 2,
  KB_F64 = 3,
  KB_I32 = 4,
  KB_I64 = 5,
  KB_U8 = 6,
  KB_BOOL = 7
};

typedef struct {
  void *data;                 /* device memory (CUDA) or host memory (host backend) */
  int dtype;                  /* enum kb_dtype */
  int ndim;                   /* 0..KB_MAX_DIMS */
  int64_t shape[KB_MAX_DIMS]; /* elements per dimension; contiguous, row-major */
} kb_tensor;

/* Bytes per element of `dtype`, 0 for an unknown dtype. */
static inline int kb_dtype_size(int dtype) {
  switch (dtype) {
  case KB_F32: case KB_I32: return 4;
  case KB_F16: case KB_BF16: return 2;
  case KB_F64: case KB_I64: return 8;
  case KB_U8: case KB_BOOL: return 1;
  }
  return 0;
}

/* Number of elements of `t` (1 for a scalar). */
static inline int64_t kb_tensor_numel(const kb_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream);

#ifdef __cplusplus
}
#endif
#endif
