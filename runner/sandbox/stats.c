/* Timing statistics (see stats.h). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Value at quantile `q` of sorted `v` (n > 0), interpolating between neighbours. */
static double quantile(const double *v, int n, double q) {
  double pos = q * (double)(n - 1);
  int lo = (int)floor(pos);
  int hi = lo + 1 < n ? lo + 1 : lo;
  double frac = pos - (double)lo;
  return v[lo] + (v[hi] - v[lo]) * frac;
}

void kb__timing_stats(double *samples, int n, int warmup, struct kb_timing *t) {
  memset(t, 0, sizeof *t);
  t->warmup = warmup;
  if (n <= 0)
    return;
  qsort(samples, (size_t)n, sizeof *samples, cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += samples[i];
  double mean = sum / n;
  double ss = 0;
  for (int i = 0; i < n; i++)
    ss += (samples[i] - mean) * (samples[i] - mean);
  t->samples = n;
  t->median_us = quantile(samples, n, 0.5);
  t->p10_us = quantile(samples, n, 0.1);
  t->p90_us = quantile(samples, n, 0.9);
  t->mean_us = mean;
  t->min_us = samples[0];
  t->noise = n > 1 && mean > 0 ? sqrt(ss / (n - 1)) / mean : 0;
}
