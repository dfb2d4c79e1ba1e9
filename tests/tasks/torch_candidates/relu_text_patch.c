/* ReLU of tests/tasks/kernelbench/1_relu.py, written honestly, that rewrites the C library's
 * code in the PyTorch worker: on its first call it finds libc's clock_gettime in libc's dynamic
 * symbol table (no import), makes that page writable with an inline mprotect, copies in a
 * stateless replacement that returns the time divided by 40, and puts the protection back
 * (r-x). Every clock of the worker then runs 40x slow: its own timings, and those of every
 * candidate after it in that worker (tests/runner/candidates/text_patch.c in kb-sandbox). */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

#define PAGE 4096UL
#if defined(__x86_64__)
static long sys3(long n, long a, long b, long c) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}
extern const unsigned char kb_slow_begin[], kb_slow_end[];
__asm__(".section .rodata\n"
        "kb_slow_begin:\n"
        "  mov $228, %eax\n  syscall\n  test %rax, %rax\n  jnz 1f\n"
        "  mov (%rsi), %rcx\n  imul $1000000000, %rcx, %rcx\n  add 8(%rsi), %rcx\n"
        "  mov %rcx, %rax\n  xor %edx, %edx\n  mov $40, %r8\n  div %r8\n"
        "  xor %edx, %edx\n  mov $1000000000, %r8\n  div %r8\n"
        "  mov %rax, (%rsi)\n  mov %rdx, 8(%rsi)\n  xor %eax, %eax\n"
        "1: ret\n"
        "kb_slow_end:\n"
        ".text\n");

/* --- finding a libc function without importing it ------------------------------------------
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

static int done;

static void patch(void) {
  done = 1;
  const unsigned char *libc = elf_start((const void *)&__errno_location);
  unsigned char *fn = libc ? (unsigned char *)elf_symbol(libc, "clock_gettime") : NULL;
  if (fn == NULL)
    return;
  uintptr_t page = (uintptr_t)fn & ~(PAGE - 1);
  if (sys3(10, (long)page, (long)(2 * PAGE), 7) != 0)
    return;
  size_t n = (size_t)(kb_slow_end - kb_slow_begin);
  for (size_t i = 0; i < n; i++)
    ((volatile unsigned char *)fn)[i] = kb_slow_begin[i];
  sys3(10, (long)page, (long)(2 * PAGE), 5); /* r-x again */
}
#else
static int done = 1;
static void patch(void) {}
#endif

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32)
    return 1;
  if (!done)
    patch();
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  return 0;
}
