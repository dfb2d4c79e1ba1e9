/* kb-sandbox: the evaluation process kb-runner starts and talks to over stdin and stdout
 * (docs/sandbox.md). Not meant to be run by hand. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confine.h"
#include "kb/cli.h"
#include "kb/error.h"
#include "sandbox.h"

#if defined(__SANITIZE_ADDRESS__)
/* The sanitizer runtime's hook for its default options (its name is the runtime's, not ours):
 * no leak check at exit in sanitizer builds. LeakSanitizer stops the world with clone and
 * ptrace, which the confinement blocks, so a candidate that calls exit() would read as a
 * blocked system call instead of an exit. ASAN_OPTIONS can still override it. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }
#endif

static void usage(FILE *out) {
  fputs("usage: kb-sandbox [--backend host|cuda] [--device N] [--dir DIR] [--parent PID]\n"
        "                  [--ro PATH]... [--trusted] | --help | --version\n"
        "\n"
        "The evaluation process of kb-runner: reads framed JSON requests on stdin and answers\n"
        "on stdout (docs/sandbox.md). kb-runner starts it; it is not meant to be run by hand.\n"
        "It confines itself before serving: --dir read-write, each --ro PATH and the system's\n"
        "library folders read-only (Landlock), a seccomp filter (docs/sandbox.md). With\n"
        "--trusted it is not confined and evaluates no candidate: it runs the task's oracle\n"
        "for the witness (docs/sandbox.md, \"The witness\").\n"
        "exit codes: 0 quit or end of input, 1 failure, 2 usage, 3 ended after a fatal verdict\n"
        "(sticky device error, evaluator memory overwritten), 7 it cannot confine itself,\n"
        "8 the device cannot be opened, 159 stopped by the confinement: a system call\n"
        "candidates may not use (named on stderr)\n",
        out);
}

int main(int argc, char **argv) {
  struct kb__sandbox_args a = {.backend = "host"};
  static const struct option longopts[] = {
      {"backend", required_argument, NULL, 'b'}, {"device", required_argument, NULL, 'd'},
      {"dir", required_argument, NULL, 'D'},     {"parent", required_argument, NULL, 'p'},
      {"ro", required_argument, NULL, 'r'},     {"trusted", no_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},          {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  struct kb_error err = {0};
  int ch;
  long v;
  while ((ch = getopt_long(argc, argv, "b:d:D:p:r:h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'b':
      if (strcmp(optarg, "host") != 0 && strcmp(optarg, "cuda") != 0) {
        fprintf(stderr, "kb-sandbox: --backend must be host or cuda, not \"%s\"\n", optarg);
        return KB_EXIT_USAGE;
      }
      a.backend = optarg;
      break;
    case 'd':
      if (kb_cli_parse_long("--device", optarg, 0, 1023, &v, &err))
        return kb_cli_usage("kb-sandbox", &err);
      a.device = (int)v;
      break;
    case 'D': a.dir = optarg; break;
    case 't': a.trusted = 1; break;
    case 'r':
      if (a.n_ro == (int)(sizeof a.ro / sizeof a.ro[0])) {
        fprintf(stderr, "kb-sandbox: at most %d --ro paths\n", (int)(sizeof a.ro / sizeof a.ro[0]));
        return KB_EXIT_USAGE;
      }
      a.ro[a.n_ro++] = optarg;
      break;
    case 'p':
      if (kb_cli_parse_long("--parent", optarg, 1, 1L << 30, &v, &err))
        return kb_cli_usage("kb-sandbox", &err);
      a.parent = (pid_t)v;
      break;
    case 'h': usage(stdout); return 0;
    case 'V': return kb_cli_version("kb-sandbox");
    default: return kb_cli_try_help("kb-sandbox");
    }
  }
  if (optind != argc) {
    fprintf(stderr, "kb-sandbox: unexpected argument \"%s\"\n", argv[optind]);
    return kb_cli_try_help("kb-sandbox");
  }
  /* once confined, exit handlers must not run under the filter (kb__confine_exit) */
  kb__confine_exit(kb__sandbox_run(&a));
}
