/* Prompts for the llm generator: templates from scheduler/prompts/ (embedded at build time; edit
 * the .txt files and rebuild), filled with the task, its parents and their profiles.
 *
 * A template holds {{name}} placeholders; each must be given (an unknown one is an error, so a
 * typo in a template fails its test rather than reaching the model). Kinds: translate (from the
 * task's reference source), mutate (one parent and its diagnosis), crossover (two parents),
 * repair (a failed parent and its compile log or wrong-output reason). Every kind shares the
 * system prompt (the ABI, the backend's rules, the answer format).
 *
 * Two sets of templates, by the format of the answer asked for (kb_prompt_vars.format):
 * native uses system.txt and <kind>.txt (a C/CUDA kernel of the ABI in a ```cuda or ```c
 * block); kernelbench uses kernelbench_system.txt and kernelbench_<kind>.txt, KernelBench's
 * conventions: the reference Model's source in every kind, a ModelNew with the same
 * constructor arguments whose kernels are built by torch.utils.cpp_extension.load_inline, one
 * ```python block (kernelbench_example_cuda.txt / _host.txt: the example in the system prompt).
 */
#ifndef KB_SCHED_LLM_PROMPT_H
#define KB_SCHED_LLM_PROMPT_H

#include <stddef.h>

struct kb_error;
struct kb_task;

enum kb_prompt_kind {
  KB_PROMPT_TRANSLATE = 0,
  KB_PROMPT_MUTATE,
  KB_PROMPT_CROSSOVER,
  KB_PROMPT_REPAIR,
  KB_PROMPT_KINDS
};

/* "translate", "mutate", "crossover", "repair" (static); "unknown" otherwise. */
const char *kb__prompt_kind_name(int kind);

/* What a parent's measurements say. Unknown values are NAN (doubles) or -1 (ints); the
 * CUPTI fields are optional and absent on the host backend. */
struct kb_profile {
  double median_us;     /* microseconds, at the highest tier timed */
  double baseline_us;   /* the task's baseline at that tier, microseconds */
  double noise;         /* relative */
  double bytes;         /* bytes the task must move at least (inputs + outputs) */
  int registers;        /* per thread */
  int spills;           /* bytes */
  int shared_bytes;     /* static shared memory per block */
  double dram_util;     /* CUPTI: DRAM throughput, fraction of peak (0..1) */
  double sm_util;       /* CUPTI: SM throughput, fraction of peak (0..1) */
  double occupancy;     /* CUPTI: achieved occupancy (0..1) */
  int cuda;             /* 1 for the CUDA backend (sets the nominal peak bandwidth) */
};

/* Sets every field of `p` to unknown. */
void kb__profile_init(struct kb_profile *p);
/* Turns `p` into a one-line diagnosis ("memory-bound: ...", "compute-bound: ...",
 * "latency-bound: ...", "occupancy-bound: ...", or "unknown: ...") in `diag` and the values
 * behind it, one "- name: value" line each, in `metrics`. Rules (docs/generators.md): with
 * CUPTI metrics, DRAM >= 60% of peak and above SM is memory-bound, SM >= 60% compute-bound,
 * occupancy < 25% occupancy-bound; without them, spills or > 128 registers are
 * occupancy-bound, achieved bandwidth >= 50% of a nominal peak (host 20 GB/s, CUDA 3000 GB/s)
 * memory-bound, a median under 10 us latency-bound, else compute-bound. */
void kb__profile_diagnose(const struct kb_profile *p, char *diag, size_t diag_size,
                         char *metrics, size_t metrics_size);

/* Values for the placeholders (all borrowed; NULL where the kind does not use one). */
struct kb_prompt_vars {
  const struct kb_task *task;     /* id, name, backend, tensors, tolerance */
  const char *reference;          /* reference source text */
  const char *parent_name;
  const char *parent_source;
  const char *parent_knobs;       /* "-DBLOCK=128" or "" */
  const char *diagnosis;          /* kb__profile_diagnose's line */
  const char *metrics;            /* its lines (crossover: parent A's one-line summary) */
  const char *parent2_name;
  const char *parent2_source;
  const char *metrics2;           /* crossover: parent B's one-line summary */
  const char *failed_tier;        /* repair */
  const char *failure_status;     /* repair: "compile_error", "wrong_output", ... */
  const char *failure;            /* repair: compile log or reason */
  const char *examples;           /* archive examples (gen_archive.h) or NULL for none */
  int format;                     /* enum kb_cand_format of the answer asked for */
};

/* Renders the system prompt and the `kind` template with `v` into `*system` and `*user` (new;
 * kb_free). Errors: KB_EINVAL (a placeholder without a value, or one the kind needs is NULL:
 * the message names it), KB_ENOMEM. */
int kb__prompt_render(int kind, const struct kb_prompt_vars *v, char **system, char **user,
                     struct kb_error *err);

/* The embedded text of template `name` ("mutate", "abi", ...), or NULL. Static. */
const char *kb__prompt_template(const char *name);

#endif
