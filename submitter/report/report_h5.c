/* Reading one task's HDF5 file (schemas/hdf5-layout.md) for the report: a reader of the
 * documented layout, independent of the writer in scheduler/store.c. Opens as a SWMR reader
 * (works on closed files too, and on files the scheduler still writes) and reads only rows below
 * the root "commit" attribute, which are the durable ones. */
#include <hdf5.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/h5.h"
#include "report_data.h"

#define FORMAT_PREFIX "kernelbrain.h5/" /* formats 1 to 3 are what this reader knows */

/* Rows as this reader wants them in memory; HDF5 converts from the file's packed types by
 * member name. */
struct cand_mem {
  char id[KB_CAND_ID_LEN + 1];
  char name[KB_ID_MAX];
  char generator[16];
  char parent0[KB_CAND_ID_LEN + 1];
  char parent1[KB_CAND_ID_LEN + 1];
  char knobs[256];
  char flags[256];
  double created;
  int best_tier;
  char status[16];
  int64_t source_offset;
  int64_t source_len;
};

struct eval_mem {
  char candidate[KB_CAND_ID_LEN + 1];
  int tier;
  char tier_name[KB_ID_MAX];
  int attempt;
  char status[16];
  char reason[256];
  char runner[KB_ID_MAX];
  char device[KB_ID_MAX];
  double started, finished, compile_s;
  int compile_cached, registers, spills, shared_bytes, sets_checked;
  double max_abs_err, max_rel_err;
  int samples;
  double median_us, p10_us, p90_us, mean_us, min_us, noise;
  int64_t cost_ms;
  int64_t compile_log_offset, compile_log_len;
};

/* The /evaluations columns format 2 added (read only from files of format 2 or later). */
struct eval2_mem {
  double baseline_median_us, same_run_speedup, kernel_us;
  double dram_pct, sm_pct, occupancy_pct, l2_hit_pct;
  int64_t trace_kernels, trace_own_kernels, trace_own_ns, trace_other_ns, trace_late_ns;
  int64_t kernels_dropped, kernel_offset, kernel_count;
};

/* The /evaluations columns format 3 added. */
struct eval3_mem {
  double torch_eager_us, torch_compile_us;
};

struct kern_mem {
  char name[256];
  int grid_x, grid_y, grid_z, block_x, block_y, block_z;
  int registers, static_smem, dynamic_smem;
  int64_t start_ns, end_ns, stream;
};

struct llm_mem {
  char request[KB_CAND_ID_LEN + 1];
  double time;
  char kind[16];
  char status[16];
  char model[KB_ID_MAX];
  int attempts;
  int64_t tokens_in, tokens_out;
  char candidate[KB_CAND_ID_LEN + 1];
  char parent0[KB_CAND_ID_LEN + 1];
  char parent1[KB_CAND_ID_LEN + 1];
  char error[256];
  int64_t prompt_offset, prompt_len, response_offset, response_len;
};

struct commit_mem {
  int64_t candidates, evaluations, source_bytes, compile_log_bytes;
};

struct commit2_mem {
  int64_t kernels, llm, llm_bytes;
};

