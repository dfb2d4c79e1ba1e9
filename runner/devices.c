/* CUDA device probe (see devices.h). */
#include "devices.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KB_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <cupti.h>
#endif

void kb__devices_probe(struct kb_device_list *list) {
  memset(list, 0, sizeof *list);
  kb__confine_probe(&list->confinement);
#ifdef KB_HAVE_CUDA
  list->built_with_cuda = 1;
  cudaRuntimeGetVersion(&list->runtime_version);
  cudaDriverGetVersion(&list->driver_version);
  cuptiGetVersion(&list->cupti_version);
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    snprintf(list->why_none, sizeof list->why_none, "no usable CUDA device: %s",
             cudaGetErrorString(rc));
    return;
  }
  for (int i = 0; i < count && list->n < KB_MAX_DEVICES; i++) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
      continue;
    struct kb_device *d = &list->devices[list->n++];
    d->index = i;
    snprintf(d->name, sizeof d->name, "%s", p.name);
    d->cc_major = p.major;
    d->cc_minor = p.minor;
    d->sm_count = p.multiProcessorCount;
    d->mem_bytes = (int64_t)p.totalGlobalMem;
    d->l2_bytes = p.l2CacheSize;
  }
  if (list->n == 0)
    snprintf(list->why_none, sizeof list->why_none, "the CUDA driver reports no device");
#else
  snprintf(list->why_none, sizeof list->why_none, "this build has no CUDA (toolkit not found "
           "at configure time)");
#endif
}

void kb__devices_print(const struct kb_device_list *list, FILE *out, int json) {
  if (json) {
    json_t *devs = json_array();
    for (int i = 0; i < list->n; i++) {
      const struct kb_device *d = &list->devices[i];
      json_array_append_new(devs, json_pack("{s:i, s:s, s:i, s:i, s:i, s:I, s:I}", "index",
                                            d->index, "name", d->name, "cc_major", d->cc_major,
                                            "cc_minor", d->cc_minor, "sm_count", d->sm_count,
                                            "mem_bytes", (json_int_t)d->mem_bytes, "l2_bytes",
                                            (json_int_t)d->l2_bytes));
    }
    json_t *o = json_pack("{s:b, s:i, s:i, s:I, s:o}", "built_with_cuda",
                          list->built_with_cuda, "runtime_version", list->runtime_version,
                          "driver_version", list->driver_version, "cupti_version",
                          (json_int_t)list->cupti_version, "devices", devs);
    if (list->n == 0)
      json_object_set_new(o, "why_none", json_string(list->why_none));
    json_object_set_new(o, "confinement",
                        json_pack("{s:s, s:b, s:i, s:s}", "level", list->confinement.level,
                                  "seccomp", list->confinement.seccomp, "landlock_abi",
                                  list->confinement.landlock_abi, "note",
                                  list->confinement.note));
    char *text = json_dumps(o, JSON_COMPACT);
    if (text)
      fprintf(out, "%s\n", text);
    free(text); /* jansson's allocator */
    json_decref(o);
    return;
  }
  fprintf(out, "CUDA runtime %d, driver %d, CUPTI %u\n", list->runtime_version,
          list->driver_version, (unsigned)list->cupti_version);
  kb__devices_print_confinement(&list->confinement, out);
  if (list->n == 0) {
    fprintf(out, "no devices: %s\n", list->why_none);
    return;
  }
  for (int i = 0; i < list->n; i++) {
    const struct kb_device *d = &list->devices[i];
    fprintf(out, "%d  %s  sm_%d%d  %d SMs  %.1f GiB  L2 %.0f MiB\n", d->index, d->name,
            d->cc_major, d->cc_minor, d->sm_count, (double)d->mem_bytes / (1 << 30),
            (double)d->l2_bytes / (1 << 20));
  }
}

void kb__devices_print_confinement(const struct kb__confine_level *l, FILE *out) {
  char abi[32];
  if (l->landlock_abi > 0)
    snprintf(abi, sizeof abi, "ABI %d", l->landlock_abi);
  else
    snprintf(abi, sizeof abi, "unavailable");
  fprintf(out, "sandbox confinement: %s (seccomp %s, Landlock %s)%s%s\n", l->level,
          l->seccomp ? "yes" : "no", abi, l->note[0] ? ": " : "", l->note);
}
