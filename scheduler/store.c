/* The HDF5 result store (see store.h; the file layout is schemas/hdf5-layout.md).
 *
 * Design, in short:
 * - SWMR. The file is created complete (every group, dataset and attribute it will ever hold) in
 *   "<path>.tmp" and renamed into place, then opened with H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE and
 *   the latest format, so it is never open for writing outside SWMR mode. HDF5 1.10 forbids creating objects or attributes in SWMR write mode, so the
 *   variable-sized texts (sources, compile logs, LLM prompts and responses) go to extendible
 *   1-D uint8 "heaps" (/sources/data, /compile_logs/data, /llm/text, the last deflated)
 *   addressed by (offset, length) columns of the tables, and an evaluation's CUPTI kernel
 *   records to rows of /profiles/kernels addressed by (kernel_offset, kernel_count).
 * - Commit point. Rows and heap bytes are appended at any time; kb__store_flush() flushes them,
 *   and only then writes the root attribute "commit" (row and byte counts) and flushes again. On
 *   open, anything past the committed counts (half-written by a killed writer) is cut off, and
 *   the per-candidate columns that evaluations update in place are recomputed from the committed
 *   evaluations, so a crash at any moment leaves exactly the flushed state.
 * - Recovery. A writer killed in SWMR mode leaves the superblock status flags set, and H5Fopen
 *   refuses the file. HDF5 1.10.8 has no public call to clear them (h5clear uses the private
 *   file-access property "clear_status_flags", which is not in the installed headers), so the
 *   store runs the h5clear tool: `h5clear -s`, then `h5clear -s --increment=0` (also repairs a
 *   stored end-of-allocation past the end of the file), reopening after each.
 * - A lock. The store holds flock() on "<path>.lock" while open. HDF5 drops its own file lock in
 *   SWMR write mode, so without this a second writer could h5clear a file that is in use.
 * - Dedup. On open the candidate ids and (candidate, tier, attempt) keys are read into two
 *   open-addressing hash sets. Not hsearch_r(): it is a GNU extension (this is strict C11 +
 *   POSIX), its table cannot grow after hcreate_r(), and it keeps pointers to keys the caller
 *   must keep alive; these sets grow, and store row indices into s->cands instead of keys.
 * - Errors. HDF5's automatic error printing is switched off for the duration of each call (and
 *   restored after), and the innermost HDF5 error description goes into struct kb_error with
 *   the path and the operation.
 */
#include "kb/jsonfile.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/fs.h"
#include "kb/h5.h"

extern char **environ;

#define STORE_FORMAT "kernelbrain.h5/3"
#define ID_SIZE (KB_CAND_ID_LEN + 1) /* fixed string size of a candidate id column */
#define STATUS_SIZE 16               /* fixed string size of a status column */
#define TEXT_SIZE 256                /* fixed string size of knobs, flags, reason */
#define CAND_CHUNK 32                /* rows per chunk of /candidates */
#define EVAL_CHUNK 64                /* rows per chunk of /evaluations */
#define HEAP_CHUNK 16384             /* bytes per chunk of the uint8 heaps */
#define KERN_CHUNK 256               /* rows per chunk of /profiles/kernels */
#define LLM_CHUNK 32                 /* rows per chunk of /llm/requests */
#define LLM_DEFLATE 6                /* deflate level of /llm/text */
#define ENTRY_SIZE 48                /* fixed string size of a redis stream entry id */
#define READ_BATCH 1024              /* rows read at a time on open */

_Static_assert(sizeof(int) == 4, "int columns are stored as 32-bit integers");

/* ---- rows as they are in memory; the file types are packed little-endian versions ---------- */

struct cand_row {
  char id[ID_SIZE];
  char task[KB_ID_MAX];
  char name[KB_ID_MAX];
  char generator[16];
  char parent0[ID_SIZE];
  char parent1[ID_SIZE];
  char knobs[TEXT_SIZE];
  char flags[TEXT_SIZE];
  double created;            /* unix seconds */
  int best_tier;             /* -1 until evaluated */
  char status[STATUS_SIZE];  /* status of the best evaluation; "" until evaluated */
  int n_evaluations;
  int64_t source_offset;     /* bytes into /sources/data */
  int64_t source_len;        /* bytes */
};

struct eval_row {
  char candidate[ID_SIZE];
  int tier;
  char tier_name[KB_ID_MAX];
  int attempt;
  char status[STATUS_SIZE];
  char reason[TEXT_SIZE];
  char runner[KB_ID_MAX];
  char device[KB_ID_MAX];
  char confinement[24];
  char charge_id[160];
  double started;            /* unix seconds */
  double finished;           /* unix seconds */
  double compile_s;          /* seconds */
  int compile_cached;
  int registers;
  int spills;                /* bytes */
  int shared_bytes;          /* bytes */
  int sets_checked;
  double max_abs_err;
  double max_rel_err;
  int samples;
  int warmup;
  double median_us;          /* microseconds */
  double p10_us;
  double p90_us;
  double mean_us;
  double min_us;
  double noise;              /* relative */
  int64_t cost_ms;           /* milliseconds */
  int64_t compile_log_offset; /* bytes into /compile_logs/data */
  int64_t compile_log_len;   /* bytes; 0 when there is no log */
  double baseline_median_us; /* microseconds, baseline re-timed in the same run; NaN when not */
  double same_run_speedup;   /* baseline_median_us / median_us; NaN when not */
  double kernel_us;          /* Range Profiler: the longest kernel's duration, microseconds */
  double dram_pct;           /* % of peak; NaN unknown */
  double sm_pct;             /* % of peak; NaN unknown */
  double occupancy_pct;      /* % of peak; NaN unknown */
  double l2_hit_pct;         /* %; NaN unknown */
  int64_t trace_kernels;     /* kernel trace summary; -1 when not traced */
  int64_t trace_own_kernels;
  int64_t trace_own_ns;      /* nanoseconds */
  int64_t trace_other_ns;    /* nanoseconds */
  int64_t trace_late_ns;     /* nanoseconds */
  int64_t trace_dropped;     /* records CUPTI lost */
  int64_t kernels_dropped;   /* records past KB_KERNELS_MAX, not stored */
  int64_t kernel_offset;     /* first row in /profiles/kernels; 0 when none */
  int64_t kernel_count;      /* rows in /profiles/kernels */
  double torch_eager_us;     /* format 3: torch eager median in the same run, microseconds; NaN */
  double torch_compile_us;   /* format 3: torch.compile median, microseconds; NaN when not timed */
};

/* One row of /profiles/kernels. */
struct kern_row {
  char candidate[ID_SIZE];
  int tier;
  int attempt;
  char name[KB_KERNEL_NAME_MAX];
  int grid_x, grid_y, grid_z;     /* blocks */
  int block_x, block_y, block_z;  /* threads */
  int registers;                  /* per thread */
  int static_smem;                /* bytes per block */
  int dynamic_smem;               /* bytes per block */
  int64_t start_ns;               /* CUPTI clock */
  int64_t end_ns;                 /* CUPTI clock */
  int64_t stream;
  int64_t correlation;
};

/* One row of /llm/requests. */
struct llm_row {
  char request[ID_SIZE];     /* the request's id (its ledger charge), unique in the file */
  char entry[ENTRY_SIZE];    /* id of its entry in the redis stream kb:{cid}:llm:<task> */
  double time;               /* unix seconds the entry was written */
  char kind[16];             /* translate, mutate, crossover, repair */
  char status[16];           /* ok, no_code, failed */
  char model[KB_ID_MAX];
  int attempts;
  int64_t tokens_in;
  int64_t tokens_out;
  char candidate[ID_SIZE];   /* the candidate it produced; "" when none */
  char parent0[ID_SIZE];
  char parent1[ID_SIZE];
  char error[TEXT_SIZE];
  int64_t prompt_offset;     /* bytes into /llm/text */
  int64_t prompt_len;
  int64_t response_offset;   /* bytes into /llm/text */
  int64_t response_len;
};

/* What open reads back from /llm/requests. */
struct llm_key_row {
  char request[ID_SIZE];
  char entry[ENTRY_SIZE];
};

/* The candidate columns an evaluation updates in place (a partial compound write). */
struct agg_row {
  int best_tier;
  char status[STATUS_SIZE];
  int n_evaluations;
};

/* What open reads back from /candidates (a partial compound read). */
struct cand_key_row {
  char id[ID_SIZE];
  struct agg_row agg;
};

/* What open reads back from /evaluations. */
struct eval_key_row {
  char candidate[ID_SIZE];
  int tier;
  int attempt;
  char status[STATUS_SIZE];
  double torch_eager_us;
  double torch_compile_us;
};

/* The root attribute "commit": everything below these counts is flushed. */
struct commit_rec {
  int64_t candidates;
  int64_t evaluations;
  int64_t source_bytes;
  int64_t compile_log_bytes;
  int64_t kernels;           /* rows of /profiles/kernels */
  int64_t llm;               /* rows of /llm/requests */
  int64_t llm_bytes;         /* bytes of /llm/text */
};

enum ftype { FT_STR, FT_I32, FT_I64, FT_F64 };

struct field {
  const char *name; /* member name in the file */
  size_t offset;    /* in the memory struct */
  size_t size;      /* bytes, in memory and in the file */
  enum ftype type;
};

#define MSIZE(st, m) sizeof(((struct st *)0)->m)
#define F_STR(st, m) {#m, offsetof(struct st, m), MSIZE(st, m), FT_STR}
#define F_I32(st, m) {#m, offsetof(struct st, m), 4, FT_I32}
#define F_I64(st, m) {#m, offsetof(struct st, m), 8, FT_I64}
#define F_F64(st, m) {#m, offsetof(struct st, m), 8, FT_F64}
#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

static const struct field cand_fields[] = {
    F_STR(cand_row, id),          F_STR(cand_row, task),          F_STR(cand_row, name),
    F_STR(cand_row, generator),   F_STR(cand_row, parent0),       F_STR(cand_row, parent1),
    F_STR(cand_row, knobs),       F_STR(cand_row, flags),         F_F64(cand_row, created),
    F_I32(cand_row, best_tier),   F_STR(cand_row, status),        F_I32(cand_row, n_evaluations),
    F_I64(cand_row, source_offset), F_I64(cand_row, source_len),
};

static const struct field eval_fields[] = {
    F_STR(eval_row, candidate),   F_I32(eval_row, tier),          F_STR(eval_row, tier_name),
    F_I32(eval_row, attempt),     F_STR(eval_row, status),        F_STR(eval_row, reason),
    F_STR(eval_row, runner),      F_STR(eval_row, device),        F_STR(eval_row, confinement),
    F_STR(eval_row, charge_id),
    F_F64(eval_row, started),     F_F64(eval_row, finished),      F_F64(eval_row, compile_s),
    F_I32(eval_row, compile_cached), F_I32(eval_row, registers),  F_I32(eval_row, spills),
    F_I32(eval_row, shared_bytes), F_I32(eval_row, sets_checked), F_F64(eval_row, max_abs_err),
    F_F64(eval_row, max_rel_err), F_I32(eval_row, samples),       F_I32(eval_row, warmup),
    F_F64(eval_row, median_us),   F_F64(eval_row, p10_us),        F_F64(eval_row, p90_us),
    F_F64(eval_row, mean_us),     F_F64(eval_row, min_us),        F_F64(eval_row, noise),
    F_I64(eval_row, cost_ms),     F_I64(eval_row, compile_log_offset),
    F_I64(eval_row, compile_log_len), F_F64(eval_row, baseline_median_us),
    F_F64(eval_row, same_run_speedup), F_F64(eval_row, kernel_us), F_F64(eval_row, dram_pct),
    F_F64(eval_row, sm_pct),      F_F64(eval_row, occupancy_pct), F_F64(eval_row, l2_hit_pct),
    F_I64(eval_row, trace_kernels), F_I64(eval_row, trace_own_kernels),
    F_I64(eval_row, trace_own_ns), F_I64(eval_row, trace_other_ns),
    F_I64(eval_row, trace_late_ns), F_I64(eval_row, trace_dropped),
    F_I64(eval_row, kernels_dropped), F_I64(eval_row, kernel_offset),
    F_I64(eval_row, kernel_count), F_F64(eval_row, torch_eager_us),
    F_F64(eval_row, torch_compile_us),
};

static const struct field kern_fields[] = {
    F_STR(kern_row, candidate),   F_I32(kern_row, tier),          F_I32(kern_row, attempt),
    F_STR(kern_row, name),        F_I32(kern_row, grid_x),        F_I32(kern_row, grid_y),
    F_I32(kern_row, grid_z),      F_I32(kern_row, block_x),       F_I32(kern_row, block_y),
    F_I32(kern_row, block_z),     F_I32(kern_row, registers),     F_I32(kern_row, static_smem),
    F_I32(kern_row, dynamic_smem), F_I64(kern_row, start_ns),     F_I64(kern_row, end_ns),
    F_I64(kern_row, stream),      F_I64(kern_row, correlation),
};

