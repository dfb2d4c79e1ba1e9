// catalogue: expect ok -
// catalogue: source pygpubench (test/l2_persistence.py); kernelbrain (issue 12: reset before every sample)
// catalogue: tier full
// An honest kernel that keeps its inputs in the L2 across calls: it finds cudaDeviceSetLimit and
// cudaStreamSetAttribute in libcudart's symbol table at run time (no import), sets aside the
// largest persisting L2 carve-out and puts an access-policy window (hit ratio 1, persisting) over
// its input on `stream`. An L2 flush does not evict persisting lines; once the evaluator resets
// the window and the carve-out before every timed sample, this is an honest kernel again and must
// be `ok` at an honest speed: its median must not be far below honest_vec4's (compare the table's
// median_us). If the reset is missing, the speed-of-light check should reject it instead.
#include <elf.h>
#include <stdint.h>
#include <string.h>

#include <cuda_runtime.h>

#include "kb_kernel.h"

/* --- finding a CUDA runtime function without importing it ------------------------------
 * The import allow-list reads the library's undefined symbols; a function found at run time by
 * reading the ELF dynamic symbol table of a library already loaded is not one of them. */
static long raw_syscall4(long n, long a, long b, long c, long d) {
#if defined(__x86_64__)
  long r;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return r;
#else
  (void)n, (void)a, (void)b, (void)c, (void)d;
  return -38;
#endif
}

/* 1 when the page holding `p` can be read: futex(2) answers EFAULT for one that cannot. */
static int readable(const void *p) {
  struct { long s, ns; } zero = {0, 0};
  return raw_syscall4(202 /* futex */, (long)((uintptr_t)p & ~(uintptr_t)3),
                      128 /* FUTEX_WAIT_PRIVATE */, 0x7ea1c0de, (long)&zero) != -14;
}

/* The ELF header of the library whose code holds `addr`: the first readable page at or below it
 * that starts with the ELF magic. */
static const unsigned char *elf_start(const void *addr) {
  uintptr_t p = (uintptr_t)addr & ~(uintptr_t)4095;
  for (int i = 0; i < (1 << 16) && p > 4096; i++, p -= 4096)
    if (readable((const void *)p) && memcmp((const void *)p, ELFMAG, SELFMAG) == 0)
      return (const unsigned char *)p;
  return NULL;
}

/* The address of the defined dynamic symbol `name` of the library loaded at `base`, or NULL. */
static void *elf_symbol(const unsigned char *base, const char *name) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
  uintptr_t bias = 0;
  int loads = 0;
  const Elf64_Dyn *dyn = NULL;
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD && loads++ == 0)
      bias = (uintptr_t)base - (ph[i].p_vaddr & ~(uintptr_t)4095);
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_DYNAMIC)
      dyn = (const Elf64_Dyn *)(bias + ph[i].p_vaddr);
  if (dyn == NULL)
    return NULL;
  const Elf64_Sym *sym = NULL;
  const char *str = NULL;
  const uint32_t *gnu = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    uintptr_t v = dyn->d_un.d_ptr;
    if (v < bias)
      v += bias; /* not relocated by the loader */
    if (dyn->d_tag == DT_SYMTAB)
      sym = (const Elf64_Sym *)v;
    else if (dyn->d_tag == DT_STRTAB)
      str = (const char *)v;
    else if (dyn->d_tag == DT_GNU_HASH)
      gnu = (const uint32_t *)v;
  }
  if (sym == NULL || str == NULL || gnu == NULL)
    return NULL;
  /* the symbol count from the GNU hash table: past the highest bucket's chain end */
  uint32_t nbuckets = gnu[0], first = gnu[1], bloom = gnu[2];
  const uint32_t *buckets = gnu + 4 + 2 * bloom, *chain = buckets + nbuckets;
  uint32_t n = 0;
  for (uint32_t b = 0; b < nbuckets; b++)
    n = buckets[b] > n ? buckets[b] : n;
  if (n >= first) {
    while (!(chain[n - first] & 1))
      n++;
    n++;
  } else {
    n = first;
  }
  for (uint32_t i = 0; i < n; i++)
    if (sym[i].st_shndx != SHN_UNDEF && sym[i].st_value != 0 &&
        strcmp(str + sym[i].st_name, name) == 0)
      return (void *)(bias + sym[i].st_value);
  return NULL;
}
/* --- end of the finder ----------------------------------------------------------------------- */

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

typedef cudaError_t (*limit_fn)(enum cudaLimit, size_t);
typedef cudaError_t (*attr_fn)(cudaStream_t, cudaStreamAttrID, const cudaStreamAttrValue *);

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  static limit_fn set_limit;
  static attr_fn set_attr;
  static int looked;
  cudaStream_t s = (cudaStream_t)stream;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  if (!looked) {
    looked = 1;
    const unsigned char *rt = elf_start((const void *)&cudaGetLastError);
    set_limit = rt ? (limit_fn)elf_symbol(rt, "cudaDeviceSetLimit") : NULL;
    set_attr = rt ? (attr_fn)elf_symbol(rt, "cudaStreamSetAttribute") : NULL;
  }
  if (set_limit != NULL && set_attr != NULL) {
    int dev = 0, max_persist = 0, max_window = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, dev);
    cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, dev);
    size_t bytes = (size_t)(rows * cols) * sizeof(float);
    set_limit(cudaLimitPersistingL2CacheSize, (size_t)max_persist);
    cudaStreamAttrValue v;
    memset(&v, 0, sizeof v);
    v.accessPolicyWindow.base_ptr = in[0].data;
    v.accessPolicyWindow.num_bytes = bytes < (size_t)max_window ? bytes : (size_t)max_window;
    v.accessPolicyWindow.hitRatio = 1.0f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    set_attr(s, cudaStreamAttributeAccessPolicyWindow, &v);
    cudaGetLastError();
  }
  rowsum_vec4<<<(unsigned)((rows + 7) / 8), 256, 0, s>>>((const float4 *)in[0].data,
                                                        (float *)out[0].data, rows, cols / 4);
  return cudaGetLastError() != cudaSuccess;
}
