/* The device interface of the sandbox's evaluation engine: what engine.c needs from the memory
 * and the clock the candidate runs on. Two implementations: dev_host.c (malloc, kb__poison,
 * kb__verify, kb/inputs, clock_gettime) and dev_cuda.c (cudaMalloc, the trusted kernels of
 * devkern.h, CUDA events on a non-blocking stream that the candidate receives).
 *
 * Every fallible operation returns KB_OK or an enum kb_err code (KB_ENOMEM: out of memory,
 * KB_EINVAL: a bad argument, KB_EIO: any other device error) and fills `err` (may be NULL; the
 * first error stays) with the backend's text: strerror() on the host, "text (cudaErrorName)" for
 * CUDA. An error that leaves the device unusable (a sticky CUDA error) also sets `broken`: the
 * sandbox process must exit after replying. Pointers are device memory of this device,
 * borrowed; `stream` is what kb_forward receives (NULL on the host). Operations are ordered on
 * that stream; those returning a value to the host synchronize it.
 */
#ifndef KB_SANDBOX_DEV_H
#define KB_SANDBOX_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "kb/error.h"
#include "kb/task.h"
#include "verify.h"

/* Timed intervals one sample may hold (a batch of flushed calls times each call alone). */
#define KB__TIMER_SLOTS 64
/* Timed intervals the device keeps: the samples of one chunk queued before one wait (engine.c),
 * KB__TIMER_SLOTS or fewer each. */
#define KB__TIMER_POOL 512

struct kb__dev {
  const char *backend;   /* "host" or "cuda" (static) */
  int gpu;               /* 1 on a GPU (CUDA): kernel traces, hardware metrics and the
                            speed-of-light bound apply; 0 on the host */
  char name[256];        /* "NVIDIA H200", or the CPU model */
  int cc_major, cc_minor; /* compute capability; 0 on the host */
  int sm_count;          /* multiprocessors; 0 on the host */
  int64_t mem_bytes;     /* device memory, bytes; 0 unknown */
  int64_t l2_bytes;      /* L2 cache, bytes; 0 unknown */
  int runtime_version;   /* CUDA runtime, 13000; 0 on the host */
  int driver_version;    /* CUDA driver; 0 on the host */
  int batch_short;       /* 1: short kernels are timed as a batch behind spin() */
  double bandwidth;      /* bytes per second the memory system moved in the probe at open
                            (CUDA: a device-to-device copy of a 1 GiB buffer, read and write
                            counted; host: memcpy of a 64 MiB buffer); 0 unknown */
  void *oracle_stream;   /* where the engine runs the trusted oracle (CUDA: a second stream, so
                            that its kernels are not the candidate's in a trace; NULL host) */
  int end_marker;        /* set by the engine while tracing: timer_stop() queues a spin(0)
                            right after each end event, closing the trace's window */
  int l2_persist_seen;   /* 1 once l2_reset() found L2 persistence set (then the engine waits
                            after every timed sample); never reset */
  int broken;            /* 1 once an operation failed with an error that leaves the device
                            unusable (sticky); never reset */
  void *stream;          /* handed to kb_forward (NULL on the host) */
  void *impl;            /* the implementation's state (owned by it) */

