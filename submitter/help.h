/* kb-submit's per-command help: `kb-submit report --help` prints report's usage, options and
 * exit codes (the global help lives in main.c). */
#ifndef KB_SUBMITTER_HELP_H
#define KB_SUBMITTER_HELP_H

#include <stdio.h>

/* Writes the help of command `cmd` (borrowed: "report") to `out` (borrowed). Returns 0, or -1
 * (nothing written) when `cmd` is not a command that takes a campaign. */
int kb__submit_command_usage(const char *cmd, FILE *out);

#endif