static const struct field llm_fields[] = {
    F_STR(llm_row, request),      F_STR(llm_row, entry),          F_F64(llm_row, time),
    F_STR(llm_row, kind),         F_STR(llm_row, status),         F_STR(llm_row, model),
    F_I32(llm_row, attempts),     F_I64(llm_row, tokens_in),      F_I64(llm_row, tokens_out),
    F_STR(llm_row, candidate),    F_STR(llm_row, parent0),        F_STR(llm_row, parent1),
    F_STR(llm_row, error),        F_I64(llm_row, prompt_offset),  F_I64(llm_row, prompt_len),
    F_I64(llm_row, response_offset), F_I64(llm_row, response_len),
};

static const struct field llm_key_fields[] = {
    F_STR(llm_key_row, request), F_STR(llm_key_row, entry),
};

static const struct field agg_fields[] = {
    F_I32(agg_row, best_tier), F_STR(agg_row, status), F_I32(agg_row, n_evaluations),
};

static const struct field cand_key_fields[] = {
    F_STR(cand_key_row, id),
    {"best_tier", offsetof(struct cand_key_row, agg.best_tier), 4, FT_I32},
    {"status", offsetof(struct cand_key_row, agg.status), STATUS_SIZE, FT_STR},
    {"n_evaluations", offsetof(struct cand_key_row, agg.n_evaluations), 4, FT_I32},
};

static const struct field eval_key_fields[] = {
    F_STR(eval_key_row, candidate), F_I32(eval_key_row, tier), F_I32(eval_key_row, attempt),
    F_STR(eval_key_row, status), F_F64(eval_key_row, torch_eager_us),
    F_F64(eval_key_row, torch_compile_us),
};

static const struct field commit_fields[] = {
    F_I64(commit_rec, candidates), F_I64(commit_rec, evaluations),
    F_I64(commit_rec, source_bytes), F_I64(commit_rec, compile_log_bytes),
    F_I64(commit_rec, kernels),   F_I64(commit_rec, llm),          F_I64(commit_rec, llm_bytes),
};

/* Status names from the same X-macro as kb_status_name(), kept here so that the store does not
 * depend on result.c. */
static const char *const status_names[] = {
#define KB_STORE_STATUS_NAME(n, s) s,
    KB_STATUS_MAP(KB_STORE_STATUS_NAME)
#undef KB_STORE_STATUS_NAME
};

/* ---- hash sets ------------------------------------------------------------------------------ */

/* What the store remembers per candidate row (index = row in /candidates). */
struct cand_mem {
  char id[ID_SIZE];
  int best_tier;            /* -1 until evaluated */
  int best_attempt;         /* attempt of the best evaluation; 0 until evaluated */
  char status[STATUS_SIZE]; /* status of the best evaluation; "" until evaluated */
  int n_evaluations;
};

/* Open addressing, linear probing, at most half full. Slots hold row indices, -1 when empty. */
struct cand_set {
  int64_t *slots; /* owned */
  size_t cap;     /* a power of two, or 0 */
  size_t n;
};

struct eval_key {
  int64_t cand; /* candidate row; -1 marks an empty slot */
  int tier;
  int attempt;
};

struct eval_set {
  struct eval_key *slots; /* owned */
  size_t cap;             /* a power of two, or 0 */
  size_t n;
};

/* FNV-1a over at most `max` bytes of `s`. */
static uint64_t hash_str(const char *s, size_t max) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < max && s[i] != '\0'; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* splitmix64's finalizer: spreads every input bit over the result. */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

static uint64_t hash_key(const struct eval_key *k) {
  return mix64((uint64_t)k->cand * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uint32_t)k->tier << 32 ^
               (uint32_t)k->attempt);
}

/* The id of row `row` in an array of records of `stride` bytes starting at `base`, each starting
 * with its id (char[ID_SIZE]). */
static const char *id_at(const void *base, size_t stride, int64_t row) {
  return (const char *)base + (size_t)row * stride;
}

/* Returns the row of `id` in `set` (rows' ids at `base`, every `stride` bytes), or -1. */
static int64_t cand_set_find(const struct cand_set *set, const void *base, size_t stride,
                             const char *id) {
  if (set->cap == 0)
    return -1;
  size_t mask = set->cap - 1;
  for (size_t i = hash_str(id, ID_SIZE) & mask;; i = (i + 1) & mask) {
    int64_t row = set->slots[i];
    if (row < 0)
      return -1;
    if (strncmp(id_at(base, stride, row), id, ID_SIZE) == 0)
      return row;
  }
}

/* Inserts `row` (known absent; capacity reserved). */
static void cand_set_put(struct cand_set *set, const void *base, size_t stride, int64_t row) {
  size_t mask = set->cap - 1;
  size_t i = hash_str(id_at(base, stride, row), ID_SIZE) & mask;
  while (set->slots[i] >= 0)
    i = (i + 1) & mask;
  set->slots[i] = row;
  set->n++;
}

/* Makes room for `want` entries. Errors: KB_ENOMEM, with the set unchanged. */
static int cand_set_reserve(struct cand_set *set, const void *base, size_t stride, size_t want) {
  if (want <= set->cap / 2)
    return KB_OK;
  size_t cap = set->cap ? set->cap : 64;
  while (want > cap / 2)
    cap *= 2;
  int64_t *slots = kb_calloc(cap, sizeof *slots);
  if (slots == NULL)
    return KB_ENOMEM;
  for (size_t i = 0; i < cap; i++)
    slots[i] = -1;
  struct cand_set grown = {slots, cap, 0};
  for (size_t i = 0; i < set->cap; i++)
    if (set->slots[i] >= 0)
      cand_set_put(&grown, base, stride, set->slots[i]);
  kb_free(set->slots);
  *set = grown;
  return KB_OK;
}

static int eval_set_has(const struct eval_set *set, const struct eval_key *k) {
  if (set->cap == 0)
    return 0;
  size_t mask = set->cap - 1;
  for (size_t i = hash_key(k) & mask;; i = (i + 1) & mask) {
    const struct eval_key *e = &set->slots[i];
    if (e->cand < 0)
      return 0;
    if (e->cand == k->cand && e->tier == k->tier && e->attempt == k->attempt)
      return 1;
  }
}

/* Inserts `k` (known absent; capacity reserved). */
static void eval_set_put(struct eval_set *set, const struct eval_key *k) {
  size_t mask = set->cap - 1;
  size_t i = hash_key(k) & mask;
  while (set->slots[i].cand >= 0)
    i = (i + 1) & mask;
  set->slots[i] = *k;
  set->n++;
}

/* Makes room for `want` entries. Errors: KB_ENOMEM, with the set unchanged. */
static int eval_set_reserve(struct eval_set *set, size_t want) {
  if (want <= set->cap / 2)
    return KB_OK;
  size_t cap = set->cap ? set->cap : 64;
  while (want > cap / 2)
    cap *= 2;
  struct eval_key *slots = kb_calloc(cap, sizeof *slots);
  if (slots == NULL)
    return KB_ENOMEM;
  for (size_t i = 0; i < cap; i++)
    slots[i].cand = -1;
  struct eval_set grown = {slots, cap, 0};
  for (size_t i = 0; i < set->cap; i++)
    if (set->slots[i].cand >= 0)
      eval_set_put(&grown, &set->slots[i]);
  kb_free(set->slots);
  *set = grown;
  return KB_OK;
}

/* ---- the store ------------------------------------------------------------------------------ */

/* The finite torch timings of a task's evaluations, for the /torch attributes. */
struct torch_times {
  double *v;                 /* microseconds, in evaluation order (owned) */
  size_t n, cap;
  int tier;                  /* tier of the latest; -1 none */
};

struct kb_store {
  char *path;                /* owned */
  char task[KB_ID_MAX];      /* root attribute "task" */
  int lock_fd;               /* "<path>.lock", flock()ed; -1 when not open */
  int data_fd;               /* HDF5's own descriptor (borrowed), for fsync; -1 when unknown */
  hid_t file;
  hid_t cand_ds, eval_ds, src_ds, log_ds, kern_ds, llm_ds, text_ds;
  hid_t cand_mt, eval_mt, agg_mt, commit_mt, kern_mt, llm_mt; /* memory types */
  struct cand_mem *cands;    /* one per /candidates row (owned) */
  size_t n_cands, cap_cands;
  struct cand_set cset;
  struct eval_set eset;
  int64_t n_evals;           /* rows in /evaluations */
  int64_t src_bytes;         /* bytes in /sources/data */
  int64_t log_bytes;         /* bytes in /compile_logs/data */
  int64_t n_kerns;           /* rows in /profiles/kernels */
  char (*llm_ids)[ID_SIZE];  /* request id per /llm/requests row (owned) */
  size_t n_llm, cap_llm;
  struct cand_set lset;      /* rows of llm_ids by request id */
  int64_t text_bytes;        /* bytes in /llm/text */
  char last_entry[ENTRY_SIZE]; /* stream entry id of the last /llm/requests row; "" when none */
  struct torch_times torch[2]; /* the evaluations' torch eager [0] and torch.compile [1] times */
  int torch_dirty;           /* /torch must be rewritten at the next flush */
  int dirty;                 /* something was written since the last flush */
  int failed;                /* a write failed half-way; the file must be reopened */
  int recovered;             /* KB_STORE_RECOVERED_* bits */
  int committed_nothing;     /* the commit record read at open counts nothing at all */
  off_t found_size;          /* bytes the file had when found, before h5clear or HDF5 touched it */
};

/* Saves HDF5's automatic error printing and switches it off; quiet_end() restores it. */
struct quiet {
  H5E_auto2_t func;
  void *data;
};

static void quiet_begin(struct quiet *q) {
  q->func = NULL;
  q->data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void quiet_end(const struct quiet *q) { H5Eset_auto2(H5E_DEFAULT, q->func, q->data); }

/* Failed writes and closes (full disk, read-only, quota): HDF5 keeps what it could not write
 * or close open, and its shutdown would try again, forever (kb__store_library_end). */
static int write_failures;
/* Files that could not be opened (a damaged file: its metadata's checksums fail): HDF5 keeps
 * pieces of them it could not evict, and its shutdown would loop on them as on a failed write
 * ("infinite loop closing library"). Counted apart: nothing was lost, nothing to warn about. */
static int failed_opens;

struct h5detail {
  char text[240]; /* the innermost error's description */
  int sys_errno;  /* the errno a file driver recorded ("errno = N" in its description), or 0 */
};

static herr_t h5walk(unsigned n, const H5E_error2_t *e, void *data) {
  struct h5detail *d = data;
  const char *at = e->desc != NULL ? strstr(e->desc, "errno = ") : NULL;
  if (at != NULL && d->sys_errno == 0)
    d->sys_errno = (int)strtol(at + 8, NULL, 10);
  if (n != 0)
    return 0;
  if (e->desc != NULL && e->desc[0] != '\0') {
    snprintf(d->text, sizeof d->text, "%s", e->desc);
  } else {
    char minor[128];
    if (H5Eget_msg(e->min_num, NULL, minor, sizeof minor) > 0)
      snprintf(d->text, sizeof d->text, "%s", minor);
  }
  return 0;
}

/* Records "<path>: cannot <op>: <innermost hdf5 error>" as KB_EHDF5, or, when a file driver
 * failed with a write fault (kb_write_errno_code, kb/fs.h), "<path>: cannot <op>: <strerror>
 * (errno N)" as KB_EWRITE. Call it right after the failing HDF5 call, before any other HDF5
 * call replaces the error stack. Returns the code. */
static int h5fail(struct kb_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* What failed, from a caller's format and arguments, into `op` (never unterminated). */
static void format_op(char *op, size_t size, const char *fmt, va_list ap) {
  if (vsnprintf(op, size, fmt, ap) < 0)
    op[0] = '\0';
}

static int h5fail(struct kb_error *err, const char *path, const char *fmt, ...) {
  struct h5detail d = {"", 0};
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5walk, &d);
  char op[200];
  va_list ap;
  va_start(ap, fmt);
  format_op(op, sizeof op, fmt, ap);
  va_end(ap);
  if (d.sys_errno != 0 && kb_write_errno_code(d.sys_errno) == KB_EWRITE) {
    write_failures++;
    return kb_error_set(err, KB_EWRITE, "%s: cannot %s: %s (errno %d)", path, op,
                        strerror(d.sys_errno), d.sys_errno);
  }
  if (d.text[0] != '\0')
    return kb_error_set(err, KB_EHDF5, "%s: cannot %s: %s", path, op, d.text);
  return kb_error_set(err, KB_EHDF5, "%s: cannot %s", path, op);
}

/* Records "<path>: cannot <op>: <strerror(e)> (errno e)" for a failed system call on `path`, as
 * KB_EWRITE for a write fault (kb_write_errno_code, kb/fs.h), else KB_EIO: the one form of
 * every write error's message, as h5fail's. Returns the code. */
static int sysfail(struct kb_error *err, int e, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int sysfail(struct kb_error *err, int e, const char *path, const char *fmt, ...) {
  char op[200];
  va_list ap;
  va_start(ap, fmt);
  format_op(op, sizeof op, fmt, ap);
  va_end(ap);
  return kb_error_set(err, kb_write_errno_code(e), "%s: cannot %s: %s (errno %d)", path, op,
                      strerror(e), e);
}

static int nomem(struct kb_error *err, const char *path) {
  return kb_error_set(err, KB_ENOMEM, "%s: out of memory", path);
}

static double now_unix(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
    return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 1 when `s` is exactly 64 lowercase hex digits (read at most ID_SIZE bytes). */
static int is_hex_id(const char *s) {
  if (strnlen(s, ID_SIZE) != KB_CAND_ID_LEN)
    return 0;
  for (size_t i = 0; i < KB_CAND_ID_LEN; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return 1;
}

static const char *status_name(int status) {
  if (status < 0 || status >= KB_STATUS_COUNT)
    return NULL;
  return status_names[status];
}

/* ---- HDF5 types and small helpers ----------------------------------------------------------- */

/* A fixed-length, NUL-terminated UTF-8 string type of `size` bytes (new), or -1. */
static hid_t str_type(size_t size) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0)
    return t;
  if (H5Tset_size(t, size) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 ||
      H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
    H5Tclose(t);
    return H5I_INVALID_HID;
  }
  return t;
}

/* A compound type for `fields` (new), or -1. The memory type uses native types at the struct's
 * offsets (`mem_size` bytes); the file type is packed, little-endian, in the same member order. */
static hid_t compound_type(const struct field *f, size_t n, size_t mem_size, int file) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += f[i].size;
  hid_t t = H5Tcreate(H5T_COMPOUND, file ? total : mem_size);
  if (t < 0)
    return t;
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    hid_t mt = H5I_INVALID_HID;
    int own = 0;
    switch (f[i].type) {
    case FT_STR:
      mt = str_type(f[i].size);
      own = 1;
      break;
    case FT_I32:
      mt = file ? H5T_STD_I32LE : H5T_NATIVE_INT;
      break;
    case FT_I64:
      mt = file ? H5T_STD_I64LE : H5T_NATIVE_INT64;
      break;
    case FT_F64:
      mt = file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE;
      break;
    }
    herr_t rc = mt < 0 ? -1 : H5Tinsert(t, f[i].name, file ? off : f[i].offset, mt);
    if (own && mt >= 0)
      H5Tclose(mt);
    if (rc < 0) {
      H5Tclose(t);
      return H5I_INVALID_HID;
    }
    off += f[i].size;
  }
  return t;
}

