/* Timing statistics of a set of samples, as the sandbox reports them. */
#ifndef KB_SANDBOX_STATS_H
#define KB_SANDBOX_STATS_H

#include "kb/result.h"

/* Fills `t` from `n` samples (microseconds, sorted in place) and `warmup`: median, p10 and p90
 * by linear interpolation between order statistics, mean, min, and noise = sample standard
 * deviation / mean. n = 0 gives an untimed struct (samples 0, values 0). */
void kb__timing_stats(double *samples, int n, int warmup, struct kb_timing *t);

#endif