enum kind { STR, I32, I64, F64 };
struct member {
  const char *name;
  size_t offset;
  size_t size;
  enum kind kind;
};
#define M(st, m, k)                                                                                \
  { #m, offsetof(struct st, m), sizeof(((struct st *)0)->m), k }

static const struct member cand_members[] = {
    M(cand_mem, id, STR),      M(cand_mem, name, STR),          M(cand_mem, generator, STR),
    M(cand_mem, parent0, STR), M(cand_mem, parent1, STR),       M(cand_mem, knobs, STR),
    M(cand_mem, flags, STR),   M(cand_mem, created, F64),       M(cand_mem, best_tier, I32),
    M(cand_mem, status, STR),  M(cand_mem, source_offset, I64), M(cand_mem, source_len, I64),
};

static const struct member eval_members[] = {
    M(eval_mem, candidate, STR),
    M(eval_mem, tier, I32),
    M(eval_mem, tier_name, STR),
    M(eval_mem, attempt, I32),
    M(eval_mem, status, STR),
    M(eval_mem, reason, STR),
    M(eval_mem, runner, STR),
    M(eval_mem, device, STR),
    M(eval_mem, started, F64),
    M(eval_mem, finished, F64),
    M(eval_mem, compile_s, F64),
    M(eval_mem, compile_cached, I32),
    M(eval_mem, registers, I32),
    M(eval_mem, spills, I32),
    M(eval_mem, shared_bytes, I32),
    M(eval_mem, sets_checked, I32),
    M(eval_mem, max_abs_err, F64),
    M(eval_mem, max_rel_err, F64),
    M(eval_mem, samples, I32),
    M(eval_mem, median_us, F64),
    M(eval_mem, p10_us, F64),
    M(eval_mem, p90_us, F64),
    M(eval_mem, mean_us, F64),
    M(eval_mem, min_us, F64),
    M(eval_mem, noise, F64),
    M(eval_mem, cost_ms, I64),
    M(eval_mem, compile_log_offset, I64),
    M(eval_mem, compile_log_len, I64),
};

static const struct member eval2_members[] = {
    M(eval2_mem, baseline_median_us, F64), M(eval2_mem, same_run_speedup, F64),
    M(eval2_mem, kernel_us, F64),          M(eval2_mem, dram_pct, F64),
    M(eval2_mem, sm_pct, F64),             M(eval2_mem, occupancy_pct, F64),
    M(eval2_mem, l2_hit_pct, F64),         M(eval2_mem, trace_kernels, I64),
    M(eval2_mem, trace_own_kernels, I64),  M(eval2_mem, trace_own_ns, I64),
    M(eval2_mem, trace_other_ns, I64),     M(eval2_mem, trace_late_ns, I64),
    M(eval2_mem, kernels_dropped, I64),    M(eval2_mem, kernel_offset, I64),
    M(eval2_mem, kernel_count, I64),
};

static const struct member eval3_members[] = {
    M(eval3_mem, torch_eager_us, F64),
    M(eval3_mem, torch_compile_us, F64),
};

static const struct member kern_members[] = {
    M(kern_mem, name, STR),        M(kern_mem, grid_x, I32),      M(kern_mem, grid_y, I32),
    M(kern_mem, grid_z, I32),      M(kern_mem, block_x, I32),     M(kern_mem, block_y, I32),
    M(kern_mem, block_z, I32),     M(kern_mem, registers, I32),   M(kern_mem, static_smem, I32),
    M(kern_mem, dynamic_smem, I32), M(kern_mem, start_ns, I64),   M(kern_mem, end_ns, I64),
    M(kern_mem, stream, I64),
};

static const struct member llm_members[] = {
    M(llm_mem, request, STR),       M(llm_mem, time, F64),          M(llm_mem, kind, STR),
    M(llm_mem, status, STR),        M(llm_mem, model, STR),         M(llm_mem, attempts, I32),
    M(llm_mem, tokens_in, I64),     M(llm_mem, tokens_out, I64),    M(llm_mem, candidate, STR),
    M(llm_mem, parent0, STR),       M(llm_mem, parent1, STR),       M(llm_mem, error, STR),
    M(llm_mem, prompt_offset, I64), M(llm_mem, prompt_len, I64),
    M(llm_mem, response_offset, I64), M(llm_mem, response_len, I64),
};

static const struct member commit2_members[] = {
    M(commit2_mem, kernels, I64),
    M(commit2_mem, llm, I64),
    M(commit2_mem, llm_bytes, I64),
};

static const struct member commit_members[] = {
    M(commit_mem, candidates, I64),
    M(commit_mem, evaluations, I64),
    M(commit_mem, source_bytes, I64),
    M(commit_mem, compile_log_bytes, I64),
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* A memory compound type for `m` (new), or -1. Strings are fixed-length UTF-8, as written. */
static hid_t mem_type(const struct member *m, size_t n, size_t size) {
  hid_t t = H5Tcreate(H5T_COMPOUND, size);
  for (size_t i = 0; t >= 0 && i < n; i++) {
    hid_t mt = -1;
    int own = 0;
    switch (m[i].kind) {
    case STR:
      mt = H5Tcopy(H5T_C_S1);
      own = 1;
      if (mt >= 0 && (H5Tset_size(mt, m[i].size) < 0 || H5Tset_strpad(mt, H5T_STR_NULLTERM) < 0 ||
                      H5Tset_cset(mt, H5T_CSET_UTF8) < 0)) {
        H5Tclose(mt);
        mt = -1;
      }
      break;
    case I32:
      mt = H5T_NATIVE_INT;
      break;
    case I64:
      mt = H5T_NATIVE_INT64;
      break;
    case F64:
      mt = H5T_NATIVE_DOUBLE;
      break;
    }
    herr_t rc = mt < 0 ? -1 : H5Tinsert(t, m[i].name, m[i].offset, mt);
    if (own && mt >= 0)
      H5Tclose(mt);
    if (rc < 0) {
      H5Tclose(t);
      t = -1;
    }
  }
  return t;
}

/* Rows [0, n) of the 1-D dataset `name` into `buf` (`n` elements of `mt`). */
static herr_t read_rows(hid_t file, const char *name, hid_t mt, void *buf, int64_t n) {
  if (n <= 0)
    return 0;
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  if (ds < 0)
    return -1;
  hsize_t start[1] = {0}, count[1] = {(hsize_t)n};
  hid_t fsp = H5Dget_space(ds), msp = H5Screate_simple(1, count, NULL);
  herr_t rc = -1;
  if (fsp >= 0 && msp >= 0 &&
      H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, NULL, count, NULL) >= 0)
    rc = H5Dread(ds, mt, msp, fsp, H5P_DEFAULT, buf);
  if (msp >= 0)
    H5Sclose(msp);
  if (fsp >= 0)
    H5Sclose(fsp);
  H5Dclose(ds);
  return rc;
}

/* The description is cut to 157 characters: with ": " before it, it fits h5_reason's 160. */
#define H5_DESC_MAX 158
static herr_t innermost(unsigned n, const H5E_error2_t *e, void *data) {
  if (n == 0 && e->desc != NULL)
    snprintf(data, H5_DESC_MAX, "%s", e->desc);
  return 0;
}

/* HDF5's innermost error of the last failed call as ": <description>" into `out` (160 bytes),
 * "" when it said none: what a damaged file's read ran into ("incorrect metadata checksum ...") */
static void h5_reason(char out[160]) {
  char d[H5_DESC_MAX] = "";
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, d);
  snprintf(out, 160, "%s%s", d[0] ? ": " : "", d);
}

