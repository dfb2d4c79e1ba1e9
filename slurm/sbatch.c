/* kb-launch --slurm, --stop and --cancel (see sbatch.h). */
#include "sbatch.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "kb/buf.h"
#include "kb/campaign.h"
#include "kb/catalog.h"
#include "kb/cli.h"
#include "kb/error.h"
#include "kb/fs.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "kb/submit.h"
#include "render.h"
#include "sbatch_private.h"

#define JOB_ID_MAX 32
#define PATH_LEN 1200

enum { JOB_REDIS, JOB_SCHED, JOB_RUNNERS, N_JOBS };
static const char *const job_keys[N_JOBS] = {"redis", "scheduler", "runners"};
static const char *const job_scripts[N_JOBS] = {"redis.sbatch", "scheduler.sbatch",
                                                "runners.sbatch"};

struct launch {
  const struct kb_slurm_opts *o;
  struct kb_submission sub;
  char dir[PATH_LEN];       /* <results>/<campaign>/slurm */
  char redis_dir[PATH_LEN]; /* <dir>/redis */
  char array[64];           /* "0-7%4" */
  const char *gres;         /* per runner, or NULL for none */
  const char *backend;      /* kb-runner --backend */
  char setup[PATH_LEN];     /* absolute path of --setup, or "" */
  int redis_job;            /* 1: a redis job serves the campaign */
  char jobs[N_JOBS][JOB_ID_MAX]; /* submitted job ids; "" = none */
};

/* ---------------------------------------------------------------- small helpers */

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

static int path_join(char *out, size_t size, const char *a, const char *b, struct kb_error *err) {
  if (snprintf(out, size, "%s/%s", a, b) >= (int)size)
    return kb_error_set(err, KB_EINVAL, "path \"%s/%s\" is too long", a, b);
  return KB_OK;
}

int kb__slurm_word_ok(const char *s) {
  if (s == NULL || *s == '\0')
    return 0;
  for (const char *p = s; *p; p++)
    if (!isalnum((unsigned char)*p) && strchr("_./:+,=@-", *p) == NULL)
      return 0;
  return 1;
}

static int check_word(const char *what, const char *value, struct kb_error *err) {
  if (value == NULL || kb__slurm_word_ok(value))
    return KB_OK;
  return kb_error_set(err, KB_EINVAL, "%s \"%s\" cannot go into an #SBATCH line: use letters, "
                      "digits and _ . / : + , = @ -", what, value);
}

/* Trims trailing white space of `b` in place. */
static void rtrim(struct kb_buf *b) {
  while (b->len > 0 && isspace((unsigned char)b->data[b->len - 1]))
    b->data[--b->len] = '\0';
}

/* Writes `len` bytes of `text` to `path` through a temporary file and a rename, with `mode`. */
static int write_file(const char *path, const char *text, size_t len, mode_t mode,
                      struct kb_error *err) {
  char tmp[PATH_LEN + 16];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return kb_error_set(err, KB_EINVAL, "path \"%s\" is too long", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0)
    return kb_error_set(err, KB_EIO, "cannot write \"%s\": %s", tmp, strerror(errno));
  if (kb_write_all(fd, text, len) != 0) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return kb_error_set(err, KB_EIO, "cannot write \"%s\": %s", tmp, strerror(e));
  }
  if (fchmod(fd, mode) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return kb_error_set(err, KB_EIO, "cannot write \"%s\": %s", path, strerror(e));
  }
  return KB_OK;
}

static int make_dir(const char *path, mode_t mode, struct kb_error *err) {
  int rc = kb_mkdirs(path, err);
  if (rc == KB_OK && chmod(path, mode) != 0)
    rc = kb_error_set(err, KB_EIO, "cannot chmod \"%s\": %s", path, strerror(errno));
  return rc;
}

/* ---------------------------------------------------------------- Slurm commands */

/* Runs a Slurm command; a non-zero exit is KB_ECHILD with its stderr, unless `*status` is
 * wanted (not NULL). */
static int slurm_cmd(char *const argv[], struct kb_buf *out, struct kb_buf *errout, int *status,
                     struct kb_error *err) {
  int st = 0;
  int rc = kb__cmd_run(argv, out, errout, &st, err);
  if (rc)
    return rc;
  if (status) {
    *status = st;
    return KB_OK;
  }
  if (st != 0) {
    rtrim(errout);
    return kb_error_set(err, KB_ECHILD, "%s failed (exit code %d): %s", argv[0], st,
                        errout->len ? errout->data : "no message");
  }
  return KB_OK;
}