/* H5Fclose, counted in unclosed_files when it fails. */
static void close_file(hid_t *f) {
  if (*f >= 0 && H5Fclose(*f) < 0)
    write_failures++;
  *f = H5I_INVALID_HID;
}

static void close_id(hid_t *id, herr_t (*closer)(hid_t)) {
  if (*id >= 0)
    closer(*id);
  *id = H5I_INVALID_HID;
}

/* File access: latest format (SWMR needs it). New, or -1. */
static hid_t make_fapl(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0)
    return fapl;
  /* a damaged file fails its open (then rebuilt), never sleeps for good (kb/h5.h). No HDF5
   * file lock: writers are kept apart by the store's own lock ("<path>.lock", above), and a
   * reader that opened the file without SWMR (h5py.File(path) in a notebook) holds HDF5's
   * shared lock, which made the next open for writing fail: the file was then taken for
   * damaged, set aside and rebuilt from redis (tests/e2e/h5_reader_lock.sh). */
  if (H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0 ||
      H5Pset_file_locking(fapl, 0, 1) < 0 || kb_h5_bound_retries(fapl) < 0) {
    H5Pclose(fapl);
    return H5I_INVALID_HID;
  }
  return fapl;
}

/* With `create`, creates scalar attribute `name` on `loc` with file type `type`; else opens the
 * existing one. Then writes `buf` (memory type `type`) into it. */
static herr_t put_attr(hid_t loc, const char *name, hid_t type, const void *buf, int create) {
  hid_t sp = H5I_INVALID_HID, a = H5I_INVALID_HID;
  herr_t rc = -1;
  if (create) {
    sp = H5Screate(H5S_SCALAR);
    if (sp < 0)
      goto out;
    a = H5Acreate2(loc, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
  } else {
    a = H5Aopen(loc, name, H5P_DEFAULT);
  }
  if (a < 0)
    goto out;
  rc = H5Awrite(a, type, buf);
out:
  close_id(&a, H5Aclose);
  close_id(&sp, H5Sclose);
  return rc;
}

#define ATTR_STR_MAX 256 /* longest string attribute the store writes or reads, with its NUL */

/* A string attribute: fixed `size` bytes, or strlen(value) + 1 when `size` is 0. `value` is cut
 * to fit ATTR_STR_MAX. */
static herr_t put_str_attr(hid_t loc, const char *name, const char *value, size_t size,
                           int create) {
  char buf[ATTR_STR_MAX];
  size_t len = strnlen(value, ATTR_STR_MAX - 1);
  if (size == 0 || size > ATTR_STR_MAX)
    size = len + 1;
  kb_utf8_copy(buf, size, value, len);
  hid_t t = str_type(size);
  herr_t rc = t < 0 ? -1 : put_attr(loc, name, t, buf, create);
  close_id(&t, H5Tclose);
  return rc;
}

/* Reads string attribute `name` of `loc` into `out` (`cap` bytes, always terminated). Fails on
 * a variable-length or longer than ATTR_STR_MAX string. */
static herr_t get_str_attr(hid_t loc, const char *name, char *out, size_t cap) {
  hid_t a = H5I_INVALID_HID, ft = H5I_INVALID_HID, mt = H5I_INVALID_HID;
  char buf[ATTR_STR_MAX + 1];
  herr_t rc = -1;
  out[0] = '\0';
  a = H5Aopen(loc, name, H5P_DEFAULT);
  if (a < 0)
    goto out;
  ft = H5Aget_type(a);
  if (ft < 0 || H5Tget_class(ft) != H5T_STRING || H5Tis_variable_str(ft) != 0)
    goto out;
  size_t size = H5Tget_size(ft);
  if (size == 0 || size > ATTR_STR_MAX)
    goto out;
  mt = str_type(size);
  memset(buf, 0, sizeof buf);
  if (mt < 0 || H5Aread(a, mt, buf) < 0)
    goto out;
  kb_utf8_copy(out, cap, buf, size);
  rc = 0;
out:
  close_id(&mt, H5Tclose);
  close_id(&ft, H5Tclose);
  close_id(&a, H5Aclose);
  return rc;
}

/* A 1-D dataset `name` under `loc`: `n` bytes of `data` (fixed size, contiguous). */
static herr_t put_bytes(hid_t loc, const char *name, const char *data, size_t n) {
  hsize_t dims[1] = {n};
  hid_t sp = H5Screate_simple(1, dims, NULL);
  if (sp < 0)
    return -1;
  hid_t ds = H5Dcreate2(loc, name, H5T_STD_U8LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = ds < 0 ? -1 : 0;
  if (rc == 0 && n > 0)
    rc = H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  close_id(&ds, H5Dclose);
  close_id(&sp, H5Sclose);
  return rc;
}

/* An empty extendible chunked 1-D dataset `name` under `loc`; its chunks deflated at `deflate`
 * (1..9) when not 0. */
static herr_t make_table(hid_t loc, const char *name, hid_t type, hsize_t chunk, int deflate) {
  hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, cdims[1] = {chunk};
  hid_t sp = H5Screate_simple(1, dims, maxdims);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  herr_t rc = -1;
  if (sp < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 1, cdims) < 0)
    goto out;
  if (deflate > 0 && H5Pset_deflate(dcpl, (unsigned)deflate) < 0)
    goto out;
  hid_t ds = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (ds < 0)
    goto out;
  H5Dclose(ds);
  rc = 0;
out:
  close_id(&dcpl, H5Pclose);
  close_id(&sp, H5Sclose);
  return rc;
}

/* Current number of elements of 1-D dataset `ds`, or -1. */
static int64_t extent_of(hid_t ds) {
  hid_t sp = H5Dget_space(ds);
  if (sp < 0)
    return -1;
  hsize_t dims[1] = {0};
  int nd = H5Sget_simple_extent_dims(sp, dims, NULL);
  H5Sclose(sp);
  return nd == 1 ? (int64_t)dims[0] : -1;
}

/* Writes `n` elements of `mtype` from `wbuf`, or reads them into `rbuf` (the other NULL), at
 * element `at` of 1-D dataset `ds`; with `grow`, first sets the extent to `at + n`. */
static herr_t rows_io(hid_t ds, hid_t mtype, int64_t at, int64_t n, int grow, const void *wbuf,
                      void *rbuf) {
  hsize_t start[1] = {(hsize_t)at}, count[1] = {(hsize_t)n}, end[1] = {(hsize_t)(at + n)};
  if (grow && H5Dset_extent(ds, end) < 0)
    return -1;
  hid_t fsp = H5Dget_space(ds);
  hid_t msp = H5Screate_simple(1, count, NULL);
  herr_t rc = -1;
  if (fsp < 0 || msp < 0)
    goto out;
  if (H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, NULL, count, NULL) < 0)
    goto out;
  rc = wbuf != NULL ? H5Dwrite(ds, mtype, msp, fsp, H5P_DEFAULT, wbuf)
                    : H5Dread(ds, mtype, msp, fsp, H5P_DEFAULT, rbuf);
out:
  close_id(&msp, H5Sclose);
  close_id(&fsp, H5Sclose);
  return rc;
}

static herr_t write_at(hid_t ds, hid_t mtype, int64_t at, const void *buf, int64_t n, int grow) {
  return rows_io(ds, mtype, at, n, grow, buf, NULL);
}

static herr_t read_at(hid_t ds, hid_t mtype, int64_t at, void *buf, int64_t n) {
  return rows_io(ds, mtype, at, n, 0, NULL, buf);
}

/* ---- creating a file ------------------------------------------------------------------------ */

/* Writes the /best attributes: `create` them, or rewrite them in place. */
static herr_t put_best(hid_t file, const char *candidate, const char *name, int tier,
                       double median_us, double speedup, double updated, int create) {
  hid_t g = H5Gopen2(file, "best", H5P_DEFAULT);
  if (g < 0)
    return -1;
  herr_t rc = -1;
  if (put_str_attr(g, "candidate", candidate, ID_SIZE, create) < 0 ||
      put_str_attr(g, "name", name, KB_ID_MAX, create) < 0 ||
      put_attr(g, "tier", H5T_NATIVE_INT, &tier, create) < 0 ||
      put_attr(g, "median_us", H5T_NATIVE_DOUBLE, &median_us, create) < 0 ||
      put_attr(g, "speedup", H5T_NATIVE_DOUBLE, &speedup, create) < 0 ||
      put_attr(g, "updated", H5T_NATIVE_DOUBLE, &updated, create) < 0)
    goto out;
  rc = 0;
out:
  H5Gclose(g);
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of `t`'s times (the mean of the middle two for an even count); NaN when none. */
static double torch_median(const struct torch_times *t) {
  if (t->n == 0)
    return NAN;
  double *v = kb_calloc(t->n, sizeof *v);
  if (v == NULL)
    return NAN;
  memcpy(v, t->v, t->n * sizeof *v);
  qsort(v, t->n, sizeof *v, cmp_double);
  double m = t->n % 2 ? v[t->n / 2] : (v[t->n / 2 - 1] + v[t->n / 2]) / 2;
  kb_free(v);
  return m;
}

/* Writes the /torch attributes from `t` (eager, compile): `create` them, or rewrite them in
 * place. Per kind: "<kind>_us" the latest time, "<kind>_median_us" the median of all,
 * "<kind>_n" their count; "tier" the tier of the latest eager (else compile) time. */
static herr_t put_torch(hid_t file, const struct torch_times t[2], int create) {
  hid_t g = H5Gopen2(file, "torch", H5P_DEFAULT);
  if (g < 0)
    return -1;
  static const char *const kind[2] = {"eager", "compile"};
  herr_t rc = 0;
  for (int i = 0; i < 2 && rc == 0; i++) {
    char name[32];
    double latest = t[i].n > 0 ? t[i].v[t[i].n - 1] : NAN, median = torch_median(&t[i]);
    int64_t n = (int64_t)t[i].n;
    snprintf(name, sizeof name, "%s_us", kind[i]);
    rc = put_attr(g, name, H5T_NATIVE_DOUBLE, &latest, create);
    snprintf(name, sizeof name, "%s_median_us", kind[i]);
    if (rc == 0)
      rc = put_attr(g, name, H5T_NATIVE_DOUBLE, &median, create);
    snprintf(name, sizeof name, "%s_n", kind[i]);
    if (rc == 0)
      rc = put_attr(g, name, H5T_NATIVE_INT64, &n, create);
  }
  int tier = t[0].n > 0 ? t[0].tier : t[1].tier;
  if (rc == 0)
    rc = put_attr(g, "tier", H5T_NATIVE_INT, &tier, create);
  H5Gclose(g);
  return rc;
}

/* Appends `us` (a torch time of an evaluation at `tier`) to `t` when it is a time (finite,
 * positive). Returns KB_OK or KB_ENOMEM. */
static int torch_note(struct torch_times *t, double us, int tier) {
  if (!(isfinite(us) && us > 0))
    return KB_OK;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 8;
    double *v = kb_reallocarray(t->v, cap, sizeof *v);
    if (v == NULL)
      return KB_ENOMEM;
    t->v = v;
    t->cap = cap;
  }
  t->v[t->n++] = us;
  t->tier = tier;
  return KB_OK;
}

