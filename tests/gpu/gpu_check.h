/* The checks of the GPU test programs (test_devkern.c, test_cupti.cu): CHECK counts a check
 * and reports a failed one with its place and a printf-style message; CUDA_OK ends the program
 * with exit 2 when a CUDA call (or a devkern call, which returns cudaError_t values) fails.
 * Each program ends with "PASS"/"FAIL" over `checks` and `failures`. C and C++. */
#ifndef KB_TESTS_GPU_CHECK_H
#define KB_TESTS_GPU_CHECK_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;
static int checks;

#define CHECK(cond, ...)                                                                       \
  do {                                                                                         \
    checks++;                                                                                  \
    if (!(cond)) {                                                                             \
      failures++;                                                                              \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                              \
      printf(__VA_ARGS__);                                                                     \
      printf("\n");                                                                            \
    }                                                                                          \
  } while (0)

#define CUDA_OK(expr)                                                                          \
  do {                                                                                         \
    int rc_ = (int)(expr);                                                                     \
    if (rc_ != 0) {                                                                            \
      printf("FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr,                               \
             cudaGetErrorString((cudaError_t)rc_));                                            \
      exit(2);                                                                                 \
    }                                                                                          \
  } while (0)

#endif
