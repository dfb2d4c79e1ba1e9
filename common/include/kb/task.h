/* Task bundles: a folder holding task.json, the oracle, the reference source and seed
 * candidates. Spec: schemas/task.schema.json. Example: tasks/host/sum/.
 *
 * task.json fields (all required unless marked optional; user docs: docs/task-bundle.md):
 *   "schema": "kernelbrain.task/1"
 *   "id": "[a-z0-9][a-z0-9_.-]{0,62}"         unique within a campaign
 *   "name": non-empty string, "category": non-empty string (optional, default "other")
 *   "backend": "host" | "cuda"
 *   "oracle": {"kind": "c" | "cuda" | "pytorch" | "data", "source": relative path}
 *   "reference": relative path (optional; source shown to the LLM; defaults to the oracle source)
 *   "torch_reference": relative path (optional): a KernelBench-format module (Model,
 *                get_inputs, get_init_inputs) of the same operator, timed in torch eager and
 *                torch.compile at the full tier as a pytorch oracle is (docs/task-bundle.md)
 *   "inputs":  [{"name": C identifier (1..63 chars, unique across inputs and outputs),
 *                "dtype": "f32"|"f16"|"bf16"|"f64"|"i32"|"i64"|"u8"|"bool",
 *                "shape": [int 1..2^31-1, ...] (0..8 dims)}] (1..KB_MAX_TENSORS)
 *   "outputs": same form (1..KB_MAX_TENSORS)
 *   "tolerance": {"atol": number>=0, "rtol": number>=0}  (optional, each field too; a missing one
 *                is the loosest default among the outputs' dtypes: 1e-4 for f32/f64, 1e-2 for
 *                f16/bf16, 0 for integers and bool)
 *   "input_sets": [{"seed": int>=0, "distribution": "uniform"|"normal"|"integers",
 *                   "low": number, "high": number}]  (1..32; for normal, low=mean high=stddev>0;
 *                   otherwise high > low)
 *   "seeds": [{"name": "[a-z0-9_.-]{1,63}" (unique), "source": relative path,
 *              "flags": string (optional, default "")}]  (1..32); a source ending in ".py" is
 *              a KernelBench-format candidate (class ModelNew), allowed with a pytorch oracle
 *              only
 *   "baseline": name of one of "seeds" that speedups are measured against (optional)
 *   "knobs" are not here: they live in the candidate sources as `// kb:param` lines.
 * Relative paths must stay inside the bundle: not absolute, no ".." component, no control
 * characters.
 * Unknown fields are errors (strict), so a typo never silently becomes a default.
 */
#ifndef KB_TASK_H
#define KB_TASK_H

#include <stdint.h>

#include "kb_kernel.h"

struct json_t; /* jansson's json_t */
struct kb_error;
struct kb_jsonfile;

#define KB_ID_MAX 64       /* ids: up to 63 chars + NUL */
/* Inputs (and, separately, outputs) of a task at most: enough for a KernelBench level-3 module
 * whose every parameter is an input (DenseNet201: 311). Every layer that carries tensor lists
 * (task.json, the runner, the sandbox protocol, the sandboxes) checks it; the arrays themselves
 * are allocated to size. */
#define KB_MAX_TENSORS 1024
#define KB_MAX_SETS 32
#define KB_MAX_SEEDS 32
/* elements of one tensor at most: what the sandboxes hold (runner/sandbox/engine.c); task.json
 * refuses more (a shape of 2^60 elements was accepted, then every evaluation infra_error) */
#define KB_MAX_NUMEL (INT64_C(1) << 40)
/* largest magnitude of an input set's low/high and of a tolerance: the sandbox refuses more */
#define KB_INPUT_BOUND_MAX 1e300

enum kb_backend { KB_BACKEND_HOST = 0, KB_BACKEND_CUDA = 1 };
enum kb_oracle_kind { KB_ORACLE_C = 0, KB_ORACLE_CUDA, KB_ORACLE_PYTORCH, KB_ORACLE_DATA };
enum kb_dist { KB_DIST_UNIFORM = 0, KB_DIST_NORMAL, KB_DIST_INTEGERS };

struct kb_tensor_spec {
  char name[KB_ID_MAX];        /* argument name */
  int dtype;                   /* enum kb_dtype */
  int ndim;                    /* 0..KB_MAX_DIMS */
  int64_t shape[KB_MAX_DIMS];  /* elements per dimension */
};

struct kb_input_set {
  uint64_t seed; /* PRNG seed */
  int dist;      /* enum kb_dist */
  double low;    /* uniform/integers: lower bound; normal: mean */
  double high;   /* uniform/integers: upper bound (exclusive); normal: standard deviation */
};

