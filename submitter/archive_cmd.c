/* kb-submit archive (see archive_cmd.h). */
#include "archive_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/archive.h"
#include "kb/buf.h"
#include "kb/cli.h"
#include "kb/error.h"
#include "kb/task.h"

/* The archive folder: --archive, else $KB_ARCHIVE; NULL (reported) when neither. */
static const char *folder(const struct kb_archive_opts *o) {
  const char *env = getenv("KB_ARCHIVE");
  const char *dir = o->dir ? o->dir : env && env[0] ? env : NULL;
  if (dir == NULL)
    fprintf(stderr, "kb-submit: no archive folder: give --archive DIR or set KB_ARCHIVE\n");
  return dir;
}

static void warn_skip(const char *msg, void *arg) {
  (void)arg;
  fprintf(stderr, "kb-submit: warning: %s; entry skipped\n", msg);
}

static int load(const struct kb_archive_opts *o, struct kb_archive *a) {
  const char *dir = folder(o);
  if (dir == NULL)
    return KB_EXIT_FAILURE;
  struct kb_error err = {0};
  if (kb_archive_load(dir, a, warn_skip, NULL, &err))
    return kb_cli_fail("kb-submit", &err);
  return KB_EXIT_OK;
}

static void print_tags(const struct kb_archive_entry *e) {
  for (int i = 0; i < e->n_tags; i++)
    printf("%s%s", i ? "," : "", e->tags[i]);
}

int kb__cmd_archive_list(const struct kb_archive_opts *o) {
  struct kb_archive a;
  int ex = load(o, &a);
  if (ex)
    return ex;
  int shown = 0;
  if (!o->json)
    printf("%-12s %-20s %8s %-8s %-16s %-8s %-24s %s\n", "ID", "TASK", "SPEEDUP", "TIER", "GPU",
           "BY", "NAME", "TAGS");
  for (int i = 0; i < a.n; i++) {
    const struct kb_archive_entry *e = &a.entries[i];
    if (o->task && strcmp(e->task, o->task) != 0)
      continue;
    shown++;
    if (o->json) {
      char *text = NULL;
      struct kb_error err = {0};
      if (kb_archive_entry_to_json(e, 0, &text, &err)) {
        kb_archive_release(&a);
        return kb_cli_fail("kb-submit", &err);
      }
      printf("%s\n", text);
      kb_free(text);
      continue;
    }
    char speed[32];
    if (e->speedup > 0)
      snprintf(speed, sizeof speed, "%.2fx", e->speedup);
    else
      snprintf(speed, sizeof speed, "-");
    printf("%-12.12s %-20s %8s %-8s %-16s %-8s %-24s ", e->id, e->task, speed,
           e->tier[0] ? e->tier : "-", e->gpu[0] ? e->gpu : "-", e->generator, e->name);
    print_tags(e);
    printf("\n");
  }
  if (!o->json)
    fprintf(stderr, "%d entr%s%s%s in %s%s\n", shown, shown == 1 ? "y" : "ies",
            o->task ? " for task " : "", o->task ? o->task : "", folder(o),
            a.skipped ? " (some files skipped: see the warnings above)" : "");
  kb_archive_release(&a);
  return KB_EXIT_OK;
}

int kb__cmd_archive_show(const struct kb_archive_opts *o, const char *id) {
  struct kb_archive a;
  int ex = load(o, &a);
  if (ex)
    return ex;
  int ambiguous = 0;
  const struct kb_archive_entry *e = kb_archive_find(&a, id, &ambiguous);
  if (e == NULL) {
    fprintf(stderr, "kb-submit: %s archive entry \"%s\" in %s\n",
            ambiguous ? "more than one" : "no", id, folder(o));
    kb_archive_release(&a);
    return KB_EXIT_FAILURE;
  }
  if (o->json) {
    char *text = NULL;
    struct kb_error err = {0};
    if (kb_archive_entry_to_json(e, 1, &text, &err)) {
      kb_archive_release(&a);
      return kb_cli_fail("kb-submit", &err);
    }
    printf("%s\n", text);
    kb_free(text);
  } else {
    printf("entry       %s\ntask        %s (%s, category %s)\nfingerprint %s\n"
           "candidate   %s \"%s\" by %s\n",
           e->id, e->task, kb_backend_name(e->backend), e->category, e->fingerprint,
           e->candidate, e->name, e->generator);
    if (e->format != KB_FORMAT_NATIVE)
      printf("format      %s (a ModelNew file: pytorch-oracle tasks only)\n",
             kb_cand_format_name(e->format));
    if (e->speedup > 0)
      printf("verified    %.2fx over the baseline (%.3f us vs %.3f us) at tier %s on %s\n",
             e->speedup, e->median_us, e->baseline_us, e->tier, e->gpu);
    else
      printf("verified    never (added by hand; a campaign re-verifies it)\n");
    printf("campaign    %s\nknobs       %s\nflags       %s\ntags        ",
           e->campaign[0] ? e->campaign : "-", e->knobs[0] ? e->knobs : "-",
           e->flags[0] ? e->flags : "-");
    print_tags(e);
    printf("\n\n%s", e->source);
  }
  kb_archive_release(&a);
  return KB_EXIT_OK;
}

