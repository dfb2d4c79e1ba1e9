/* The evaluation backends (see evaluator.h).
 *
 * Tier 0 happens here (compile.h: build, cache, import allow-list, then the ELF check for
 * kb_forward); every running tier is one "prepare" (cached in the sandbox after the first) and
 * one "eval" request to the sandbox (sandbox_client.h). The sandbox verifies and times; this
 * side turns its reply, or its death, or the watchdog, into the verdict, and checks the one
 * thing the sandbox cannot vouch for: that the timing it reports fits in the wall time the
 * evaluation took (a candidate shares the sandbox's address space and could forge a reply).
 */
#include "evaluator.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsym.h"
#include "kb/alloc.h"
#include "kb/catalog.h"
#include "kb/buf.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/fs.h"
#include "kb/hash.h"
#include "kb/jsonfile.h"
#include "kb/ladder.h"
#include "kb/queue.h"
#include "kb/log.h"
#include "proc.h"
#include "sandbox/proto.h"
#include "sandbox_client.h"
#include "warmup_hold.h"
#include "witness.h"

#define MAX_ORACLES 8          /* oracle libraries remembered by task fingerprint */
#define WARMUP_WAIT_S 120.0    /* at most, for the warm-up passes to end before a retry */
#define BUDGET_SHARE 0.7       /* of the timeout, after which sampling stops past min_samples */
#define PREPARE_TIMEOUT_S 300  /* drawing inputs and running the oracle on every set, at most */
#define MAX_BASELINES 64       /* tasks whose baseline was set */
#define MAX_NOTES 16           /* distinct sandbox notes logged at their level (note_once) */
#define LEAK_FRACTION 16       /* a PyTorch worker holding this part of the device beyond its
                                  tasks' tensors is replaced (release_worker) */
#define TORCH_TIMEOUT_S 600    /* timing torch eager, at most (and at most the tier's timeout:
                                  kb/ladder.h) */
#define TORCH_COMPILE_TIMEOUT_S 300 /* compiling and timing torch.compile, at most (whatever
                                  the tier's timeout: the baseline's compilation) */

struct oracle {
  char fingerprint[KB_CAND_ID_LEN + 1];
  char *lib;                   /* built oracle (owned) */
  double run_us;               /* its slowest run on one input set at the last prepare, us;
                                  0: not known */
};

struct baseline {
  char task[KB_ID_MAX];        /* task id, "" for a free slot */
  char *lib;                   /* its built library (owned); NULL: none */
  int format;                  /* enum kb_cand_format of the build */
};

/* The best full-tier median of a task among this evaluator's evaluations (KB_METRICS_BEST). */
struct best {
  char task[KB_ID_MAX];        /* task id, "" for a free slot */
  double median_us;
};

/* A task's torch eager and torch.compile medians as the trusted worker timed them (NAN: not
 * timed), reused for kb__evaluator_set_torch_reuse's seconds. */
struct torch_times {
  char task[KB_ID_MAX];        /* task id, "" for a free slot */
  int tier;                    /* the tier index they were timed at */
  double eager_us, compile_us;
  int compile_gave_up;         /* torch.compile ran out of TORCH_COMPILE_TIMEOUT_S: not again */
  double at;                   /* kb_now_mono() when timed */
};

struct kb_evaluator {
  int kind;                    /* enum kb_backend */
  int metrics;                 /* enum kb_metrics_mode */
  int sample_chunk;            /* kb__evaluator_set_sample_chunk(); 0: the sandbox's choice */
  int fresh;                   /* enum kb_fresh_mode */
  double mark_us;              /* kb__evaluator_set_mark(): < 0 not marked */
  double cpu_median_us;        /* the last judged reply's samples in its thread's CPU time (a
                                  host's kb-sandbox), for its witness; NAN when none */
  struct best bests[MAX_BASELINES];
  int next_best;               /* round-robin slot once all are used */
  struct baseline baselines[MAX_BASELINES];
  int next_baseline;           /* round-robin slot once all are used */
  struct torch_times torch_seen[MAX_BASELINES];
  int next_torch;              /* round-robin slot once all are used */
  int torch_reuse_s;           /* kb__evaluator_set_torch_reuse() */
  uint64_t notes_seen[MAX_NOTES]; /* note_once(): hashes of the notes logged so far */
  int n_notes;
  struct kb__compiler cc;
  struct kb__sandbox *sb;
  struct kb__sandbox *sb_torch; /* the PyTorch worker, started for the first pytorch task */
  struct kb__sandbox *sb_torch_trusted; /* a second one (--trusted: never loads a candidate,
                                           not confined) timing torch eager and torch.compile,
                                           started for the first "torch" request */
  struct kb__sandbox *sb_trusted; /* kb-sandbox --trusted (never loads a candidate, not
                                     confined): the witness's oracle calls of C and CUDA tasks,
                                     started for the first witness */
  int ordinal;                 /* CUDA device ordinal */
  double grace_s;              /* kb__evaluator_set_grace() */
  char device[KB_ID_MAX];
  struct oracle oracles[MAX_ORACLES];
  int next_oracle;             /* round-robin slot */
  volatile sig_atomic_t *stop; /* borrowed */
  double prepare_s;            /* seconds spent in prepare() so far (oracle builds included) */
  long preparations;           /* prepares the sandbox did not have cached */
  double witness_s;            /* seconds spent in witness() so far */
  long witness_rounds;         /* witness rounds completed so far (second witnesses included) */
  double torch_draw_s;         /* the last PyTorch worker's prepare: its slowest draw of one
                                  input set (get_inputs()), seconds; 0: not known */
  char recent[KB_AFFINITY_MAX][KB_ID_MAX]; /* tasks prepared, most recent first */
  int n_recent;
};

