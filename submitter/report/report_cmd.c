/* `kb-submit report` and `kb-submit export` (see commands.h): find the results folder, load it,
 * write the chosen format to --out (atomically: a temp file renamed into place) or stdout. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "kb/cli.h"
#include "kb/error.h"
#include "locate.h"
#include "report.h"

typedef int (*writer_fn)(const struct kb_report *r, FILE *out, struct kb_error *err);

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Writes `r` with `w` to `path` (temp file, then rename) or to stdout when `path` is NULL. */
static int write_out(const struct kb_report *r, writer_fn w, const char *path,
                     struct kb_error *err) {
  if (path == NULL) {
    int rc = w(r, stdout, err);
    if (rc == KB_OK && fflush(stdout) != 0)
      rc = kb_error_set(err, KB_EIO, "cannot write to stdout: %s", strerror(errno));
    return rc;
  }
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return kb_error_set(err, KB_EINVAL, "path \"%s\" is too long", path);
  FILE *f = fopen(tmp, "w");
  if (f == NULL)
    return kb_error_set(err, KB_EIO, "cannot create \"%s\": %s", tmp, strerror(errno));
  int rc = w(r, f, err);
  if (fclose(f) != 0 && rc == KB_OK)
    rc = kb_error_set(err, KB_EIO, "cannot write \"%s\": %s", tmp, strerror(errno));
  if (rc == KB_OK && rename(tmp, path) != 0)
    rc =
        kb_error_set(err, KB_EIO, "cannot rename \"%s\" to \"%s\": %s", tmp, path, strerror(errno));
  if (rc)
    unlink(tmp);
  return rc;
}

/* --tier NAME into r->tier; -1 after saying on stderr that the results have no such tier. */
static int pick_tier(struct kb_report *r, const char *name) {
  for (int i = 0; i < r->n_tiers; i++)
    if (strcmp(r->tier_names[i], name) == 0) {
      r->tier = i;
      r->tier_only = 1;
      return 0;
    }
  fprintf(stderr, "kb-submit: --tier \"%s\": the results have tiers", name);
  for (int i = 0; i < r->n_tiers; i++)
    fprintf(stderr, "%s %s", i ? "," : "", r->tier_names[i]);
  fprintf(stderr, "\nTry 'kb-submit export --help' for more information.\n");
  return -1;
}

/* Loads the campaign named by `id_or_path` and writes it with `w`. */
static int run(const struct kb_submit_opts *o, const char *id_or_path, writer_fn w) {
  struct kb_error err = {0};
  struct kb_report r;
  char dir[4096];
  int rc = kb__locate_results(id_or_path, o->results, o->redis, dir, sizeof dir, &err);
  if (rc)
    return kb_cli_fail("kb-submit", &err);
  rc = kb__report_load(dir, &r, &err);
  if (rc)
    return kb_cli_fail("kb-submit", &err);
  r.top = o->top;
  if (o->tier && pick_tier(&r, o->tier) != 0) {
    kb__report_release(&r);
    return KB_EXIT_USAGE;
  }
  rc = write_out(&r, w, o->out, &err);
  if (rc == KB_OK && o->out && !o->quiet && isatty(fileno(stderr)))
    fprintf(stderr, "kb-submit: wrote %s (%d tasks)\n", o->out, r.n_tasks);
  kb__report_release(&r);
  return rc ? kb_cli_fail("kb-submit", &err) : KB_EXIT_OK;
}

int kb__cmd_report(const struct kb_submit_opts *o, const char *id_or_path) {
  const char *format = o->format;
  if (format == NULL && o->out) {
    if (ends_with(o->out, ".md"))
      format = "md";
    else if (ends_with(o->out, ".csv"))
      format = "csv";
    else if (ends_with(o->out, ".json"))
      format = "json";
  }
  if (format == NULL)
    format = "html";
  if (o->tier) {
    fprintf(stderr, "kb-submit: --tier goes with export\n");
    return kb_cli_try_help("kb-submit report");
  }
  writer_fn w = NULL;
  if (strcmp(format, "html") == 0)
    w = kb__report_write_html;
  else if (strcmp(format, "md") == 0)
    w = kb__report_write_md;
  else if (strcmp(format, "csv") == 0)
    w = kb__report_write_csv;
  else if (strcmp(format, "json") == 0)
    w = kb__report_write_json;
  if (w == NULL) {
    fprintf(stderr, "kb-submit: --format \"%s\": want html, md, csv or json\n", format);
    return KB_EXIT_USAGE;
  }
  if (w == kb__report_write_html && o->out == NULL && isatty(fileno(stdout))) {
    fprintf(stderr, "kb-submit: not writing an HTML page to a terminal: use --out FILE or "
                    "redirect stdout\n");
    return KB_EXIT_USAGE;
  }
  return run(o, id_or_path, w);
}

int kb__cmd_export(const struct kb_submit_opts *o, const char *id_or_path) {
  return run(o, id_or_path, kb__export_write_jsonl);
}
