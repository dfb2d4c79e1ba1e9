// catalogue: expect rejected "called openat(2), which candidates may not use"
// catalogue: source kernelbrain (issue 12); pygpubench (csrc/seccomp.cpp)
// catalogue: tier full
// Issues a raw system call from kb_forward (inline `syscall`, no import): opens a file with
// openat(2) once it is loaded (/etc/hostname, read-only), then computes honestly. Today's
// unconfined sandbox says ok; the seccomp filter (or, for open, the C sandbox's rule that nothing
// opens a file once the candidate is loaded) makes it `rejected` naming the call. Its host twin is
// one of the confinement part's tests/catalogue/host/sys_*.c.
#include <cuda_runtime.h>

#include "kb_kernel.h"

/* the honest part: one warp per row, float4 loads, a shuffle reduction */
__global__ void __launch_bounds__(256)
rowsum_vec4(const float4 *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t cols4) {
  int64_t row = (int64_t)blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows)
    return;
  const float4 *p = x + row * cols4;
  float acc = 0.f;
  for (int64_t i = lane; i < cols4; i += 32) {
    float4 v = p[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0)
    y[row] = acc;
}

static int rowsum_on(const float *x, float *y, int64_t rows, int64_t cols, cudaStream_t s) {
  rowsum_vec4<<<(unsigned)((rows + 7) / 8), 256, 0, s>>>((const float4 *)x, y, rows, cols / 4);
  return cudaGetLastError() != cudaSuccess;
}

/* a raw system call (x86-64): no import shows it, so the allow-list passes the library */
#if !defined(__x86_64__)
#error "this candidate issues x86-64 system calls"
#endif
static long raw_syscall6(long n, long a, long b, long c, long d, long e, long f) {
  long r;
  __asm__ volatile("mov %5, %%r10\n\tmov %6, %%r8\n\tmov %7, %%r9\n\tsyscall"
                   : "=a"(r)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(d), "r"(e), "r"(f)
                   : "rcx", "r11", "r10", "r8", "r9", "memory");
  return r;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  long fd = raw_syscall6(257 /* openat */, -100 /* AT_FDCWD */, (long)"/etc/hostname", 0, 0, 0, 0);
  if (fd >= 0)
    raw_syscall6(3 /* close */, fd, 0, 0, 0, 0, 0);
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  int rc = rowsum_on((const float *)in[0].data, (float *)out[0].data, rows, cols,
                     (cudaStream_t)stream);
  return rc;
}