static void set_reason(struct kb_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_reason(struct kb_result *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (vsnprintf(r->reason, sizeof r->reason, fmt, ap) < 0)
    r->reason[0] = '\0';
  va_end(ap);
}

/* Appends "; output: <tail>" with as much of the end of `tail` as fits. */
static void append_output(struct kb_result *r, const char *tail) {
  size_t used = strlen(r->reason);
  const char *sep = "; output: ";
  size_t len = strlen(tail);
  if (len == 0 || used + strlen(sep) + 8 >= sizeof r->reason)
    return;
  size_t room = sizeof r->reason - used - strlen(sep) - 1;
  const char *start = len > room ? tail + len - room : tail;
  if (snprintf(r->reason + used, sizeof r->reason - used, "%s%s", sep, start) < 0)
    r->reason[used] = '\0';
}

static int include_dir(struct kb_buf *out) {
  const char *env = getenv("KB_INCLUDE_DIR");
  if (env != NULL && *env)
    return kb_buf_adds(out, env);
  return kb_buf_adds(out, KB_ABI_INCLUDE_DIR);
}

int kb__evaluator_new(const struct kb_evaluator_opts *o, struct kb_evaluator **out,
                   struct kb_error *err) {
  *out = NULL;
  if (o->kind != KB_BACKEND_HOST && o->kind != KB_BACKEND_CUDA)
    return kb_error_set(err, KB_EINVAL, "unknown backend %d", o->kind);
  struct kb_buf inc;
  kb_buf_init(&inc);
  struct kb_evaluator *b = kb_calloc(1, sizeof *b);
  if (b == NULL || include_dir(&inc) != KB_OK) {
    kb_free(b);
    kb_buf_release(&inc);
    return kb_error_set(err, KB_ENOMEM, "cannot create the backend: out of memory");
  }
  b->kind = o->kind;
  b->stop = o->stop;
  b->ordinal = o->device;
  b->mark_us = -1;
  b->cpu_median_us = NAN;
  b->torch_reuse_s = KB_TORCH_REUSE_S;
  /* the sandbox may read the build cache (candidates, oracles, task files) and nothing of the
   * runner's beyond it: the cache must exist before the child confines itself */
  struct kb__sandbox_opts so = {.program = o->sandbox, .backend = kb_backend_name(o->kind),
                                .device = o->device, .stop = o->stop,
                                .ro = {o->cache_dir}, .n_ro = o->cache_dir != NULL};
  int rc = o->cache_dir != NULL ? kb_mkdirs(o->cache_dir, err) : KB_OK;
  if (rc == KB_OK)
    rc = kb__sandbox_new(&so, &b->sb, err);
  if (rc == KB_OK)
    rc = kb__sandbox_start(b->sb, err);
  char arch[KB__ARCH_MAX] = "";
  if (rc == KB_OK) {
    json_t *hello = kb__sandbox_hello(b->sb);
    const char *dev = json_string_value(json_object_get(hello, "device"));
    snprintf(b->device, sizeof b->device, "%s", dev && *dev ? dev : "unknown");
    if (o->kind == KB_BACKEND_CUDA && o->arch == NULL) {
      int major = 0, minor = 0;
      const char *cc = json_string_value(json_object_get(hello, "cc"));
      if (cc == NULL || sscanf(cc, "%d.%d", &major, &minor) != 2 ||
          kb__cuda_arch(major, minor, arch, sizeof arch) != KB_OK)
        rc = kb_error_set(err, KB_ECHILD, "the sandbox reports no usable compute capability");
    }
  }
  if (rc == KB_OK && o->kind == KB_BACKEND_CUDA)
    rc = kb__compiler_init_cuda(&b->cc, o->cache_dir, o->compiler, inc.data,
                                o->arch ? o->arch : arch, err);
  else if (rc == KB_OK)
    rc = kb__compiler_init(&b->cc, o->cache_dir, o->compiler, inc.data, err);
  kb_buf_release(&inc);
  if (rc) {
    kb__sandbox_free(b->sb);
    kb_free(b);
    return rc;
  }
  *out = b;
  return KB_OK;
}

void kb__evaluator_free(struct kb_evaluator *b) {
  if (b == NULL)
    return;
  kb__sandbox_free(b->sb);
  kb__sandbox_free(b->sb_torch);
  kb__sandbox_free(b->sb_torch_trusted);
  kb__sandbox_free(b->sb_trusted);
  for (int i = 0; i < MAX_ORACLES; i++)
    kb_free(b->oracles[i].lib);
  for (int i = 0; i < MAX_BASELINES; i++)
    kb_free(b->baselines[i].lib);
  kb__compiler_release(&b->cc);
  kb_free(b);
}

void kb__evaluator_set_stop(struct kb_evaluator *b, volatile sig_atomic_t *stop) {
  b->stop = stop;
  kb__sandbox_set_stop(b->sb, stop);
  if (b->sb_torch != NULL)
    kb__sandbox_set_stop(b->sb_torch, stop);
  if (b->sb_torch_trusted != NULL)
    kb__sandbox_set_stop(b->sb_torch_trusted, stop);
  if (b->sb_trusted != NULL)
    kb__sandbox_set_stop(b->sb_trusted, stop);
}

void kb__evaluator_set_metrics(struct kb_evaluator *b, int mode) { b->metrics = mode; }

void kb__evaluator_set_fresh(struct kb_evaluator *b, int mode) { b->fresh = mode; }

void kb__evaluator_set_mark(struct kb_evaluator *b, double bound_us) { b->mark_us = bound_us; }

void kb__evaluator_set_sample_chunk(struct kb_evaluator *b, int samples) {
  b->sample_chunk = samples;
}

void kb__evaluator_set_torch_reuse(struct kb_evaluator *b, int seconds) {
  b->torch_reuse_s = seconds > 0 ? seconds : 0;
}

/* The slot of task `task_id`'s torch times, a free or reused one when `make` (else NULL), as
 * best_of does for the bests. */
static struct torch_times *torch_slot(struct kb_evaluator *b, const char *task_id, int make) {
  for (int i = 0; i < MAX_BASELINES; i++)
    if (strcmp(b->torch_seen[i].task, task_id) == 0)
      return &b->torch_seen[i];
  if (!make)
    return NULL;
  struct torch_times *x = &b->torch_seen[b->next_torch];
  b->next_torch = (b->next_torch + 1) % MAX_BASELINES;
  snprintf(x->task, sizeof x->task, "%s", task_id);
  return x;
}

/* The slot of task `task_id`'s best median, a free or reused one when `make` (else NULL). */
static struct best *best_of(struct kb_evaluator *b, const char *task_id, int make) {
  for (int i = 0; i < MAX_BASELINES; i++)
    if (strcmp(b->bests[i].task, task_id) == 0)
      return &b->bests[i];
  if (!make)
    return NULL;
  struct best *x = &b->bests[b->next_best];
  b->next_best = (b->next_best + 1) % MAX_BASELINES;
  snprintf(x->task, sizeof x->task, "%s", task_id);
  x->median_us = 0;
  return x;
}

/* After a full-tier evaluation of `task_id`: a timed ok verdict faster than the best so far is
 * the new best. */
static void note_best(struct kb_evaluator *b, const char *task_id, const struct kb_result *r) {
  if (r->status != KB_STATUS_OK || r->timing.samples <= 0 || !(r->timing.median_us > 0))
    return;
  struct best *x = best_of(b, task_id, 1);
  if (x->median_us <= 0 || r->timing.median_us < x->median_us)
    x->median_us = r->timing.median_us;
}

void kb__evaluator_set_grace(struct kb_evaluator *b, double seconds) {
  b->grace_s = seconds;
  kb__sandbox_set_grace(b->sb, seconds);
  if (b->sb_torch != NULL)
    kb__sandbox_set_grace(b->sb_torch, seconds);
  if (b->sb_torch_trusted != NULL)
    kb__sandbox_set_grace(b->sb_torch_trusted, seconds);
  if (b->sb_trusted != NULL)
    kb__sandbox_set_grace(b->sb_trusted, seconds);
}

/* The sandbox that serves `task`: kb-sandbox for C and CUDA oracles, the PyTorch worker
 * (created on first use, started by the first call) for pytorch ones; with `trusted`, the
 * trusted PyTorch worker that times torch eager and torch.compile (a confined process may not
 * start inductor's compilers), created the same way. Errors: those of kb__sandbox_new
 * (KB_ENOTFOUND: no interpreter or worker script). */
static int sandbox_for(struct kb_evaluator *b, const struct kb_task *task, int trusted,
                       struct kb__sandbox **out, struct kb_error *err) {
  *out = b->sb;
  if (task->oracle_kind != KB_ORACLE_PYTORCH && !(trusted && task->torch_ref_path != NULL))
    return KB_OK;
  struct kb__sandbox **slot = trusted ? &b->sb_torch_trusted : &b->sb_torch;
  if (*slot == NULL) {
    /* the trusted worker's torch.compile finds what the compile pool compiled ahead there */
    char jit[4096];
    int ahead = trusted && b->kind == KB_BACKEND_CUDA &&
                kb__reference_jit_dir(&b->cc, jit, sizeof jit) == KB_OK;
    struct kb__sandbox_opts so = {.worker = KB__SANDBOX_TORCH, .trusted = trusted,
                                  .backend = kb_backend_name(b->kind),
                                  .device = b->ordinal, .stop = b->stop,
                                  .ro = {b->cc.cache_dir}, .n_ro = b->cc.cache_dir != NULL,
                                  .jit_dir = ahead ? jit : NULL};
    int rc = kb__sandbox_new(&so, slot, err);
    if (rc)
      return rc;
    kb__sandbox_set_grace(*slot, b->grace_s);
  }
  *out = *slot;
  return KB_OK;
}

/* The trusted kb-sandbox of the witness (started here the first time) into *out. */
static int trusted_sandbox(struct kb_evaluator *b, struct kb__sandbox **out,
                           struct kb_error *err) {
  if (b->sb_trusted == NULL) {
    struct kb__sandbox_opts so = {.worker = KB__SANDBOX_NATIVE, .trusted = 1,
                                  .backend = kb_backend_name(b->kind),
                                  .device = b->ordinal, .stop = b->stop,
                                  .ro = {b->cc.cache_dir}, .n_ro = b->cc.cache_dir != NULL};
    int rc = kb__sandbox_new(&so, &b->sb_trusted, err);
    if (rc)
      return rc;
    kb__sandbox_set_grace(b->sb_trusted, b->grace_s);
  }
  *out = b->sb_trusted;
  return kb__sandbox_start(b->sb_trusted, err);
}

/* The built oracle of fingerprint `key`, NULL when this evaluator has none. */
static struct oracle *oracle_of(struct kb_evaluator *b, const char *key) {
  for (int i = 0; i < MAX_ORACLES; i++)
    if (b->oracles[i].lib != NULL && strcmp(b->oracles[i].fingerprint, key) == 0)
      return &b->oracles[i];
  return NULL;
}

void kb__evaluator_set_compile_timeout(struct kb_evaluator *b, double seconds) {
  if (seconds > 0)
    b->cc.timeout_s = seconds;
}

const struct kb__compiler *kb__evaluator_compiler(const struct kb_evaluator *b) { return &b->cc; }
double kb__evaluator_prepare_s(const struct kb_evaluator *b) { return b->prepare_s; }
long kb__evaluator_preparations(const struct kb_evaluator *b) { return b->preparations; }
double kb__evaluator_witness_s(const struct kb_evaluator *b) { return b->witness_s; }
long kb__evaluator_witness_rounds(const struct kb_evaluator *b) { return b->witness_rounds; }
int kb__evaluator_prepared_tasks(const struct kb_evaluator *b, const char **out, int max) {
  int n = 0;
  for (; n < b->n_recent && n < max; n++)
    out[n] = b->recent[n];
  return n;
}

/* Counts a preparation of `task` (`fresh`: not cached in the sandbox) and moves it to the front
 * of the recently prepared tasks. */
static void note_prepared(struct kb_evaluator *b, const char *task, int fresh) {
  b->preparations += fresh;
  int at = 0;
  while (at < b->n_recent && strcmp(b->recent[at], task) != 0)
    at++;
  if (at == b->n_recent && b->n_recent < KB_AFFINITY_MAX)
    b->n_recent++;
  if (at == KB_AFFINITY_MAX)
    at--; /* the least recent one leaves */
  memmove(b->recent[1], b->recent[0], (size_t)at * sizeof b->recent[0]);
  snprintf(b->recent[0], sizeof b->recent[0], "%s", task);
}
const char *kb__evaluator_device(const struct kb_evaluator *b) { return b->device; }
int kb__evaluator_sandbox_starts(const struct kb_evaluator *b) {
  return kb__sandbox_starts(b->sb) + (b->sb_torch ? kb__sandbox_starts(b->sb_torch) : 0) +
         (b->sb_torch_trusted ? kb__sandbox_starts(b->sb_torch_trusted) : 0) +
         (b->sb_trusted ? kb__sandbox_starts(b->sb_trusted) : 0);
}
double kb__evaluator_sandbox_start_s(const struct kb_evaluator *b) {
  return kb__sandbox_last_start_s(b->sb);
}
int kb__evaluator_sandbox_pid(const struct kb_evaluator *b) { return (int)kb__sandbox_pid(b->sb); }

/* ---- preparing a task -------------------------------------------------------------------- */

static int hash_bytes(struct kb_sha256 *h, const void *data, size_t len, int rc) {
  return rc ? rc : kb_sha256_update(h, data, len);
}

static int hash_spec(struct kb_sha256 *h, const struct kb_tensor_spec *s, int rc) {
  rc = hash_bytes(h, &s->dtype, sizeof s->dtype, rc);
  rc = hash_bytes(h, &s->ndim, sizeof s->ndim, rc);
  for (int d = 0; d < s->ndim && d < KB_MAX_DIMS; d++)
    rc = hash_bytes(h, &s->shape[d], sizeof s->shape[d], rc);
  return rc;
}

/* What the prepared data of `task` depends on: id, oracle source, tensors, sets, tolerances. */
static int fingerprint(const struct kb_task *task, const char *oracle_src,
                       char out[KB_CAND_ID_LEN + 1], struct kb_error *err) {
  struct kb_sha256 *h = kb_sha256_new();
  if (h == NULL)
    return kb_error_set(err, KB_EINTERNAL, "cannot hash task \"%s\"", task->id);
  int rc = hash_bytes(h, task->id, strlen(task->id) + 1, KB_OK);
  rc = hash_bytes(h, oracle_src, strlen(oracle_src) + 1, rc);
  rc = hash_bytes(h, &task->n_inputs, sizeof task->n_inputs, rc);
  for (int i = 0; i < task->n_inputs; i++)
    rc = hash_spec(h, &task->inputs[i], rc);
  rc = hash_bytes(h, &task->n_outputs, sizeof task->n_outputs, rc);
  for (int i = 0; i < task->n_outputs; i++)
    rc = hash_spec(h, &task->outputs[i], rc);
  rc = hash_bytes(h, &task->n_sets, sizeof task->n_sets, rc);
  for (int s = 0; s < task->n_sets; s++) {
    const struct kb_input_set *set = &task->sets[s];
    rc = hash_bytes(h, &set->seed, sizeof set->seed, rc);
    rc = hash_bytes(h, &set->dist, sizeof set->dist, rc);
    rc = hash_bytes(h, &set->low, sizeof set->low, rc);
    rc = hash_bytes(h, &set->high, sizeof set->high, rc);
  }
  rc = hash_bytes(h, &task->atol, sizeof task->atol, rc);
  rc = hash_bytes(h, &task->rtol, sizeof task->rtol, rc);
  rc = hash_bytes(h, &task->must_read, sizeof task->must_read, rc);
  if (rc) {
    kb_sha256_free(h);
    return kb_error_set(err, KB_EINTERNAL, "cannot hash task \"%s\"", task->id);
  }
  if (kb_sha256_final_hex(h, out) != KB_OK)
    return kb_error_set(err, KB_EINTERNAL, "cannot hash task \"%s\"", task->id);
  return KB_OK;
}

static const char *dist_name(int dist) {
  switch ((enum kb_dist)dist) {
  case KB_DIST_UNIFORM:
    return "uniform";
  case KB_DIST_NORMAL:
    return "normal";
  case KB_DIST_INTEGERS:
    return "integers";
  }
  return "unknown";
}

static json_t *tensors_json(const struct kb_tensor_spec *specs, int n) {
  json_t *arr = json_array();
  for (int i = 0; arr != NULL && i < n; i++) {
    json_t *shape = json_array();
    for (int d = 0; shape != NULL && d < specs[i].ndim; d++)
      json_array_append_new(shape, json_integer(specs[i].shape[d]));
    json_array_append_new(arr, json_pack("{s:s, s:s, s:o}", "name", specs[i].name, "dtype",
                                         kb_dtype_name(specs[i].dtype), "shape", shape));
  }
  return arr;
}

/* The prepare request for `task` with the oracle at `lib` under `key`. New reference. */
static json_t *prepare_request(const struct kb_task *task, const char *key, const char *lib) {
  json_t *sets = json_array();
  for (int s = 0; sets != NULL && s < task->n_sets; s++)
    json_array_append_new(sets, json_pack("{s:I, s:s, s:f, s:f}", "seed",
                                           (json_int_t)task->sets[s].seed, "distribution",
                                           dist_name(task->sets[s].dist), "low",
                                           task->sets[s].low, "high", task->sets[s].high));
  return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:f, s:f, s:f}", "op", "prepare", "key", key,
                   "oracle", lib, "inputs", tensors_json(task->inputs, task->n_inputs),
                   "outputs", tensors_json(task->outputs, task->n_outputs), "sets", sets,
                   "atol", task->atol, "rtol", task->rtol, "must_read", task->must_read);
}