/* Current extent of 1-D dataset `name`, or -1. */
static int64_t extent(hid_t file, const char *name) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  if (ds < 0)
    return -1;
  hid_t sp = H5Dget_space(ds);
  hsize_t dims[1] = {0};
  int nd = sp >= 0 ? H5Sget_simple_extent_dims(sp, dims, NULL) : -1;
  if (sp >= 0)
    H5Sclose(sp);
  H5Dclose(ds);
  return nd == 1 ? (int64_t)dims[0] : -1;
}

/* The whole u8 dataset `name` as a NUL-terminated text (new), or NULL. `limit` >= 0 caps it. */
static char *read_text(hid_t file, const char *name, int64_t limit) {
  int64_t n = extent(file, name);
  if (n < 0)
    return NULL;
  if (limit >= 0 && n > limit)
    n = limit;
  char *s = kb_malloc((size_t)n + 1);
  if (s == NULL)
    return NULL;
  if (read_rows(file, name, H5T_NATIVE_UINT8, s, n) < 0) {
    kb_free(s);
    return NULL;
  }
  s[n] = '\0';
  return s;
}

/* Bytes [off, off+len) of a heap held in memory as `heap` of `size` bytes (new), or NULL. */
static char *slice(const char *heap, int64_t size, int64_t off, int64_t len) {
  if (heap == NULL || off < 0 || len < 0 || off > size || len > size - off)
    return kb_strdup("");
  return kb_strndup(heap + off, (size_t)len);
}

static int read_string_attr(hid_t loc, const char *name, char *out, size_t cap) {
  out[0] = '\0';
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  if (a < 0)
    return -1;
  hid_t ft = H5Aget_type(a);
  int rc = -1;
  if (ft >= 0 && H5Tget_class(ft) == H5T_STRING && H5Tis_variable_str(ft) == 0) {
    size_t size = H5Tget_size(ft);
    hid_t mt = H5Tcopy(H5T_C_S1);
    char *buf = kb_calloc(size + 1, 1);
    if (buf && mt >= 0 && H5Tset_size(mt, size) >= 0 && H5Tset_cset(mt, H5T_CSET_UTF8) >= 0 &&
        H5Aread(a, mt, buf) >= 0) {
      snprintf(out, cap, "%s", buf);
      rc = 0;
    }
    kb_free(buf);
    if (mt >= 0)
      H5Tclose(mt);
  }
  if (ft >= 0)
    H5Tclose(ft);
  H5Aclose(a);
  return rc;
}