/* Creates `g` under `file`, and closes it. */
static herr_t make_group(hid_t file, const char *name) {
  hid_t g = H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0)
    return -1;
  return H5Gclose(g);
}

/* Durably syncs file or directory `path` (kb_fsync_path). Errors: KB_EIO naming the step. */
static int sync_path(const char *path, int dir, struct kb_error *err) {
  if (kb_fsync_path(path, dir) == 0)
    return KB_OK;
  return sysfail(err, errno, path, "sync");
}

/* Writes the root attributes of new file `f` (named `tmp` in messages): format, campaign,
 * task, created, and a zero "commit" (created with the file type, written through the memory
 * type). */
static int write_root(hid_t f, const char *tmp, const struct kb_store_task_info *info,
                      struct kb_error *err) {
  double created = now_unix();
  struct commit_rec zero = {0, 0, 0, 0, 0, 0, 0};
  if (put_str_attr(f, "format", STORE_FORMAT, 0, 1) < 0 ||
      put_str_attr(f, "campaign", info->campaign, 0, 1) < 0 ||
      put_str_attr(f, "task", info->task, 0, 1) < 0 ||
      put_attr(f, "created", H5T_NATIVE_DOUBLE, &created, 1) < 0)
    return h5fail(err, tmp, "write the root attributes");
  hid_t kft = compound_type(commit_fields, NFIELDS(commit_fields), 0, 1);
  hid_t kmt = compound_type(commit_fields, NFIELDS(commit_fields), sizeof(struct commit_rec), 0);
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = kft < 0 || kmt < 0 || sp < 0
                ? H5I_INVALID_HID
                : H5Acreate2(f, "commit", kft, sp, H5P_DEFAULT, H5P_DEFAULT);
  herr_t w = a < 0 ? -1 : H5Awrite(a, kmt, &zero);
  int rc = kft < 0 || kmt < 0 ? h5fail(err, tmp, "make the table types")
           : w < 0            ? h5fail(err, tmp, "write the root attribute \"commit\"")
                              : KB_OK;
  close_id(&a, H5Aclose);
  close_id(&sp, H5Sclose);
  close_id(&kmt, H5Tclose);
  close_id(&kft, H5Tclose);
  return rc;
}

/* Creates every object of new file `f` (named `tmp` in messages) below the root: /task, the
 * tables, the byte heaps, the groups and /best. */
static int make_objects(hid_t f, const char *tmp, const struct kb_store_task_info *info,
                        struct kb_error *err) {
  int rc = KB_OK;
  hid_t g = H5I_INVALID_HID;
  hid_t cft = compound_type(cand_fields, NFIELDS(cand_fields), 0, 1);
  hid_t eft = compound_type(eval_fields, NFIELDS(eval_fields), 0, 1);
  hid_t pft = compound_type(kern_fields, NFIELDS(kern_fields), 0, 1);
  hid_t lft = compound_type(llm_fields, NFIELDS(llm_fields), 0, 1);
  const char *spec = info->spec_json ? info->spec_json : "";
  const char *ref = info->reference ? info->reference : "";
  if (cft < 0 || eft < 0 || pft < 0 || lft < 0) {
    rc = h5fail(err, tmp, "make the table types");
    goto out;
  }
  g = H5Gcreate2(f, "task", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0 || put_bytes(g, "spec_json", spec, strlen(spec)) < 0 ||
      put_bytes(g, "reference", ref, strlen(ref)) < 0) {
    rc = h5fail(err, tmp, "write /task");
    goto out;
  }
  if (make_table(f, "candidates", cft, CAND_CHUNK, 0) < 0 ||
      make_table(f, "evaluations", eft, EVAL_CHUNK, 0) < 0) {
    rc = h5fail(err, tmp, "create the tables");
    goto out;
  }
  if (make_group(f, "sources") < 0 || make_group(f, "compile_logs") < 0 ||
      make_group(f, "profiles") < 0 || make_group(f, "best") < 0 || make_group(f, "llm") < 0 ||
      make_group(f, "torch") < 0 ||
      make_table(f, "sources/data", H5T_STD_U8LE, HEAP_CHUNK, 0) < 0 ||
      make_table(f, "compile_logs/data", H5T_STD_U8LE, HEAP_CHUNK, 0) < 0 ||
      make_table(f, "profiles/kernels", pft, KERN_CHUNK, 0) < 0 ||
      make_table(f, "llm/requests", lft, LLM_CHUNK, 0) < 0 ||
      make_table(f, "llm/text", H5T_STD_U8LE, HEAP_CHUNK, LLM_DEFLATE) < 0) {
    rc = h5fail(err, tmp, "create the groups");
    goto out;
  }
  struct torch_times none[2] = {{NULL, 0, 0, -1}, {NULL, 0, 0, -1}};
  if (put_best(f, "", "", -1, NAN, NAN, 0, 1) < 0)
    rc = h5fail(err, tmp, "write /best");
  else if (put_torch(f, none, 1) < 0)
    rc = h5fail(err, tmp, "write /torch");
out:
  close_id(&g, H5Gclose);
  close_id(&lft, H5Tclose);
  close_id(&pft, H5Tclose);
  close_id(&eft, H5Tclose);
  close_id(&cft, H5Tclose);
  return rc;
}

int kb__store_sync_folder(const char *path, struct kb_error *err) {
  char *dir = kb_strdup(path);
  if (dir == NULL)
    return nomem(err, path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    slash[1] = '\0';
  else if (slash != NULL)
    *slash = '\0';
  int rc = sync_path(slash != NULL ? dir : ".", 1, err);
  kb_free(dir);
  return rc;
}

/* Syncs the finished `tmp`, renames it to `path` (`*made` 0 from then on: `tmp` is gone) and
 * syncs the folder of `path`. */
static int put_in_place(const char *tmp, const char *path, int *made, struct kb_error *err) {
  int rc = sync_path(tmp, 0, err);
  if (rc)
    return rc;
  if (rename(tmp, path) != 0)
    return sysfail(err, errno, path, "rename from \"%s\"", tmp);
  *made = 0;
  return kb__store_sync_folder(path, err);
}

/* Builds the whole file in "<path>.tmp" and renames it to `path`, so that `path` never holds a
 * half-made file. Every object the store will ever write is created here: SWMR write mode
 * cannot create objects. Errors: KB_EHDF5, KB_EIO, KB_ENOMEM. */
static int create_file(struct kb_store *s, const struct kb_store_task_info *info,
                       struct kb_error *err) {
  int rc = KB_OK;
  char *tmp = NULL;
  hid_t fapl = H5I_INVALID_HID, f = H5I_INVALID_HID;
  int made = 0; /* tmp exists and must go on failure */
  size_t plen = strlen(s->path);
  tmp = kb_malloc(plen + sizeof ".tmp");
  if (tmp == NULL) {
    rc = nomem(err, s->path);
    goto out;
  }
  memcpy(tmp, s->path, plen);
  memcpy(tmp + plen, ".tmp", sizeof ".tmp");

  fapl = make_fapl();
  if (fapl < 0) {
    rc = h5fail(err, s->path, "make a file access property list");
    goto out;
  }
  f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (f < 0) {
    rc = h5fail(err, tmp, "create file");
    goto out;
  }
  made = 1;
  rc = write_root(f, tmp, info, err);
  if (rc == KB_OK)
    rc = make_objects(f, tmp, info, err);
  if (rc)
    goto out;
  herr_t closed = H5Fclose(f);
  f = H5I_INVALID_HID;
  if (closed < 0) {
    write_failures++;
    rc = h5fail(err, tmp, "close file");
    goto out;
  }
  rc = put_in_place(tmp, s->path, &made, err);
out:
  close_file(&f);
  close_id(&fapl, H5Pclose);
  if (rc && made)
    unlink(tmp);
  kb_free(tmp);
  return rc;
}

/* ---- opening and recovery ------------------------------------------------------------------- */

/* Takes flock() on "<path>.lock" (created when absent). Errors: KB_ESTATE when another process
 * (or another open store) holds it, KB_EIO, KB_ENOMEM. */
static int take_lock(struct kb_store *s, struct kb_error *err) {
  size_t plen = strlen(s->path);
  char *lock = kb_malloc(plen + sizeof ".lock");
  if (lock == NULL)
    return nomem(err, s->path);
  memcpy(lock, s->path, plen);
  memcpy(lock + plen, ".lock", sizeof ".lock");
  int rc = KB_OK;
  s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s->lock_fd < 0) {
    rc = sysfail(err, errno, lock, "open lock file");
    goto out;
  }
  int r;
  do
    r = flock(s->lock_fd, LOCK_EX | LOCK_NB);
  while (r != 0 && errno == EINTR);
  if (r != 0) {
    if (errno == EWOULDBLOCK)
      rc = kb_error_set(err, KB_ESTATE, "%s: already open for writing by another store", s->path);
    else
      rc = kb_error_set(err, KB_EIO, "%s: cannot lock: %s", lock, strerror(errno));
    close(s->lock_fd);
    s->lock_fd = -1;
  }
out:
  kb_free(lock);
  return rc;
}

/* This process's environment with HDF5_USE_FILE_LOCKING=FALSE in place of any value it had
 * (new; kb_free the array only: the strings are borrowed), or NULL when out of memory. */
static char **env_without_file_locking(void) {
  static char no_locking[] = "HDF5_USE_FILE_LOCKING=FALSE";
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = kb_calloc(n + 2, sizeof *env);
  if (env == NULL)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "HDF5_USE_FILE_LOCKING=", 22) != 0)
      env[k++] = environ[i];
  env[k] = no_locking;
  return env;
}

/* Runs `h5clear -s [--increment=0] <path>` with its output thrown away and waits for it, without
 * HDF5's file lock (the store holds its own; a reader's lock must not fail it). Writes what
 * happened into `note`. Returns 0 when it exited 0. */
static int run_h5clear(const char *path, int increment, char *note, size_t cap) {
  posix_spawn_file_actions_t fa;
  char **env = env_without_file_locking();
  if (env == NULL || posix_spawn_file_actions_init(&fa) != 0) {
    kb_free(env);
    snprintf(note, cap, "h5clear not run: out of memory");
    return -1;
  }
  int rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0)
    rc = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  if (rc == 0)
    rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
  char *argv[5];
  int argc = 0;
  argv[argc++] = "h5clear";
  argv[argc++] = "-s";
  if (increment)
    argv[argc++] = "--increment=0";
  argv[argc++] = (char *)path;
  argv[argc] = NULL;
  pid_t pid = -1;
  if (rc == 0)
    rc = posix_spawnp(&pid, "h5clear", &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  kb_free(env);
  if (rc != 0) {
    if (rc == ENOENT)
      snprintf(note, cap, "h5clear is not on PATH");
    else
      snprintf(note, cap, "cannot run h5clear: %s", strerror(rc));
    return -1;
  }
  int status = 0;
  pid_t w;
  do
    w = waitpid(pid, &status, 0);
  while (w < 0 && errno == EINTR);
  if (w < 0) {
    snprintf(note, cap, "h5clear ran, its status is unknown: %s", strerror(errno));
    return -1;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    snprintf(note, cap, "h5clear succeeded");
    return 0;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) /* exec failed after the fork */
    snprintf(note, cap, "h5clear is not on PATH or cannot be run");
  else if (WIFEXITED(status))
    snprintf(note, cap, "h5clear exited with status %d", WEXITSTATUS(status));
  else
    snprintf(note, cap, "h5clear died of signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return -1;
}

/* Opens the file read-write, clearing a killed writer's status flags when needed.
 * Errors: KB_EHDF5 naming the path. */
static int open_file(struct kb_store *s, struct kb_error *err) {
  hid_t fapl = make_fapl();
  if (fapl < 0)
    return h5fail(err, s->path, "make a file access property list");
  int rc = KB_OK;
  /* SWMR from the first moment: a writer killed even during open leaves a file that SWMR
   * readers accept. Recovery below only changes extents and rewrites values, which SWMR
   * allows. */
  unsigned flags = H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE;
  s->file = H5Fopen(s->path, flags, fapl);
  char note[160] = "";
  for (int step = 0; s->file < 0 && step < 2; step++) {
    run_h5clear(s->path, step, note, sizeof note);
    s->file = H5Fopen(s->path, flags, fapl);
    if (s->file >= 0)
      s->recovered |= KB_STORE_RECOVERED_FLAGS;
  }
  if (s->file < 0)
    rc = h5fail(err, s->path, "open for writing (%s)", note);
  H5Pclose(fapl);
  return rc;
}

static void close_datasets(struct kb_store *s) {
  close_id(&s->cand_ds, H5Dclose);
  close_id(&s->eval_ds, H5Dclose);
  close_id(&s->src_ds, H5Dclose);
  close_id(&s->log_ds, H5Dclose);
  close_id(&s->kern_ds, H5Dclose);
  close_id(&s->llm_ds, H5Dclose);
  close_id(&s->text_ds, H5Dclose);
}

static int open_datasets(struct kb_store *s, struct kb_error *err) {
  static const char *const names[] = {"candidates",       "evaluations", "sources/data",
                                      "compile_logs/data", "profiles/kernels", "llm/requests",
                                      "llm/text"};
  hid_t *ids[] = {&s->cand_ds, &s->eval_ds, &s->src_ds, &s->log_ds,
                  &s->kern_ds, &s->llm_ds,  &s->text_ds};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    *ids[i] = H5Dopen2(s->file, names[i], H5P_DEFAULT);
    if (*ids[i] < 0)
      return h5fail(err, s->path, "open /%s", names[i]);
  }
  return KB_OK;
}

