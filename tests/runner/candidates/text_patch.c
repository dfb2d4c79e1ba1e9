/* A cheat that rewrites the C library's code, not the sandbox's function table: on its first
 * call it reads the resolved address of clock_gettime from the sandbox's GOT (a read: the table
 * stays as it was), makes that page of libc's text writable with an inline mprotect, copies in a
 * stateless replacement that returns the time divided by 40, and puts the protection back (r-x).
 * Nothing stays pinned, no anonymous executable mapping is left, the RELRO checksums and the
 * mappings' protections are as in the snapshot: before 2026-12-07 it was ok at 60 us a call for
 * its 2.4 ms (sum task), and every candidate after it in that sandbox was timed 40x fast. The
 * check between candidates now also checksums every loaded object's code on the host: rejected,
 * "changed the sandbox's own process: the code of .../libc.so.6 ... changed". It sums the rows
 * of the row_sum task honestly. x86-64 only (elsewhere it just sums). */
#include <elf.h>
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

static void **clock_slot(const unsigned char *base) {
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
          strcmp(names + syms[sym].st_name, "clock_gettime") == 0)
        return (void **)(load + r[i].r_offset);
    }
  }
  return NULL;
}

static int done;
/* Rewrites the code at clock_gettime's resolved address in the image holding `inside`. */
static void patch(const void *inside) {
  done = 1;
  const unsigned char *p = (const unsigned char *)((uintptr_t)inside & ~(PAGE - 1));
  for (int pages = 0; pages < 65536; pages++, p -= PAGE)
    if (memcmp(p, ELFMAG, SELFMAG) == 0)
      break;
  if (memcmp(p, ELFMAG, SELFMAG) != 0)
    return;
  void **slot = clock_slot(p);
  if (slot == NULL)
    return;
  unsigned char *fn = (unsigned char *)*slot; /* libc's clock_gettime */
  uintptr_t page = (uintptr_t)fn & ~(PAGE - 1);
  if (sys3(10, (long)page, (long)(2 * PAGE), 7) != 0)
    return;
  size_t n = (size_t)(kb_slow_end - kb_slow_begin);
  for (size_t i = 0; i < n; i++)
    ((volatile unsigned char *)fn)[i] = kb_slow_begin[i];
  sys3(10, (long)page, (long)(2 * PAGE), 5); /* r-x again */
}
#else
static int done;
#endif

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in; (void)n_out; (void)stream;
#if defined(__x86_64__)
  if (!done)
    patch(__builtin_return_address(0));
#endif
  const float *x = in[0].data;
  float *s = out[0].data;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    s[r] = (float)acc;
  }
  return 0;
}