/* Asks the PyTorch worker `sb`, if it runs, to drop its prepared tasks but the one under
 * `keep` (NULL: all) and give their device memory back: the two workers share the GPU, and
 * one's tasks can leave no room for the other's next (measured on the H200 with KernelBench
 * level 1: 30 GiB held by the trusted worker made the confined one's prepare of a 6 GiB task
 * fail); with `may_stop`, a worker that still holds more than 1/LEAK_FRACTION of the device
 * beyond its kept task is stopped (without it the worker is about to be used, as the confined
 * one is by the witness that follows its evaluation). Returns 1 when it answered. */
static int release_worker(struct kb__sandbox *sb, const char *keep, int may_stop) {
  if (sb == NULL || kb__sandbox_pid(sb) <= 0)
    return 0;
  json_t *req = json_pack("{s:s, s:s}", "op", "release", "keep", keep ? keep : "");
  struct kb__sb_call call;
  struct kb_error err = {0};
  memset(&call, 0, sizeof call);
  int ok = req != NULL && kb__sandbox_call(sb, req, 30.0, &call, &err) == KB_OK &&
           call.outcome == KB__SB_REPLY;
  const double gib = 1073741824.0;
  if (ok && json_integer_value(json_object_get(call.reply, "dropped")) > 0)
    kb_info("PyTorch worker %d released %lld prepared task(s); %.1f GiB of device memory free",
            (int)kb__sandbox_pid(sb),
            (long long)json_integer_value(json_object_get(call.reply, "dropped")),
            json_number_value(json_object_get(call.reply, "free_bytes")) / gib);
  /* what it holds beyond the tensors of the task it keeps is torch's own (compiled modules,
   * caches): past a sixteenth of the device, a new worker is the only sure way to free it */
  double held = ok ? json_number_value(json_object_get(call.reply, "held_bytes")) : 0;
  double kept = ok ? json_number_value(json_object_get(call.reply, "kept_bytes")) : 0;
  double total = ok ? json_number_value(json_object_get(call.reply, "total_bytes")) : 0;
  if (may_stop && total > 0 && held - kept > total / LEAK_FRACTION) {
    kb_warn("PyTorch worker %d holds %.1f GiB of device memory beyond its prepared tasks' "
            "%.1f GiB (over 1/%d of the device): stopped; a new one starts at its next request",
            (int)kb__sandbox_pid(sb), held / gib, kept / gib, LEAK_FRACTION);
    kb__sandbox_kill(sb);
  }
  json_decref(req);
  kb__sb_call_release(&call);
  return ok;
}

/* release_worker on the runner's other PyTorch worker: the confined one when `trusted`, else
 * the trusted one. */
static int release_sibling(struct kb_evaluator *b, int trusted, const char *keep, int may_stop) {
  return release_worker(trusted ? b->sb_torch : b->sb_torch_trusted, keep, may_stop);
}

/* Builds the oracle of `task` (trusted) unless built, and makes the sandbox prepare the task
 * (with `trusted`, the trusted PyTorch worker of a pytorch task, or of a task with a
 * torch_reference, which it prepares with that module), starting the sandbox first
 * when it does not run: all of it before `deadline` (monotonic seconds; the setup limit of
 * kb/ladder.h), each step given what is left. `key` gets the fingerprint. With `module_only`
 * (the trusted PyTorch worker, for a witness) the worker keeps the task's module and none of
 * its input sets: the witness's calls draw their own inputs, and the trusted worker's copy of a
 * large task's sets beside the confined worker's did not fit an 80 GB device (docs/sandbox.md,
 * "The witness"); a task prepared so is prepared again, whole, for a torch timing. When the
 * worker runs out of device memory the other worker is released (release_sibling) and the prepare asked
 * once more: `sibling_keep`, when not NULL, is the other worker's task that must stay (the
 * witness's confined worker holds the candidate it is about to call). Errors (infra):
 * KB_EIO, KB_ECOMPILE, KB_EINTERNAL (the oracle fails in the sandbox, or the sandbox died while
 * preparing), KB_ETIMEOUT, KB_ECHILD (the sandbox does not start), KB_EINTERRUPTED,
 * KB_ENOMEM. */
/* Kept whole (162 lines): one request and its reply's cases, read in the order the protocol
 * (docs/sandbox.md) gives them. */
static int prepare(struct kb_evaluator *b, const struct kb_task *task, int trusted,
                   int module_only, char key[KB_CAND_ID_LEN + 1], const char *sibling_keep,
                   double deadline, struct kb_error *err) {
  struct kb_buf src;
  struct kb__build build;
  struct kb__sb_call call;
  json_t *req = NULL;
  int retried = 0;
  kb_buf_init(&src);
  kb__build_init(&build);
  memset(&call, 0, sizeof call);
  /* the trusted worker of a task with a torch_reference times that module (its own key) */
  int torch_module = task->oracle_kind == KB_ORACLE_PYTORCH ||
                     (trusted && task->torch_ref_path != NULL);
  const char *module_path = task->oracle_kind == KB_ORACLE_PYTORCH || !torch_module
                                ? task->oracle_path
                                : task->torch_ref_path;
  int rc = kb_buf_read_file(&src, module_path, err);
  if (rc == KB_OK)
    rc = fingerprint(task, src.data, key, err);
  if (rc)
    goto out;
  struct kb__sandbox *sb = NULL;
  rc = sandbox_for(b, task, trusted, &sb, err);
  if (rc == KB_OK)
    rc = kb__sandbox_start(sb, err); /* a restart counts in the setup, not in the call */
  if (rc)
    goto out;
  const char *lib = NULL;
  char module[4096];
  if (torch_module) {
    /* the module's source, which the worker runs, from the build cache: a confined worker
     * reads only there (its --ro path), whatever folder the task bundle came from */
    int n = snprintf(module, sizeof module, "%s/oracle-%s.py", b->cc.cache_dir, key);
    if (n < 0 || (size_t)n >= sizeof module) {
      rc = kb_error_set(err, KB_EINVAL, "task \"%s\": cache path too long", task->id);
      goto out;
    }
    if (access(module, R_OK) != 0)
      rc = kb_write_file_atomic(module, src.data, src.len, err);
    if (rc)
      goto out;
    lib = module;
  }
  const struct oracle *built = lib == NULL ? oracle_of(b, key) : NULL;
  if (built != NULL)
    lib = built->lib;
  if (lib == NULL) {
    /* the oracle is trusted code: it skips the import allow-list that candidates face */
    double left = deadline - kb_now_mono();
    if (left > b->cc.timeout_s && b->cc.timeout_s > 0)
      left = b->cc.timeout_s;
    rc = left > 0 ? kb__compile_req(&b->cc, &(struct kb__compile_req){.source = src.data,
                                    .trusted = 1, .timeout_s = left}, &build, err)
                  : kb_error_set(err, KB_ETIMEOUT, "task \"%s\": no time left of the %g s setup "
                                 "limit to build its oracle", task->id, KB_SETUP_LIMIT_S);
    if (rc)
      goto out;
    if (!build.ok) {
      rc = kb_error_set(err, KB_ECOMPILE, "oracle of task \"%s\" (%s) %s", task->id,
                        task->oracle_path, build.reason);
      goto out;
    }
    struct oracle *o = &b->oracles[b->next_oracle];
    b->next_oracle = (b->next_oracle + 1) % MAX_ORACLES;
    kb_free(o->lib);
    o->lib = kb_strdup(build.lib_path);
    o->run_us = 0;
    memcpy(o->fingerprint, key, KB_CAND_ID_LEN + 1);
    if (o->lib == NULL) {
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
      goto out;
    }
    lib = o->lib;
  }
  req = prepare_request(task, key, lib);
  if (req != NULL && module_only && json_object_set_new(req, "module_only", json_true()) != 0) {
    json_decref(req);
    req = NULL;
  }
  if (req == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot prepare task \"%s\": out of memory", task->id);
    goto out;
  }