/* Checks the root attributes: the format, and the task when `info` names one. Sets s->task.
 * Errors: KB_EHDF5 (not a store), KB_EINVAL (another campaign or task). */
static int check_root(struct kb_store *s, const struct kb_store_task_info *info,
                      struct kb_error *err) {
  char format[64], campaign[KB_ID_MAX];
  if (get_str_attr(s->file, "format", format, sizeof format) < 0)
    return h5fail(err, s->path, "read the root attribute \"format\"");
  /* An older format (kernelbrain.h5/1) is not written to: the scheduler rebuilds the file from
   * redis in the current one (KB_EHDF5). The report still reads it. */
  if (strcmp(format, STORE_FORMAT) != 0)
    return kb_error_set(err, KB_EHDF5, "%s: format is \"%s\", expected \"%s\"", s->path, format,
                        STORE_FORMAT);
  if (get_str_attr(s->file, "campaign", campaign, sizeof campaign) < 0 ||
      get_str_attr(s->file, "task", s->task, sizeof s->task) < 0)
    return h5fail(err, s->path, "read the root attributes \"campaign\" and \"task\"");
  if (info != NULL && strcmp(info->campaign, campaign) != 0)
    return kb_error_set(err, KB_EINVAL, "%s: holds campaign \"%s\", not \"%s\"", s->path,
                        campaign, info->campaign);
  if (info != NULL && strcmp(info->task, s->task) != 0)
    return kb_error_set(err, KB_EINVAL, "%s: holds task \"%s\", not \"%s\"", s->path, s->task,
                        info->task);
  return KB_OK;
}

/* Cuts `ds` (named `name`) back to `keep` elements when a killed writer left more. */
static int cut_to(struct kb_store *s, hid_t ds, const char *name, int64_t keep,
                  struct kb_error *err) {
  int64_t have = extent_of(ds);
  if (have < 0)
    return h5fail(err, s->path, "read the extent of /%s", name);
  if (have < keep)
    return kb_error_set(err, KB_EHDF5, "%s: /%s holds %lld elements, %lld were committed",
                        s->path, name, (long long)have, (long long)keep);
  if (have == keep)
    return KB_OK;
  hsize_t dims[1] = {(hsize_t)keep};
  if (H5Dset_extent(ds, dims) < 0)
    return h5fail(err, s->path, "drop uncommitted elements of /%s", name);
  s->recovered |= KB_STORE_RECOVERED_DROPPED;
  return KB_OK;
}

/* Folds evaluation (tier, attempt, status) into candidate `c`: the best evaluation is the one at
 * the highest tier, the latest attempt among equals. */
static void agg_apply(struct cand_mem *c, int tier, int attempt, const char *status) {
  c->n_evaluations++;
  if (tier > c->best_tier || (tier == c->best_tier && attempt > c->best_attempt)) {
    c->best_tier = tier;
    c->best_attempt = attempt;
    kb_utf8_copy(c->status, sizeof c->status, status, STATUS_SIZE);
  }
}

static void agg_row_of(const struct cand_mem *c, struct agg_row *a) {
  memset(a, 0, sizeof *a);
  a->best_tier = c->best_tier;
  memcpy(a->status, c->status, sizeof a->status);
  a->n_evaluations = c->n_evaluations;
}

/* Grows the array `*rows` of `size`-byte rows (capacity `*cap`, doubling from 64) to hold
 * `want` rows, and the id set `set` over it. Returns KB_OK, or -1 when out of memory (nothing
 * changed that was not already grown). */
static int reserve_rows(void **rows, size_t *cap, size_t size, struct cand_set *set,
                        size_t want) {
  if (want > *cap) {
    size_t n = *cap ? *cap * 2 : 64;
    while (n < want)
      n *= 2;
    void *grown = kb_reallocarray(*rows, n, size);
    if (grown == NULL)
      return -1;
    *rows = grown;
    *cap = n;
  }
  return cand_set_reserve(set, *rows, size, want) == KB_OK ? KB_OK : -1;
}

/* Grows s->cands and its set to hold `want` rows. Errors: KB_ENOMEM. */
static int reserve_cands(struct kb_store *s, size_t want, struct kb_error *err) {
  void *rows = s->cands;
  int rc = reserve_rows(&rows, &s->cap_cands, sizeof *s->cands, &s->cset, want);
  s->cands = rows;
  return rc == KB_OK ? KB_OK : nomem(err, s->path);
}

/* Grows s->llm_ids and its set to hold `want` rows. Errors: KB_ENOMEM. */
static int reserve_llm(struct kb_store *s, size_t want, struct kb_error *err) {
  void *rows = s->llm_ids;
  int rc = reserve_rows(&rows, &s->cap_llm, sizeof *s->llm_ids, &s->lset, want);
  s->llm_ids = rows;
  return rc == KB_OK ? KB_OK : nomem(err, s->path);
}

/* Reads the request ids (and the last stream entry id) of the `n` committed /llm/requests rows
 * into the dedup set. */
static int load_llm(struct kb_store *s, int64_t n, struct kb_error *err) {
  struct llm_key_row *rows = kb_calloc(READ_BATCH, sizeof *rows);
  hid_t kt = compound_type(llm_key_fields, NFIELDS(llm_key_fields), sizeof *rows, 0);
  int rc = KB_OK;
  if (rows == NULL) {
    rc = nomem(err, s->path);
    goto out;
  }
  if (kt < 0) {
    rc = h5fail(err, s->path, "make the /llm/requests key type");
    goto out;
  }
  rc = reserve_llm(s, (size_t)n, err);
  for (int64_t at = 0; rc == KB_OK && at < n; at += READ_BATCH) {
    int64_t k = n - at < READ_BATCH ? n - at : READ_BATCH;
    if (read_at(s->llm_ds, kt, at, rows, k) < 0) {
      rc = h5fail(err, s->path, "read /llm/requests rows %lld..%lld", (long long)at,
                  (long long)(at + k - 1));
      break;
    }
    for (int64_t i = 0; i < k; i++) {
      kb_utf8_copy(s->llm_ids[s->n_llm], ID_SIZE, rows[i].request, ID_SIZE);
      kb_utf8_copy(s->last_entry, sizeof s->last_entry, rows[i].entry, ENTRY_SIZE);
      if (cand_set_find(&s->lset, s->llm_ids, sizeof *s->llm_ids, s->llm_ids[s->n_llm]) < 0)
        cand_set_put(&s->lset, s->llm_ids, sizeof *s->llm_ids, (int64_t)s->n_llm);
      s->n_llm++;
    }
  }
out:
  close_id(&kt, H5Tclose);
  kb_free(rows);
  return rc;
}

/* Reads the committed state: cuts off uncommitted rows and bytes, fills the hash sets, and
 * repairs the candidate columns and /best where they ran ahead of the commit. */
/* Reads and checks the root attribute "commit" into `c`. */
static int read_commit(struct kb_store *s, struct commit_rec *c, struct kb_error *err) {
  memset(c, 0, sizeof *c);
  hid_t a = H5Aopen(s->file, "commit", H5P_DEFAULT);
  int rc = KB_OK;
  if (a < 0 || H5Aread(a, s->commit_mt, c) < 0)
    rc = h5fail(err, s->path, "read the root attribute \"commit\"");
  else if (c->candidates < 0 || c->evaluations < 0 || c->source_bytes < 0 ||
           c->compile_log_bytes < 0 || c->kernels < 0 || c->llm < 0 || c->llm_bytes < 0)
    rc = kb_error_set(err, KB_EHDF5, "%s: the root attribute \"commit\" is negative", s->path);
  close_id(&a, H5Aclose);
  return rc;
}

/* Cuts every dataset back to the commit `c` and loads the llm request ids. */
static int cut_to_commit(struct kb_store *s, const struct commit_rec *c, struct kb_error *err) {
  int rc = cut_to(s, s->cand_ds, "candidates", c->candidates, err);
  if (!rc)
    rc = cut_to(s, s->eval_ds, "evaluations", c->evaluations, err);
  if (!rc)
    rc = cut_to(s, s->src_ds, "sources/data", c->source_bytes, err);
  if (!rc)
    rc = cut_to(s, s->log_ds, "compile_logs/data", c->compile_log_bytes, err);
  if (!rc)
    rc = cut_to(s, s->kern_ds, "profiles/kernels", c->kernels, err);
  if (!rc)
    rc = cut_to(s, s->llm_ds, "llm/requests", c->llm, err);
  if (!rc)
    rc = cut_to(s, s->text_ds, "llm/text", c->llm_bytes, err);
  if (!rc)
    rc = load_llm(s, c->llm, err);
  return rc;
}

/* Reads rows [at, at + n) of `ds` (named `what` in messages) as `type` into `rows`. */
static int read_rows(const struct kb_store *s, hid_t ds, hid_t type, const char *what, int64_t at,
                     int64_t n, void *rows, struct kb_error *err) {
  if (read_at(ds, type, at, rows, n) < 0)
    return h5fail(err, s->path, "read /%s rows %lld..%lld", what, (long long)at,
                  (long long)(at + n - 1));
  return KB_OK;
}

/* Loads the ids of the first `count` /candidates rows into s->cands and the set, and their
 * stored aggregate columns into `stored` (`count` entries, caller-owned). */
static int load_cands(struct kb_store *s, int64_t count, struct agg_row *stored,
                      struct kb_error *err) {
  hid_t ckt = compound_type(cand_key_fields, NFIELDS(cand_key_fields),
                            sizeof(struct cand_key_row), 0);
  struct cand_key_row *crows = kb_calloc(READ_BATCH, sizeof *crows);
  int rc = KB_OK;
  if (ckt < 0)
    rc = h5fail(err, s->path, "make the key types");
  else if (crows == NULL)
    rc = nomem(err, s->path);
  else
    rc = reserve_cands(s, (size_t)count, err);
  for (int64_t at = 0; rc == KB_OK && at < count; at += READ_BATCH) {
    int64_t n = count - at < READ_BATCH ? count - at : READ_BATCH;
    rc = read_rows(s, s->cand_ds, ckt, "candidates", at, n, crows, err);
    for (int64_t i = 0; rc == KB_OK && i < n; i++) {
      struct cand_mem *m = &s->cands[s->n_cands];
      memset(m, 0, sizeof *m);
      kb_utf8_copy(m->id, sizeof m->id, crows[i].id, ID_SIZE);
      m->best_tier = -1;
      stored[s->n_cands] = crows[i].agg;
      stored[s->n_cands].status[STATUS_SIZE - 1] = '\0';
      /* A duplicate id (never written by this code) keeps its row but not a set entry. */
      if (cand_set_find(&s->cset, s->cands, sizeof *s->cands, m->id) < 0)
        cand_set_put(&s->cset, s->cands, sizeof *s->cands, (int64_t)s->n_cands);
      s->n_cands++;
    }
  }
  kb_free(crows);
  close_id(&ckt, H5Tclose);
  return rc;
}

/* Loads the keys of the first `count` /evaluations rows into the set and the candidates'
 * aggregates. */