/* The file name of `path` without folder and extension, cut to a candidate name. */
static void stem(const char *path, char *out, size_t size) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strcspn(base, ".");
  snprintf(out, size, "%.*s", (int)(n < size - 1 ? n : size - 1), base);
}

/* The format `source_path` gives (a ".py" file is a KernelBench ModelNew solution) and its
 * checks against `task`: a pytorch oracle, a ModelNew class, no knobs. KB_EPARSE naming the
 * file otherwise. */
static int source_format(const struct kb_archive_opts *o, const struct kb_task *task,
                         const char *source_path, const char *source, int *format,
                         struct kb_error *err) {
  *format = kb_cand_format_of_path(source_path);
  if (*format != KB_FORMAT_KERNELBENCH)
    return KB_OK;
  if (task->oracle_kind != KB_ORACLE_PYTORCH)
    return kb_error_set(err, KB_EPARSE, "%s: a KernelBench solution (.py) needs a task with a "
                        "pytorch oracle; task \"%s\" (%s) has none", source_path, task->id,
                        task->json_path);
  if (!kb_source_defines_modelnew(source))
    return kb_error_set(err, KB_EPARSE, "%s: a KernelBench solution must define "
                        "`class ModelNew(nn.Module)`; no such line", source_path);
  if (o->knobs && o->knobs[0])
    return kb_error_set(err, KB_EPARSE, "%s: --knobs do not apply to a KernelBench solution "
                        "(its build takes no -D flags)", source_path);
  return KB_OK;
}

/* Reads `source_path` and makes the entry `e` (zeroed first; released on failure) for `task`:
 * generator "manual", the name from --name (when `use_name`) or the file's stem, the format
 * the file name gives, the tags. Errors: KB_EIO (unreadable), KB_EPARSE (bad input). */
static int manual_entry(const struct kb_archive_opts *o, const struct kb_task *task,
                        const char *source_path, int use_name, struct kb_archive_entry *e,
                        struct kb_error *err) {
  memset(e, 0, sizeof *e);
  struct kb_buf src;
  kb_buf_init(&src);
  int rc = kb_buf_read_file(&src, source_path, err);
  if (rc == KB_OK && (src.data == NULL || src.len == 0))
    rc = kb_error_set(err, KB_EPARSE, "%s: empty source", source_path);
  int format = KB_FORMAT_NATIVE;
  if (rc == KB_OK)
    rc = source_format(o, task, source_path, src.data, &format, err);
  char name[KB_ID_MAX];
  if (use_name && o->name)
    snprintf(name, sizeof name, "%s", o->name);
  else
    stem(source_path, name, sizeof name);
  struct kb_candidate c;
  memset(&c, 0, sizeof c);
  if (rc == KB_OK)
    rc = kb_candidate_init(&c, task->id, name, "seed", src.data, o->knobs, o->flags, err);
  if (rc == KB_OK)
    rc = kb_candidate_set_format(&c, format, err);
  if (rc == KB_EINVAL)
    err->code = rc = KB_EPARSE; /* a bad name, knob string or source: the input is malformed */
  if (rc == KB_OK)
    rc = kb_archive_entry_from(e, task, &c, err);
  if (rc == KB_OK) {
    snprintf(e->generator, sizeof e->generator, "manual");
    e->n_tags = 0; /* the generator tag says "seed": rebuild the tags */
    struct kb_error ignore = {0};
    kb_archive_entry_add_tag(e, e->category, &ignore);
    kb_archive_entry_add_tag(e, "manual", &ignore);
    if (format == KB_FORMAT_KERNELBENCH)
      kb_archive_entry_add_tag(e, "kernelbench", &ignore);
    kb_archive_technique_tags(e, e->source);
    for (int i = 0; i < o->n_tags && rc == KB_OK; i++) {
      rc = kb_archive_entry_add_tag(e, o->tags[i], err);
      if (rc)
        err->code = rc = KB_EPARSE;
    }
    if (rc)
      kb_archive_entry_release(e);
  }
  kb_candidate_release(&c);
  kb_buf_release(&src);
  return rc;
}

/* The archive folder of `o` into `*dir` (checked) and the task bundle at `task_dir` into `task`
 * (caller releases it when this returns -1). Returns -1 when both are good, else the exit status
 * after printing the reason (the task is then not loaded). */
static int open_for_adding(const struct kb_archive_opts *o, const char *task_dir,
                           const char **dir, struct kb_task *task, struct kb_error *err) {
  *dir = folder(o);
  if (*dir == NULL)
    return KB_EXIT_FAILURE;
  if (kb_archive_check_dir(*dir, err) || kb_task_load(task_dir, task, err))
    return kb_cli_fail("kb-submit", err);
  return -1;
}