retry:;
  double limit = deadline - kb_now_mono();
  if (limit > PREPARE_TIMEOUT_S)
    limit = PREPARE_TIMEOUT_S;
  rc = limit > 0 ? kb__sandbox_call(sb, req, limit, &call, err)
                 : kb_error_set(err, KB_ETIMEOUT, "task \"%s\": no time left of the %g s setup "
                                "limit to prepare it", task->id, KB_SETUP_LIMIT_S);
  if (rc)
    goto out;
  char sbuf[32];
  switch ((enum kb__sb_outcome)call.outcome) {
  case KB__SB_REPLY:
    break;
  case KB__SB_TIMEOUT:
    rc = kb_error_set(err, KB_ETIMEOUT, "task \"%s\": preparing it in the sandbox took more "
                      "than %.1f s (setup limit %g s)", task->id, limit, KB_SETUP_LIMIT_S);
    goto out;
  case KB__SB_DIED:
    rc = kb_error_set(err, KB_EINTERNAL, "task \"%s\": the sandbox died while preparing it (%s "
                      "%d): %s", task->id, call.signal ? "signal" : "exit status",
                      call.signal ? call.signal : call.exit_code, call.tail);
    (void)sbuf;
    goto out;
  case KB__SB_STOPPED:
    rc = kb_error_set(err, KB_EINTERRUPTED, "evaluation stopped: the runner is leaving");
    goto out;
  case KB__SB_FORGED:
    rc = kb_error_set(err, KB_EINTERNAL, "task \"%s\": the sandbox's answer to prepare was not "
                      "its own: %s", task->id, call.detail);
    goto out;
  }
  const char *op = json_string_value(json_object_get(call.reply, "op"));
  if (strcmp(op, "prepare") == 0 && json_is_true(json_object_get(call.reply, "oom")) &&
      !retried && release_sibling(b, trusted, sibling_keep, sibling_keep == NULL)) {
    retried = 1; /* the other worker's tasks took the room: once more with them dropped */
    kb__sb_call_release(&call);
    memset(&call, 0, sizeof call);
    goto retry;
  }
  if (strcmp(op, "prepare") != 0 || !json_is_true(json_object_get(call.reply, "ok"))) {
    const char *why = json_string_value(json_object_get(call.reply, "reason"));
    rc = kb_error_set(err, KB_EINTERNAL, "task \"%s\": the sandbox cannot prepare it: %s",
                      task->id, why ? why : "no reason given");
  } else {
    int fresh = !json_is_true(json_object_get(call.reply, "cached"));
    note_prepared(b, task->id, fresh);
    struct oracle *o = torch_module ? NULL : oracle_of(b, key);
    if (o != NULL) /* kb-sandbox's: what sizes the witness (witness_plan) */
      o->run_us = json_number_value(json_object_get(call.reply, "oracle_s")) * 1e6;
    if (torch_module) /* the PyTorch worker's: the same (0 when it did not say) */
      b->torch_draw_s = json_number_value(json_object_get(call.reply, "draw_s"));
    if (fresh && json_is_integer(json_object_get(call.reply, "bytes"))) /* kb-sandbox's */
      kb_debug("task %s: prepared in the %s worker in %.3f s (%.1f MiB; the worker's prepared "
               "tasks %.1f MiB, %d dropped for room%s)", task->id,
               trusted ? "trusted" : "confined", call.seconds,
               (double)json_integer_value(json_object_get(call.reply, "bytes")) / 1048576.0,
               (double)json_integer_value(json_object_get(call.reply, "held_bytes")) / 1048576.0,
               (int)json_integer_value(json_object_get(call.reply, "dropped")),
               json_is_true(json_object_get(call.reply, "over"))
                   ? "; kept above the share until the next prepare"
                   : "");
    else if (fresh)
      kb_debug("task %s: prepared in the %s worker in %.3f s%s", task->id,
               trusted ? "trusted" : "confined", call.seconds,
               module_only ? " (its module only, for the witness)" : "");
    /* fewer input sets than the task declares: they do not fit the device (sets_that_fit) */
    const char *sets_note = json_string_value(json_object_get(call.reply, "sets_note"));
    if (fresh && sets_note != NULL)
      kb_warn("task %s: the %s worker: %s", task->id, trusted ? "trusted" : "confined",
              sets_note);
  }
out:
  json_decref(req);
  kb__sb_call_release(&call);
  kb__build_release(&build);
  kb_buf_release(&src);
  return rc;
}

/* ---- evaluation -------------------------------------------------------------------------- */

/* The verdict fields of `r` back to kb_result_init's "unknown" values, but for what an
 * evaluation starts from: this evaluator's backend and device, status ok, compile_s 0, the
 * timing all 0. What names the work stays: campaign, task, candidate, tier, tier_name, attempt,
 * charge_id, runner, confinement, started, finished. Frees the compile log and kernels. */
static void reset_verdict(const struct kb_evaluator *b, struct kb_result *r) {
  struct kb_result keep = *r;
  kb_result_release(r);
  kb_result_init(r);
  memcpy(r->campaign, keep.campaign, sizeof r->campaign);
  memcpy(r->task, keep.task, sizeof r->task);
  memcpy(r->candidate, keep.candidate, sizeof r->candidate);
  r->tier = keep.tier;
  memcpy(r->tier_name, keep.tier_name, sizeof r->tier_name);
  r->attempt = keep.attempt;
  memcpy(r->charge_id, keep.charge_id, sizeof r->charge_id);
  memcpy(r->runner, keep.runner, sizeof r->runner);
  memcpy(r->confinement, keep.confinement, sizeof r->confinement);
  r->started = keep.started;
  r->finished = keep.finished;
  r->backend = b->kind;
  if (snprintf(r->device, sizeof r->device, "%s", b->device) < 0)
    r->device[0] = '\0';
  r->status = KB_STATUS_OK;
  r->compile_s = 0;
  memset(&r->timing, 0, sizeof r->timing);
}

static double num(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static void timing_from_json(json_t *o, struct kb_timing *t) {
  memset(t, 0, sizeof *t);
  if (!json_is_object(o))
    return;
  t->samples = (int)json_integer_value(json_object_get(o, "samples"));
  t->warmup = (int)json_integer_value(json_object_get(o, "warmup"));
  t->median_us = num(o, "median_us");
  t->p10_us = num(o, "p10_us");
  t->p90_us = num(o, "p90_us");
  t->mean_us = num(o, "mean_us");
  t->min_us = num(o, "min_us");
  t->noise = num(o, "noise");
}

static struct baseline *find_baseline(const struct kb_evaluator *b, const char *task_id) {
  for (int i = 0; i < MAX_BASELINES; i++)
    if (strcmp(b->baselines[i].task, task_id) == 0)
      return (struct baseline *)&b->baselines[i];
  return NULL;
}

int kb__evaluator_has_baseline(const struct kb_evaluator *b, const char *task_id) {
  return find_baseline(b, task_id) != NULL;
}

/* Builds a candidate of `format` for `task` (its oracle is what a ModelNew build reads). */
static int compile_candidate(struct kb_evaluator *b, const struct kb_task *task,
                             const char *source, const char *knobs, const char *flags,
                             int format, struct kb__build *build, struct kb_error *err) {
  struct kb__compile_req req = {
      .source = source, .knobs = knobs, .flags = flags, .format = format,
      .oracle = task->oracle_kind == KB_ORACLE_PYTORCH ? task->oracle_path : NULL};
  return kb__compile_req(&b->cc, &req, build, err);
}

int kb__evaluator_set_baseline(struct kb_evaluator *b, const struct kb_task *task,
                              const struct kb_candidate *c, struct kb_error *err) {
  const char *task_id = task->id;
  struct baseline *slot = find_baseline(b, task_id);
  for (int i = 0; slot == NULL && i < MAX_BASELINES; i++)
    if (b->baselines[i].task[0] == '\0')
      slot = &b->baselines[i];
  if (slot == NULL) {
    slot = &b->baselines[b->next_baseline];
    b->next_baseline = (b->next_baseline + 1) % MAX_BASELINES;
  }
  kb_free(slot->lib);
  slot->lib = NULL;
  slot->format = KB_FORMAT_NATIVE;
  snprintf(slot->task, sizeof slot->task, "%s", task_id);
  if (c == NULL)
    return KB_OK;
  struct kb__build build;
  struct kb_error e = {0};
  kb__build_init(&build);
  int rc = compile_candidate(b, task, c->source, c->knobs, c->flags, c->format, &build, &e);
  if (rc == KB_OK && build.ok) {
    slot->format = build.format;
    slot->lib = kb_strdup(build.lib_path);
    if (slot->lib == NULL)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  } else {
    kb_warn("task %s: baseline \"%s\" does not build, no same-run speedup: %s", task_id,
            c->name, rc ? e.msg : build.reason);
    rc = rc == KB_ENOMEM ? kb_error_set(err, rc, "%s", e.msg) : KB_OK;
  }
  kb__build_release(&build);
  return rc;
}

/* The library of the task's baseline: the one kb__evaluator_set_baseline() built, else its
 * baseline seed file built now (an untrusted candidate like any other). Returns the library
 * path (new) or NULL when there is none or it does not build (the evaluation then goes on
 * without a same-run ratio). */
static char *build_baseline(struct kb_evaluator *b, const struct kb_task *task, int *format) {
  const struct baseline *set = find_baseline(b, task->id);
  *format = set != NULL ? set->format : KB_FORMAT_NATIVE;
  if (set != NULL)
    return set->lib ? kb_strdup(set->lib) : NULL;
  if (task->baseline < 0 || task->baseline >= task->n_seeds)
    return NULL;
  const struct kb_seed_source *s = &task->seeds[task->baseline];
  struct kb_buf src;
  struct kb__build build;
  struct kb_error err = {0};
  kb_buf_init(&src);
  kb__build_init(&build);
  char *lib = NULL;
  if (kb_buf_read_file(&src, s->path, &err) == KB_OK &&
      compile_candidate(b, task, src.data, "", s->flags, s->format, &build, &err) == KB_OK &&
      build.ok) {
    lib = kb_strdup(build.lib_path);
    *format = build.format;
  }
  else
    kb_warn("task %s: baseline \"%s\" does not build, no same-run speedup: %s", task->id,
            s->name, err.msg[0] ? err.msg : build.reason);
  kb__build_release(&build);
  kb_buf_release(&src);
  return lib;
}

/* Turns the sandbox's answer into the verdict in `r`. */

/* The kernel trace's summary and the candidate's kernel records of a sandbox reply ("trace",
 * "kernels", "kernels_dropped", result.h's "profile" form) into `r`; a malformed part is logged
 * and left out. */
static void profile_from_reply(struct kb_result *r, json_t *rep) {
  static const char *const keys[] = {"trace", "kernels", "kernels_dropped"};
  json_t *prof = json_object();
  for (size_t i = 0; prof != NULL && i < sizeof keys / sizeof keys[0]; i++) {
    json_t *v = json_object_get(rep, keys[i]);
    if (v != NULL)
      json_object_set(prof, keys[i], v);
  }
  char *text = NULL;
  if (prof != NULL && json_object_size(prof) > 0 && kb_json_dump_compact(prof, &text) != KB_OK)
    text = NULL;
  json_decref(prof);
  struct kb_error perr = {0};
  if (text != NULL && kb_result_profile_from_json(r, text, "sandbox reply", &perr) != KB_OK)
    kb_warn("kernel records left out: %s", perr.msg);
  kb_free(text);
}

/* The system call named by the sandbox's last "kb-sandbox: blocked system call NAME (NR)" line
 * in `tail`, into `name`, and where the parenthesis holds words, not a number, those into
 * `detail` (else ""). Returns 1, or 0 when no such line is there. */
static int blocked_call(const char *tail, char *name, size_t size, char *detail,
                        size_t dsize) {
  static const char mark[] = "kb-sandbox: blocked system call ";
  const char *at = NULL;
  for (const char *p = strstr(tail, mark); p != NULL; p = strstr(p + 1, mark))
    at = p;
  detail[0] = '\0';
  if (at == NULL)
    return 0;
  at += sizeof mark - 1;
  size_t n = 0;
  while (n + 1 < size && (at[n] == '_' || (at[n] >= 'a' && at[n] <= 'z') ||
                          (at[n] >= '0' && at[n] <= '9')))
    n++;
  if (n == 0 || at[n] != ' ')
    return 0;
  memcpy(name, at, n);
  name[n] = '\0';
  /* "(59)" from the filter's handler; "(the worker tried to start ...)" from the PyTorch
   * worker's audit hook, which says what and from where */
  const char *d = at + n + 1;
  if (d[0] == '(' && !(d[1] >= '0' && d[1] <= '9')) {
    size_t k = 0;
    for (d++; d[k] != '\0' && d[k] != '\n' && k + 1 < dsize; k++)
      detail[k] = d[k];
    if (k > 0 && detail[k - 1] == ')')
      k--;
    detail[k] = '\0';
  }
  return 1;
}

/* Logs the sandbox's note `note` (why no trace, why no metrics) at `level` the first time this
 * evaluator gets it and at debug after that: the PyTorch worker, which has neither, says so in
 * every reply. */
static void note_once(struct kb_evaluator *b, int level, const char *note) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a: a table of the notes seen, not a digest */
  for (const char *c = note; *c; c++)
    h = (h ^ (unsigned char)*c) * 1099511628211ULL;
  for (int i = 0; i < b->n_notes; i++)
    if (b->notes_seen[i] == h) {
      kb_debug("%s", note);
      return;
    }
  if (b->n_notes < MAX_NOTES)
    b->notes_seen[b->n_notes++] = h;
  kb_log(level, "%s (said once; again at debug)", note);
}

