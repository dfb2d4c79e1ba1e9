/* kb-submit archive: list, show, add and import entries of a kernel archive (kb/archive.h;
 * docs/cli.md). Each function prints its own output and returns a process exit code
 * (enum kb_exit): 0 ok, 1 failure (no such folder or entry, cannot write), 3 malformed input
 * (file:line:col on stderr; nothing written). Errors go to stderr as "kb-submit: <message>". */
#ifndef KB_SUBMITTER_ARCHIVE_CMD_H
#define KB_SUBMITTER_ARCHIVE_CMD_H

#define KB_ARCHIVE_CMD_TAGS 8

struct kb_archive_opts {
  const char *dir;       /* --archive DIR, or NULL for $KB_ARCHIVE (borrowed) */
  int json;              /* --json: JSON Lines (list: whole entries, what import reads) */
  const char *task;      /* list: --task ID, only that task's entries (borrowed) */
  const char *name;      /* add: --name, default the source file's stem (borrowed) */
  const char *knobs;     /* add: --knobs "-DNAME=value ..." (borrowed) */
  const char *flags;     /* add: --flags (borrowed) */
  const char *tags[KB_ARCHIVE_CMD_TAGS]; /* add: --tag, repeated (borrowed) */
  int n_tags;
};

/* Lists the entries, best speedup first per task; corrupt files are named on stderr. */
int kb__cmd_archive_list(const struct kb_archive_opts *o);
/* Shows the entry whose id starts with `id` (4 or more hex digits), source included. */
int kb__cmd_archive_show(const struct kb_archive_opts *o, const char *id);
/* Adds `source_path` as a kernel for the task bundle in `task_dir`, by hand: generator
 * "manual", never timed (gpu "", speedup 0) until a campaign re-verifies it. A ".py" file is a
 * KernelBench solution (format kernelbench): the task needs a pytorch oracle, the file a
 * `class ModelNew` line, and --knobs is refused (exit 3 otherwise). */
int kb__cmd_archive_add(const struct kb_archive_opts *o, const char *task_dir,
                       const char *source_path);
/* Imports entries from `path` ("-" for stdin), JSON Lines as `list --json` writes them; every
 * line is checked before anything is written. */
int kb__cmd_archive_import(const struct kb_archive_opts *o, const char *path);
/* Imports the files `files` (`n_files`, borrowed: KernelBench .py solutions or native sources,
 * each as `add` makes it, named by its file's stem) for the task bundle in `task_dir`; every
 * file is checked before anything is written. */
int kb__cmd_archive_import_files(const struct kb_archive_opts *o, const char *task_dir,
                                int n_files, char *const *files);

#endif