/* Sets `*any` to 1 when one of the jobs in `ids` ("1,2,3") is still pending or running. */
static int jobs_queued(const char *ids, int *any, struct kb_error *err) {
  struct kb_buf out, errb;
  kb_buf_init(&out);
  kb_buf_init(&errb);
  char list[3 * JOB_ID_MAX + 8];
  snprintf(list, sizeof list, "%s", ids);
  char *argv[] = {"squeue", "-h", "-o", "%i", "-j", list, NULL};
  int status = 0;
  int rc = slurm_cmd(argv, &out, &errb, &status, err);
  *any = 0;
  if (rc == KB_OK) {
    rtrim(&out);
    rtrim(&errb);
    if (status == 0)
      *any = out.len > 0;
    else if (strstr(errb.data, "Invalid job id") == NULL)
      rc = kb_error_set(err, KB_ECHILD, "squeue failed (exit code %d): %s", status, errb.data);
  }
  kb_buf_release(&out);
  kb_buf_release(&errb);
  return rc;
}

/* scancel `ids` (space-free, comma-separated); jobs that already ended are not an error. */
static int scancel(const char *ids, struct kb_error *err) {
  char list[3 * JOB_ID_MAX + 8];
  snprintf(list, sizeof list, "%s", ids);
  char *argv[] = {"scancel", list, NULL};
  struct kb_buf errb;
  kb_buf_init(&errb);
  int status = 0;
  int rc = slurm_cmd(argv, NULL, &errb, &status, err);
  rtrim(&errb);
  if (rc == KB_OK && status != 0 && strstr(errb.data, "Invalid job id") == NULL &&
      strstr(errb.data, "already completing or completed") == NULL)
    rc = kb_error_set(err, KB_ECHILD, "scancel %s failed (exit code %d): %s", list, status,
                      errb.data);
  kb_buf_release(&errb);
  return rc;
}

/* Waits up to `wait_s` seconds for the jobs `ids` to leave the queue; `*left` (may be NULL)
 * is 1 when some are still there then, which is KB_ETIMEOUT when `left` is NULL. */
static int wait_gone(const char *ids, int wait_s, int *left, struct kb_error *err) {
  for (long waited_ms = 0;; waited_ms += 500) {
    int any = 0;
    int rc = jobs_queued(ids, &any, err);
    if (left)
      *left = any;
    if (rc || !any)
      return rc;
    if (waited_ms >= wait_s * 1000L)
      return left ? KB_OK
                  : kb_error_set(err, KB_ETIMEOUT, "jobs %s are still in the queue after %d s",
                                 ids, wait_s);
    sleep_ms(500);
  }
}

/* Joins the non-empty ids among `jobs` into `out` ("1,2,3"). */
static void join_ids(char jobs[][JOB_ID_MAX], const int *which, int n, char *out, size_t size) {
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    const char *id = jobs[which[i]];
    if (id[0] == '\0')
      continue;
    size_t len = strlen(out);
    snprintf(out + len, size - len, "%s%s", len ? "," : "", id);
  }
}

/* ---------------------------------------------------------------- launch */

