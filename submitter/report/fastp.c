/* fast_p and the geometric mean speedup (see fastp.h). */
#include "fastp.h"

#include <math.h>

const double kb__fastp_thresholds[KB_FASTP_N] = {0.0, 1.0, 1.5, 2.0};

void kb__fastp_row(const double *speedup, const int *levels, int n, int level,
                   struct kb_fastp_row *row) {
  int count[KB_FASTP_N] = {0};
  double log_sum = 0;
  row->level = level;
  row->tasks = row->correct = 0;
  for (int i = 0; i < n; i++) {
    if (isnan(speedup[i]) || (level >= 0 && levels[i] != level))
      continue;
    row->tasks++;
    if (!(speedup[i] > 0))
      continue; /* no correct candidate: not fast at any p, not in the mean */
    row->correct++;
    log_sum += log(speedup[i]);
    for (int k = 0; k < KB_FASTP_N; k++)
      if (speedup[i] > kb__fastp_thresholds[k])
        count[k]++;
  }
  for (int k = 0; k < KB_FASTP_N; k++)
    row->fast[k] = row->tasks > 0 ? (double)count[k] / row->tasks : NAN;
  row->geomean = row->correct > 0 ? exp(log_sum / row->correct) : NAN;
}

/* 1 when some task with a known baseline has level `level`. */
static int has_level(const double *speedup, const int *levels, int n, int level) {
  for (int i = 0; i < n; i++)
    if (!isnan(speedup[i]) && levels[i] == level)
      return 1;
  return 0;
}

int kb__fastp_table(const double *speedup, const int *levels, int n, struct kb_fastp_row *rows,
                    int max) {
  int max_level = 0, out = 0;
  for (int i = 0; i < n; i++)
    if (!isnan(speedup[i]) && levels[i] > max_level)
      max_level = levels[i];
  for (int level = 1; level <= max_level && out < max; level++)
    if (has_level(speedup, levels, n, level))
      kb__fastp_row(speedup, levels, n, level, &rows[out++]);
  if (out < max && has_level(speedup, levels, n, 0))
    kb__fastp_row(speedup, levels, n, 0, &rows[out++]);
  if (out < max)
    kb__fastp_row(speedup, levels, n, -1, &rows[out++]);
  return out;
}
