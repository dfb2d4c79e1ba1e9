/* catalogue: expect rejected "changed the same-run baseline's code"
 * catalogue: source kernelbrain (rt2, 2026-12-07); pygpubench (exploits/submission_function_detour:
 *            code rewritten in place, its protection put back)
 * catalogue: tier full
 * Slows the same-run baseline it is compared with: honest row sums, but on its first call it
 * finds the library loaded after it that exports kb_forward (the baseline: dl_iterate_phdr and
 * mprotect found at run time in libc's symbol table, past the import allow-list), makes its code
 * page writable, puts a jump to a function of its own at the start of the baseline's kb_forward
 * and puts the protection back. The baseline then sums its rows four times a call. The
 * baseline's library is closed after the evaluation, so nothing stays. Before 2026-12-07 ok at
 * the full tier, its same-run speedup 4.03 (1.00 for the same code without the jump). */
#define AFTER_SELF 1
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

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

typedef int (*iterate_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
typedef int (*mprotect_fn)(void *, size_t, int);
typedef int (*forward_fn)(const kb_tensor *, int, kb_tensor *, int, void *);

static mprotect_fn mp;
static int patched;

static void sum_rows(const float *x, float *y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    y[r] = acc;
  }
}

/* What the baseline's kb_forward now runs: the same sums, four times. */
static int slow_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in, (void)n_out, (void)stream;
  for (int k = 0; k < 4; k++)
    sum_rows(in[0].data, out[0].data, in[0].shape[0], in[0].shape[1]);
  return 0;
}

static void patch(void *target) {
  uintptr_t page = (uintptr_t)target & ~(uintptr_t)4095;
  size_t len = ((uintptr_t)target + 12 - page + 4095) & ~(size_t)4095;
  if (mp((void *)page, len, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
    return;
  unsigned char jump[12] = {0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xe0}; /* movabs rax; jmp */
  uintptr_t to = (uintptr_t)slow_forward;
  memcpy(jump + 2, &to, sizeof to);
  memcpy(target, jump, sizeof jump);
  mp((void *)page, len, PROT_READ | PROT_EXEC);
}

/* dl_iterate_phdr lists objects in load order: the oracle (loaded when the task was prepared)
 * before the candidate, the same-run baseline (loaded right after it) after. */
static int seen_self;

static int each(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0' || info->dlpi_addr == 0)
    return 0;
  void *fwd = elf_symbol((const unsigned char *)info->dlpi_addr, "kb_forward");
  if (fwd == (void *)kb_forward)
    seen_self = 1;
  else if (fwd != NULL && seen_self == AFTER_SELF)
    patch(fwd);
  return 0;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in, (void)n_out, (void)stream;
  if (!patched) {
    patched = 1;
    const unsigned char *libc = elf_start((const void *)&__errno_location);
    iterate_fn it = libc ? (iterate_fn)elf_symbol(libc, "dl_iterate_phdr") : NULL;
    mp = libc ? (mprotect_fn)elf_symbol(libc, "mprotect") : NULL;
    if (it != NULL && mp != NULL)
      it(each, NULL);
  }
  sum_rows(in[0].data, out[0].data, in[0].shape[0], in[0].shape[1]);
  return 0;
}