/* Opens `path` read-only, as an SWMR reader first (a file its writer still has open, or left
 * by a killed writer), else plainly. On failure `why` (160 bytes) gets h5_reason()'s text of
 * the SWMR open's failure (the plain open's, when the SWMR one could not be tried). */
static hid_t open_file(const char *path, char why[160]) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  hid_t f = -1;
  why[0] = '\0';
  if (fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) >= 0 &&
      kb_h5_bound_retries(fapl) >= 0) { /* a damaged file fails, never sleeps for good */
    f = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl);
    if (f < 0)
      h5_reason(why);
  }
  if (f < 0) {
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0 && why[0] == '\0')
      h5_reason(why);
  }
  if (fapl >= 0)
    H5Pclose(fapl);
  return f;
}

static void copy_eval(struct kb_rep_eval *e, const struct eval_mem *m, const char *logs,
                      int64_t log_bytes) {
  memset(e, 0, sizeof *e);
  e->tier = m->tier;
  snprintf(e->tier_name, sizeof e->tier_name, "%s", m->tier_name);
  e->attempt = m->attempt;
  snprintf(e->status, sizeof e->status, "%s", m->status);
  snprintf(e->reason, sizeof e->reason, "%s", m->reason);
  snprintf(e->runner, sizeof e->runner, "%s", m->runner);
  snprintf(e->device, sizeof e->device, "%s", m->device);
  e->started = m->started;
  e->finished = m->finished;
  e->compile_s = m->compile_s;
  e->compile_cached = m->compile_cached;
  e->registers = m->registers;
  e->spills = m->spills;
  e->shared_bytes = m->shared_bytes;
  e->sets_checked = m->sets_checked;
  e->max_abs_err = m->max_abs_err;
  e->max_rel_err = m->max_rel_err;
  e->samples = m->samples;
  e->median_us = m->samples > 0 ? m->median_us : NAN;
  e->p10_us = m->p10_us;
  e->p90_us = m->p90_us;
  e->mean_us = m->mean_us;
  e->min_us = m->min_us;
  e->noise = m->noise;
  e->cost_ms = m->cost_ms;
  if (m->compile_log_len > 0)
    e->compile_log = slice(logs, log_bytes, m->compile_log_offset, m->compile_log_len);
  e->baseline_median_us = e->same_run_speedup = e->kernel_us = NAN;
  e->dram_pct = e->sm_pct = e->occupancy_pct = e->l2_hit_pct = NAN;
  e->trace_kernels = e->trace_own_kernels = e->trace_own_ns = -1;
  e->trace_other_ns = e->trace_late_ns = -1;
  e->torch_eager_us = e->torch_compile_us = NAN;
}

/* The format-2 columns `m2` of an evaluation into `e`, with its kernel records from `kern`
 * (`n_kern` committed rows). Returns KB_OK or KB_ENOMEM. */
static int copy_eval2(struct kb_rep_eval *e, const struct eval2_mem *m2,
                      const struct kern_mem *kern, int64_t n_kern) {
  e->baseline_median_us = m2->baseline_median_us;
  e->same_run_speedup = m2->same_run_speedup;
  e->kernel_us = m2->kernel_us;
  e->dram_pct = m2->dram_pct;
  e->sm_pct = m2->sm_pct;
  e->occupancy_pct = m2->occupancy_pct;
  e->l2_hit_pct = m2->l2_hit_pct;
  e->trace_kernels = m2->trace_kernels;
  e->trace_own_kernels = m2->trace_own_kernels;
  e->trace_own_ns = m2->trace_own_ns;
  e->trace_other_ns = m2->trace_other_ns;
  e->trace_late_ns = m2->trace_late_ns;
  e->kernels_dropped = m2->kernels_dropped;
  int64_t off = m2->kernel_offset, n = m2->kernel_count;
  if (kern == NULL || n <= 0 || off < 0 || off > n_kern || n > n_kern - off)
    return KB_OK; /* none, or rows past the commit: shown as none */
  e->kernels = kb_calloc((size_t)n, sizeof *e->kernels);
  if (e->kernels == NULL)
    return KB_ENOMEM;
  for (int64_t i = 0; i < n; i++) {
    const struct kern_mem *k = &kern[off + i];
    struct kb_rep_kernel *x = &e->kernels[i];
    snprintf(x->name, sizeof x->name, "%s", k->name);
    x->grid[0] = k->grid_x;
    x->grid[1] = k->grid_y;
    x->grid[2] = k->grid_z;
    x->block[0] = k->block_x;
    x->block[1] = k->block_y;
    x->block[2] = k->block_z;
    x->registers = k->registers;
    x->static_smem = k->static_smem;
    x->dynamic_smem = k->dynamic_smem;
    x->start_ns = k->start_ns;
    x->end_ns = k->end_ns;
    x->stream = k->stream;
  }
  e->n_kernels = (int)n;
  return KB_OK;
}

