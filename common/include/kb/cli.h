/* What every command's main() does the same way: report an error and pick the exit code, and
 * parse an option's number. The message forms are those of docs/cli.md: "kb-xxx: <message>" on
 * stderr; a bad number names the option, the text given and the range taken.
 */
#ifndef KB_CLI_H
#define KB_CLI_H

#include <stddef.h>

struct kb_error;

/* Prints "<prog>: <err->msg>" and a newline on stderr and returns kb_exit_code(err->code), the
 * process exit code for it (kb/error.h). `prog` ("kb-submit") and `err` are borrowed. */
int kb_cli_fail(const char *prog, const struct kb_error *err);

/* For a bad command line: prints "<prog>: <err->msg>" and the line kb_cli_try_help() prints
 * on stderr and returns KB_EXIT_USAGE (2), whatever err->code is. `prog` and `err` are
 * borrowed. */
int kb_cli_usage(const char *prog, const struct kb_error *err);

/* After a bad command line whose problem was already said in one line (by getopt, or by the
 * caller): prints "Try '<prog> --help' for more information." on stderr and returns
 * KB_EXIT_USAGE. The whole help goes to stdout with --help only. `prog` is borrowed. */
int kb_cli_try_help(const char *prog);

/* --version: prints "<prog> <version> (commit <12 hex digits>)" on stdout, the project's version
 * and the commit it was built from ("unknown" when built outside a git checkout), and returns
 * KB_EXIT_OK. `prog` is borrowed. */
int kb_cli_version(const char *prog);

/* A default folder of this user's: "/tmp/<prefix>-<$USER>" ("user" when $USER is unset) into
 * `out` (`size` bytes, cut to fit, always NUL-terminated). `prefix` is borrowed. */
void kb_cli_user_tmp(const char *prefix, char *out, size_t size);

/* Who is acting, for the "by" of a state change a command makes: "<prog>:<$USER>@<host>"
 * ("unknown" for an unset $USER) into `out` (`size` bytes, cut to fit). `prog` is borrowed. */
void kb_cli_who(const char *prog, char *out, size_t size);

/* Parses `text` (borrowed) as a whole number in base 10, nothing before or after it, from `min`
 * to `max`, into `*out`. Returns KB_OK, or KB_EINVAL with the message
 * `<opt>: "<text>" is not a whole number from <min> to <max>` (`opt` borrowed, e.g. "--runners");
 * `*out` is then unchanged. */
int kb_cli_parse_long(const char *opt, const char *text, long min, long max, long *out,
                      struct kb_error *err);

/* As kb_cli_parse_long() for a finite decimal number (strtod's forms) from `min` to `max`; the
 * message says "is not a number from <min> to <max>" (%g). */
int kb_cli_parse_double(const char *opt, const char *text, double min, double max, double *out,
                        struct kb_error *err);

/* A name for a table column `width` characters wide (at least 8), into `out` (`size` bytes,
 * more than `width`): the name itself when it fits, else its head, "..", and its tail, the
 * tail being the longer part, so names that differ only at the end (tuned~BK=64,BJ=2 and
 * tuned~BK=64,BJ=4) stay distinct. `name` is borrowed. */
void kb_cli_fit_name(const char *name, int width, char *out, size_t size);

#endif
