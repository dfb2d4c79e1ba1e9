/* fast_p: KernelBench's summary of a set of tasks against a torch baseline. fast_p is the share
 * of tasks whose best candidate is correct and more than p times faster than the baseline; a
 * task without a correct candidate counts as not fast. The report shows it per KernelBench
 * level for p = 0, 1, 1.5, 2, against torch eager and against torch.compile, with the geometric
 * mean speedup (docs/report.md, "fast_p"). Pure functions on numbers; no allocation.
 */
#ifndef KB_SUBMITTER_FASTP_H
#define KB_SUBMITTER_FASTP_H

#define KB_FASTP_N 4 /* thresholds in kb__fastp_thresholds */

/* The thresholds p: 0, 1, 1.5, 2. */
extern const double kb__fastp_thresholds[KB_FASTP_N];

/* One row of the table: a group of tasks (one level, or all). */
struct kb_fastp_row {
  int level;                /* KernelBench level; 0 = tasks of no level; -1 = every task */
  int tasks;                /* tasks counted: those whose baseline is known */
  int correct;              /* of them, with a correct timed best */
  double fast[KB_FASTP_N];  /* fast_p for each threshold, 0..1; NaN when tasks == 0 */
  double geomean;           /* geometric mean speedup over the correct ones; NaN when none */
};

/* Fills `row` (caller-owned) from `n` tasks' speedups `speedup` (borrowed): per task the
 * baseline time over its best candidate's time, 0 when it has no correct candidate, NaN when
 * the baseline is unknown (the task is left out). Only tasks whose `level[i]` equals `level`
 * count, every task when `level` is -1; `level` may be NULL when `level` is -1. */
void kb__fastp_row(const double *speedup, const int *levels, int n, int level,
                   struct kb_fastp_row *row);

/* The table: a row per level present among the `n` tasks with a known baseline (ascending, the
 * tasks of no level as level 0 after the others), then one row for every task (level -1).
 * Writes at most `max` rows into `rows` (caller-owned) and returns how many. */
int kb__fastp_table(const double *speedup, const int *levels, int n, struct kb_fastp_row *rows,
                    int max);

#endif
