/* Prints a campaign's leaderboard from its summary.json (written by kb-scheduler). */
#ifndef KB_LEADERBOARD_H
#define KB_LEADERBOARD_H

#include <stdio.h>

struct kb_error;

/* Reads `summary_path` and prints, per task, its candidates ranked with tier, median time and
 * speedup over the baseline, then the HDF5 file paths, to `out` (borrowed). The budget is in
 * the campaign file's unit, gpu_seconds; names are as wide as the longest (up to 40) and longer
 * ones are cut in the middle (kb_cli_fit_name), keeping the tail that tells them apart. `top` limits rows
 * per task (0 = all). Errors: KB_EIO, KB_EPARSE naming the file. */
int kb__leaderboard_print(const char *summary_path, FILE *out, int top, struct kb_error *err);

#endif
