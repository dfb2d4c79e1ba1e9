/* Prompt templates and profile diagnoses (see llm_prompt.h). */
#include "llm_prompt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/candidate.h"
#include "kb/error.h"
#include "kb/task.h"
#include "llm_prompt_private.h"

#define HOST_PEAK_GBS 20.0
#define CUDA_PEAK_GBS 3000.0

static const char *const kind_names[] = {"translate", "mutate", "crossover", "repair"};

const char *kb__prompt_kind_name(int kind) {
  return kind >= 0 && kind < KB_PROMPT_KINDS ? kind_names[kind] : "unknown";
}

const char *kb__prompt_template(const char *name) {
  for (int i = 0; kb__prompt_files[i].name; i++)
    if (strcmp(kb__prompt_files[i].name, name) == 0)
      return kb__prompt_files[i].text;
  return NULL;
}

void kb__profile_init(struct kb_profile *p) {
  p->median_us = p->baseline_us = p->noise = p->bytes = NAN;
  p->dram_util = p->sm_util = p->occupancy = NAN;
  p->registers = p->spills = p->shared_bytes = -1;
  p->cuda = 0;
}

/* Appends one "- name: value" line when the value is known. */
static void line(char *out, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void line(char *out, size_t size, size_t *used, const char *fmt, ...) {
  if (*used >= size)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out + *used, size - *used, fmt, ap);
  va_end(ap);
  if (n > 0)
    *used += (size_t)n < size - *used ? (size_t)n : size - *used - 1;
}

void kb__profile_diagnose(const struct kb_profile *p, char *diag, size_t diag_size,
                         char *metrics, size_t metrics_size) {
  size_t used = 0;
  metrics[0] = '\0';
  double gbs = NAN, peak = p->cuda ? CUDA_PEAK_GBS : HOST_PEAK_GBS;
  if (isfinite(p->median_us))
    line(metrics, metrics_size, &used, "- median time: %.3f us\n", p->median_us);
  if (isfinite(p->baseline_us) && isfinite(p->median_us) && p->median_us > 0)
    line(metrics, metrics_size, &used, "- speedup over the baseline: %.2fx\n",
         p->baseline_us / p->median_us);
  if (isfinite(p->noise))
    line(metrics, metrics_size, &used, "- timing noise: %.1f%%\n", p->noise * 100);
  if (isfinite(p->bytes) && isfinite(p->median_us) && p->median_us > 0) {
    gbs = p->bytes / (p->median_us * 1e3);
    line(metrics, metrics_size, &used,
         "- achieved bandwidth: %.2f GB/s for %.0f bytes of inputs and outputs (%.0f%% of a "
         "nominal %.0f GB/s)\n",
         gbs, p->bytes, 100 * gbs / peak, peak);
  }
  if (p->registers >= 0)
    line(metrics, metrics_size, &used, "- registers per thread: %d\n", p->registers);
  if (p->spills >= 0)
    line(metrics, metrics_size, &used, "- spill bytes: %d\n", p->spills);
  if (p->shared_bytes >= 0)
    line(metrics, metrics_size, &used, "- static shared memory: %d bytes\n", p->shared_bytes);
  if (isfinite(p->dram_util))
    line(metrics, metrics_size, &used, "- DRAM throughput: %.0f%% of peak\n", p->dram_util * 100);
  if (isfinite(p->sm_util))
    line(metrics, metrics_size, &used, "- SM throughput: %.0f%% of peak\n", p->sm_util * 100);
  if (isfinite(p->occupancy))
    line(metrics, metrics_size, &used, "- achieved occupancy: %.0f%%\n", p->occupancy * 100);
  if (used == 0)
    line(metrics, metrics_size, &used, "- no measurements yet\n");
  if (used > 0 && metrics[used - 1] == '\n')
    metrics[used - 1] = '\0';

  const char *d;
  if (isfinite(p->dram_util) && isfinite(p->sm_util)) {
    if (p->dram_util >= 0.6 && p->dram_util >= p->sm_util)
      d = "memory-bound: DRAM throughput is near its peak; reduce or coalesce memory traffic";
    else if (p->sm_util >= 0.6)
      d = "compute-bound: the SMs are busy; cut instructions, use faster math or tensor cores";
    else if (isfinite(p->occupancy) && p->occupancy < 0.25)
      d = "occupancy-bound: too few warps are resident to hide latency; use fewer registers "
          "or less shared memory per block";
    else
      d = "latency-bound: neither memory nor compute is near peak; expose more parallelism "
          "and overlap memory accesses";
  } else if (p->spills > 0 || p->registers > 128) {
    d = "occupancy-bound: register pressure (spills or over 128 registers per thread) limits "
        "resident warps";
  } else if (isfinite(gbs) && gbs >= 0.5 * peak) {
    d = "memory-bound: achieved bandwidth is at least half the nominal peak; move fewer bytes";
  } else if (isfinite(p->median_us) && p->median_us < 10) {
    d = "latency-bound: the whole call takes under 10 us; fixed overheads and dependency "
        "chains dominate";
  } else if (isfinite(p->median_us)) {
    d = "compute-bound: memory traffic is far below peak bandwidth, so time goes to "
        "arithmetic and dependency chains; vectorize, unroll, break dependencies, improve "
        "locality";
  } else {
    d = "unknown: not timed yet";
  }
  snprintf(diag, diag_size, "%s", d);
}