static int prepare(struct launch *l, struct kb_error *err) {
  const struct kb_slurm_opts *o = l->o;
  const struct kb_campaign *c = &l->sub.campaign;
  char base[PATH_LEN];
  if (snprintf(base, sizeof base, "%s/%s", c->results_dir, c->id) >= (int)sizeof base)
    return kb_error_set(err, KB_EINVAL, "results path too long");
  int rc = path_join(l->dir, sizeof l->dir, base, "slurm", err);
  if (rc == KB_OK)
    rc = path_join(l->redis_dir, sizeof l->redis_dir, l->dir, "redis", err);
  if (rc)
    return rc;
  if (!kb__slurm_word_ok(l->dir))
    return kb_error_set(err, KB_EINVAL, "the campaign's folder \"%s\" cannot go into an #SBATCH "
                        "line (it names the job logs): choose a results_dir of letters, digits "
                        "and _ . / : + , = @ -", l->dir);
  rc = check_word("--partition", o->partition, err);
  if (rc == KB_OK)
    rc = check_word("--cpu-partition", o->cpu_partition, err);
  if (rc == KB_OK)
    rc = check_word("--account", o->account, err);
  l->gres = o->gres == NULL ? "gpu:1" : strcmp(o->gres, "none") == 0 ? NULL : o->gres;
  if (rc == KB_OK)
    rc = check_word("--gres", l->gres, err);
  if (rc)
    return rc;
  l->backend = o->backend ? o->backend : kb_backend_name(c->backend);
  if (o->setup) { /* the jobs source it from wherever they start */
    char *abs = realpath(o->setup, NULL);
    if (abs == NULL)
      return kb_error_set(err, KB_EINVAL, "--setup file \"%s\": %s", o->setup, strerror(errno));
    int n = snprintf(l->setup, sizeof l->setup, "%s", abs);
    free(abs);
    if (n >= (int)sizeof l->setup)
      return kb_error_set(err, KB_EINVAL, "--setup path too long");
  }
  l->redis_job = o->redis == NULL;
  int n = o->runners > 0 ? o->runners : 1;
  if (o->throttle > 0 && o->throttle < n)
    snprintf(l->array, sizeof l->array, "0-%d%%%d", n - 1, o->throttle);
  else
    snprintf(l->array, sizeof l->array, "0-%d", n - 1);
  return KB_OK;
}

/* Refuses to launch while jobs recorded by an earlier launch are still queued. */
static int check_no_jobs(struct launch *l, struct kb_error *err) {
  char path[PATH_LEN];
  int rc = path_join(path, sizeof path, l->dir, "jobs.json", err);
  if (rc)
    return rc;
  json_t *j = json_load_file(path, 0, NULL);
  if (j == NULL)
    return KB_OK; /* no earlier launch, or nothing readable to go by */
  char ids[3 * JOB_ID_MAX + 8] = "";
  for (int i = 0; i < N_JOBS; i++) {
    const char *id = json_string_value(json_object_get(json_object_get(j, job_keys[i]), "job"));
    if (id && kb__slurm_word_ok(id) && strlen(id) < JOB_ID_MAX) {
      size_t len = strlen(ids);
      snprintf(ids + len, sizeof ids - len, "%s%s", len ? "," : "", id);
    }
  }
  json_decref(j);
  int any = 0;
  if (ids[0])
    rc = jobs_queued(ids, &any, err);
  if (rc == KB_OK && any)
    rc = kb_error_set(err, KB_EEXISTS, "campaign \"%s\" still has jobs in Slurm (%s): end them "
                      "with kb-launch --stop (resumable) or --cancel first",
                      l->sub.campaign.id, ids);
  return rc;
}

/* The redis job's password: 24 random bytes as hex in a 0600 file, kept across launches. */
static int ensure_password(const char *path, struct kb_error *err) {
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return kb_error_set(err, KB_EINVAL, "password file \"%s\" is not a regular file", path);
    if (st.st_mode & 077)
      return kb_error_set(err, KB_EINVAL, "password file \"%s\" is readable by others (mode "
                          "%03o): chmod 600 it", path, (unsigned)(st.st_mode & 0777));
    return KB_OK;
  }
  unsigned char raw[24];
  int fd = open("/dev/urandom", O_RDONLY);
  ssize_t got = fd >= 0 ? read(fd, raw, sizeof raw) : -1;
  if (fd >= 0)
    close(fd);
  if (got != (ssize_t)sizeof raw)
    return kb_error_set(err, KB_EIO, "cannot read /dev/urandom for a password");
  char hex[2 * sizeof raw + 2];
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf(hex + 2 * i, 3, "%02x", raw[i]);
  hex[2 * sizeof raw] = '\n';
  hex[2 * sizeof raw + 1] = '\0';
  return write_file(path, hex, strlen(hex), 0600, err);
}

static int directive(struct kb_buf *b, const char *opt, const char *value) {
  if (value == NULL)
    return KB_OK;
  return value[0] ? kb_buf_addf(b, "#SBATCH --%s=%s\n", opt, value)
                  : kb_buf_addf(b, "#SBATCH --%s\n", opt);
}

