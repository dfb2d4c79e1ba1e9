/* kb-launch's per-job #SBATCH options (see sbatch.h): --time, --qos, --constraint, --mem,
 * --cpus-per-task and --sbatch-arg, for every job or, with a "JOB=" prefix, for one. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/buf.h"
#include "kb/error.h"
#include "sbatch.h"
#include "sbatch_private.h"

static const char *const job_names[KB_SLURM_JOBS] = {"redis", "scheduler", "runners"};

/* Options kb-launch writes itself, and what to give instead of --sbatch-arg. */
static const struct {
  const char *name;
  const char *use;
} reserved[] = {
    {"job-name", NULL},           {"output", NULL},          {"error", NULL},
    {"open-mode", NULL},          {"array", "--runners and --throttle"},
    {"dependency", NULL},         {"kill-on-invalid-dep", NULL},
    {"signal", NULL},             {"requeue", NULL},         {"no-requeue", NULL},
    {"ntasks", NULL},             {"parsable", NULL},        {"wrap", NULL},
    {"partition", "--partition or --cpu-partition"},     {"account", "--account"},
    {"gres", "--gres"},           {"time", "--time"},        {"qos", "--qos"},
    {"constraint", "--constraint"}, {"mem", "--mem"},       {"cpus-per-task", "--cpus-per-task"},
};

int kb__slurm_default_cpus(enum kb_slurm_job job, int cuda) {
  if (job != KB_SLURM_RUNNERS)
    return 1;
  return cuda ? 4 : 2;
}

static int constraint_ok(const char *s) {
  if (*s == '\0')
    return 0;
  for (const char *p = s; *p; p++)
    if (!isalnum((unsigned char)*p) && strchr("_.-&|[]*()!,:", *p) == NULL)
      return 0;
  return 1;
}

/* An --sbatch-arg: one word "--name[=value]", printable, not one kb-launch writes. */
static int extra_ok(const char *s, struct kb_error *err) {
  if (strncmp(s, "--", 2) != 0 || !isalpha((unsigned char)s[2]))
    return kb_error_set(err, KB_EINVAL, "--sbatch-arg \"%s\": give a whole sbatch option, "
                        "starting with \"--\" (--sbatch-arg=--mail-type=END)", s);
  for (const char *p = s; *p; p++)
    if (!isgraph((unsigned char)*p))
      return kb_error_set(err, KB_EINVAL, "--sbatch-arg \"%s\": one word, without spaces, "
                          "newlines or control characters", s);
  size_t n = strcspn(s + 2, "=");
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
    if (strlen(reserved[i].name) == n && strncmp(s + 2, reserved[i].name, n) == 0) {
      if (reserved[i].use)
        return kb_error_set(err, KB_EINVAL, "--sbatch-arg \"%s\": use %s", s, reserved[i].use);
      return kb_error_set(err, KB_EINVAL, "--sbatch-arg \"%s\": kb-launch sets --%s itself", s,
                          reserved[i].name);
    }
  return KB_OK;
}

static int check_value(const char *opt, const char *v, struct kb_error *err) {
  if (strcmp(opt, "--sbatch-arg") == 0)
    return extra_ok(v, err);
  if (strcmp(opt, "--cpus-per-task") == 0) {
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (end == v || *end != '\0' || n < 1 || n > 1024)
      return kb_error_set(err, KB_EINVAL, "--cpus-per-task: \"%s\" is not a whole number from "
                          "1 to 1024", v);
    return KB_OK;
  }
  int ok = strcmp(opt, "--constraint") == 0 ? constraint_ok(v) : kb__slurm_word_ok(v);
  if (!ok)
    return kb_error_set(err, KB_EINVAL, "%s \"%s\" cannot go into an #SBATCH line: use "
                        "letters, digits and _ . / : + , = @ -%s", opt, v,
                        strcmp(opt, "--constraint") == 0 ? " & | [ ] * ( ) !" : "");
  return KB_OK;
}

/* The field of `j` that `opt` sets, or NULL for --sbatch-arg. */
static const char **field(struct kb_slurm_job_opts *j, const char *opt) {
  if (strcmp(opt, "--time") == 0)
    return &j->time;
  if (strcmp(opt, "--qos") == 0)
    return &j->qos;
  if (strcmp(opt, "--constraint") == 0)
    return &j->constraint;
  if (strcmp(opt, "--mem") == 0)
    return &j->mem;
  if (strcmp(opt, "--cpus-per-task") == 0)
    return &j->cpus;
  return NULL;
}

int kb__slurm_job_option(struct kb_slurm_opts *o, const char *opt, const char *value,
                         struct kb_error *err) {
  struct kb_slurm_job_opts *j = &o->all; /* no "JOB=" prefix: every job */
  const char *v = value;
  for (int i = 0; i < KB_SLURM_JOBS; i++) {
    size_t n = strlen(job_names[i]);
    if (strncmp(value, job_names[i], n) == 0 && value[n] == '=') {
      j = &o->job[i];
      v = value + n + 1;
    }
  }
  int rc = check_value(opt, v, err);
  if (rc)
    return rc;
  const char **f = field(j, opt);
  if (f != NULL) {
    *f = v;
    return KB_OK;
  }
  if (j->n_extra == KB_SLURM_EXTRA_MAX)
    return kb_error_set(err, KB_EINVAL, "--sbatch-arg: at most %d for %s", KB_SLURM_EXTRA_MAX,
                        j == &o->all ? "every job" : "one job");
  j->extra[j->n_extra++] = v;
  return KB_OK;
}

int kb__slurm_job_directives(const struct kb_slurm_opts *o, enum kb_slurm_job job, int cuda,
                             struct kb_buf *b) {
  const struct kb_slurm_job_opts *j = &o->job[job], *all = &o->all;
  char cpus[16];
  snprintf(cpus, sizeof cpus, "%d", kb__slurm_default_cpus(job, cuda));
#define PICK(x) (j->x ? j->x : all->x)
  const char *lines[][2] = {{"time", PICK(time)}, {"qos", PICK(qos)},
                            {"constraint", PICK(constraint)}, {"mem", PICK(mem)},
                            {"cpus-per-task", PICK(cpus) ? PICK(cpus) : cpus}};
#undef PICK
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
    if (lines[i][1] && kb_buf_addf(b, "#SBATCH --%s=%s\n", lines[i][0], lines[i][1]))
      return KB_ENOMEM;
  for (int i = 0; i < all->n_extra + j->n_extra; i++)
    if (kb_buf_addf(b, "#SBATCH %s\n",
                    i < all->n_extra ? all->extra[i] : j->extra[i - all->n_extra]))
      return KB_ENOMEM;
  return KB_OK;
}