static int tensors_text(const struct kb_task *t, struct kb_buf *b) {
  int rc = KB_OK;
  for (int k = 0; k < 2 && rc == KB_OK; k++) {
    const struct kb_tensor_spec *ts = k == 0 ? t->inputs : t->outputs;
    int n = k == 0 ? t->n_inputs : t->n_outputs;
    for (int i = 0; i < n && rc == KB_OK; i++) {
      rc = kb_buf_addf(b, "- %s %s: %s [", k == 0 ? "input" : "output", ts[i].name,
                       kb_dtype_name(ts[i].dtype));
      for (int d = 0; d < ts[i].ndim && rc == KB_OK; d++)
        rc = kb_buf_addf(b, "%s%lld", d ? ", " : "", (long long)ts[i].shape[d]);
      if (rc == KB_OK)
        rc = kb_buf_addf(b, "]\n");
    }
  }
  if (rc == KB_OK && b->len > 0)
    b->data[--b->len] = '\0';
  return rc;
}

/* The value of placeholder `name`, or NULL when it has none. `scratch` holds computed ones. */
static const char *value_of(const char *name, size_t len, const struct kb_prompt_vars *v,
                            char scratch[][256], const char *tensors) {
  const struct kb_task *t = v->task;
  int cuda = t->backend == KB_BACKEND_CUDA;
#define IS(s) (len == sizeof(s) - 1 && memcmp(name, s, len) == 0)
  if (IS("abi"))
    return kb__prompt_template("abi");
  if (IS("language"))
    return cuda ? "CUDA C++" : "C11";
  if (IS("fence"))
    return cuda ? "cuda" : "c";
  if (IS("backend"))
    return cuda ? "cuda (one NVIDIA GPU; pointers in kb_tensor are device memory)"
                : "host (the CPU; pointers in kb_tensor are host memory)";
  if (IS("backend_rules"))
    return cuda ? "Launch all work on `stream` (a cudaStream_t); do not synchronize the device, "
                  "allocate memory or call cudaDeviceReset."
                : "Plain C11 on one CPU thread: no threads, no allocation larger than the "
                  "stack, no I/O; stream is NULL.";
  /* kernelbench prompts (kernelbench_*.txt): ModelNew with kernels built by load_inline */
  if (IS("kb_kernels"))
    return cuda ? "CUDA kernels" : "C++ CPU kernels";
  if (IS("kb_rules"))
    return cuda ? "CUDA code goes in `cuda_sources`, the C++ declarations of the functions "
                  "you call in `cpp_sources`, their names in `functions`. Launch on the current "
                  "stream (`at::cuda::getCurrentCUDAStream()`); do not synchronize the device."
                : "The tensors are on the CPU: C++ code goes in `cpp_sources`, the functions "
                  "you call in `functions`; no threads of your own.";
  if (IS("kb_example"))
    return cuda ? kb__prompt_template("kernelbench_example_cuda")
                : kb__prompt_template("kernelbench_example_host");
  if (IS("task_id"))
    return t->id;
  if (IS("task_name"))
    return t->name;
  if (IS("tensors"))
    return tensors;
  if (IS("atol")) {
    snprintf(scratch[0], 256, "%g", t->atol);
    return scratch[0];
  }
  if (IS("rtol")) {
    snprintf(scratch[1], 256, "%g", t->rtol);
    return scratch[1];
  }
  if (IS("parent_knobs_note")) {
    if (v->parent_knobs == NULL || v->parent_knobs[0] == '\0')
      return "";
    snprintf(scratch[2], 256, " (built with %.200s)", v->parent_knobs);
    return scratch[2];
  }
  if (IS("reference"))
    return v->reference;
  if (IS("parent_name"))
    return v->parent_name;
  if (IS("parent_source"))
    return v->parent_source;
  if (IS("diagnosis"))
    return v->diagnosis;
  if (IS("metrics"))
    return v->metrics;
  if (IS("parent2_name"))
    return v->parent2_name;
  if (IS("parent2_source"))
    return v->parent2_source;
  if (IS("metrics2"))
    return v->metrics2;
  if (IS("failed_tier"))
    return v->failed_tier;
  if (IS("failure_status"))
    return v->failure_status;
  if (IS("failure"))
    return v->failure;
  if (IS("examples")) /* optional: no archive, or nothing of this category in it */
    return v->examples ? v->examples : "";
#undef IS
  return NULL;
}