static int load_evals(struct kb_store *s, int64_t count, struct kb_error *err) {
  hid_t ekt = compound_type(eval_key_fields, NFIELDS(eval_key_fields),
                            sizeof(struct eval_key_row), 0);
  struct eval_key_row *erows = kb_calloc(READ_BATCH, sizeof *erows);
  int rc = KB_OK;
  if (ekt < 0)
    rc = h5fail(err, s->path, "make the key types");
  else if (erows == NULL || eval_set_reserve(&s->eset, (size_t)count) != KB_OK)
    rc = nomem(err, s->path);
  for (int64_t at = 0; rc == KB_OK && at < count; at += READ_BATCH) {
    int64_t n = count - at < READ_BATCH ? count - at : READ_BATCH;
    rc = read_rows(s, s->eval_ds, ekt, "evaluations", at, n, erows, err);
    for (int64_t i = 0; rc == KB_OK && i < n; i++) {
      struct eval_key_row *e = &erows[i];
      e->candidate[ID_SIZE - 1] = '\0';
      e->status[STATUS_SIZE - 1] = '\0';
      int64_t row = cand_set_find(&s->cset, s->cands, sizeof *s->cands, e->candidate);
      if (row < 0) {
        rc = kb_error_set(err, KB_EHDF5,
                          "%s: /evaluations row %lld names candidate \"%s\" that is not in "
                          "/candidates",
                          s->path, (long long)(at + i), e->candidate);
        break;
      }
      struct eval_key k = {row, e->tier, e->attempt};
      if (eval_set_has(&s->eset, &k))
        continue;
      eval_set_put(&s->eset, &k);
      agg_apply(&s->cands[row], e->tier, e->attempt, e->status);
      if (torch_note(&s->torch[0], e->torch_eager_us, e->tier) != KB_OK ||
          torch_note(&s->torch[1], e->torch_compile_us, e->tier) != KB_OK)
        rc = nomem(err, s->path);
    }
  }
  kb_free(erows);
  close_id(&ekt, H5Tclose);
  return rc;
}

/* Rewrites the aggregate columns that differ from what the committed evaluations give
 * (`stored`: the columns as read), and resets /best when it names an uncommitted candidate. */
static int repair(struct kb_store *s, const struct agg_row *stored, struct kb_error *err) {
  /* In-place updates may have landed for evaluations that were not committed. */
  for (size_t i = 0; i < s->n_cands; i++) {
    struct agg_row want;
    agg_row_of(&s->cands[i], &want);
    if (want.best_tier == stored[i].best_tier && want.n_evaluations == stored[i].n_evaluations &&
        strcmp(want.status, stored[i].status) == 0)
      continue;
    if (write_at(s->cand_ds, s->agg_mt, (int64_t)i, &want, 1, 0) < 0)
      return h5fail(err, s->path, "repair /candidates row %zu", i);
    s->recovered |= KB_STORE_RECOVERED_REPAIRED;
  }
  /* /best may name a candidate whose row was not committed. */
  hid_t g = H5Gopen2(s->file, "best", H5P_DEFAULT);
  char best[ID_SIZE];
  herr_t r = g < 0 ? -1 : get_str_attr(g, "candidate", best, sizeof best);
  close_id(&g, H5Gclose);
  if (r < 0)
    return h5fail(err, s->path, "read /best");
  if (best[0] != '\0' && cand_set_find(&s->cset, s->cands, sizeof *s->cands, best) < 0) {
    if (put_best(s->file, "", "", -1, NAN, NAN, 0, 0) < 0)
      return h5fail(err, s->path, "reset /best");
    s->recovered |= KB_STORE_RECOVERED_REPAIRED;
  }
  return KB_OK;
}

/* KB_EHDF5 when the chunk holding element `count - 1` of `ds` (a 1-D table or heap, `count`
 * committed elements) lies past `eof`, the file's size: the file was cut short (a truncated
 * copy, a disk that lost its tail), and reading that chunk would give zeros, not an error. The
 * last element's chunk is the last one written to it, so the one most likely lost. */
static int check_tail(const struct kb_store *s, hid_t ds, const char *name, int64_t count,
                      off_t eof, struct kb_error *err) {
  if (ds < 0 || count <= 0)
    return KB_OK;
  hid_t space = H5Dget_space(ds);
  hsize_t at[1] = {(hsize_t)(count - 1)};
  haddr_t addr = HADDR_UNDEF;
  hsize_t size = 0;
  herr_t got = space >= 0 ? H5Dget_chunk_info_by_coord(ds, at, NULL, &addr, &size) : -1;
  if (space >= 0)
    H5Sclose(space);
  if (got < 0 || addr == HADDR_UNDEF) /* contiguous, or a chunk never written: nothing to lose */
    return KB_OK;
  if ((uint64_t)addr + size > (uint64_t)eof)
    return kb_error_set(err, KB_EHDF5, "%s: cannot open: the file ends at byte %lld, before "
                        "the committed data of %s (%llu bytes at %llu): it was cut short",
                        s->path, (long long)eof, name, (unsigned long long)size,
                        (unsigned long long)addr);
  return KB_OK;
}

/* check_tail() for every table and heap, up to the commit `c`, against the size the file had
 * when found (found_size). */
static int check_tails(const struct kb_store *s, const struct commit_rec *c,
                       struct kb_error *err) {
  off_t eof = s->found_size;
  int rc = check_tail(s, s->cand_ds, "/candidates", c->candidates, eof, err);
  if (rc == KB_OK)
    rc = check_tail(s, s->eval_ds, "/evaluations", c->evaluations, eof, err);
  if (rc == KB_OK)
    rc = check_tail(s, s->src_ds, "/sources/data", c->source_bytes, eof, err);
  if (rc == KB_OK)
    rc = check_tail(s, s->log_ds, "/compile_logs/data", c->compile_log_bytes, eof, err);
  if (rc == KB_OK)
    rc = check_tail(s, s->kern_ds, "/profiles/kernels", c->kernels, eof, err);
  if (rc == KB_OK)
    rc = check_tail(s, s->llm_ds, "/llm/requests", c->llm, eof, err);
  if (rc == KB_OK)
    rc = check_tail(s, s->text_ds, "/llm/text", c->llm_bytes, eof, err);
  return rc;
}

/* Loads an existing file: cut back to its last commit, then the candidates and evaluations
 * into memory, then the repairs of what landed after that commit. */
static int load(struct kb_store *s, struct kb_error *err) {
  struct commit_rec c;
  int rc = read_commit(s, &c, err);
  if (rc == KB_OK)
    s->committed_nothing = c.candidates == 0 && c.evaluations == 0 && c.source_bytes == 0 &&
                           c.compile_log_bytes == 0 && c.kernels == 0 && c.llm == 0 &&
                           c.llm_bytes == 0;
  if (rc == KB_OK)
    rc = check_tails(s, &c, err);
  if (rc == KB_OK)
    rc = cut_to_commit(s, &c, err);
  if (rc)
    return rc;
  struct agg_row *stored = kb_calloc((size_t)c.candidates, sizeof *stored);
  if (stored == NULL)
    return nomem(err, s->path);
  rc = load_cands(s, c.candidates, stored, err);
  if (rc == KB_OK)
    rc = load_evals(s, c.evaluations, err);
  if (rc == KB_OK) {
    s->n_evals = c.evaluations;
    s->src_bytes = c.source_bytes;
    s->log_bytes = c.compile_log_bytes;
    s->n_kerns = c.kernels;
    s->text_bytes = c.llm_bytes;
    rc = repair(s, stored, err);
  }
  /* /torch may hold times of evaluations that were not committed */
  if (rc == KB_OK && (s->torch[0].n > 0 || s->torch[1].n > 0 || s->recovered) &&
      put_torch(s->file, s->torch, 0) < 0)
    rc = h5fail(err, s->path, "rewrite /torch");
  kb_free(stored);
  return rc;
}

/* Closes every HDF5 handle and frees `s`, without flushing. */
static void destroy(struct kb_store *s) {
  if (s == NULL)
    return;
  close_datasets(s);
  close_id(&s->cand_mt, H5Tclose);
  close_id(&s->eval_mt, H5Tclose);
  close_id(&s->agg_mt, H5Tclose);
  close_id(&s->commit_mt, H5Tclose);
  close_id(&s->kern_mt, H5Tclose);
  close_id(&s->llm_mt, H5Tclose);
  close_file(&s->file);
  if (s->lock_fd >= 0)
    close(s->lock_fd);
  kb_free(s->cset.slots);
  kb_free(s->eset.slots);
  kb_free(s->cands);
  kb_free(s->lset.slots);
  kb_free(s->llm_ids);
  kb_free(s->torch[0].v);
  kb_free(s->torch[1].v);
  kb_free(s->path);
  kb_free(s);
}

/* A store for `path` with nothing open yet: every handle invalid, the memory types made. `*out`
 * is new (destroy() frees it); NULL on failure. */
static int new_store(const char *path, struct kb_store **out, struct kb_error *err) {
  struct kb_store *s = kb_calloc(1, sizeof *s);
  *out = NULL;
  if (s == NULL)
    return nomem(err, path);
  s->lock_fd = -1;
  s->data_fd = -1;
  s->torch[0].tier = s->torch[1].tier = -1;
  s->file = s->cand_ds = s->eval_ds = s->src_ds = s->log_ds = H5I_INVALID_HID;
  s->kern_ds = s->llm_ds = s->text_ds = H5I_INVALID_HID;
  s->cand_mt = s->eval_mt = s->agg_mt = s->commit_mt = H5I_INVALID_HID;
  s->kern_mt = s->llm_mt = H5I_INVALID_HID;
  s->path = kb_strdup(path);
  if (s->path == NULL) {
    destroy(s);
    return nomem(err, path);
  }
  s->cand_mt = compound_type(cand_fields, NFIELDS(cand_fields), sizeof(struct cand_row), 0);
  s->eval_mt = compound_type(eval_fields, NFIELDS(eval_fields), sizeof(struct eval_row), 0);
  s->agg_mt = compound_type(agg_fields, NFIELDS(agg_fields), sizeof(struct agg_row), 0);
  s->commit_mt =
      compound_type(commit_fields, NFIELDS(commit_fields), sizeof(struct commit_rec), 0);
  s->kern_mt = compound_type(kern_fields, NFIELDS(kern_fields), sizeof(struct kern_row), 0);
  s->llm_mt = compound_type(llm_fields, NFIELDS(llm_fields), sizeof(struct llm_row), 0);
  if (s->cand_mt < 0 || s->eval_mt < 0 || s->agg_mt < 0 || s->commit_mt < 0 || s->kern_mt < 0 ||
      s->llm_mt < 0) {
    int rc = h5fail(err, path, "make the table types"); /* before destroy() resets the stack */
    destroy(s);
    return rc;
  }
  *out = s;
  return KB_OK;
}

/* kb__store_open() with HDF5 printing off: lock, create when absent, open (recovering), check
 * the root attributes, load the committed state. */
/* Opens `s`'s file (recovering it), checks its root against `info`, opens its datasets and
 * loads what was committed. */
static int open_and_load(struct kb_store *s, const struct kb_store_task_info *info,
                         struct kb_error *err) {
  int rc = open_file(s, err);
  if (!rc)
    rc = check_root(s, info, err);
  if (!rc)
    rc = open_datasets(s, err);
  if (!rc)
    rc = load(s, err);
  return rc;
}

static int open_impl(const char *path, const struct kb_store_task_info *info,
                     struct kb_store **out, struct kb_error *err) {
  if (out == NULL || path == NULL || path[0] == '\0')
    return kb_error_set(err, KB_EINVAL, "kb__store_open: no path");
  *out = NULL;
  if (info != NULL && (info->campaign == NULL || info->task == NULL))
    return kb_error_set(err, KB_EINVAL, "%s: task info without campaign or task", path);
  if (info != NULL && (strnlen(info->campaign, KB_ID_MAX) >= KB_ID_MAX ||
                       strnlen(info->task, KB_ID_MAX) >= KB_ID_MAX || info->campaign[0] == '\0' ||
                       info->task[0] == '\0'))
    return kb_error_set(err, KB_EINVAL, "%s: campaign and task ids must have 1 to %d characters",
                        path, KB_ID_MAX - 1);
  struct kb_store *s = NULL;
  int rc = new_store(path, &s, err);
  if (rc)
    return rc;
  rc = take_lock(s, err);
  if (rc)
    goto out;
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno != ENOENT) {
      rc = kb_error_set(err, KB_EIO, "%s: %s", path, strerror(errno));
      goto out;
    }
    if (info == NULL) {
      rc = kb_error_set(err, KB_ENOTFOUND, "%s: no such store, and no task info to create it",
                        path);
      goto out;
    }
    rc = create_file(s, info, err);
    if (rc)
      goto out;
    if (stat(path, &st) != 0) {
      rc = sysfail(err, errno, path, "stat");
      goto out;
    }
  }
  s->found_size = st.st_size; /* h5clear and HDF5 extend a cut file to its stored end */
  rc = open_and_load(s, info, err);
  if (rc == KB_EHDF5 && s->committed_nothing && info != NULL) {
    /* killed in its first moments, after the rename (test_store_kill: "addr overflow" in the
     * cut of uncommitted rows, the superblock's end of allocation behind what its first
     * writes placed): it holds nothing any flush made durable, so nothing is lost by making it
     * anew */
    close_datasets(s);
    close_file(&s->file);
    s->committed_nothing = 0;
    if (unlink(path) != 0) {
      rc = sysfail(err, errno, path, "remove the unrecoverable file that held nothing");
      goto out;
    }
    kb_error_clear(err);
    rc = create_file(s, info, err);
    if (!rc)
      rc = open_and_load(s, info, err);
    s->recovered |= KB_STORE_RECOVERED_REMADE;
  }
  if (!rc && s->recovered && H5Fflush(s->file, H5F_SCOPE_LOCAL) < 0)
    rc = h5fail(err, path, "flush the recovered file");
  if (rc)
    goto out;
  /* For fsync in kb__store_flush: the handle is an int * only with the sec2 (default) driver. */
  hid_t fapl = H5Fget_access_plist(s->file);
  void *handle = NULL;
  if (fapl >= 0 && H5Pget_driver(fapl) == H5FD_SEC2 &&
      H5Fget_vfd_handle(s->file, H5P_DEFAULT, &handle) >= 0 && handle != NULL)
    s->data_fd = *(int *)handle;
  close_id(&fapl, H5Pclose);
  *out = s;
  return KB_OK;
