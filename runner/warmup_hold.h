/* Holding off the compile tier's warm-up passes at the device while an evaluation that ran out
 * of device memory is tried once more.
 *
 * Three kinds of process share a runner's GPU: the confined PyTorch worker, the trusted one, and
 * the compile tier's builds of KernelBench-format candidates that use torch.compile or Triton,
 * each of which runs a forward pass on the device on the task's inputs so that the JIT
 * compilers fill their caches (runner/sandbox/kb_build_modelnew.py, class gpu_turn). Those
 * passes take turns among themselves through an flock on `<cache>/.gpu-warmup.lock`: shared for
 * small inputs, exclusive for a large one. An evaluation retried after running out of memory
 * takes the same lock exclusively, so that a pass under way ends (its memory freed) and no new
 * one starts through the retry's evaluation and witness (the evaluator releases it before
 * timing torch, which can take minutes of a waiting build's time limit). On an 80 GB H100 (296f880) the compile seeds of
 * KernelBench's l1_35-l1_39 (7-8 GiB tensors) were built, each with such a pass, while the
 * identities were evaluated, and l1_37's retry ran out of memory again then (docs/sandbox.md).
 */
#ifndef KB_RUNNER_WARMUP_HOLD_H
#define KB_RUNNER_WARMUP_HOLD_H

#include <signal.h>

/* Takes the warm-up lock of the build cache `cache_dir` exclusively, waiting at most
 * `timeout_s` seconds (polling every 50 ms; `stop`, when not NULL, ends the wait once it reads
 * non-zero). Returns the lock's file descriptor, which the caller owns and gives to
 * kb__warmup_release; -1 when it could not be had in time, the file cannot be opened, or
 * `cache_dir` is NULL (the retry then goes ahead without it: the lock is advisory). */
int kb__warmup_hold(const char *cache_dir, double timeout_s, const volatile sig_atomic_t *stop);

/* Releases and closes what kb__warmup_hold returned; -1 is a no-op. */
void kb__warmup_release(int fd);

#endif