/* Kept whole (109 lines): one table of the sandbox call's outcomes and the verdict of each;
 * splitting it would scatter that table. */
static void judge(struct kb_evaluator *b, const struct kb_tier *tier,
                  const struct kb__sb_call *call, struct kb_result *r) {
  char sbuf[32];
  b->cpu_median_us = NAN;
  switch ((enum kb__sb_outcome)call->outcome) {
  case KB__SB_TIMEOUT:
    r->status = KB_STATUS_TIMEOUT;
    set_reason(r, "timed out after %g s (limit of tier \"%s\")", tier->timeout_s, tier->name);
    append_output(r, call->tail);
    return;
  case KB__SB_DIED:
    if (call->signal == SIGSYS ||
        (call->signal == 0 && call->exit_code == KB__SANDBOX_EXIT_BLOCKED)) {
      /* the sandbox's seccomp filter (runner/sandbox/confine.h): its SIGSYS handler names the
       * call and exits with KB__SANDBOX_EXIT_BLOCKED (or the process dies by SIGSYS) */
      char name[40], detail[256];
      r->status = KB_STATUS_REJECTED;
      if (blocked_call(call->tail, name, sizeof name, detail, sizeof detail))
        set_reason(r, "called %s(2), which candidates may not use%s%s", name,
                   detail[0] ? ": " : "", detail);
      else
        set_reason(r, "killed by SIGSYS: a system call candidates may not use (with its "
                   "signals blocked, so unnamed: a process start from a thread that blocks "
                   "signals, as Python's subprocess does around its fork)");
      append_output(r, call->tail);
      return;
    }
    r->status = KB_STATUS_CRASH;
    if (call->signal)
      set_reason(r, "killed by %s", kb__signal_name(call->signal, sbuf, sizeof sbuf));
    else
      set_reason(r, "exited with status %d before the evaluation finished (kb_forward or "
                 "ModelNew.forward must return)", call->exit_code);
    append_output(r, call->tail);
    return;
  case KB__SB_FORGED:
    /* the sandbox's code frames every reply with the request's nonce, which candidate code
     * never sees: this frame was written by the code it ran (docs/sandbox.md, "Framing") */
    r->status = KB_STATUS_REJECTED;
    set_reason(r, "wrote on the sandbox's protocol socket: %s, which the sandbox did not send "
               "(the sandbox is replaced)", call->detail);
    append_output(r, call->tail);
    return;
  case KB__SB_REPLY:
  case KB__SB_STOPPED:
    break;
  }
  json_t *rep = call->reply;
  const char *op = json_string_value(json_object_get(rep, "op"));
  if (strcmp(op, "eval") != 0) {
    const char *why = json_string_value(json_object_get(rep, "reason"));
    r->status = KB_STATUS_INFRA_ERROR;
    set_reason(r, "sandbox refused the evaluation: %s", why ? why : op);
    return;
  }
  const char *status = json_string_value(json_object_get(rep, "status"));
  const char *reason = json_string_value(json_object_get(rep, "reason"));
  int st = status ? kb_status_from_name(status) : -1;
  if (st < 0) {
    r->status = KB_STATUS_INFRA_ERROR;
    set_reason(r, "sandbox sent an unknown status \"%s\"", status ? status : "");
    return;
  }
  r->status = st;
  set_reason(r, "%s", reason ? reason : "");
  json_t *trace = json_object_get(rep, "trace");
  const char *note = json_string_value(json_object_get(rep, "trace_note"));
  if (note != NULL && *note)
    note_once(b, KB_LOG_WARN, note);
  if (json_is_object(trace))
    kb_debug("kernel trace: %lld kernels, the candidate's %lld on its stream in %.3f ms, %.3f ms "
             "elsewhere, %.3f ms outside the timed windows, %lld records lost",
             (long long)json_integer_value(json_object_get(trace, "kernels")),
             (long long)json_integer_value(json_object_get(trace, "own_kernels")),
             (double)json_integer_value(json_object_get(trace, "own_ns")) / 1e6,
             (double)json_integer_value(json_object_get(trace, "other_ns")) / 1e6,
             (double)json_integer_value(json_object_get(trace, "late_ns")) / 1e6,
             (long long)json_integer_value(json_object_get(trace, "dropped")));
  profile_from_reply(r, rep);
  json_t *ph = json_object_get(rep, "phases");
  kb_debug("eval: %d call(s) per sample, %d wait(s) for the samples, %.3f s in the sandbox "
           "(load %.3f, check %.3f, warm-up %.3f, samples %.3f, fresh %.3f, trace %.3f, re-check "
           "%.3f, metrics %.3f)",
           (int)json_integer_value(json_object_get(rep, "batch")),
           (int)json_integer_value(json_object_get(rep, "chunks")), num(rep, "seconds"),
           num(ph, "load"), num(ph, "check"), num(ph, "warmup"), num(ph, "samples"),
           num(ph, "fresh"), num(ph, "trace"), num(ph, "recheck"), num(ph, "metrics"));
  if (json_is_number(json_object_get(ph, "eager"))) /* the PyTorch worker's, when asked */
    kb_debug("eval: torch eager's samples in the same process %.3f s (%d samples)",
             num(ph, "eager"),
             (int)json_integer_value(
                 json_object_get(json_object_get(rep, "eager_timing"), "samples")));
  const char *enote = json_string_value(json_object_get(rep, "eager_note"));
  if (enote != NULL && *enote)
    kb_warn("eval: torch eager not timed in the same process: %s", enote);
  if (json_is_number(json_object_get(ph, "baseline"))) /* the PyTorch worker's */
    kb_debug("eval: the same-run baseline's samples %.3f s (%d samples, interleaved with the "
             "candidate's %d)",
             num(ph, "baseline"),
             (int)json_integer_value(
                 json_object_get(json_object_get(rep, "baseline_timing"), "samples")),
             (int)json_integer_value(json_object_get(json_object_get(rep, "timing"), "samples")));
  if (st == KB_STATUS_CRASH)
    append_output(r, call->tail);
  const char *taint = json_string_value(json_object_get(rep, "tainted"));
  if (taint != NULL) /* kb-sandbox ended the process after this reply (integrity.h) */
    kb_warn("eval: the candidate changed the sandbox's own process (%s): the process is "
            "replaced", taint);
  if (st == KB_STATUS_INFRA_ERROR && call->tail[0]) /* the worker's own account (the PyTorch
                                                       worker's memory census): the log only */
    kb_warn("eval: the sandbox's stderr with its infra_error: %.900s", call->tail);
  r->sets_checked = (int)json_integer_value(json_object_get(rep, "sets_checked"));
  r->max_abs_err = num(rep, "max_abs_err");
  r->max_rel_err = num(rep, "max_rel_err");
  if (st != KB_STATUS_OK)
    return;
  struct kb_timing t, base, eager;
  timing_from_json(json_object_get(rep, "timing"), &t);
  timing_from_json(json_object_get(rep, "baseline_timing"), &base);
  timing_from_json(json_object_get(rep, "eager_timing"), &eager);
  /* timed time cannot exceed the evaluation's life: a reply that claims so was forged from
   * inside the sandbox (the candidate shares its address space) */
  double claimed = (t.samples > 0 ? t.mean_us * t.samples : 0) +
                   (base.samples > 0 ? base.mean_us * base.samples : 0) +
                   (eager.samples > 0 ? eager.mean_us * eager.samples : 0);
  if (t.samples < 0 || !(claimed <= call->seconds * 1e6 + 1)) {
    r->status = KB_STATUS_REJECTED;
    set_reason(r, "timing report inconsistent with the evaluation's %.3f s run time",
               call->seconds);
    return;
  }
  r->timing = t;
  b->cpu_median_us = num(rep, "cpu_median_us");
  json_t *m = json_object_get(rep, "metrics");
  if (json_is_object(m)) {
    r->kernel_us = num(m, "duration_ns") / 1000.0;
    r->dram_pct = num(m, "dram_pct");
    r->sm_pct = num(m, "sm_pct");
    r->occupancy_pct = num(m, "occupancy_pct");
    r->l2_hit_pct = num(m, "l2_hit_pct");
  }
  const char *mnote = json_string_value(json_object_get(rep, "metrics_note"));
  if (mnote != NULL && *mnote)
    note_once(b, KB_LOG_INFO, mnote);
  if (base.samples > 0 && base.median_us > 0 && t.median_us > 0) {
    r->baseline_median_us = base.median_us;
    r->same_run_speedup = base.median_us / t.median_us;
  }
  /* torch eager timed in this process, interleaved with the candidate (the full tier of a
   * pytorch-oracle task): time_torch keeps it and asks the trusted worker for compile only */
  if (eager.samples > 0 && eager.median_us > 0)
    r->torch_eager_us = eager.median_us;
}

/* Whether a timed evaluation at tier `tier_index` (`full`: the ladder's last) flushes the L2
 * before each sample: on CUDA, at the screen tier and above of the default ladder (index 2 and
 * up) and at the last tier of any ladder, whatever its index (a campaign's ladder of compile
 * and full alone, as tests/gpu/kernelbench_campaign.sh runs KernelBench, had its full tier at
 * index 1, timed with a warm L2, against docs/architecture.md). */
static int flushes_l2(const struct kb_evaluator *b, int tier_index, int full) {
  return b->kind == KB_BACKEND_CUDA && (tier_index >= 2 || full);
}

/* One "torch" request for `mode` ("eager" or "compile") of task `task` to the trusted PyTorch
 * worker (prepared there first), until `deadline` (kb_now_mono()), as `tier` times candidates:
 * its median into *median_us (left as it is when the mode failed, logged). Returns 1 when the
 * worker ran out of time, else 0. */