/* The #SBATCH block of job `which`. */
static int sbatch_block(const struct launch *l, int which, struct kb_buf *b) {
  const struct kb_slurm_opts *o = l->o;
  char name[128], output[PATH_LEN + 64];
  snprintf(name, sizeof name, "kb-%s-%s", l->sub.campaign.id,
           which == JOB_RUNNERS ? "runner" : job_keys[which]);
  if (which == JOB_RUNNERS)
    snprintf(output, sizeof output, "%s/logs/runner-%%A_%%a.out", l->dir);
  else
    snprintf(output, sizeof output, "%s/logs/%s-%%j.out", l->dir, job_keys[which]);
  const char *partition = which == JOB_RUNNERS || o->cpu_partition == NULL ? o->partition
                                                                          : o->cpu_partition;
  int rc = directive(b, "job-name", name);
  rc = rc ? rc : directive(b, "output", output);
  rc = rc ? rc : directive(b, "open-mode", "append");
  rc = rc ? rc : directive(b, "partition", partition);
  rc = rc ? rc : directive(b, "account", o->account);
  rc = rc ? rc : directive(b, "ntasks", "1");
  rc = rc ? rc : kb__slurm_job_directives(o, (enum kb_slurm_job)which,
                                          strcmp(l->backend, "cuda") == 0, b);
  if (which == JOB_RUNNERS) {
    rc = rc ? rc : directive(b, "array", l->array);
    rc = rc ? rc : directive(b, "gres", l->gres);
  }
  rc = rc ? rc : directive(b, "signal", "B:USR1@120");
  rc = rc ? rc : directive(b, "requeue", "");
  return rc;
}