out:
  destroy(s);
  return rc;
}

/* ---- writing -------------------------------------------------------------------------------- */

/* KB_EHDF5 once a write failed half-way: in-memory counts may no longer match the file. */
static int check_usable(const struct kb_store *s, struct kb_error *err) {
  if (s->failed)
    return kb_error_set(err, KB_EHDF5, "%s: store unusable after an earlier write error; reopen",
                        s->path);
  return KB_OK;
}

/* The start of every kb_store_add_*(): `*added` (may be NULL) 0, then KB_EINVAL with the message
 * `missing` when it is not NULL (an argument was missing), or KB_EHDF5 when `s` is unusable. */
static int begin_add(const struct kb_store *s, const char *missing, int *added,
                     struct kb_error *err) {
  if (added != NULL)
    *added = 0;
  if (missing != NULL)
    return kb_error_set(err, KB_EINVAL, "%s", missing);
  return check_usable(s, err);
}

/* Checks a row about candidate `id` of task `task` (at most `task_size` bytes): 64 hex digits,
 * this file's task. Messages name the id `id_what` and the row `what`. */
static int check_cand_row(const struct kb_store *s, const char *id, const char *task,
                          size_t task_size, const char *id_what, const char *what,
                          struct kb_error *err) {
  if (!is_hex_id(id))
    return kb_error_set(err, KB_EINVAL, "%s: %s \"%.*s\" is not 64 hex digits", s->path, id_what,
                        (int)strnlen(id, ID_SIZE), id);
  if (strncmp(task, s->task, task_size) != 0)
    return kb_error_set(err, KB_EINVAL, "%s: %s %.12s is for task \"%.*s\", not \"%s\"", s->path,
                        what, id, (int)strnlen(task, task_size), task, s->task);
  return KB_OK;
}

/* kb__store_add_candidate(): validate, dedup, allocate, then write source bytes and the row;
 * memory is updated only after both writes succeeded. */
static int add_candidate_impl(struct kb_store *s, const struct kb_candidate *c, int *added,
                              struct kb_error *err) {
  int rc = begin_add(s, s == NULL || c == NULL ? "kb__store_add_candidate: no store or candidate"
                                                : NULL,
                     added, err);
  if (rc == KB_OK)
    rc = check_cand_row(s, c->id, c->task, sizeof c->task, "candidate id", "candidate", err);
  if (rc)
    return rc;
  for (int p = 0; p < 2; p++)
    if (c->parents[p][0] != '\0' && !is_hex_id(c->parents[p]))
      return kb_error_set(err, KB_EINVAL, "%s: candidate %.12s: parent %d is not 64 hex digits",
                          s->path, c->id, p);
  if (c->source == NULL)
    return kb_error_set(err, KB_EINVAL, "%s: candidate %.12s has no source", s->path, c->id);
  if (cand_set_find(&s->cset, s->cands, sizeof *s->cands, c->id) >= 0)
    return KB_OK;
  /* Allocate first: a failure here leaves the store as it was. */
  rc = reserve_cands(s, s->n_cands + 1, err);
  if (rc)
    return rc;

  size_t len = strlen(c->source);
  struct cand_row row;
  memset(&row, 0, sizeof row);
  kb_utf8_copy(row.id, sizeof row.id, c->id, ID_SIZE);
  kb_utf8_copy(row.task, sizeof row.task, c->task, sizeof c->task);
  kb_utf8_copy(row.name, sizeof row.name, c->name, sizeof c->name);
  kb_utf8_copy(row.generator, sizeof row.generator, c->generator, sizeof c->generator);
  kb_utf8_copy(row.parent0, sizeof row.parent0, c->parents[0], ID_SIZE);
  kb_utf8_copy(row.parent1, sizeof row.parent1, c->parents[1], ID_SIZE);
  kb_utf8_copy(row.knobs, sizeof row.knobs, c->knobs, SIZE_MAX);
  kb_utf8_copy(row.flags, sizeof row.flags, c->flags, SIZE_MAX);
  row.created = c->created;
  row.best_tier = -1;
  row.n_evaluations = 0;
  row.source_offset = s->src_bytes;
  row.source_len = (int64_t)len;

  if (len > 0 && write_at(s->src_ds, H5T_NATIVE_UINT8, s->src_bytes, c->source, (int64_t)len,
                          1) < 0) {
    s->failed = 1;
    return h5fail(err, s->path, "append the source of candidate %.12s to /sources/data", c->id);
  }
  if (write_at(s->cand_ds, s->cand_mt, (int64_t)s->n_cands, &row, 1, 1) < 0) {
    s->failed = 1;
    return h5fail(err, s->path, "append candidate %.12s to /candidates", c->id);
  }
  struct cand_mem *m = &s->cands[s->n_cands];
  memset(m, 0, sizeof *m);
  memcpy(m->id, row.id, sizeof m->id);
  m->best_tier = -1;
  cand_set_put(&s->cset, s->cands, sizeof *s->cands, (int64_t)s->n_cands);
  s->n_cands++;
  s->src_bytes += (int64_t)len;
  s->dirty = 1;
  if (added != NULL)
    *added = 1;
  return KB_OK;
}

/* The numeric columns of /evaluations copied as they are from a result: the row's offset, the
 * result's, the size. COPY checks at compile time that both members have type T. */
struct col_copy {
  size_t row, src, size;
};
#define SAME_TYPE(T, e) (0 * sizeof(_Generic((e), T: 1)))
#define COPY(T, rm, sm)                                                                        \
  {offsetof(struct eval_row, rm), offsetof(struct kb_result, sm),                              \
   sizeof(T) + SAME_TYPE(T, ((struct eval_row *)0)->rm) +                                      \
       SAME_TYPE(T, ((struct kb_result *)0)->sm)}
static const struct col_copy eval_copies[] = {
    COPY(double, started, started), COPY(double, finished, finished),
    COPY(double, compile_s, compile_s), COPY(int, compile_cached, compile_cached),
    COPY(int, registers, registers), COPY(int, spills, spills),
    COPY(int, shared_bytes, shared_bytes), COPY(int, sets_checked, sets_checked),
    COPY(double, max_abs_err, max_abs_err), COPY(double, max_rel_err, max_rel_err),
    COPY(int, samples, timing.samples), COPY(int, warmup, timing.warmup),
    COPY(double, median_us, timing.median_us), COPY(double, p10_us, timing.p10_us),
    COPY(double, p90_us, timing.p90_us), COPY(double, mean_us, timing.mean_us),
    COPY(double, min_us, timing.min_us), COPY(double, noise, timing.noise),
    COPY(int64_t, cost_ms, cost_ms), COPY(double, baseline_median_us, baseline_median_us),
    COPY(double, same_run_speedup, same_run_speedup), COPY(double, kernel_us, kernel_us),
    COPY(double, dram_pct, dram_pct), COPY(double, sm_pct, sm_pct),
    COPY(double, occupancy_pct, occupancy_pct), COPY(double, l2_hit_pct, l2_hit_pct),
    COPY(int64_t, trace_kernels, trace.kernels),
    COPY(int64_t, trace_own_kernels, trace.own_kernels), COPY(int64_t, trace_own_ns, trace.own_ns),
    COPY(int64_t, trace_other_ns, trace.other_ns), COPY(int64_t, trace_late_ns, trace.late_ns),
    COPY(int64_t, trace_dropped, trace.dropped), COPY(int64_t, kernels_dropped, kernels_dropped),
    COPY(double, torch_eager_us, torch_eager_us), COPY(double, torch_compile_us, torch_compile_us),
};
#undef COPY
#undef SAME_TYPE

/* Copies `r` into the file row (texts cut to their columns); `status` is its status name. */
static void fill_eval_row(struct eval_row *row, const struct kb_result *r, const char *status) {
  memset(row, 0, sizeof *row);
  kb_utf8_copy(row->candidate, sizeof row->candidate, r->candidate, ID_SIZE);
  row->tier = r->tier;
  kb_utf8_copy(row->tier_name, sizeof row->tier_name, r->tier_name, sizeof r->tier_name);
  row->attempt = r->attempt;
  kb_utf8_copy(row->status, sizeof row->status, status, STATUS_SIZE);
  kb_utf8_copy(row->reason, sizeof row->reason, r->reason, sizeof r->reason);
  kb_utf8_copy(row->runner, sizeof row->runner, r->runner, sizeof r->runner);
  kb_utf8_copy(row->device, sizeof row->device, r->device, sizeof r->device);
  kb_utf8_copy(row->confinement, sizeof row->confinement, r->confinement,
               sizeof r->confinement);
  kb_utf8_copy(row->charge_id, sizeof row->charge_id, r->charge_id, sizeof r->charge_id);
  for (size_t i = 0; i < NFIELDS(eval_copies); i++)
    memcpy((char *)row + eval_copies[i].row, (const char *)r + eval_copies[i].src,
           eval_copies[i].size);
}

/* The kernel records of `r` as /profiles/kernels rows (new array of r->n_kernels; NULL when out
 * of memory or none). */
static struct kern_row *kern_rows_of(const struct kb_result *r) {
  if (r->n_kernels <= 0 || r->kernels == NULL)
    return NULL;
  struct kern_row *rows = kb_calloc((size_t)r->n_kernels, sizeof *rows);
  for (int i = 0; rows != NULL && i < r->n_kernels; i++) {
    const struct kb_kernel_rec *k = &r->kernels[i];
    struct kern_row *w = &rows[i];
    kb_utf8_copy(w->candidate, sizeof w->candidate, r->candidate, ID_SIZE);
    w->tier = r->tier;
    w->attempt = r->attempt;
    kb_utf8_copy(w->name, sizeof w->name, k->name, sizeof k->name);
    w->grid_x = k->grid[0];
    w->grid_y = k->grid[1];
    w->grid_z = k->grid[2];
    w->block_x = k->block[0];
    w->block_y = k->block[1];
    w->block_z = k->block[2];
    w->registers = k->registers;
    w->static_smem = k->static_smem;
    w->dynamic_smem = k->dynamic_smem;
    w->start_ns = k->start_ns;
    w->end_ns = k->end_ns;
    w->stream = k->stream;
    w->correlation = k->correlation;
  }
  return rows;
}

/* kb__store_add_evaluation(): validate, dedup, allocate, then write the log bytes, the row and
 * the candidate's columns; memory is updated only after all writes succeeded. */
