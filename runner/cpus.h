/* Splitting a runner's CPUs between the evaluation being timed and the builds ahead of it.
 *
 * A runner builds candidates ahead (the compile pool: nvcc, a ModelNew's load_inline, the
 * torch.compile warm-up of a compile seed, each many processes) while it times the current
 * one. A launch-bound module (KernelBench level 3's small-batch EfficientNets and ViTs: the
 * GPU waits on Python) is timed at the speed of the CPU it gets: on the H200 (2026-12-04) the
 * identity seeds timed while three builds or more were in flight measured 0.61x-1.38x eager
 * (8 of 10 outside 0.97-1.03, against 4 of 15 with fewer: tests/gpu/kb_overlap.py). With three
 * CPUs or more in the runner's affinity mask, the evaluation gets the first and the builds the
 * rest; with fewer nothing is split (there is nothing to give). The trusted PyTorch worker,
 * whose torch.compile compiles like a build, widens itself to the builds' CPUs while it
 * compiles (KB_BUILD_CPUS in its environment) and times on the evaluation's.
 */
#ifndef KB_RUNNER_CPUS_H
#define KB_RUNNER_CPUS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* cpu_set_t */
#endif
#include <sched.h>

struct kb_error;

struct kb__cpus {
  int split;                   /* 1: eval and builds below are disjoint and both non-empty */
  int total;                   /* CPUs in the mask it was made from (builds: total - 1 when
                                  split) */
  cpu_set_t eval, builds;
  char builds_list[512];       /* builds as a list ("1-15", "2,4-7"), "" unless split */
};

/* Fills `c` from this thread's affinity mask. Returns KB_OK; KB_EINTERNAL (err says why) when
 * the mask cannot be read. */
int kb__cpus_split(struct kb__cpus *c, struct kb_error *err);

/* Sets the calling thread's affinity mask to `set` (borrowed). Returns KB_OK; KB_EINTERNAL. */
int kb__cpus_pin(const cpu_set_t *set, struct kb_error *err);

/* Writes `set` as a CPU list ("0-3,8") into `buf` (size `len`, always terminated; a list that
 * does not fit is cut at a comma-free point and ends "..."). */
void kb__cpus_format(const cpu_set_t *set, char *buf, size_t len);

#endif