static int render_scripts(struct launch *l, struct kb_error *err) {
  const struct kb_slurm_opts *o = l->o;
  char wait[16];
  snprintf(wait, sizeof wait, "%d", o->wait_s > 0 ? o->wait_s : 600);
  const char *plain[] = {o->bin_dir, l->sub.campaign.id, l->sub.campaign.path, l->dir,
                         o->redis ? o->redis : "", l->backend, l->setup};
  const char *names[] = {"BIN", "CAMPAIGN", "CAMPAIGN_FILE", "DIR", "REDIS", "BACKEND", "SETUP"};
  enum { N_PLAIN = sizeof plain / sizeof *plain };
  struct kb_buf quoted[N_PLAIN], block, out;
  for (int i = 0; i < N_PLAIN; i++)
    kb_buf_init(&quoted[i]);
  kb_buf_init(&block);
  kb_buf_init(&out);
  int rc = KB_OK;
  for (int i = 0; rc == KB_OK && i < N_PLAIN; i++)
    if (kb__shell_quote(plain[i], &quoted[i]))
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  /* the Redis job's config lines, from kb_redis_server_settings (kb/redis.h), as shell words:
   * "appendonly yes" ... 'save ""' */
  struct kb_buf settings, line;
  kb_buf_init(&settings);
  kb_buf_init(&line);
  for (int i = 0; rc == KB_OK; i++) {
    int got = kb__redis_conf_line(i, &line);
    if (got == 0)
      break;
    if (got < 0 || (settings.len > 0 && kb_buf_adds(&settings, " ")) ||
        kb__shell_quote(line.data, &settings))
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  kb_buf_release(&line);
  struct kb__var vars[N_PLAIN + 3];
  for (int i = 0; i < N_PLAIN; i++)
    vars[i] = (struct kb__var){names[i], quoted[i].data};
  vars[N_PLAIN] = (struct kb__var){"WAIT", wait};
  vars[N_PLAIN + 2] = (struct kb__var){"REDIS_SETTINGS", settings.data};
  const char *files[] = {"kb-job.sh", job_scripts[JOB_REDIS], job_scripts[JOB_SCHED],
                         job_scripts[JOB_RUNNERS]};
  for (int f = 0; rc == KB_OK && f < 4; f++) {
    int which = f - 1; /* -1: the helpers */
    char path[PATH_LEN];
    rc = path_join(path, sizeof path, l->dir, files[f], err);
    if (rc == KB_OK && which == JOB_REDIS && !l->redis_job) {
      unlink(path); /* from an earlier launch with a redis job: it is not ours to submit now */
      continue;
    }
    kb_buf_reset(&block);
    kb_buf_reset(&out);
    if (which >= 0 && sbatch_block(l, which, &block))
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    rtrim(&block);
    vars[N_PLAIN + 1] = (struct kb__var){"SBATCH", block.data};
    const char *tmpl = kb__template_text(files[f]);
    if (rc == KB_OK && tmpl == NULL)
      rc = kb_error_set(err, KB_EINTERNAL, "template \"%s\" is not built in", files[f]);
    if (rc == KB_OK)
      rc = kb__render(tmpl, vars, N_PLAIN + 3, &out, err);
    if (rc == KB_OK)
      rc = write_file(path, out.data, out.len, which >= 0 ? 0755 : 0644, err);
  }
  for (int i = 0; i < N_PLAIN; i++)
    kb_buf_release(&quoted[i]);
  kb_buf_release(&settings);
  kb_buf_release(&block);
  kb_buf_release(&out);
  return rc;
}

/* Submits job `which` with `sbatch --parsable`, after the jobs in `after` ("1:2") when given. */
static int submit(struct launch *l, int which, const char *after, struct kb_error *err) {
  char path[PATH_LEN], dep[128];
  int rc = path_join(path, sizeof path, l->dir, job_scripts[which], err);
  if (rc)
    return rc;
  char *argv[6];
  int n = 0;
  argv[n++] = "sbatch";
  argv[n++] = "--parsable";
  if (after && after[0]) {
    snprintf(dep, sizeof dep, "--dependency=after:%s", after);
    argv[n++] = dep;
    argv[n++] = "--kill-on-invalid-dep=yes";
  }
  argv[n++] = path;
  argv[n] = NULL;
  struct kb_buf out, errb;
  kb_buf_init(&out);
  kb_buf_init(&errb);
  rc = slurm_cmd(argv, &out, &errb, NULL, err);
  if (rc == KB_OK) {
    /* "<id>" or "<id>;<cluster>" */
    size_t len = strspn(out.data, "0123456789");
    if (len == 0 || len >= JOB_ID_MAX)
      rc = kb_error_set(err, KB_ECHILD, "sbatch %s printed no job id: \"%.80s\"", path,
                        out.data);
    else
      snprintf(l->jobs[which], JOB_ID_MAX, "%.*s", (int)len, out.data);
  }
  kb_buf_release(&out);
  kb_buf_release(&errb);
  return rc;
}

static json_t *jobs_json(const struct launch *l) {
  const char *id[N_JOBS];
  for (int i = 0; i < N_JOBS; i++)
    id[i] = l->jobs[i][0] ? l->jobs[i] : NULL;
  char address_file[PATH_LEN + 16];
  snprintf(address_file, sizeof address_file, "%s/address", l->redis_dir);
  return json_pack("{s:s, s:s, s:s, s:b, s:{s:s?, s:s?, s:s?}, s:{s:s?}, "
                   "s:{s:s?, s:i, s:s, s:s?}}",
                   "campaign", l->sub.campaign.id, "dir", l->dir, "backend", l->backend,
                   "dry_run", l->o->dry_run, "redis", "job", id[JOB_REDIS], "address",
                   l->o->redis, "address_file", l->redis_job ? address_file : NULL,
                   "scheduler", "job", id[JOB_SCHED], "runners", "job", id[JOB_RUNNERS],
                   "count", l->o->runners > 0 ? l->o->runners : 1, "array", l->array, "gres",
                   l->gres);
}

/* jobs.json (for kb-launch --stop/--cancel and people) and jobs.env (for the job scripts). */
static int record_jobs(struct launch *l, struct kb_error *err) {
  char path[PATH_LEN];
  json_t *j = jobs_json(l);
  char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
  json_decref(j);
  if (text == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  int rc = path_join(path, sizeof path, l->dir, "jobs.json", err);
  if (rc == KB_OK)
    rc = write_file(path, text, strlen(text), 0644, err);
  free(text);
  struct kb_buf env;
  kb_buf_init(&env);
  if (kb_buf_addf(&env, "# written by kb-launch --slurm; read by the job scripts\n"
                        "KB_JOB_REDIS=%s\nKB_JOB_SCHEDULER=%s\nKB_JOB_RUNNERS=%s\n",
                  l->jobs[JOB_REDIS], l->jobs[JOB_SCHED], l->jobs[JOB_RUNNERS]))
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  if (rc == KB_OK)
    rc = path_join(path, sizeof path, l->dir, "jobs.env", err);
  if (rc == KB_OK)
    rc = write_file(path, env.data, env.len, 0644, err);
  kb_buf_release(&env);
  return rc;
}

/* The redis and scheduler jobs use no GPU: without --cpu-partition they queue on the runners'
 * partition (or the default one), taking a node's CPU slots there; say so on stderr. */
static void note_shared_partition(const struct launch *l) {
  if (l->o->cpu_partition || l->o->json)
    return;
  char where[200];
  if (l->o->partition)
    snprintf(where, sizeof where, "partition \"%s\"", l->o->partition);
  else
    snprintf(where, sizeof where, "the default partition");
  fprintf(stderr, "kb-launch: note: the %s on %s, as the runners do, though %s no GPU: give "
          "--cpu-partition P to put %s on a CPU partition\n",
          l->redis_job ? "redis and scheduler jobs run" : "scheduler job runs", where,
          l->redis_job ? "they need" : "it needs", l->redis_job ? "them" : "it");
}

static void print_launch(const struct launch *l) {
  note_shared_partition(l);
  if (l->o->json) {
    json_t *j = jobs_json(l);
    char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    if (text)
      printf("%s\n", text);
    free(text);
    json_decref(j);
    return;
  }
  const char *id = l->sub.campaign.id;
  if (l->o->dry_run) {
    printf("campaign \"%s\": job scripts written to %s; would run:\n", id, l->dir);
    for (int i = 0; i < N_JOBS; i++) {
      if (i == JOB_REDIS && !l->redis_job)
        continue;
      struct kb_buf block;
      kb_buf_init(&block);
      if (sbatch_block(l, i, &block) == KB_OK) {
        printf("  %s.sbatch:\n", job_keys[i]);
        for (char *line = block.data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
          nl = strchr(line, '\n');
          printf("    %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
        }
      }
      kb_buf_release(&block);
    }
    if (l->redis_job)
      printf("  sbatch --parsable %s/redis.sbatch\n", l->dir);
    printf("  sbatch --parsable%s %s/scheduler.sbatch\n",
           l->redis_job ? " --dependency=after:<redis> --kill-on-invalid-dep=yes" : "", l->dir);
    printf("  sbatch --parsable --dependency=after:<scheduler> --kill-on-invalid-dep=yes "
           "%s/runners.sbatch\n", l->dir);
    return;
  }
  printf("campaign \"%s\" submitted to Slurm:\n", id);
  if (l->redis_job)
    printf("  redis      job %-10s address in %s/address once it runs\n", l->jobs[JOB_REDIS],
           l->redis_dir);
  else
    printf("  redis      %s (given)\n", l->o->redis);
  printf("  scheduler  job %-10s%s%s\n", l->jobs[JOB_SCHED], l->redis_job ? " after " : "",
         l->redis_job ? l->jobs[JOB_REDIS] : "");
  printf("  runners    job %-10s array %s%s%s, after %s\n", l->jobs[JOB_RUNNERS], l->array,
         l->gres ? ", gres " : "", l->gres ? l->gres : "", l->jobs[JOB_SCHED]);
  printf("scripts, logs and jobs.json in %s\n", l->dir);
}

static int launch(struct launch *l, struct kb_error *err) {
  const struct kb_slurm_opts *o = l->o;
  int rc = prepare(l, err);
  if (rc == KB_OK && !o->dry_run)
    rc = check_no_jobs(l, err);
  if (rc == KB_OK && o->restart) {
    char base[PATH_LEN];
    snprintf(base, sizeof base, "%s/%s", l->sub.campaign.results_dir, l->sub.campaign.id);
    rc = kb_remove_tree(base, err);
  }
  char logs[PATH_LEN + 8], password[PATH_LEN + 16], address[PATH_LEN + 16];
  snprintf(logs, sizeof logs, "%s/logs", l->dir);
  snprintf(password, sizeof password, "%s/password", l->redis_dir);
  snprintf(address, sizeof address, "%s/address", l->redis_dir);
  if (rc == KB_OK)
    rc = make_dir(logs, 0755, err);
  if (rc == KB_OK && l->redis_job) {
    rc = make_dir(l->redis_dir, 0700, err);
    if (rc == KB_OK)
      rc = ensure_password(password, err);
  }
  if (rc == KB_OK)
    rc = render_scripts(l, err);
  if (rc || o->dry_run)
    return rc;

  /* A stale address would send the new jobs to a server that is gone. */
  unlink(address);
  if (l->redis_job)
    rc = submit(l, JOB_REDIS, NULL, err);
  if (rc == KB_OK)
    rc = submit(l, JOB_SCHED, l->jobs[JOB_REDIS], err);
  if (rc == KB_OK)
    rc = submit(l, JOB_RUNNERS, l->jobs[JOB_SCHED], err);
  if (rc == KB_OK)
    rc = record_jobs(l, err);
  if (rc) { /* leave nothing half-launched behind */
    const int all[] = {JOB_REDIS, JOB_SCHED, JOB_RUNNERS};
    char ids[3 * JOB_ID_MAX + 8];
    join_ids(l->jobs, all, N_JOBS, ids, sizeof ids);
    if (ids[0])
      scancel(ids, NULL);
  }
  return rc;
}

int kb__slurm_launch(const struct kb_slurm_opts *o, struct kb_error *err) {
  struct launch l;
  memset(&l, 0, sizeof l);
  l.o = o;
  if (o->restart && o->redis)
    return kb_error_set(err, KB_EINVAL, "--restart works with the redis job only: a given "
                        "redis keeps its campaign (delete it there)");
  int rc = kb_submission_load(o->campaign_path, &l.sub, err);
  if (rc)
    return rc;
  rc = launch(&l, err);
  if (rc == KB_OK)
    print_launch(&l);
  kb_submission_release(&l.sub);
  return rc;
}

/* ---------------------------------------------------------------- stop and cancel */

/* Moves the campaign to "cancelled" in its redis (`*cancelled` = 1 when it is so now). `said`
 * gets what happened, for the user. An unreachable redis or campaign is said, not an error. */
static int cancel_in_redis(const char *cid, const char *address, int *cancelled, char *said,
                           size_t size, struct kb_error *err) {
  struct kb_redis *r = NULL;
  struct kb_redis_opts ro = {.addr = address, .retry_ms = 2000};
  struct kb_error e = {0};
  int rc = kb_redis_connect(&ro, &r, &e);
  struct kb_queue q;
  if (rc == KB_OK)
    rc = kb_queue_open(&q, r, cid, &e);
  char who[256];
  kb_cli_who("kb-launch", who, sizeof who);
  if (rc == KB_OK)
    rc = kb_queue_set_state(&q, "submitting,running,draining", "cancelled",
                            "cancelled with kb-launch --cancel", who, &e);
  *cancelled = rc == KB_OK;
  if (rc == KB_OK)
    snprintf(said, size, "cancelled in redis at %s", address);
  else if (rc == KB_ESTATE)
    snprintf(said, size, "already over in redis (%s)", e.msg);
  else if (rc == KB_ECONN || rc == KB_EAUTH || rc == KB_ENOTFOUND)
    snprintf(said, size, "not changed in redis: %s", e.msg);
  kb_redis_free(r);
  if (rc == KB_OK || rc == KB_ESTATE || rc == KB_ECONN || rc == KB_EAUTH || rc == KB_ENOTFOUND)
    return KB_OK;
  return kb_error_set(err, rc, "%s", e.msg);
}

/* The job ids the jobs.json at `path` records (one that is not a safe word left empty), and the
 * redis address it names when the redis was given (else `given` empty). */
static void read_jobs(const char *path, char jobs[N_JOBS][JOB_ID_MAX], char *given,
                      size_t given_size) {
  json_t *j = json_load_file(path, 0, NULL);
  for (int i = 0; i < N_JOBS; i++) {
    const char *id = json_string_value(json_object_get(json_object_get(j, job_keys[i]), "job"));
    snprintf(jobs[i], JOB_ID_MAX, "%s", id && kb__slurm_word_ok(id) ? id : "");
  }
  const char *addr = json_string_value(json_object_get(json_object_get(j, "redis"), "address"));
  snprintf(given, given_size, "%s", addr ? addr : "");
  json_decref(j);
}

/* --cancel's step in redis: at `given`, else at the address the redis job wrote into `dir`
 * (with its password file unless one is set); what happened goes into `said`. */
static int cancel_campaign(const char *cid, const char *dir, const char *given, int *cancelled,
                           char *said, size_t size, struct kb_error *err) {
  char address[256] = "", password[PATH_LEN + 16], path[PATH_LEN + 16];
  snprintf(password, sizeof password, "%s/redis/password", dir);
  if (given[0]) {
    snprintf(address, sizeof address, "%s", given);
  } else {
    snprintf(path, sizeof path, "%s/redis/address", dir);
    FILE *f = fopen(path, "r");
    if (f && fgets(address, sizeof address, f))
      address[strcspn(address, "\r\n")] = '\0';
    if (f)
      fclose(f);
    if (getenv("KB_REDIS_PASSWORD") == NULL && getenv("KB_REDIS_PASSWORD_FILE") == NULL &&
        access(password, R_OK) == 0)
      setenv("KB_REDIS_PASSWORD_FILE", password, 1);
  }
  if (address[0])
    return cancel_in_redis(cid, address, cancelled, said, size, err);
  snprintf(said, size, "not changed in redis: the redis job is not serving (no %s)", path);
  return KB_OK;
}

/* Runners first (SIGTERM: they release their leases), then the scheduler: after a cancel it
 * records what is left in the results stream and ends the campaign by itself once no lease is
 * left, so it gets a moment for that; redis last (it saves its AOF). */
static int end_jobs(char jobs[N_JOBS][JOB_ID_MAX], int cancelled, int wait_s,
                    struct kb_error *err) {
  int rc = KB_OK;
  for (int i = 0; rc == KB_OK && i < N_JOBS; i++) {
    int which = i == 0 ? JOB_RUNNERS : i == 1 ? JOB_SCHED : JOB_REDIS;
    const char *id = jobs[which];
    if (id[0] == '\0')
      continue;
    int left = 1;
    if (which == JOB_SCHED && cancelled)
      rc = wait_gone(id, wait_s < 30 ? wait_s : 30, &left, err);
    if (rc == KB_OK && left)
      rc = scancel(id, err);
    if (rc == KB_OK)
      rc = wait_gone(id, wait_s, NULL, err);
  }
  return rc;
}

static void print_stopped(const struct kb_slurm_stop_opts *o, const char *cid,
                          char jobs[N_JOBS][JOB_ID_MAX], const char *said) {
  if (o->json) {
    json_t *out = json_pack("{s:s, s:s, s:s, s:{s:s?, s:s?, s:s?}}", "campaign", cid,
                            "action", o->cancel ? "cancel" : "stop", "redis_state", said,
                            "jobs", "redis", jobs[JOB_REDIS][0] ? jobs[JOB_REDIS] : NULL,
                            "scheduler", jobs[JOB_SCHED][0] ? jobs[JOB_SCHED] : NULL,
                            "runners", jobs[JOB_RUNNERS][0] ? jobs[JOB_RUNNERS] : NULL);
    char *text = out ? json_dumps(out, JSON_INDENT(2)) : NULL;
    if (text)
      printf("%s\n", text);
    free(text);
    json_decref(out);
    return;
  }
  printf("campaign \"%s\": %s; jobs ended:", cid, o->cancel ? said : "stopped");
  for (int i = 0; i < N_JOBS; i++)
    if (jobs[i][0])
      printf(" %s %s", job_keys[i], jobs[i]);
  printf("\n");
  if (!o->cancel)
    printf("resume with: kb-launch --slurm %s\n", o->campaign_path);
}

int kb__slurm_stop(const struct kb_slurm_stop_opts *o, struct kb_error *err) {
  struct kb_campaign c;
  int rc = kb_campaign_load(o->campaign_path, &c, err);
  if (rc)
    return rc;
  char dir[PATH_LEN], path[PATH_LEN + 16];
  snprintf(dir, sizeof dir, "%s/%s/slurm", c.results_dir, c.id);
  snprintf(path, sizeof path, "%s/jobs.json", dir);
  char jobs[N_JOBS][JOB_ID_MAX], given[256];
  read_jobs(path, jobs, given, sizeof given);
  if (jobs[JOB_SCHED][0] == '\0' && jobs[JOB_RUNNERS][0] == '\0') {
    rc = kb_error_set(err, KB_ENOTFOUND, "no Slurm jobs recorded for campaign \"%s\" in %s",
                      c.id, path);
    kb_campaign_release(&c);
    return rc;
  }
  char said[PATH_LEN + 600] = "left as it is (a later kb-launch --slurm resumes it)";
  int cancelled = 0;
  if (o->cancel)
    rc = cancel_campaign(c.id, dir, given, &cancelled, said, sizeof said, err);
  if (rc == KB_OK)
    rc = end_jobs(jobs, cancelled, o->wait_s > 0 ? o->wait_s : 120, err);
  if (rc == KB_OK)
    print_stopped(o, c.id, jobs, said);
  kb_campaign_release(&c);
  return rc;
}