static int render(const char *tmpl, const char *which, const struct kb_prompt_vars *v,
                  const char *tensors, char **out, struct kb_error *err) {
  struct kb_buf b;
  kb_buf_init(&b);
  char scratch[3][256];
  int rc = KB_OK;
  const char *p = tmpl;
  while (rc == KB_OK && *p) {
    const char *open = strstr(p, "{{");
    if (open == NULL) {
      rc = kb_buf_adds(&b, p);
      break;
    }
    const char *close = strstr(open + 2, "}}");
    if (close == NULL) {
      rc = kb_error_set(err, KB_EINVAL, "prompt %s: \"{{\" without \"}}\"", which);
      break;
    }
    rc = kb_buf_add(&b, p, (size_t)(open - p));
    const char *name = open + 2;
    size_t len = (size_t)(close - name);
    const char *val = value_of(name, len, v, scratch, tensors);
    if (rc == KB_OK && val == NULL)
      rc = kb_error_set(err, KB_EINVAL, "prompt %s: no value for {{%.*s}}", which, (int)len,
                        name);
    if (rc == KB_OK)
      rc = kb_buf_adds(&b, val);
    p = close + 2;
  }
  if (rc == KB_ENOMEM)
    kb_error_set(err, rc, "prompt %s: out of memory", which);
  if (rc) {
    kb_buf_release(&b);
    return rc;
  }
  *out = kb_buf_detach(&b);
  return *out ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
}

int kb__prompt_render(int kind, const struct kb_prompt_vars *v, char **system, char **user,
                     struct kb_error *err) {
  *system = *user = NULL;
  /* native: <kind>.txt and system.txt; kernelbench: kernelbench_<kind>.txt and its system */
  int kbf = v->format == KB_FORMAT_KERNELBENCH;
  char name[64];
  snprintf(name, sizeof name, "%s%s", kbf ? "kernelbench_" : "", kb__prompt_kind_name(kind));
  const char *tmpl = kb__prompt_template(name);
  const char *sys = kb__prompt_template(kbf ? "kernelbench_system" : "system");
  if (v->format != KB_FORMAT_NATIVE && !kbf)
    return kb_error_set(err, KB_EINVAL, "no prompts for candidate format %d", v->format);
  if (tmpl == NULL || sys == NULL || v->task == NULL)
    return kb_error_set(err, KB_EINVAL, "no prompt template \"%s\"", name);
  struct kb_buf tensors;
  kb_buf_init(&tensors);
  int rc = tensors_text(v->task, &tensors);
  if (rc)
    return kb_error_set(err, rc, "out of memory");
  rc = render(sys, "system", v, tensors.data, system, err);
  if (rc == KB_OK)
    rc = render(tmpl, name, v, tensors.data, user, err);
  kb_buf_release(&tensors);
  if (rc) {
    kb_free(*system);
    kb_free(*user);
    *system = *user = NULL;
  }
  return rc;
}