static int add_evaluation_impl(struct kb_store *s, const struct kb_result *r, int *added,
                               struct kb_error *err) {
  int rc = begin_add(s, s == NULL || r == NULL ? "kb__store_add_evaluation: no store or result"
                                                : NULL,
                     added, err);
  if (rc == KB_OK)
    rc = check_cand_row(s, r->candidate, r->task, sizeof r->task, "result candidate",
                        "result for", err);
  if (rc)
    return rc;
  const char *status = status_name(r->status);
  if (status == NULL)
    return kb_error_set(err, KB_EINVAL, "%s: result for %.12s has unknown status %d", s->path,
                        r->candidate, r->status);
  if (r->tier < 0 || r->attempt < 1)
    return kb_error_set(err, KB_EINVAL, "%s: result for %.12s has tier %d attempt %d", s->path,
                        r->candidate, r->tier, r->attempt);
  int64_t crow = cand_set_find(&s->cset, s->cands, sizeof *s->cands, r->candidate);
  if (crow < 0)
    return kb_error_set(err, KB_ENOTFOUND, "%s: result for candidate %.12s that is not stored",
                        s->path, r->candidate);
  struct eval_key k = {crow, r->tier, r->attempt};
  if (eval_set_has(&s->eset, &k))
    return KB_OK;
  if (eval_set_reserve(&s->eset, s->eset.n + 1) != KB_OK)
    return nomem(err, s->path);

  struct eval_row row;
  fill_eval_row(&row, r, status);
  int64_t nk = r->kernels != NULL && r->n_kernels > 0 ? r->n_kernels : 0;
  struct kern_row *krows = kern_rows_of(r);
  if (nk > 0 && krows == NULL)
    return nomem(err, s->path);
  row.kernel_offset = nk > 0 ? s->n_kerns : 0;
  row.kernel_count = nk;
  size_t loglen = r->compile_log != NULL ? strlen(r->compile_log) : 0;
  row.compile_log_offset = loglen > 0 ? s->log_bytes : 0;
  row.compile_log_len = (int64_t)loglen;
  herr_t wk = nk > 0 ? write_at(s->kern_ds, s->kern_mt, s->n_kerns, krows, nk, 1) : 0;
  kb_free(krows);
  if (wk < 0) {
    s->failed = 1;
    return h5fail(err, s->path, "append the kernel records of %.12s tier %d to /profiles/kernels",
                  r->candidate, r->tier);
  }
  if (loglen > 0 && write_at(s->log_ds, H5T_NATIVE_UINT8, s->log_bytes, r->compile_log,
                             (int64_t)loglen, 1) < 0) {
    s->failed = 1;
    return h5fail(err, s->path, "append the compile log of %.12s tier %d to /compile_logs/data",
                  r->candidate, r->tier);
  }
  if (write_at(s->eval_ds, s->eval_mt, s->n_evals, &row, 1, 1) < 0) {
    s->failed = 1;
    return h5fail(err, s->path, "append %.12s tier %d attempt %d to /evaluations", r->candidate,
                  r->tier, r->attempt);
  }
  struct cand_mem next = s->cands[crow];
  agg_apply(&next, r->tier, r->attempt, status);
  struct agg_row agg;
  agg_row_of(&next, &agg);
  if (write_at(s->cand_ds, s->agg_mt, crow, &agg, 1, 0) < 0) {
    s->failed = 1;
    return h5fail(err, s->path, "update /candidates row %lld", (long long)crow);
  }
  s->cands[crow] = next;
  eval_set_put(&s->eset, &k);
  /* ENOMEM here only leaves /torch without this time; the row holds it */
  if (isfinite(r->torch_eager_us) || isfinite(r->torch_compile_us)) {
    torch_note(&s->torch[0], r->torch_eager_us, r->tier);
    torch_note(&s->torch[1], r->torch_compile_us, r->tier);
    s->torch_dirty = 1;
  }
  s->n_evals++;
  s->n_kerns += nk;
  s->log_bytes += (int64_t)loglen;
  s->dirty = 1;
  if (added != NULL)
    *added = 1;
  return KB_OK;
}

/* kb__store_add_llm(): validate, dedup, allocate, then write the texts and the row; memory is
 * updated only after every write succeeded. */
static int add_llm_impl(struct kb_store *s, const struct kb_store_llm *x, int *added,
                        struct kb_error *err) {
  int rc = begin_add(s,
                     s == NULL || x == NULL || x->request == NULL
                         ? "kb__store_add_llm: no store, exchange or request id"
                         : NULL,
                     added, err);
  if (rc)
    return rc;
  size_t idlen = strnlen(x->request, ID_SIZE);
  if (idlen == 0 || idlen >= ID_SIZE)
    return kb_error_set(err, KB_EINVAL, "%s: llm request id must have 1 to %d bytes", s->path,
                        ID_SIZE - 1);
  if (cand_set_find(&s->lset, s->llm_ids, sizeof *s->llm_ids, x->request) >= 0)
    return KB_OK;
  rc = reserve_llm(s, s->n_llm + 1, err);
  if (rc)
    return rc;
  struct llm_row row;
  memset(&row, 0, sizeof row);
  kb_utf8_copy(row.request, sizeof row.request, x->request, ID_SIZE);
  kb_utf8_copy(row.entry, sizeof row.entry, x->entry, SIZE_MAX);
  row.time = x->time;
  kb_utf8_copy(row.kind, sizeof row.kind, x->kind, SIZE_MAX);
  kb_utf8_copy(row.status, sizeof row.status, x->status, SIZE_MAX);
  kb_utf8_copy(row.model, sizeof row.model, x->model, SIZE_MAX);
  row.attempts = x->attempts;
  row.tokens_in = x->tokens_in;
  row.tokens_out = x->tokens_out;
  kb_utf8_copy(row.candidate, sizeof row.candidate, x->candidate, SIZE_MAX);
  kb_utf8_copy(row.parent0, sizeof row.parent0, x->parents[0], SIZE_MAX);
  kb_utf8_copy(row.parent1, sizeof row.parent1, x->parents[1], SIZE_MAX);
  kb_utf8_copy(row.error, sizeof row.error, x->error, SIZE_MAX);
  int64_t at = s->text_bytes;
  row.prompt_offset = at;
  row.prompt_len = x->prompt != NULL ? (int64_t)x->prompt_len : 0;
  row.response_offset = at + row.prompt_len;
  row.response_len = x->response != NULL ? (int64_t)x->response_len : 0;
  if ((row.prompt_len > 0 && write_at(s->text_ds, H5T_NATIVE_UINT8, at, x->prompt,
                                      row.prompt_len, 1) < 0) ||
      (row.response_len > 0 && write_at(s->text_ds, H5T_NATIVE_UINT8, row.response_offset,
                                        x->response, row.response_len, 1) < 0)) {
    s->failed = 1;
    return h5fail(err, s->path, "append the texts of llm request %s to /llm/text", row.request);
  }
  if (write_at(s->llm_ds, s->llm_mt, (int64_t)s->n_llm, &row, 1, 1) < 0) {
    s->failed = 1;
    return h5fail(err, s->path, "append llm request %s to /llm/requests", row.request);
  }
  memcpy(s->llm_ids[s->n_llm], row.request, ID_SIZE);
  cand_set_put(&s->lset, s->llm_ids, sizeof *s->llm_ids, (int64_t)s->n_llm);
  s->n_llm++;
  s->text_bytes = row.response_offset + row.response_len;
  memcpy(s->last_entry, row.entry, sizeof s->last_entry);
  s->dirty = 1;
  if (added != NULL)
    *added = 1;
  return KB_OK;
}

/* kb__store_set_best(): rewrites the /best attributes in place. */
static int set_best_impl(struct kb_store *s, const char *candidate, const char *name, int tier,
                         double median_us, double speedup, struct kb_error *err) {
  if (s == NULL || candidate == NULL)
    return kb_error_set(err, KB_EINVAL, "kb__store_set_best: no store or candidate");
  int rc = check_usable(s, err);
  if (rc)
    return rc;
  if (cand_set_find(&s->cset, s->cands, sizeof *s->cands, candidate) < 0)
    return kb_error_set(err, KB_ENOTFOUND, "%s: best candidate \"%.64s\" is not stored", s->path,
                        candidate);
  if (put_best(s->file, candidate, name != NULL ? name : "", tier, median_us, speedup,
               now_unix(), 0) < 0) {
    s->failed = 1;
    return h5fail(err, s->path, "write /best");
  }
  s->dirty = 1;
  return KB_OK;
}

/* H5Fflush, then fsync HDF5's descriptor. */
static int flush_sync(struct kb_store *s, struct kb_error *err) {
  if (H5Fflush(s->file, H5F_SCOPE_LOCAL) < 0)
    return h5fail(err, s->path, "flush");
  if (s->data_fd >= 0 && fsync(s->data_fd) != 0)
    return sysfail(err, errno, s->path, "sync");
  return KB_OK;
}

/* KB_EWRITE when the store's path no longer names the file it has open (removed, or replaced
 * by another file, while open): what it committed went to a file nobody will read, so it must
 * not be acknowledged. KB_OK when it does, or when the descriptor is unknown (data_fd). */
static int check_in_place(const struct kb_store *s, struct kb_error *err) {
  struct stat open_st, path_st;
  if (s->data_fd < 0 || fstat(s->data_fd, &open_st) != 0)
    return KB_OK;
  if (stat(s->path, &path_st) != 0)
    return kb_error_set(err, KB_EWRITE, "%s: cannot commit: the file was removed while open: "
                        "%s (errno %d)", s->path, strerror(errno), errno);
  if (path_st.st_dev != open_st.st_dev || path_st.st_ino != open_st.st_ino)
    return kb_error_set(err, KB_EWRITE, "%s: cannot commit: the file was replaced while open "
                        "(another file at its path)", s->path);
  return KB_OK;
}

/* kb__store_flush(): the two-phase commit described at the top of this file. */
static int flush_impl(struct kb_store *s, struct kb_error *err) {
  if (s == NULL)
    return kb_error_set(err, KB_EINVAL, "kb__store_flush: no store");
  int rc = check_usable(s, err);
  if (rc || !s->dirty)
    return rc;
  /* Data first, then the commit that makes it count: a crash in between loses nothing that
   * was acknowledged, and open cuts off what was not. */
  if (s->torch_dirty && put_torch(s->file, s->torch, 0) < 0)
    rc = h5fail(err, s->path, "write /torch");
  if (!rc)
    rc = flush_sync(s, err);
  if (!rc) {
    s->torch_dirty = 0;
    struct commit_rec c = {(int64_t)s->n_cands, s->n_evals,  s->src_bytes,  s->log_bytes,
                           s->n_kerns,          (int64_t)s->n_llm, s->text_bytes};
    if (put_attr(s->file, "commit", s->commit_mt, &c, 0) < 0)
      rc = h5fail(err, s->path, "write the root attribute \"commit\"");
  }
  if (!rc)
    rc = flush_sync(s, err);
  if (!rc)
    rc = check_in_place(s, err);
  if (rc) {
    s->failed = 1;
    return rc;
  }
  s->dirty = 0;
  return KB_OK;
}

/* ---- public entry points: HDF5 error printing is off inside each -------------------------- */

/* Runs `call` (an *_impl() returning an error code) into `rc` with HDF5's error printing off. */
#define QUIETLY(rc, call)                                                                    \
  do {                                                                                       \
    struct quiet q_;                                                                         \
    quiet_begin(&q_);                                                                        \
    (rc) = (call);                                                                           \
    quiet_end(&q_);                                                                          \
  } while (0)

int kb__store_open(const char *path, const struct kb_store_task_info *info, struct kb_store **out,
                  struct kb_error *err) {
  int rc;
  QUIETLY(rc, open_impl(path, info, out, err));
  if (rc == KB_EHDF5)
    failed_opens++;
  return rc;
}

int kb__store_has_candidate(const struct kb_store *s, const char *id) {
  if (s == NULL || id == NULL)
    return 0;
  return cand_set_find(&s->cset, s->cands, sizeof *s->cands, id) >= 0;
}

int kb__store_has_evaluation(const struct kb_store *s, const char *candidate, int tier,
                            int attempt) {
  if (s == NULL || candidate == NULL)
    return 0;
  int64_t row = cand_set_find(&s->cset, s->cands, sizeof *s->cands, candidate);
  if (row < 0)
    return 0;
  struct eval_key k = {row, tier, attempt};
  return eval_set_has(&s->eset, &k);
}

int kb__store_add_candidate(struct kb_store *s, const struct kb_candidate *c, int *added,
                           struct kb_error *err) {
  int rc;
  QUIETLY(rc, add_candidate_impl(s, c, added, err));
  return rc;
}

int kb__store_add_evaluation(struct kb_store *s, const struct kb_result *r, int *added,
                            struct kb_error *err) {
  int rc;
  QUIETLY(rc, add_evaluation_impl(s, r, added, err));
  return rc;
}

int kb__store_add_llm(struct kb_store *s, const struct kb_store_llm *x, int *added,
                     struct kb_error *err) {
  int rc;
  QUIETLY(rc, add_llm_impl(s, x, added, err));
  return rc;
}

int kb__store_has_llm(const struct kb_store *s, const char *request) {
  if (s == NULL || request == NULL)
    return 0;
  return cand_set_find(&s->lset, s->llm_ids, sizeof *s->llm_ids, request) >= 0;
}

const char *kb__store_llm_last_entry(const struct kb_store *s) {
  return s != NULL ? s->last_entry : "";
}

long kb__store_llm_count(const struct kb_store *s) { return s != NULL ? (long)s->n_llm : 0; }

long kb__store_kernel_count(const struct kb_store *s) {
  return s != NULL ? (long)s->n_kerns : 0;
}

int kb__store_set_best(struct kb_store *s, const char *candidate, const char *name, int tier,
                      double median_us, double speedup, struct kb_error *err) {
  int rc;
  QUIETLY(rc, set_best_impl(s, candidate, name, tier, median_us, speedup, err));
  return rc;
}

int kb__store_flush(struct kb_store *s, struct kb_error *err) {
  int rc;
  QUIETLY(rc, flush_impl(s, err));
  return rc;
}

long kb__store_evaluation_count(const struct kb_store *s) {
  return s != NULL ? (long)s->n_evals : 0;
}

long kb__store_candidate_count(const struct kb_store *s) {
  return s != NULL ? (long)s->n_cands : 0;
}

int kb__store_recovered(const struct kb_store *s) { return s != NULL ? s->recovered : 0; }

void kb__store_library_init(void) { H5dont_atexit(); }

int kb__store_library_end(void) {
  if (write_failures == 0 && failed_opens == 0)
    H5close();
  return write_failures;
}

void kb__store_close(struct kb_store *s) {
  if (s == NULL)
    return;
  struct quiet q;
  quiet_begin(&q);
  if (!s->failed)
    flush_impl(s, NULL);
  destroy(s);
  quiet_end(&q);
}
