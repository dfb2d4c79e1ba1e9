/* expect: rejected "changed the sandbox's own process" (tasks/cuda/matmul_f32, full)
 * The CUDA form of tests/catalogue/host/timer_forge.c (pygpubench's submission_got_patch: the
 * harness's own function table rewritten from inside its address space). The naive seed's
 * matrix product, honest, but its first call rewrites kb-sandbox-cuda's table entry of
 * cudaEventElapsedTime (found below its return address: the sandbox's ELF image, its
 * relocations) to a wrapper that divides every timed interval by SLOWER. Every time the sandbox
 * takes shrinks alike, so the checks in its process agree with the samples; the witness (the
 * runner's clock around calls on inputs drawn after it asked, the oracle in a trusted sandbox
 * on the same draws) does not. A GNU unique symbol keeps the library loaded after the
 * sandbox's dlclose, so the rewritten entry keeps its target. The table is read-only under
 * full RELRO, so its first call mprotects the page: the check between candidates
 * (runner/sandbox/integrity.h) finds the table changed after the evaluation; the witness, the
 * layer behind it, rejected it before that check ran on a GPU ("timing not confirmed outside
 * its process"). Run by tests/gpu/trust.sh's witness-c step through kb-eval, not by
 * tests/gpu/catalogue.sh (which has no witness). */
#include <cuda_runtime.h>
#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

#define SLOWER 5.0f
#define PAGE 4096UL

typedef cudaError_t (*elapsed_fn)(float *, cudaEvent_t, cudaEvent_t);
static elapsed_fn real_elapsed;
static int patched;
extern "C" {
int kb_forge_pin = 1;
}
__asm__(".type kb_forge_pin, @gnu_unique_object");

static cudaError_t slow_elapsed(float *ms, cudaEvent_t a, cudaEvent_t b) {
  cudaError_t e = real_elapsed(ms, a, b);
  if (e == cudaSuccess)
    *ms /= SLOWER;
  return e;
}

static long sys_mprotect(long addr, long len, long prot) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(10L), "D"(addr), "S"(len), "d"(prot)
                   : "rcx", "r11", "memory");
  return r;
}

static void **elapsed_slot(const unsigned char *base) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
  uintptr_t load = eh->e_type == ET_DYN ? (uintptr_t)base : 0;
  const Elf64_Dyn *dyn = NULL;
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_DYNAMIC)
      dyn = (const Elf64_Dyn *)(load + ph[i].p_vaddr);
  if (dyn == NULL)
    return NULL;
  uintptr_t jmprel = 0, rela = 0, symtab = 0, strtab = 0;
  size_t jmpsz = 0, relasz = 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    uintptr_t v = dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_JMPREL) jmprel = v;
    if (dyn->d_tag == DT_PLTRELSZ) jmpsz = v;
    if (dyn->d_tag == DT_RELA) rela = v;
    if (dyn->d_tag == DT_RELASZ) relasz = v;
    if (dyn->d_tag == DT_SYMTAB) symtab = v;
    if (dyn->d_tag == DT_STRTAB) strtab = v;
  }
  if (symtab < load) symtab += load;
  if (strtab < load) strtab += load;
  if (jmprel && jmprel < load) jmprel += load;
  if (rela && rela < load) rela += load;
  const Elf64_Sym *syms = (const Elf64_Sym *)symtab;
  const char *names = (const char *)strtab;
  const uintptr_t tables[2] = {jmprel, rela};
  const size_t sizes[2] = {jmpsz, relasz};
  for (int t = 0; t < 2; t++) {
    const Elf64_Rela *r = (const Elf64_Rela *)tables[t];
    for (size_t i = 0; r != NULL && i < sizes[t] / sizeof *r; i++) {
      unsigned type = (unsigned)ELF64_R_TYPE(r[i].r_info);
      unsigned sym = (unsigned)ELF64_R_SYM(r[i].r_info);
      if (sym != 0 && (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT) &&
          strcmp(names + syms[sym].st_name, "cudaEventElapsedTime") == 0)
        return (void **)(load + r[i].r_offset);
    }
  }
  return NULL;
}

static void patch(const void *inside) {
  patched = 1;
  const unsigned char *p = (const unsigned char *)((uintptr_t)inside & ~(PAGE - 1));
  for (int pages = 0; pages < 65536 && memcmp(p, ELFMAG, SELFMAG) != 0; pages++)
    p -= PAGE;
  void **slot = memcmp(p, ELFMAG, SELFMAG) == 0 ? elapsed_slot(p) : NULL;
  if (slot == NULL || sys_mprotect((long)((uintptr_t)slot & ~(PAGE - 1)), (long)PAGE, 3) != 0)
    return;
  real_elapsed = (elapsed_fn)*slot;
  *slot = (void *)slow_elapsed;
}

__global__ void matmul(const float *a, const float *b, float *c, int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < m && col < n) {
    float acc = 0.0f;
    for (int p = 0; p < k; p++)
      acc += a[(int64_t)row * k + p] * b[(int64_t)p * n + col];
    c[(int64_t)row * n + col] = acc;
  }
}

extern "C" int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out,
                          void *stream) {
  if (!patched && kb_forge_pin)
    patch(__builtin_return_address(0));
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2 ||
      in[0].dtype != KB_F32 || in[1].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  int m = (int)in[0].shape[0], k = (int)in[0].shape[1], n = (int)in[1].shape[1];
  dim3 block(16, 16);
  dim3 grid((n + 15) / 16, (m + 15) / 16);
  matmul<<<grid, block, 0, (cudaStream_t)stream>>>(
      (const float *)in[0].data, (const float *)in[1].data, (float *)out[0].data, m, n, k);
  return cudaGetLastError() != cudaSuccess;
}