/* Attaches evaluation rows to their candidates, keeping file order within a candidate. Rows of
 * unknown candidates (the writer never makes them) are skipped. */
static int attach_evals(struct kb_rep_task *t, const struct eval_mem *rows,
                        const struct eval2_mem *rows2, const struct eval3_mem *rows3, int64_t n,
                        const char *logs,
                        int64_t log_bytes, const struct kern_mem *kern, int64_t n_kern,
                        struct kb_report *r) {
  int *owner = kb_calloc((size_t)n + 1, sizeof *owner);
  int *counts = kb_calloc((size_t)t->n_cands + 1, sizeof *counts);
  int rc = owner && counts ? KB_OK : KB_ENOMEM;
  if (rc == KB_OK)
    rc = kb__rep_index(t);
  for (int64_t i = 0; rc == KB_OK && i < n; i++) {
    owner[i] = kb__rep_find(t, rows[i].candidate);
    if (owner[i] >= 0)
      counts[owner[i]]++;
  }
  for (int c = 0; rc == KB_OK && c < t->n_cands; c++)
    if (counts[c] > 0 &&
        (t->cands[c].evals = kb_calloc((size_t)counts[c], sizeof *t->cands[c].evals)) == NULL)
      rc = KB_ENOMEM;
  for (int64_t i = 0; rc == KB_OK && i < n; i++) {
    if (owner[i] < 0)
      continue;
    struct kb_rep_cand *cand = &t->cands[owner[i]];
    struct kb_rep_eval *e = &cand->evals[cand->n_evals++];
    copy_eval(e, &rows[i], logs, log_bytes);
    if (rows2 != NULL)
      rc = copy_eval2(e, &rows2[i], kern, n_kern);
    if (rows3 != NULL) {
      e->torch_eager_us = rows3[i].torch_eager_us;
      e->torch_compile_us = rows3[i].torch_compile_us;
    }
    int tier = rows[i].tier;
    if (tier >= 0 && tier < KB_MAX_TIERS) {
      if (r->tier_names[tier][0] == '\0')
        snprintf(r->tier_names[tier], sizeof r->tier_names[tier], "%s", rows[i].tier_name);
      if (tier + 1 > r->n_tiers)
        r->n_tiers = tier + 1;
    }
    t->n_evals++;
  }
  kb_free(owner);
  kb_free(counts);
  return rc;
}

/* What format 2 adds, read by read_v2(), and format 3, by read_v3(). */
struct v2 {
  struct eval2_mem *evals; /* owned, one per evaluation row read */
  struct eval3_mem *evals3; /* owned, one per row; NULL before format 3 */
  struct kern_mem *kern;   /* owned, n_kern committed /profiles/kernels rows */
  int64_t n_kern;
};

static void v2_release(struct v2 *v) {
  kb_free(v->evals);
  kb_free(v->evals3);
  kb_free(v->kern);
}

/* Reads the format-2 evaluation columns of the `ne` rows, the committed kernel records, and the
 * LLM exchanges into t->llm. Errors: KB_EHDF5, KB_ENOMEM. */