  /* `bytes` of device memory into `*out`, aligned to 256 bytes. */
  int (*alloc)(struct kb__dev *d, size_t bytes, void **out, struct kb_error *err);
  void (*free)(struct kb__dev *d, void *p); /* NULL is fine */
  /* Input tensor `tensor` of `set` into `n` elements of `dtype` at `p` (inputs.h). */
  int (*fill)(struct kb__dev *d, void *p, int dtype, int64_t n, const struct kb_input_set *set,
              int tensor, struct kb_error *err);
  /* kb__poison's pattern into `n` elements of `dtype` at `p`. */
  int (*poison)(struct kb__dev *d, void *p, int dtype, int64_t n, struct kb_error *err);
  int (*checksum)(struct kb__dev *d, const void *p, size_t bytes, uint64_t *sum,
                  struct kb_error *err);
  /* kb__verify()'s rule; `*pass` 1 when all `n` elements pass. */
  int (*compare)(struct kb__dev *d, const void *got, const void *want, int dtype, int64_t n,
                 double atol, double rtol, struct kb_verify_report *rep, int *pass,
                 struct kb_error *err);
  int (*flush_l2)(struct kb__dev *d, struct kb_error *err); /* evicts the L2 (no-op on the host) */
  /* XORs `bytes` at `p` (8-byte aligned) with the key stream of `key` (kb__mask_word); twice
   * restores the data. */
  int (*mask)(struct kb__dev *d, void *p, size_t bytes, uint64_t key, struct kb_error *err);
  /* Undoes what a candidate may have set to keep data in the L2 between calls: the persisting
   * carve-out (cudaLimitPersistingL2CacheSize) back to 0, the candidate stream's access policy
   * window cleared, persisting lines made normal (cudaCtxResetPersistingL2Cache). `full` 0: only
   * the cheap queries, and the reset when one of them found something set; 1: the reset always.
   * No device work is queued on the candidate's stream. No-op on the host. */
  int (*l2_reset)(struct kb__dev *d, int full, struct kb_error *err);
  /* A kernel busy for `us` (no-op on the host). */
  int (*spin)(struct kb__dev *d, double us, struct kb_error *err);
  /* Marks the start of timed interval `k` (0 <= k < KB__TIMER_POOL). */
  int (*timer_start)(struct kb__dev *d, int k, struct kb_error *err);
  /* Marks the end of interval `k`, without waiting for it. */
  int (*timer_stop)(struct kb__dev *d, int k, struct kb_error *err);
  /* Waits for intervals first..first+n-1 and gives the sum of their lengths in microseconds. */
  int (*timer_read)(struct kb__dev *d, int first, int n, double *us, struct kb_error *err);
  /* The same intervals' time the calling thread spent on a CPU, microseconds: what a host
   * call costs whatever else the machine runs (a wall-clock interval also holds the time the
   * process waited for a CPU behind other processes). NULL where the device times its own
   * work (CUDA events): there the machine's other load does not enter the interval. */
  int (*timer_read_busy)(struct kb__dev *d, int first, int n, double *us,
                         struct kb_error *err);
  /* Copies `bytes` at device `src` to device `dst`, queued on the stream. */
  int (*copy)(struct kb__dev *d, void *dst, const void *src, size_t bytes, struct kb_error *err);
  /* Copies `bytes` at device `p` into host memory `host` (caller-owned), after the work queued
   * on the stream (it synchronizes). */
  int (*read)(struct kb__dev *d, void *host, const void *p, size_t bytes, struct kb_error *err);
  /* Waits for everything queued; reports errors of earlier asynchronous work (a candidate's
   * illegal address shows here). */
  int (*sync)(struct kb__dev *d, struct kb_error *err);
  void (*close)(struct kb__dev *d);         /* releases everything; the struct stays */
};

/* Word `w` of the key stream of `key` (splitmix64 of key + (w + 1) * golden ratio): the mask
 * of kb__dk_mask and of the host's mask, bit-identical. */
static inline uint64_t kb__mask_word(uint64_t key, uint64_t w) {
  uint64_t z = key + (w + 1) * UINT64_C(0x9e3779b97f4a7c15);
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Opens the host device into `d` (caller-owned; d->close releases what it holds). Returns KB_OK
 * or KB_ENOMEM. */
int kb__dev_host_open(struct kb__dev *d, struct kb_error *err);

/* Opens CUDA device `ordinal` into `d` (caller-owned; d->close releases what it holds): sets it
 * current, creates the candidate's non-blocking stream, events and the devkern context, and
 * fills the facts. Returns KB_OK, or KB_ENOMEM / KB_EIO with the failing step in `err`
 * ("cuda device 0: cudaSetDevice failed: ..."). Only in builds with KB_HAVE_CUDA; elsewhere it
 * returns KB_EINVAL with "this kb-sandbox was built without CUDA". */
int kb__dev_cuda_open(struct kb__dev *d, int ordinal, struct kb_error *err);

#endif