static int torch_request(struct kb_evaluator *b, const struct kb_task *task,
                         const struct kb_tier *tier, int tier_index, const char *mode,
                         double deadline, double *median_us) {
  struct kb__sb_call call;
  struct kb_error err = {0};
  memset(&call, 0, sizeof call);
  json_t *req = NULL;
  char key[KB_CAND_ID_LEN + 1];
  struct kb__sandbox *sb = NULL;
  int timed_out = 0;
  double t0 = kb_now_mono();
  int prc = prepare(b, task, 1, 0, key, NULL, deadline, &err);
  b->prepare_s += kb_now_mono() - t0;
  if (prc == KB_OK)
    prc = sandbox_for(b, task, 1, &sb, &err);
  if (prc != KB_OK) {
    kb_warn("task %s: torch %s not timed: the trusted PyTorch worker: %s", task->id, mode,
            err.msg);
    goto out;
  }
  int min_samples = tier->min_samples < tier->max_samples ? tier->min_samples : tier->max_samples;
  req = json_pack("{s:s, s:s, s:[s], s:i, s:i, s:i, s:i, s:f, s:f, s:b}", "op", "torch", "key",
                  key, "modes", mode, "sets", tier->input_sets > 0 ? tier->input_sets : 0,
                  "warmup", tier->warmup > 0 ? tier->warmup : 0, "min_samples",
                  min_samples > 0 ? min_samples : 0, "max_samples", tier->max_samples, "noise",
                  tier->noise, "max_seconds", tier->max_seconds, "flush_l2",
                  flushes_l2(b, tier_index, 1));
  double left = deadline - kb_now_mono();
  if (left <= 0) {
    kb_warn("task %s: torch %s not timed: preparing the trusted worker took the whole "
            "%.1f s limit", task->id, mode, deadline - t0);
    goto out;
  }
  if (req == NULL || kb__sandbox_call(sb, req, left, &call, &err) != KB_OK) {
    kb_warn("task %s: torch %s not timed: %s", task->id, mode,
            err.msg[0] ? err.msg : "out of memory");
    goto out;
  }
  if (call.outcome != KB__SB_REPLY) {
    timed_out = call.outcome == KB__SB_TIMEOUT;
    kb_warn("task %s: torch %s not timed: the PyTorch worker %s%s%s", task->id, mode,
            timed_out ? "ran out of its time" : "ended", call.tail[0] ? ": " : "", call.tail);
    goto out;
  }
  struct kb_timing t;
  char field[32];
  snprintf(field, sizeof field, "torch_%s", mode);
  timing_from_json(json_object_get(call.reply, field), &t);
  if (!(t.samples <= 0 || t.mean_us * t.samples <= call.seconds * 1e6 + 1)) {
    kb_warn("task %s: torch %s timing report inconsistent with its %.3f s run time", task->id,
            mode, call.seconds);
    goto out;
  }
  kb_debug("task %s: torch %s timed in %.3f s (%s), %.3f s since the request began (the "
           "trusted worker's start and preparation included)", task->id, mode, call.seconds,
           strcmp(mode, "compile") == 0 ? "its compilation on a task's first request included"
                                        : "samples",
           kb_now_mono() - t0);
  if (t.samples > 0 && t.median_us > 0)
    *median_us = t.median_us;
  /* it times one task at a time: what it holds of others is room the confined worker needs */
  release_worker(sb, key, 1);
  const char *note = json_string_value(json_object_get(call.reply, "torch_note"));
  if (note != NULL && *note)
    kb_info("task %s: %s", task->id, note);
out:
  json_decref(req);
  kb__sb_call_release(&call);
  return timed_out;
}

/* Times the module of pytorch task `task` (or its torch_reference) in torch eager and
 * torch.compile in the trusted PyTorch worker (it never loads a candidate, so inductor may fork
 * its compilers), as the tier times candidates, into `r`'s torch_eager_us and
 * torch_compile_us (medians): two requests, so that a compilation that fails or runs out of
 * time keeps eager's median. An eager median already in `r` (the confined PyTorch worker timed
 * the task's module beside the candidate, interleaved: judge) is kept and eager is not asked
 * for. Eager gets the tier's timeout (TORCH_TIMEOUT_S at most), the compilation
 * TORCH_COMPILE_TIMEOUT_S whatever the tier's (a baseline's compilation, not a candidate's: a
 * level-3 model's takes minutes). Times of a task timed on this evaluator less than
 * torch_reuse_s ago are reused (eager only where `r` has none); a compilation that ran out of
 * time is not tried again for that task. A failure leaves the field NAN (logged) without
 * touching the verdict. Returns the seconds it took, counted in the cost. */
static double time_torch(struct kb_evaluator *b, const struct kb_task *task,
                         const struct kb_tier *tier, int tier_index, struct kb_result *r) {
  double t0 = kb_now_mono();
  int same_process = !isnan(r->torch_eager_us);
  struct torch_times *seen = torch_slot(b, task->id, 0);
  if (seen != NULL && b->torch_reuse_s > 0 && seen->tier == tier_index &&
      (same_process || !isnan(seen->eager_us)) && t0 - seen->at <= b->torch_reuse_s) {
    /* timed for this task on this device a moment ago */
    if (!same_process)
      r->torch_eager_us = seen->eager_us;
    r->torch_compile_us = seen->compile_us;
    kb_debug("task %s: torch %s times reused (timed %.0f s ago)", task->id,
             same_process ? "compile" : "eager and torch.compile", t0 - seen->at);
    return 0;
  }
  int compile_gave_up = seen != NULL && seen->compile_gave_up;
  double limit = tier->timeout_s < TORCH_TIMEOUT_S ? tier->timeout_s : TORCH_TIMEOUT_S;
  if (!same_process)
    torch_request(b, task, tier, tier_index, "eager", t0 + limit, &r->torch_eager_us);
  if (compile_gave_up) {
    kb_debug("task %s: torch.compile not timed: its compilation ran out of its %d s before",
             task->id, TORCH_COMPILE_TIMEOUT_S);
  } else {
    compile_gave_up = torch_request(b, task, tier, tier_index, "compile",
                                    kb_now_mono() + TORCH_COMPILE_TIMEOUT_S,
                                    &r->torch_compile_us);
  }
  /* kept: times to reuse, and a compilation that ran out of time (also when eager failed:
     a failed eager is tried again at the next evaluation, that compilation not) */
  if (!isnan(r->torch_eager_us) || compile_gave_up) {
    struct torch_times *x = torch_slot(b, task->id, 1);
    x->tier = tier_index;
    x->eager_us = r->torch_eager_us;
    x->compile_us = r->torch_compile_us;
    x->compile_gave_up = compile_gave_up;
    x->at = kb_now_mono();
  }
  return kb_now_mono() - t0;
}

/* The witness's trusted process and requests for `r`, an ok full-tier evaluation of `task`
 * under `key` of the library `build` (witness.h) into `p`, `*cand_req` and `*ref_req` (new;
 * the caller frees them): a pytorch task's trusted worker (its key in `tkey`), otherwise the
 * trusted kb-sandbox with the task's spec and oracle in both requests. */
static int witness_plan(struct kb_evaluator *b, const struct kb_task *task, const char *key,
                        const struct kb__build *build, const struct kb_result *r,
                        double deadline, char tkey[KB_CAND_ID_LEN + 1],
                        struct kb__witness_plan *p, json_t **cand_req, json_t **ref_req,
                        struct kb_error *err) {
  int rc = KB_OK;
  if (task->oracle_kind == KB_ORACLE_PYTORCH) {
    rc = prepare(b, task, 1, 1, tkey, key, deadline, err);
    if (rc == KB_OK)
      rc = sandbox_for(b, task, 1, &p->trusted, err);
    *cand_req = json_pack("{s:s}", "key", key);
    *ref_req = json_pack("{s:s}", "key", tkey);
    p->calls = kb__witness_calls(r->timing.median_us, r->torch_eager_us);
    /* each call's inputs are drawn by get_inputs() in both workers (the trusted one's prepare
     * just above said how long a draw takes) */
    p->calls = kb__witness_fit_calls(p->calls, b->torch_draw_s, r->timing.median_us,
                                     r->torch_eager_us);
  } else {
    struct oracle *o = oracle_of(b, key);
    if (o == NULL)
      return kb_error_set(err, KB_EINTERNAL, "task \"%s\": its oracle is not built", task->id);
    rc = trusted_sandbox(b, &p->trusted, err);
    *ref_req = prepare_request(task, key, o->lib);
    *cand_req = *ref_req != NULL ? json_deep_copy(*ref_req) : NULL;
    if (*cand_req != NULL &&
        json_object_set_new(*cand_req, "library", json_string(build->lib_path)) != 0) {
      json_decref(*cand_req);
      *cand_req = NULL;
    }
    /* a host's C sandbox runs no thread and no process: the kernel's count of its CPU time
     * is its calls' cost, whatever else shares the machine */
    p->cpu_clock = b->kind == KB_BACKEND_HOST;
    int64_t elems = 0;
    for (int i = 0; i < task->n_inputs; i++)
      elems += kb_tensor_spec_numel(&task->inputs[i]);
    p->calls = p->cpu_clock ? kb__witness_cpu_calls(r->timing.median_us, o->run_us, elems)
                            : kb__witness_calls(r->timing.median_us, o->run_us);
  }
  if (rc == KB_OK && (*cand_req == NULL || *ref_req == NULL))
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  p->cand_req = *cand_req;
  p->ref_req = *ref_req;
  return rc;
}

/* The debug line of one witness's rounds (each of them: a second witness's too). */
static void log_rounds(const struct kb_task *task, const struct kb__witness_obs *o) {
  if (o->rounds <= 0)
    return;
  char rounds[256] = "";
  for (int i = 0, at = 0; i < o->rounds && at < (int)sizeof rounds; i++)
    at += snprintf(rounds + at, sizeof rounds - (size_t)at, "%s%.1f/%.1f", i ? ", " : "",
                   o->cand_s[i] * 1e6 / o->calls, o->ref_s[i] * 1e6 / o->calls);
  kb_debug("task %s: witness rounds, us a call in its process / the trusted one: %s", task->id,
           rounds);
}

/* The witness (witness.h) of `r`, an ok full-tier evaluation of `task` in the confined process
 * `sb` under `key` of the library `build`: the trusted process made ready, the rounds run
 * within KB_WITNESS_LIMIT_S, their verdict judged against r's claims (a rejection by the rules
 * on the clocks confirmed by a second witness of twice the calls). A verdict not ok replaces
 * r's (its timing dropped); torch eager held (a PyTorch worker's process timed it over the
 * trusted worker's by more than 1.5x) replaces r->torch_eager_us and drops the same-run
 * baseline, with a warning; both replace the confined process (kill it: the next call starts
 * one). A witness that cannot run is r's infra_error: an ok that nothing outside the
 * candidate's process saw is not reported; `*write_errno` gets the errno of a sandbox that could
 * not write its witness file (a full $TMPDIR: the node's fault, not the candidate's), else 0.
 * Returns the seconds it took (counted in the cost). */