static int read_v2(hid_t f, const char *path, int64_t ne, struct v2 *v, struct kb_rep_task *t,
                   struct kb_error *err) {
  hid_t e2t = mem_type(eval2_members, COUNT(eval2_members), sizeof(struct eval2_mem));
  hid_t kt = mem_type(kern_members, COUNT(kern_members), sizeof(struct kern_mem));
  hid_t lt = mem_type(llm_members, COUNT(llm_members), sizeof(struct llm_mem));
  hid_t ct = mem_type(commit2_members, COUNT(commit2_members), sizeof(struct commit2_mem));
  struct commit2_mem c = {0};
  struct llm_mem *rows = NULL;
  char *text = NULL;
  int rc = KB_OK;
  hid_t a = H5Aopen(f, "commit", H5P_DEFAULT);
  if (e2t < 0 || kt < 0 || lt < 0 || ct < 0 || a < 0 || H5Aread(a, ct, &c) < 0) {
    rc = kb_error_set(err, KB_EHDF5, "%s: cannot read the format 2 \"commit\" counts", path);
    goto out;
  }
  int64_t nk = extent(f, "profiles/kernels"), nl = extent(f, "llm/requests");
  nk = c.kernels < nk ? c.kernels : nk;
  nl = c.llm < nl ? c.llm : nl;
  if (nk < 0 || nl < 0) {
    rc = kb_error_set(err, KB_EHDF5, "%s: no \"/profiles/kernels\" or \"/llm/requests\"", path);
    goto out;
  }
  v->evals = kb_calloc((size_t)ne + 1, sizeof *v->evals);
  v->kern = kb_calloc((size_t)nk + 1, sizeof *v->kern);
  rows = kb_calloc((size_t)nl + 1, sizeof *rows);
  t->llm = kb_calloc((size_t)nl + 1, sizeof *t->llm);
  if (v->evals == NULL || v->kern == NULL || rows == NULL || t->llm == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "%s: out of memory", path);
    goto out;
  }
  if (read_rows(f, "evaluations", e2t, v->evals, ne) < 0 ||
      read_rows(f, "profiles/kernels", kt, v->kern, nk) < 0 ||
      read_rows(f, "llm/requests", lt, rows, nl) < 0) {
    rc = kb_error_set(err, KB_EHDF5, "%s: cannot read the profiles or llm tables", path);
    goto out;
  }
  v->n_kern = nk;
  text = nl > 0 ? read_text(f, "llm/text", c.llm_bytes) : NULL;
  for (int64_t i = 0; i < nl; i++) {
    const struct llm_mem *m = &rows[i];
    struct kb_rep_llm *x = &t->llm[t->n_llm++];
    snprintf(x->request, sizeof x->request, "%s", m->request);
    x->time = m->time;
    snprintf(x->kind, sizeof x->kind, "%s", m->kind);
    snprintf(x->status, sizeof x->status, "%s", m->status);
    snprintf(x->model, sizeof x->model, "%s", m->model);
    x->attempts = m->attempts;
    x->tokens_in = m->tokens_in;
    x->tokens_out = m->tokens_out;
    snprintf(x->candidate, sizeof x->candidate, "%s", m->candidate);
    snprintf(x->parent0, sizeof x->parent0, "%s", m->parent0);
    snprintf(x->parent1, sizeof x->parent1, "%s", m->parent1);
    snprintf(x->error, sizeof x->error, "%s", m->error);
    x->prompt = slice(text, c.llm_bytes, m->prompt_offset, m->prompt_len);
    x->response = slice(text, c.llm_bytes, m->response_offset, m->response_len);
    if (x->prompt == NULL || x->response == NULL) {
      rc = kb_error_set(err, KB_ENOMEM, "%s: out of memory", path);
      goto out;
    }
  }
out:
  if (a >= 0)
    H5Aclose(a);
  if (e2t >= 0)
    H5Tclose(e2t);
  if (kt >= 0)
    H5Tclose(kt);
  if (lt >= 0)
    H5Tclose(lt);
  if (ct >= 0)
    H5Tclose(ct);
  kb_free(rows);
  kb_free(text);
  return rc;
}

/* A double attribute `name` of group `group` of `f`; NaN when absent or unreadable. */
static double read_double_attr(hid_t f, const char *group, const char *name) {
  double v = NAN;
  hid_t a = H5Aopen_by_name(f, group, name, H5P_DEFAULT, H5P_DEFAULT);
  if (a >= 0 && H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0)
    v = NAN;
  if (a >= 0)
    H5Aclose(a);
  return v;
}

/* Reads the format-3 evaluation columns of the `ne` rows and the /torch medians and tier into
 * `t`. Errors: KB_EHDF5, KB_ENOMEM. */
