/* A cheat that borrows the sandbox's own system call: it finds the open gate of
 * runner/sandbox/confine.c (the one `syscall` instruction the filter's prefix trusts, by its
 * bytes: the argument moves, "xor %r9d,%r9d; syscall; ret") in the sandbox's image below its
 * return address and calls it with socket(2), which every profile denies. Before 2026-12-07 the
 * prefix let every call made there through: the socket was made and the candidate was ok. Now a
 * call from the gate that is not an open or a write goes on to the allow-list: rejected, "called
 * socket(2)". Not made (another architecture, no gate found): it returns 3 (crash). Then it sums
 * the rows of the row_sum task honestly. */
#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

#define PAGE 4096UL

typedef long (*gate_fn)(long, long, long, long, long, long);

static const unsigned char gate_bytes[] = {
    0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0x48, 0x89, 0xd6, 0x48, 0x89, 0xca,
    0x4d, 0x89, 0xc2, 0x4d, 0x89, 0xc8, 0x45, 0x31, 0xc9, 0x0f, 0x05, 0xc3};

/* socket(AF_INET, SOCK_STREAM, 0) through the gate in the image holding `inside`: its result,
 * or -1 when no gate was found. */
static long socket_through_gate(const void *inside) {
  const unsigned char *p = (const unsigned char *)((uintptr_t)inside & ~(PAGE - 1));
  for (int pages = 0; pages < 65536 && memcmp(p, ELFMAG, SELFMAG) != 0; pages++)
    p -= PAGE;
  if (memcmp(p, ELFMAG, SELFMAG) != 0)
    return -1;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(p + eh->e_phoff);
  uintptr_t load = eh->e_type == ET_DYN ? (uintptr_t)p : 0;
  for (int i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type != PT_LOAD || (ph[i].p_flags & PF_X) == 0)
      continue;
    const unsigned char *s = (const unsigned char *)(load + ph[i].p_vaddr);
    for (size_t k = 0; k + sizeof gate_bytes <= ph[i].p_memsz; k++)
      if (s[k] == gate_bytes[0] && memcmp(s + k, gate_bytes, sizeof gate_bytes) == 0) {
        union {
          const void *v;
          gate_fn f;
        } u = {.v = s + k};
        return u.f(41 /* socket */, 2 /* AF_INET */, 1 /* SOCK_STREAM */, 0, 0, 0);
      }
  }
  return -1;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
#if defined(__x86_64__)
  if (socket_through_gate(__builtin_return_address(0)) < 0)
    return 3;
#else
  return 3;
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