static double witness(struct kb_evaluator *b, const struct kb_task *task, int tier_index,
                      const char *key, const struct kb__build *build, struct kb__sandbox *sb,
                      struct kb_result *r, int *write_errno) {
  double t0 = kb_now_mono();
  double deadline = t0 + KB_WITNESS_LIMIT_S;
  char tkey[KB_CAND_ID_LEN + 1] = "";
  struct kb_error err = {0};
  struct kb__witness_obs o;
  struct kb__witness_verdict v;
  struct kb__witness_plan p = {.confined = sb, .flush = flushes_l2(b, tier_index, 1)};
  json_t *cand_req = NULL, *ref_req = NULL;
  memset(&o, 0, sizeof o);
  memset(&v, 0, sizeof v);
  v.status = KB_STATUS_OK;
  int torch = task->oracle_kind == KB_ORACLE_PYTORCH;
  int rc = witness_plan(b, task, key, build, r, deadline, tkey, &p, &cand_req, &ref_req, &err);
  /* three rounds for a claim that could rank among the task's best, one for a slower one */
  p.rounds = kb__witness_rounds(r->timing.median_us, b->mark_us);
  /* the clocks' rejection stands only when a second witness, with twice the calls and every
   * round, gives it too: a loaded host (a build, another runner) can slow one process's
   * rounds, while a false claim fails every time */
  for (int attempt = 0; rc == KB_OK && attempt < 2; attempt++) {
    if (attempt > 0) {
      kb_debug("task %s: witness: %s; asking a second one", task->id, v.reason);
      p.calls = p.calls * 2 < KB_WITNESS_MAX_CALLS ? p.calls * 2 : KB_WITNESS_MAX_CALLS;
      p.rounds = KB_WITNESS_ROUNDS;
    }
    memset(&o, 0, sizeof o);
    memset(&v, 0, sizeof v);
    v.status = KB_STATUS_OK;
    rc = kb__witness_run(&p, deadline, &o, &v, &err);
    b->witness_rounds += o.rounds;
    log_rounds(task, &o);
    if (rc || v.status != KB_STATUS_OK)
      break; /* a process's own verdict (outputs wrong, a crash) is not asked again */
    if (b->cpu_median_us > 0)
      kb_debug("task %s: its samples' median %.1f us a call, %.1f us in its thread's CPU time",
               task->id, r->timing.median_us, b->cpu_median_us);
    kb__witness_judge(&o, r->timing.median_us, torch ? NAN : b->cpu_median_us,
                      torch ? r->torch_eager_us : NAN, b->kind == KB_BACKEND_CUDA,
                      torch ? KB__WITNESS_TORCH : KB__WITNESS_ORACLE, &v);
    if (v.status != KB_STATUS_REJECTED)
      break;
  }
  /* kb-sandbox's own process after the candidate's witness calls, outside their clock (the
   * PyTorch worker checks itself around each call) */
  if (rc == KB_OK && !torch && v.status != KB_STATUS_CRASH && v.status != KB_STATUS_TIMEOUT)
    rc = kb__witness_check(sb, deadline, &v, &err);
  json_decref(cand_req);
  json_decref(ref_req);
  /* the trusted worker's witness draws and outputs stay in its allocator's cache: room the
   * confined worker needs for its next evaluation, as after a torch request */
  if (torch && p.trusted != NULL && rc != KB_ETIMEOUT)
    release_worker(p.trusted, tkey, 1);
  if (rc && v.status == KB_STATUS_OK) {
    v.status = KB_STATUS_INFRA_ERROR;
    snprintf(v.reason, sizeof v.reason, "the witness did not run: %.200s", err.msg);
  }
  if (o.rounds > 0) {
    kb_debug("task %s: witness: %d round(s) of %d calls (%s), the candidate %.1f us a call "
             "(its samples %.1f us), %s %.1f us in the trusted process (%.1f us beside the "
             "candidate; %.1f us around each of its calls)", task->id, o.rounds, o.calls,
             p.rounds < KB_WITNESS_ROUNDS ? "its claim cannot rank" : "its claim can rank",
             v.cand_us, r->timing.median_us, torch ? "torch eager" : "the oracle", v.eager_us,
             r->torch_eager_us, v.around_us);
  }
  if (v.status != KB_STATUS_OK) {
    /* what its code changed in that process (the checks themselves, torch) stays there: the
     * next candidate gets a new one */
    kb__sandbox_kill(sb);
    r->status = v.status;
    set_reason(r, "%s", v.reason);
    memset(&r->timing, 0, sizeof r->timing);
    r->baseline_median_us = NAN;
    r->same_run_speedup = NAN;
    r->torch_eager_us = NAN;
  } else if (v.eager_held) {
    /* the same-run baseline ran in that process too, and whatever slowed eager there stays
     * for the next candidates: its numbers go, and so does the process */
    kb_warn("task %s: torch eager took %.1f us a call in the candidate's process, %.1f us in "
            "the trusted worker on the witness calls: the trusted worker's is reported, the "
            "same-run baseline dropped, the worker replaced", task->id, r->torch_eager_us,
            v.eager_us);
    kb__sandbox_kill(sb);
    r->torch_eager_us = v.eager_us;
    r->baseline_median_us = NAN;
    r->same_run_speedup = NAN;
  }
  /* a witness file its sandbox's folder could not take: the node's fault (evaluate) */
  *write_errno = v.status == KB_STATUS_INFRA_ERROR ? v.write_errno : 0;
  double took = kb_now_mono() - t0;
  b->witness_s += took;
  return took;
}

/* Replaces the PyTorch worker `sb` (kills it: the next call starts a new one) when the eval
 * reply in `call` lists threads the candidate's code left in it ("threads_left": a native
 * thread, which foreign_threads does not see, runs on beside the next candidates; before
 * 2026-12-07 one left spinning by tests/tasks/torch_candidates/relu_spinner.c got the honest
 * relu_honest.c after it rejected by the witness). Called after the witness, which calls the
 * candidate in that process, and before the trusted worker times torch. */
static void replace_if_threads_left(const struct kb_task *task, const struct kb__sb_call *call,
                                    struct kb__sandbox *sb) {
  json_t *left = call->outcome == KB__SB_REPLY ? json_object_get(call->reply, "threads_left")
                                               : NULL;
  if (!json_is_array(left) || json_array_size(left) == 0)
    return;
  const char *first = json_string_value(json_array_get(left, 0));
  kb_warn("task %s: the candidate left %zu thread(s) running in the worker (%s%s): the worker "
          "is replaced", task->id, json_array_size(left), first ? first : "?",
          json_array_size(left) > 1 ? ", ..." : "");
  kb__sandbox_kill(sb);
}

/* Tier 0's verdict on `build` into `r` (the compile tier's fields, the label, a build that
 * failed, a library without kb_forward, a ModelNew for a task without a pytorch oracle).
 * Returns KB_OK with *done = 1 when `r` holds the verdict, *done = 0 when the build may run;
 * KB_ENOMEM. */