static int read_v3(hid_t f, const char *path, int64_t ne, struct v2 *v, struct kb_rep_task *t,
                   struct kb_error *err) {
  hid_t e3t = mem_type(eval3_members, COUNT(eval3_members), sizeof(struct eval3_mem));
  int rc = KB_OK;
  v->evals3 = kb_calloc((size_t)ne + 1, sizeof *v->evals3);
  if (e3t < 0 || v->evals3 == NULL)
    rc = kb_error_set(err, KB_ENOMEM, "%s: out of memory", path);
  else if (read_rows(f, "evaluations", e3t, v->evals3, ne) < 0)
    rc = kb_error_set(err, KB_EHDF5, "%s: cannot read the torch columns of /evaluations", path);
  if (e3t >= 0)
    H5Tclose(e3t);
  t->torch_eager_us = read_double_attr(f, "torch", "eager_median_us");
  t->torch_compile_us = read_double_attr(f, "torch", "compile_median_us");
  int tier = -1;
  hid_t a = H5Aopen_by_name(f, "torch", "tier", H5P_DEFAULT, H5P_DEFAULT);
  if (a >= 0 && H5Aread(a, H5T_NATIVE_INT, &tier) < 0)
    tier = -1;
  if (a >= 0)
    H5Aclose(a);
  t->torch_tier = tier;
  return rc;
}

/* The file's attributes: "format" (into `format`, `size` bytes) must name a kernelbrain.h5
 * version; "task" gives t->id, and "campaign" r->campaign when that is still empty. */
static int read_header(hid_t f, const char *path, char *format, size_t size,
                       struct kb_rep_task *t, struct kb_report *r, struct kb_error *err) {
  /* Later formats keep these columns (members are read by name), so any version is tried. */
  if (read_string_attr(f, "format", format, size) ||
      strncmp(format, FORMAT_PREFIX, sizeof FORMAT_PREFIX - 1) != 0)
    return kb_error_set(err, KB_EHDF5, "%s: attribute \"format\" is \"%s\", want \"%s<version>\"",
                        path, format, FORMAT_PREFIX);
  char campaign[KB_ID_MAX];
  read_string_attr(f, "task", t->id, sizeof t->id);
  if (read_string_attr(f, "campaign", campaign, sizeof campaign) == 0 && r->campaign[0] == '\0')
    snprintf(r->campaign, sizeof r->campaign, "%s", campaign);
  return KB_OK;
}

/* The "commit" attribute (of type `commit_t`) into `commit`: the rows and heap bytes the writer
 * committed. Returns 0, or -1. */
static int read_commit(hid_t f, hid_t commit_t, struct commit_mem *commit) {
  hid_t a = H5Aopen(f, "commit", H5P_DEFAULT);
  if (a < 0)
    return -1;
  herr_t rc = H5Aread(a, commit_t, commit);
  H5Aclose(a);
  return rc < 0 ? -1 : 0;
}

/* The `nc` candidate rows into t->cands (room for them allocated), each with its source cut
 * from `sources` (`source_bytes`). Returns 0, or -1 when out of memory. */
static int copy_cands(struct kb_rep_task *t, const struct cand_mem *cands, int64_t nc,
                      const char *sources, int64_t source_bytes) {
  for (int64_t i = 0; i < nc; i++) {
    struct kb_rep_cand *c = &t->cands[t->n_cands++];
    const struct cand_mem *m = &cands[i];
    snprintf(c->id, sizeof c->id, "%s", m->id);
    snprintf(c->name, sizeof c->name, "%s", m->name);
    snprintf(c->generator, sizeof c->generator, "%s", m->generator);
    snprintf(c->parent0, sizeof c->parent0, "%s", m->parent0);
    snprintf(c->parent1, sizeof c->parent1, "%s", m->parent1);
    snprintf(c->knobs, sizeof c->knobs, "%s", m->knobs);
    snprintf(c->flags, sizeof c->flags, "%s", m->flags);
    snprintf(c->status, sizeof c->status, "%s", m->status);
    c->created = m->created;
    c->best_tier = m->best_tier;
    c->source = slice(sources, source_bytes, m->source_offset, m->source_len);
    c->timed_tier = -1;
    c->median_us = c->speedup = c->speedup_eager = c->speedup_compile = NAN;
    if (c->source == NULL)
      return -1;
  }
  return 0;
}

/* Kept whole (91 lines): one open, read, close of a file with one cleanup label for the HDF5
 * handles and buffers every step shares. */
