/* Deterministic candidates and results for the store tests, and temp-dir helpers.
 *
 * The same sequence is rebuilt in Python by check_h5.py (gen_candidate, gen_eval), so a file the
 * writer made can be checked row by row. Evaluation i is for candidate i / 3 at tier i % 3,
 * attempt 1; candidate k is added just before evaluation 3k.
 */
#ifndef KB_TESTS_STORE_FIXTURE_H
#define KB_TESTS_STORE_FIXTURE_H

#include "kb/candidate.h"
#include "kb/result.h"
#include "store.h"

#define FX_CAMPAIGN "demo"
#define FX_TASK "sum"
#define FX_SPEC "{\"schema\": \"kernelbrain.task/1\", \"id\": \"sum\"}\n"
#define FX_REFERENCE "float reference_sum(const float *x, int n);\n"

/* Owns the texts a candidate points at, so tests need not call candidate.c. */
struct fx_candidate {
  struct kb_candidate c; /* knobs, flags, source point into the buffers below */
  char knobs[64];
  char flags[16];
  char source[1024];
};

/* The task info of every fixture file (static strings). */
struct kb_store_task_info fx_info(void);
/* Writes the id of candidate `k` ("%064lx") into `out`. */
void fx_id(char out[KB_CAND_ID_LEN + 1], unsigned long k);
/* Fills `fc` with candidate `k`. */
void fx_candidate(struct fx_candidate *fc, unsigned long k);
/* Fills `r` with evaluation `i`; r->compile_log points at `log` (64 bytes) or is NULL. */
void fx_result(struct kb_result *r, unsigned long i, char log[64]);
/* The /best the loop writer sets after evaluation `i` (i % 3 == 2). */
double fx_median(unsigned long i);

/* Makes a fresh temp dir into `dir` (64 bytes). Returns 0 or -1. */
int fx_mkdtemp(char dir[64]);
/* Removes the files in `dir` and `dir` itself (one level deep). Returns 0 or -1. */
int fx_rmdir(const char *dir);

#endif
