/* The CUDA devices this runner can see, for `kb-runner --list-devices` and for launchers that
 * start one runner per GPU. Built against the CUDA runtime and CUPTI when the toolkit was found
 * at configure time (KB_HAVE_CUDA); otherwise it reports that the build has no CUDA.
 */
#ifndef KB_RUNNER_DEVICES_H
#define KB_RUNNER_DEVICES_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "confine.h"

#define KB_MAX_DEVICES 16

struct kb_device {
  int index;              /* CUDA device ordinal */
  char name[256];         /* "NVIDIA H200" */
  int cc_major, cc_minor; /* compute capability */
  int sm_count;           /* multiprocessors */
  int64_t mem_bytes;      /* global memory, bytes */
  int64_t l2_bytes;       /* L2 cache, bytes */
};

struct kb_device_list {
  int built_with_cuda;    /* 1 when this build links the CUDA runtime */
  int runtime_version;    /* e.g. 13000; 0 unknown */
  int driver_version;     /* 0 when no driver is loaded */
  uint32_t cupti_version; /* CUPTI API version; 0 unknown */
  int n;                  /* devices found */
  struct kb_device devices[KB_MAX_DEVICES];
  char why_none[256];     /* when n == 0: why ("no CUDA driver", "built without CUDA") */
  struct kb__confine_level confinement; /* the level sandboxes reach on this node (probe) */
};

/* One line "sandbox confinement: LEVEL (seccomp yes|no, Landlock ABI N|unavailable): note". */
void kb__devices_print_confinement(const struct kb__confine_level *l, FILE *out);

/* Fills `list` (caller-owned). Never fails: a machine without GPUs is an answer, not an error.
 * Initialises the CUDA runtime in this process when there is a driver: call it only in a
 * process that will not fork afterwards. */
void kb__devices_probe(struct kb_device_list *list);

/* Prints `list` to `out`: a table, or one JSON object when `json` is set. */
void kb__devices_print(const struct kb_device_list *list, FILE *out, int json);

#endif