struct kb_seed_source {
  char name[KB_ID_MAX]; /* "naive", "blocked", ... */
  char *path;           /* absolute path of the source file (owned) */
  char *flags;          /* extra compile flags, "" when none (owned) */
  int format;           /* enum kb_cand_format (kb/candidate.h): KB_FORMAT_KERNELBENCH when
                           the path ends in ".py" (a ModelNew solution; pytorch oracle only) */
};

struct kb_task {
  char id[KB_ID_MAX];    /* task id */
  char *name;            /* human name (owned) */
  char *category;        /* "other" when not given (owned) */
  char *dir;             /* absolute path of the bundle folder (owned) */
  char *json_path;       /* absolute path of task.json, used in messages (owned) */
  int backend;           /* enum kb_backend */
  int oracle_kind;       /* enum kb_oracle_kind */
  char *oracle_path;     /* absolute (owned) */
  char *reference_path;  /* absolute (owned) */
  char *torch_ref_path;  /* "torch_reference": a PyTorch module of the same operator, absolute
                            (owned); NULL when the task has none */
  struct kb_tensor_spec *inputs;  /* n_inputs, in kb_forward argument order (owned) */
  int n_inputs;          /* 1..KB_MAX_TENSORS */
  struct kb_tensor_spec *outputs; /* n_outputs, in kb_forward argument order (owned) */
  int n_outputs;         /* 1..KB_MAX_TENSORS */
  double atol;           /* absolute tolerance */
  double rtol;           /* relative tolerance */
  double must_read;      /* share of the input bytes any correct kernel reads, 0..1 (default 1;
                            task.json "must_read"): the sandbox's speed-of-light bound */
  struct kb_input_set sets[KB_MAX_SETS];
  int n_sets;            /* 1..KB_MAX_SETS */
  struct kb_seed_source seeds[KB_MAX_SEEDS];
  int n_seeds;           /* 1..KB_MAX_SEEDS */
  int baseline;          /* index into seeds, -1 when none */
  char *spec_json;       /* the task.json text exactly as read (owned), stored in HDF5 /task */
};

/* Loads and validates `dir`/task.json into `task` (caller-owned, zeroed first, filled on
 * success; released on failure). Relative paths in the file resolve against `dir`; they must
 * stay inside the bundle (no absolute paths, no ".." component). Checks that every referenced
 * file exists and is a readable regular file. Messages name the file as `dir`/task.json.
 * Errors: KB_EPARSE with "dir/task.json:line:col: what is wrong" (also for a referenced file
 * that is missing or unreadable: that is a malformed bundle), KB_EIO when task.json itself
 * cannot be read, KB_EINVAL when the path of task.json would not fit PATH_MAX, KB_ENOMEM. `dir`
 * is borrowed. */
int kb_task_load(const char *dir, struct kb_task *task, struct kb_error *err);
/* Same as kb_task_load, from task.json `text` already in memory; `name` is used in messages and
 * relative paths resolve against `dir`. With `check_files` = 0 referenced files need not exist
 * (a runner that received the spec through Redis materializes only what it needs). All string
 * arguments are borrowed; `task->spec_json` gets a copy of `text`. */
int kb_task_parse(const char *name, const char *text, const char *dir, int check_files,
                  struct kb_task *task, struct kb_error *err);
/* Frees the contents of `task`; NULL is fine. */
void kb_task_release(struct kb_task *task);

/* The elements of a tensor of `s`'s shape: the product of its dimensions (1 for a scalar). */
int64_t kb_tensor_spec_numel(const struct kb_tensor_spec *s);

/* Name of a dtype ("f32"; static), or NULL when unknown; and back (-1 when unknown). */
const char *kb_dtype_name(int dtype);
int kb_dtype_from_name(const char *name);
/* Name of a backend ("host", "cuda"; static), or NULL when unknown; and back (-1). */
const char *kb_backend_name(int backend);
int kb_backend_from_name(const char *name);

/* 1 when `s` is a valid task or campaign id: [a-z0-9][a-z0-9_.-]{0,62}, else 0. */
int kb_id_valid(const char *s);
/* Reads the required id field `key` of `obj` (borrowed) whose own path in `f` is `path` ("" for
 * the root), as kb_json_get_string does, and copies it into `out` (caller-owned, KB_ID_MAX
 * bytes). One that is not kb_id_valid fails with KB_EPARSE `"<path>.<key>" must be 1 to 63
 * characters of a-z, 0-9, "_", ".", "-", starting with a letter or digit`. */
int kb_id_get(const struct kb_jsonfile *f, struct json_t *obj, const char *path, const char *key,
              char *out, struct kb_error *err);
/* Returns `rel` made absolute against folder `base` (NULL: the current directory) and
 * lexically normalized ("." and ".." components and repeated slashes removed; symbolic links
 * are not resolved). An absolute `rel` ignores `base`. Returns a new string, or NULL on ENOMEM
 * or when the current directory is unknown. Both arguments are borrowed. */
char *kb_path_resolve(const char *base, const char *rel);

#endif
