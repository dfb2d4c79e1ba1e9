/* kb-tool-guard: runs a tool for kb-runner and ends it when the runner dies (guard.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "guard.h"
#include "kb/cli.h"
#include "kb/error.h"

static void usage(FILE *to) {
  fputs("usage: kb-tool-guard --parent PID PROGRAM [ARG...]\n"
        "\n"
        "Runs PROGRAM (an absolute path) with its arguments in this process group and kills the\n"
        "group when the process PID (the kb-runner that started it) dies; a SIGTERM is passed on\n"
        "to PROGRAM. kb-runner starts its compilers through it; it is not meant to be run by hand.\n"
        "\n"
        "exit codes: PROGRAM's own (or its signal); 2 usage; 127 PROGRAM could not be started\n",
        to);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--help") == 0) {
    usage(stdout);
    return KB_EXIT_OK;
  }
  if (argc == 2 && strcmp(argv[1], "--version") == 0)
    return kb_cli_version("kb-tool-guard");
  long parent = 0;
  struct kb_error err = {0};
  if (argc < 4 || strcmp(argv[1], "--parent") != 0) {
    fprintf(stderr, "kb-tool-guard: expected --parent PID PROGRAM [ARG...]\n");
    return kb_cli_try_help("kb-tool-guard");
  }
  if (kb_cli_parse_long("--parent", argv[2], 1, 1L << 30, &parent, &err) != KB_OK)
    return kb_cli_usage("kb-tool-guard", &err);
  if (argv[3][0] != '/') {
    fprintf(stderr, "kb-tool-guard: PROGRAM \"%s\" is not an absolute path\n", argv[3]);
    return kb_cli_try_help("kb-tool-guard");
  }
  kb__guard_run((pid_t)parent, argv + 3);
  fprintf(stderr, "kb-tool-guard: cannot run \"%s\": %s\n", argv[3], strerror(errno));
  return 127;
}
