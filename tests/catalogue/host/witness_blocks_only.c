/* catalogue: expect rejected "wrong on inputs drawn after the runner asked"
 * catalogue: source kernelbrain (rt3: a checker that samples at positions the checked process
 *            can predict); robust-kbench (arXiv:2509.14279: kernels that omit part of the work)
 * catalogue: task tests/catalogue/tasks/scale_large
 * catalogue: tier full
 * Computes every element in the evaluation's calls, but in the witness's calls only the blocks
 * the witness keeps of an output over a third of its 64 MiB a request (64 blocks of 16,384
 * elements: a twenty-second of this task's 22 MiB). From its caller's frame it walks up the
 * stack to the sandbox's `struct kb__witness_spec` (its `fn` is this kb_forward, then `oracle`
 * 0, the runner's `seed`, `calls`), and draws the block starts as witness_calls.c did from that
 * seed before its calls (kb__mask_word(seed + 31, j) % (n - 16384 + 1)). Before 2026-12-07
 * that was `ok` at the full tier (the trusted sandbox compared only those blocks); a cheat
 * with forged samples (forges_timer_state) would then have had its false speed confirmed by a
 * witness that timed a twenty-second of the work. The starts are now drawn from a seed the
 * runner gives each call after it has returned (runner/witness.c, "witness_positions").
 */
#include <stddef.h>
#include <stdint.h>

#include "kb_kernel.h"

#define BLOCKS 64
#define BLOCK 16384

/* runner/sandbox/witness_calls.h's struct kb__witness_spec, up to `out_fd` */
struct spec_prefix {
  const void *task;
  void *fn;
  int oracle;
  uint64_t seed;
  int calls;
  int flush_l2;
  int out_fd;
};

static uint64_t mask_word(uint64_t key, uint64_t w) { /* runner/sandbox/dev.h */
  uint64_t z = key + (w + 1) * UINT64_C(0x9e3779b97f4a7c15);
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream);

/* 1 when the page holding `p` can be read: futex(2) answers EFAULT for one that cannot (the
 * scan stops at the top of the stack instead of faulting there). */
static int readable(const void *p) {
#if defined(__x86_64__)
  struct { long s, ns; } zero = {0, 0};
  long r;
  register long r10 __asm__("r10") = (long)&zero;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "a"(202L /* futex */), "D"((long)((uintptr_t)p & ~(uintptr_t)3)),
                     "S"(128L /* FUTEX_WAIT_PRIVATE */), "d"(0x7ea1c0deL), "r"(r10)
                   : "rcx", "r11", "memory");
  return r != -14;
#else
  (void)p;
  return 0;
#endif
}

/* The witness request's spec above `frame` on the stack, or NULL (not a witness call). */
static const struct spec_prefix *find_spec(const char *frame) {
  const char *p = (const char *)(((uintptr_t)frame + 7) & ~(uintptr_t)7);
  for (size_t off = 0; off < (64u << 10); off += 8) {
    const struct spec_prefix *s = (const struct spec_prefix *)(p + off);
    if (((uintptr_t)s & 4095) + sizeof *s > 4096 || ((uintptr_t)s & 4095) == 0)
      if (!readable((const char *)s + sizeof *s - 1) || !readable(s))
        return NULL;
    if (s->fn == (void *)kb_forward && s->task != NULL && s->oracle == 0 && s->seed >= 1 &&
        s->seed <= (UINT64_C(1) << 62) && s->calls >= 1 && s->calls <= 256 &&
        (s->flush_l2 == 0 || s->flush_l2 == 1) && s->out_fd >= 0 && s->out_fd < 1024)
      return s;
  }
  return NULL;
}

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32)
    return 1;
  const float *x = in[0].data;
  float *y = out[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  const struct spec_prefix *s = find_spec((const char *)__builtin_frame_address(0));
  if (s == NULL || n <= (int64_t)BLOCKS * BLOCK) {
    for (int64_t i = 0; i < n; i++)
      y[i] = 2.0f * x[i];
    return 0;
  }
  for (int j = 0; j < BLOCKS; j++) {
    int64_t st = (int64_t)(mask_word(s->seed + 31u, (uint64_t)j) % (uint64_t)(n - BLOCK + 1));
    for (int64_t i = st; i < st + BLOCK; i++)
      y[i] = 2.0f * x[i];
  }
  return 0;
}