int kb__report_read_h5(const char *path, struct kb_rep_task *t, struct kb_report *r,
                       struct kb_error *err) {
  hid_t cand_t = -1, eval_t = -1, commit_t = -1, f = -1;
  struct cand_mem *cands = NULL;
  struct eval_mem *evals = NULL;
  char *sources = NULL, *logs = NULL, format[64];
  struct commit_mem commit = {0};
  struct v2 v2;
  memset(&v2, 0, sizeof v2);
  /* HDF5's shutdown at exit loops ("infinite loop closing library", a screen of its ids) on
   * what a damaged file's failed reads leave in its caches; files read need no shutdown. Only
   * the process's first HDF5 call can turn it off: later calls change nothing. */
  H5dont_atexit();
  int rc = KB_OK;
  H5E_auto2_t func;
  void *data;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  t->file = kb_strdup(path);
  t->baseline_cand = -1;
  t->torch_eager_us = t->torch_compile_us = NAN;
  t->torch_tier = t->torch_best = t->problem = -1;
  char why[160];
  f = open_file(path, why);
  if (f < 0) {
    rc = kb_error_set(err, KB_EHDF5, "%s: cannot open as an HDF5 file%s", path, why);
    goto out;
  }
  rc = read_header(f, path, format, sizeof format, t, r, err);
  if (rc)
    goto out;
  cand_t = mem_type(cand_members, COUNT(cand_members), sizeof(struct cand_mem));
  eval_t = mem_type(eval_members, COUNT(eval_members), sizeof(struct eval_mem));
  commit_t = mem_type(commit_members, COUNT(commit_members), sizeof(struct commit_mem));
  if (read_commit(f, commit_t, &commit)) {
    rc = kb_error_set(err, KB_EHDF5, "%s: cannot read attribute \"commit\"", path);
    goto out;
  }
  int64_t nc = extent(f, "candidates"), ne = nc < 0 ? -1 : extent(f, "evaluations");
  if (nc < 0 || ne < 0) {
    h5_reason(why);
    rc = kb_error_set(err, KB_EHDF5, "%s: cannot open table \"/%s\" (a damaged file, or not "
                      "written by kb-scheduler)%s", path, nc < 0 ? "candidates" : "evaluations",
                      why);
    goto out;
  }
  nc = commit.candidates < nc ? commit.candidates : nc;
  ne = commit.evaluations < ne ? commit.evaluations : ne;
  cands = kb_calloc((size_t)nc + 1, sizeof *cands);
  evals = kb_calloc((size_t)ne + 1, sizeof *evals);
  t->cands = kb_calloc((size_t)nc + 1, sizeof *t->cands);
  if (cands == NULL || evals == NULL || t->cands == NULL) {
    rc = kb_error_set(err, KB_ENOMEM, "%s: out of memory", path);
    goto out;
  }
  if (read_rows(f, "candidates", cand_t, cands, nc) < 0 ||
      read_rows(f, "evaluations", eval_t, evals, ne) < 0) {
    rc = kb_error_set(err, KB_EHDF5, "%s: cannot read \"/candidates\" or \"/evaluations\"", path);
    goto out;
  }
  t->spec_json = read_text(f, "task/spec_json", -1);
  t->reference = read_text(f, "task/reference", -1);
  sources = read_text(f, "sources/data", commit.source_bytes);
  logs = read_text(f, "compile_logs/data", commit.compile_log_bytes);
  if (copy_cands(t, cands, nc, sources, commit.source_bytes)) {
    rc = kb_error_set(err, KB_ENOMEM, "%s: out of memory", path);
    goto out;
  }
  t->format = (int)strtol(format + sizeof FORMAT_PREFIX - 1, NULL, 10);
  if (t->format >= 2) {
    rc = read_v2(f, path, ne, &v2, t, err);
    if (rc)
      goto out;
  }
  if (t->format >= 3) {
    rc = read_v3(f, path, ne, &v2, t, err);
    if (rc)
      goto out;
  }
  if (attach_evals(t, evals, v2.evals, v2.evals3, ne, logs, commit.compile_log_bytes, v2.kern,
                   v2.n_kern, r))
    rc = kb_error_set(err, KB_ENOMEM, "%s: out of memory", path);
out:
  v2_release(&v2);
  kb_free(cands);
  kb_free(evals);
  kb_free(sources);
  kb_free(logs);
  if (cand_t >= 0)
    H5Tclose(cand_t);
  if (eval_t >= 0)
    H5Tclose(eval_t);
  if (commit_t >= 0)
    H5Tclose(commit_t);
  if (f >= 0)
    H5Fclose(f);
  H5Eset_auto2(H5E_DEFAULT, func, data);
  return rc;
}