int kb__cmd_archive_add(const struct kb_archive_opts *o, const char *task_dir,
                       const char *source_path) {
  const char *dir;
  struct kb_error err = {0};
  struct kb_task task;
  int fail = open_for_adding(o, task_dir, &dir, &task, &err);
  if (fail >= 0)
    return fail;
  struct kb_archive_entry e;
  int rc = manual_entry(o, &task, source_path, 1, &e, &err);
  char path[4200];
  if (rc == KB_OK)
    rc = kb_archive_put(dir, &e, path, sizeof path, &err);
  if (rc == KB_OK) {
    if (o->json)
      printf("{\"id\":\"%s\",\"task\":\"%s\",\"candidate\":\"%s\",\"path\":\"%s\"}\n", e.id,
             e.task, e.candidate, path);
    else
      printf("added %s for task %s as %s\n", e.name, e.task, path);
  }
  kb_archive_entry_release(&e); /* zeroed or released when manual_entry failed */
  kb_task_release(&task);
  return rc ? kb_cli_fail("kb-submit", &err) : KB_EXIT_OK;
}

int kb__cmd_archive_import_files(const struct kb_archive_opts *o, const char *task_dir,
                                int n_files, char *const *files) {
  const char *dir;
  struct kb_error err = {0};
  struct kb_task task;
  int fail = open_for_adding(o, task_dir, &dir, &task, &err);
  if (fail >= 0)
    return fail;
  struct kb_archive_entry *v = kb_calloc((size_t)n_files, sizeof *v);
  int n = 0, rc = v ? KB_OK : kb_error_set(&err, KB_ENOMEM, "out of memory");
  /* every file checked before anything is written */
  for (; n < n_files && rc == KB_OK; n++) {
    rc = manual_entry(o, &task, files[n], 0, &v[n], &err);
    if (rc)
      break;
  }
  for (int i = 0; i < n && rc == KB_OK; i++)
    rc = kb_archive_put(dir, &v[i], NULL, 0, &err);
  if (rc == KB_OK) {
    if (o->json)
      printf("{\"imported\":%d,\"archive\":\"%s\"}\n", n, dir);
    else
      printf("imported %d entr%s for task %s into %s\n", n, n == 1 ? "y" : "ies", task.id, dir);
  }
  for (int i = 0; i < n; i++)
    kb_archive_entry_release(&v[i]);
  kb_free(v);
  kb_task_release(&task);
  return rc ? kb_cli_fail("kb-submit", &err) : KB_EXIT_OK;
}

int kb__cmd_archive_import(const struct kb_archive_opts *o, const char *path) {
  const char *dir = folder(o);
  if (dir == NULL)
    return KB_EXIT_FAILURE;
  struct kb_error err = {0};
  if (kb_archive_check_dir(dir, &err))
    return kb_cli_fail("kb-submit", &err);
  FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
  if (in == NULL) {
    fprintf(stderr, "kb-submit: cannot open \"%s\"\n", path);
    return KB_EXIT_FAILURE;
  }
  struct kb_archive_entry *v = NULL;
  int n = 0, cap = 0, rc = KB_OK;
  char *line = NULL;
  size_t line_cap = 0;
  long lineno = 0;
  const char *shown = strcmp(path, "-") == 0 ? "<stdin>" : path;
  while (rc == KB_OK && getline(&line, &line_cap, in) >= 0) {
    lineno++;
    if (strspn(line, " \t\r\n") == strlen(line))
      continue;
    if (n == cap) {
      int c2 = cap ? cap * 2 : 16;
      struct kb_archive_entry *nv = kb_reallocarray(v, (size_t)c2, sizeof *nv);
      if (nv == NULL) {
        rc = kb_error_set(&err, KB_ENOMEM, "out of memory");
        break;
      }
      v = nv;
      cap = c2;
    }
    char where[4200];
    snprintf(where, sizeof where, "%s (line %ld)", shown, lineno);
    rc = kb_archive_entry_parse(line, where, &v[n], &err);
    if (rc == KB_OK)
      n++;
  }
  free(line);
  if (in != stdin)
    fclose(in);
  for (int i = 0; i < n && rc == KB_OK; i++)
    rc = kb_archive_put(dir, &v[i], NULL, 0, &err);
  if (rc == KB_OK) {
    if (o->json)
      printf("{\"imported\":%d,\"archive\":\"%s\"}\n", n, dir);
    else
      printf("imported %d entr%s into %s\n", n, n == 1 ? "y" : "ies", dir);
  }
  for (int i = 0; i < n; i++)
    kb_archive_entry_release(&v[i]);
  kb_free(v);
  return rc ? kb_cli_fail("kb-submit", &err) : KB_EXIT_OK;
}
