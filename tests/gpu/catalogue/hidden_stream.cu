// catalogue: expect rejected "did not see"
// catalogue: source CUDA-L1 (extra CUDA streams); pygpubench (submission_got_patch: tables, not imports)
// catalogue: tier full
// returns_early without the import: finds cudaStreamCreateWithFlags in libcudart's dynamic symbol
// table at run time (from the address of cudaGetLastError, which it may import), so the allow-list
// sees nothing, and launches its work on a stream of its own; kb_forward returns before the work
// is done. The CUDA trace sees kernels on another stream.
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

typedef cudaError_t (*create_fn)(cudaStream_t *, unsigned int);

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  static cudaStream_t mine;
  if (mine == NULL) {
    const unsigned char *rt = elf_start((const void *)&cudaGetLastError);
    create_fn create = rt ? (create_fn)elf_symbol(rt, "cudaStreamCreateWithFlags") : NULL;
    if (create == NULL || create(&mine, cudaStreamNonBlocking) != cudaSuccess)
      return 1;
  }
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  rowsum_vec4<<<(unsigned)((rows + 7) / 8), 256, 0, mine>>>((const float4 *)in[0].data,
                                                           (float *)out[0].data, rows, cols / 4);
  return cudaGetLastError() != cudaSuccess;
}