static int build_verdict(const struct kb_task *task, const struct kb__build *build,
                         struct kb_result *r, int *done, struct kb_error *err) {
  int rc = KB_OK;
  *done = 1;
  r->compile_s = build->cached ? 0 : build->seconds;
  r->compile_cached = build->cached;
  r->registers = build->registers;
  r->spills = build->spill_store_bytes > build->spill_load_bytes ? build->spill_store_bytes
                                                                : build->spill_load_bytes;
  r->shared_bytes = build->shared_bytes;
  int kb_format = build->format == KB_FORMAT_KERNELBENCH;
  if (kb_format && task->oracle_kind != KB_ORACLE_PYTORCH) {
    r->status = KB_STATUS_COMPILE_ERROR;
    set_reason(r, "a KernelBench-format candidate (class ModelNew) runs only on a task with a "
                  "pytorch oracle; task \"%s\" has none", task->id);
    return KB_OK;
  }
  if (build->log != NULL || build->label[0] != '\0') {
    /* a ModelNew's static label heads its log (docs/sandbox.md) */
    struct kb_buf log;
    kb_buf_init(&log);
    int bad = build->label[0] && kb_buf_addf(&log, "label: %s\n", build->label) != KB_OK;
    bad = bad || (build->log && kb_buf_addf(&log, "%s", build->log) != KB_OK);
    r->compile_log = bad ? NULL : kb_buf_detach(&log);
    kb_buf_release(&log);
    if (r->compile_log == NULL)
      return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  if (!build->ok) {
    /* importing a forbidden function is a cheat (rejected); importing one that nothing
     * defines is a helper declared and never written, a build defect (compile_error) */
    r->status = build->infra                          ? KB_STATUS_INFRA_ERROR
                : build->rejected && !build->undefined ? KB_STATUS_REJECTED
                                                       : KB_STATUS_COMPILE_ERROR;
    set_reason(r, "%s", build->reason);
    return KB_OK;
  }
  int found = kb_format; /* a ModelNew build is a folder: the worker checks it */
  struct kb_error elf_err = {0};
  rc = kb_format ? KB_OK : kb__elf_defines(build->lib_path, "kb_forward", &found, &elf_err);
  if (rc == KB_ENOMEM)
    return kb_error_set(err, rc, "%s", elf_err.msg);
  if (rc) {
    r->status = KB_STATUS_COMPILE_ERROR;
    set_reason(r, "cannot read the built library: %s", elf_err.msg);
    return KB_OK;
  }
  if (!found) {
    r->status = KB_STATUS_COMPILE_ERROR;
    set_reason(r, "the library does not export kb_forward (int kb_forward(const kb_tensor *, "
                  "int, kb_tensor *, int, void *))");
    return KB_OK;
  }
  *done = 0;
  return KB_OK;
}

/* The eval request's metrics, chunk and fresh-sample fields (`full`: a timed full-tier
 * evaluation; `cheap`: a timed evaluation below the full tier) into `req`. */
static void timing_options(struct kb_evaluator *b, const struct kb_task *task, int full,
                           int cheap, json_t *req) {
  int metrics = full && b->kind == KB_BACKEND_CUDA && b->metrics != KB_METRICS_NONE &&
                (b->metrics != KB_METRICS_MARKED || b->mark_us >= 0);
  if (metrics)
    json_object_set_new(req, "metrics", json_true());
  /* KB_METRICS_BEST: the sandbox profiles only a median under the task's best so far;
   * KB_METRICS_MARKED: under the bound the scheduler marked the candidate with */
  const struct best *best = metrics && b->metrics == KB_METRICS_BEST
                                ? best_of(b, task->id, 0) : NULL;
  if (best != NULL && best->median_us > 0)
    json_object_set_new(req, "metrics_below_us", json_real(best->median_us));
  if (metrics && b->metrics == KB_METRICS_MARKED && b->mark_us > 0)
    json_object_set_new(req, "metrics_below_us", json_real(b->mark_us));
  if (b->sample_chunk > 0)
    json_object_set_new(req, "sample_chunk", json_integer(b->sample_chunk));
  /* below the full tier one fresh sample at least (the sandbox's default share bounds the
   * rest): any one catches a memoizer (docs/sandbox.md, "Fresh samples at each tier") */
  if (cheap && b->fresh == KB_FRESH_TIER)
    json_object_set_new(req, "fresh_min", json_integer(1));
}

/* Whether `call` is an eval reply of infra_error for the device out of memory ("oom": the
 * PyTorch worker's allocations or the candidate's, counted by torch's allocator). */
static int out_of_room(const struct kb__sb_call *call) {
  if (call->outcome != KB__SB_REPLY || !json_is_true(json_object_get(call->reply, "oom")))
    return 0;
  const char *status = json_string_value(json_object_get(call->reply, "status"));
  return status != NULL && strcmp(status, "infra_error") == 0;
}

/* Builds one eval request, sends it, and copies the reply's fields into
 * the result in the order the protocol lists them. An evaluation that ran out of device
 * memory while the trusted worker held some is asked once more after that worker released
 * its tasks (on an 80 GB H100, KernelBench's l1_38/l1_39 at 8 GiB a tensor: the confined
 * worker held its planned 56 GiB, the trusted one 16 GiB, and the call's 8 GiB output did not
 * fit; every attempt ended infra_error the same way). */
static int evaluate(struct kb_evaluator *b, const struct kb_task *task, const struct kb__build *build,
                    const struct kb_tier *tier, int tier_index, int flags, struct kb_result *r,
                    struct kb_error *err) {
  struct kb__sb_call call;
  memset(&call, 0, sizeof call);
  json_t *req = NULL;
  char *baseline = NULL;
  int done = 0;
  int rc = build_verdict(task, build, r, &done, err);
  if (rc || done)
    return rc;
  int kb_format = build->format == KB_FORMAT_KERNELBENCH;
  if (tier_index == 0)
    return KB_OK;

  /* cost_ms: the device time this item used, each part under its limit (kb/ladder.h): setup
   * (a sandbox restart, the oracle build, the task's preparation), the evaluation call and the
   * torch timing call; set on every path from here, errors included */
  char key[KB_CAND_ID_LEN + 1];
  struct kb__sandbox *sb = NULL;
  double used_s = 0;
  int room_asked = 0;
  int warmup_fd = -1; /* the warm-up lock held for a retry (kb__warmup_hold) */
again:;
  double t_prep = kb_now_mono();
  rc = prepare(b, task, 0, 0, key, NULL, t_prep + KB_SETUP_LIMIT_S, err);
  double prep_s = kb_now_mono() - t_prep;
  used_s += prep_s;
  b->prepare_s += prep_s;
  if (rc == KB_OK)
    rc = sandbox_for(b, task, 0, &sb, err);
  if (rc)
    goto out;
  int timed = tier->max_samples >= 1;
  int baseline_format = KB_FORMAT_NATIVE;
  if ((flags & KB_EVAL_FULL) && timed)
    baseline = build_baseline(b, task, &baseline_format);
  int min_samples = tier->min_samples < tier->max_samples ? tier->min_samples : tier->max_samples;
  req = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:b, s:b, s:b}", "op",
                  "eval", "key", key, "library", build->lib_path, "sets",
                  tier->input_sets > 0 ? tier->input_sets : 0, "warmup",
                  tier->warmup > 0 ? tier->warmup : 0, "min_samples",
                  min_samples > 0 ? min_samples : 0, "max_samples",
                  timed ? tier->max_samples : 0, "noise", tier->noise, "max_seconds",
                  tier->max_seconds, "budget_s", tier->timeout_s * BUDGET_SHARE, "flush_l2",
                  timed && flushes_l2(b, tier_index, (flags & KB_EVAL_FULL) != 0), "recheck",
                  timed,
                  "trace", (flags & KB_EVAL_FULL) != 0 && b->kind == KB_BACKEND_CUDA);
  if (req != NULL)
    timing_options(b, task, (flags & KB_EVAL_FULL) && timed, !(flags & KB_EVAL_FULL) && timed,
                   req);
  if (req != NULL && baseline != NULL)
    json_object_set_new(req, "baseline", json_string(baseline));
  if (req != NULL && kb_format)
    json_object_set_new(req, "format", json_string("kernelbench"));
  if (req != NULL && baseline != NULL && baseline_format == KB_FORMAT_KERNELBENCH)
    json_object_set_new(req, "baseline_format", json_string("kernelbench"));
  /* the PyTorch worker times the task's own module (torch eager) beside the candidate, in the
   * same process, interleaved: what the speedup over eager is measured against */
  if (req != NULL && task->oracle_kind == KB_ORACLE_PYTORCH && (flags & KB_EVAL_FULL) && timed)
    json_object_set_new(req, "eager", json_true());
  if (req == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    goto out;
  }
  rc = kb__sandbox_call(sb, req, tier->timeout_s, &call, err);
  used_s += call.seconds;
  if (rc)
    goto out;
  if (call.outcome == KB__SB_STOPPED) {
    rc = kb_error_set(err, KB_EINTERRUPTED, "evaluation stopped: the runner is leaving");
    goto out;
  }
  if (out_of_room(&call) && !room_asked && release_sibling(b, 0, NULL, 1)) {
    room_asked = 1; /* the worker replaced itself (fatal): prepared anew, with the room */
    /* and with the compile tier's warm-up passes (a compile seed's forward pass on the task's
     * inputs, built ahead) ended and held off until the retry is over (warmup_hold.h) */
    warmup_fd = kb__warmup_hold(b->cc.cache_dir, WARMUP_WAIT_S, b->stop);
    kb_info("task %s: the evaluation ran out of device memory; once more with the trusted "
            "worker's tasks released%s", task->id,
            warmup_fd >= 0 ? " and the compile tier's warm-up passes held off" : "");
    kb_free(baseline);
    baseline = NULL;
    json_decref(req);
    req = NULL;
    kb__sb_call_release(&call);
    memset(&call, 0, sizeof call);
    goto again;
  }
  snprintf(r->confinement, sizeof r->confinement, "%s", kb__sandbox_confinement(sb));
  judge(b, tier, &call, r);
  if (call.outcome == KB__SB_REPLY && json_object_get(call.reply, "fresh_samples") != NULL)
    kb_debug("eval: %lld fresh sample(s) on unseen inputs",
             (long long)json_integer_value(json_object_get(call.reply, "fresh_samples")));
  json_t *tail = call.outcome == KB__SB_REPLY ? json_object_get(call.reply, "untimed") : NULL;
  if (tail != NULL) /* the PyTorch worker on CUDA: the device's wait after the timed windows */
    kb_debug("eval: after the timed windows (median %.1f us) the device was busy %.1f us more "
             "(median of %lld; idle wait %.1f us)",
             json_number_value(json_object_get(tail, "window_us")),
             json_number_value(json_object_get(tail, "extra_us")),
             (long long)json_integer_value(json_object_get(tail, "samples")),
             json_number_value(json_object_get(tail, "idle_us")));
  if ((flags & KB_EVAL_FULL) && timed && r->status == KB_STATUS_OK) {
    int werr = 0;
    char dir[512]; /* the sandbox's folder, gone with it when the witness replaces it */
    snprintf(dir, sizeof dir, "%s", kb__sandbox_dir(sb) ? kb__sandbox_dir(sb) : "$TMPDIR");
    used_s += witness(b, task, tier_index, key, build, sb, r, &werr);
    if (werr != 0 && kb_write_errno_code(werr) == KB_EWRITE) {
      /* the sandboxes' folder ($TMPDIR) is full or fails: every evaluation on this node would
       * end so; the runner leaves, the item released, nothing recorded (as for its cache) */
      rc = kb_error_set(err, KB_EWRITE, "%s: cannot write the witness file: %s (errno %d)",
                        dir, strerror(werr), werr);
      goto out;
    }
  }
  replace_if_threads_left(task, &call, sb);
  if (flags & KB_EVAL_FULL)
    note_best(b, task->id, r);
  /* the retry's evaluation and witness are over: builds waiting for a warm-up turn go on (not
   * through torch.compile's timing below, which can take minutes of their time limit) */
  kb__warmup_release(warmup_fd);
  warmup_fd = -1;
  if ((task->oracle_kind == KB_ORACLE_PYTORCH || task->torch_ref_path != NULL) &&
      (flags & KB_EVAL_FULL) && timed && r->status == KB_STATUS_OK)
    used_s += time_torch(b, task, tier, tier_index, r);
out:
  kb__warmup_release(warmup_fd);
  r->cost_ms = (int64_t)ceil(used_s * 1000.0);
  kb_free(baseline);
  json_decref(req);
  kb__sb_call_release(&call);
  return rc;
}

static int check_task(const struct kb_evaluator *b, const struct kb_task *task,
                      const struct kb_tier *tier, int tier_index, struct kb_error *err) {
  int want_oracle = b->kind == KB_BACKEND_HOST ? KB_ORACLE_C : KB_ORACLE_CUDA;
  if (task->backend != b->kind ||
      (task->oracle_kind != want_oracle && task->oracle_kind != KB_ORACLE_PYTORCH))
    return kb_error_set(err, KB_EINVAL, "task \"%s\": the %s backend needs a %s task with a %s "
                        "or pytorch oracle", task->id, kb_backend_name(b->kind),
                        kb_backend_name(b->kind), b->kind == KB_BACKEND_HOST ? "c" : "cuda");
  const char *where = task->json_path ? task->json_path : task->id;
  if (task->n_inputs < 1 || task->n_inputs > KB_MAX_TENSORS)
    return kb_error_set(err, KB_EINVAL, "%s: \"inputs\" has %d tensors, must have 1 to %d",
                        where, task->n_inputs, KB_MAX_TENSORS);
  if (task->n_outputs < 1 || task->n_outputs > KB_MAX_TENSORS)
    return kb_error_set(err, KB_EINVAL, "%s: \"outputs\" has %d tensors, must have 1 to %d",
                        where, task->n_outputs, KB_MAX_TENSORS);
  if (task->n_sets < 1 || task->n_sets > KB_MAX_SETS)
    return kb_error_set(err, KB_EINVAL, "%s: \"input_sets\" has %d sets, must have 1 to %d",
                        where, task->n_sets, KB_MAX_SETS);
  if (tier_index > 0 && !(tier->timeout_s > 0))
    return kb_error_set(err, KB_EINVAL, "tier \"%s\": timeout must be positive", tier->name);
  return KB_OK;
}

int kb__evaluator_evaluate_built(struct kb_evaluator *b, const struct kb_task *task,
                              const struct kb__build *build, const struct kb_tier *tier,
                              int tier_index, int flags, struct kb_result *r,
                              struct kb_error *err) {
  reset_verdict(b, r);
  int rc = check_task(b, task, tier, tier_index, err);
  return rc ? rc : evaluate(b, task, build, tier, tier_index, flags, r, err);
}

int kb__evaluator_evaluate(struct kb_evaluator *b, const struct kb_task *task,
                        const struct kb_candidate *c, const struct kb_tier *tier, int tier_index,
                        int flags, struct kb_result *r, struct kb_error *err) {
  reset_verdict(b, r);
  int rc = check_task(b, task, tier, tier_index, err);
  if (rc)
    return rc;
  struct kb__build build;
  kb__build_init(&build);
  rc = compile_candidate(b, task, c->source, c->knobs, c->flags, c->format, &build, err);
  if (rc == KB_OK)
    rc = evaluate(b, task, &build, tier, tier_index, flags, r, err);
  kb__build_release(&build);
  return rc;
}
