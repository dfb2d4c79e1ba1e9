/* Campaign files: loading and validating campaign.json (see kb/campaign.h and
 * schemas/campaign.schema.json). The schema says the same as the checks here, except what JSON
 * Schema cannot say: unique task folders after resolving paths, the folders existing, unique
 * tier names, min_samples <= max_samples, real calendar dates.
 */
#include "kb/campaign.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/jsonfile.h"

#define CAMPAIGN_SCHEMA "kernelbrain.campaign/1"
#define GPU_SECONDS_MAX 1e9 /* about 31 years; keeps milliseconds far inside int64 */
#define SAMPLES_MAX 1000000
/* A tier's time limits, seconds: one day, lease_seconds' cap. Larger ones overflowed the
 * reservation (kb_tier_reserve_ms) and the sandbox refuses a max_seconds or a sampling budget
 * (0.7 of the timeout) over 1e9 s, so the campaign validated and then failed at its first
 * timed evaluation. */
#define TIER_SECONDS_MAX 86400.0
#define TIER_NOISE_MAX 1e9 /* the sandbox's cap on the noise target */

/* The default ladder (docs/campaign.md has the same table). */
static const struct kb_tier default_tiers[] = {
    {.name = "compile", .cost_ms = 0, .timeout_s = 120},
    {.name = "smoke",
     .cost_ms = 50,
     .input_sets = 1,
     .warmup = 1,
     .min_samples = 3,
     .max_samples = 5,
     .max_seconds = 0.5,
     .noise = 1.0,
     .timeout_s = 10},
    {.name = "screen",
     .cost_ms = 200,
     .input_sets = 0,
     .warmup = 2,
     .min_samples = 10,
     .max_samples = 50,
     .max_seconds = 1.0,
     .noise = 0.05,
     .timeout_s = 30},
    {.name = "full",
     .cost_ms = 1000,
     .input_sets = 0,
     .warmup = 3,
     .min_samples = 20,
     .max_samples = 200,
     .max_seconds = 3.0,
     .noise = 0.01,
     .timeout_s = 60},
};
#define N_DEFAULT_TIERS ((int)(sizeof default_tiers / sizeof default_tiers[0]))

void kb_campaign_default_ladder(struct kb_campaign *c) {
  for (int i = 0; i < N_DEFAULT_TIERS; i++)
    c->tiers[i] = default_tiers[i];
  c->n_tiers = N_DEFAULT_TIERS;
}

void kb_campaign_release(struct kb_campaign *c) {
  if (c == NULL)
    return;
  kb_free(c->name);
  kb_free(c->path);
  kb_free(c->dir);
  if (c->task_dirs != NULL)
    for (int i = 0; i < c->n_tasks; i++)
      kb_free(c->task_dirs[i]);
  kb_free(c->task_dirs);
  kb_free(c->results_dir);
  kb_free(c->spec_json);
  kb_free(c->gen.llm.endpoint);
  kb_free(c->gen.llm.model);
  kb_free(c->gen.llm.key_env);
  kb_free(c->gen.llm.key_file);
  kb_free(c->gen.archive.path);
  memset(c, 0, sizeof *c);
}

/* Parses "YYYY-MM-DDTHH:MM:SS[.fraction]Z" into unix seconds (the fraction is dropped).
 * Returns 1 on success, 0 when the text is not such a time or not a real calendar date. */
static int parse_rfc3339(const char *s, int64_t *out) {
  static const char shape[] = "dddd-dd-ddTdd:dd:dd";
  size_t n = strlen(s);
  size_t fixed = sizeof shape - 1;
  if (n < fixed + 1)
    return 0;
  for (size_t i = 0; i < fixed; i++) {
    if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
      return 0;
  }
  size_t i = fixed;
  if (s[i] == '.') {
    size_t digits = 0;
    for (i++; s[i] >= '0' && s[i] <= '9'; i++)
      digits++;
    if (digits < 1 || digits > 9)
      return 0;
  }
  if (s[i] != 'Z' || s[i + 1] != '\0')
    return 0;
#define NUM2(p) ((s[(p)] - '0') * 10 + (s[(p) + 1] - '0'))
  int year = NUM2(0) * 100 + NUM2(2);
  int month = NUM2(5);
  int day = NUM2(8);
  int hour = NUM2(11);
  int minute = NUM2(14);
  int second = NUM2(17);
#undef NUM2
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12)
    return 0;
  int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  int dmax = mdays[month - 1] + (month == 2 && leap);
  if (day < 1 || day > dmax || hour > 23 || minute > 59 || second > 60)
    return 0;
  struct tm tm = {0};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second; /* 60, a leap second, rolls into the next minute */
  time_t t = timegm(&tm);
  *out = (int64_t)t;
  return 1;
}

struct ctx {
  const struct kb_jsonfile *f; /* the document (borrowed) */
  int check_files;             /* 0: task folders are not looked at */
  struct kb_campaign *c;       /* being filled (borrowed) */
  struct kb_error *err;        /* first error goes here (borrowed) */
};

static int nomem(struct ctx *x) {
  return kb_error_set(x->err, KB_ENOMEM, "%s: out of memory", x->f->name);
}

static const char *const tier_fields[] = {"name",        "cost_ms",     "input_sets",
                                          "warmup",      "min_samples", "max_samples",
                                          "max_seconds", "noise",       "timeout_seconds",
                                          NULL};

static int parse_tier(struct ctx *x, json_t *arr, int index) {
  const struct kb_jsonfile *f = x->f;
  struct kb_tier *t = &x->c->tiers[index];
  char path[KB_JSON_PATH_MAX];
  json_t *item;
  int rc = kb_json_array_object(f, arr, "ladder", (size_t)index, tier_fields, path, &item, x->err);
  if (rc)
    return rc;
  char name[KB_ID_MAX];
  rc = kb_id_get(f, item, path, "name", name, x->err);
  if (rc)
    return rc;
  char full[KB_JSON_PATH_MAX];
  kb_json_path(full, sizeof full, path, "name");
  if (index == 0 && strcmp(name, "compile") != 0)
    return kb_jsonfile_fail(f, x->err, full,
                            "\"%s\" must be \"compile\": the first tier is the compile tier",
                            full);
  for (int j = 0; j < index; j++)
    if (strcmp(x->c->tiers[j].name, name) == 0)
      return kb_jsonfile_fail(f, x->err, full, "\"%s\" repeats the tier name \"%s\"", full,
                              name);
  /* a tier named like a default one starts from its values; any other needs every field */
  int required = 1;
  memset(t, 0, sizeof *t);
  for (int d = 0; d < N_DEFAULT_TIERS; d++) {
    if (strcmp(default_tiers[d].name, name) == 0) {
      *t = default_tiers[d];
      required = 0;
    }
  }
  snprintf(t->name, sizeof t->name, "%s", name);
  int64_t v;
  v = t->cost_ms;
  rc = kb_json_get_int(f, item, path, "cost_ms", required, 0, INT64_MAX, &v, x->err);
  t->cost_ms = v;
  v = t->input_sets;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, item, path, "input_sets", required, 0, KB_MAX_SETS, &v, x->err);
  t->input_sets = (int)v;
  v = t->warmup;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, item, path, "warmup", required, 0, SAMPLES_MAX, &v, x->err);
  t->warmup = (int)v;
  v = t->min_samples;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, item, path, "min_samples", required, 1, SAMPLES_MAX, &v, x->err);
  t->min_samples = (int)v;
  v = t->max_samples;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, item, path, "max_samples", required, 1, SAMPLES_MAX, &v, x->err);
  t->max_samples = (int)v;
  if (rc == KB_OK)
    rc = kb_json_get_number(f, item, path, "max_seconds", required, DBL_MIN, TIER_SECONDS_MAX,
                            &t->max_seconds, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, item, path, "noise", required, DBL_MIN, TIER_NOISE_MAX,
                            &t->noise, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, item, path, "timeout_seconds", required, DBL_MIN,
                            TIER_SECONDS_MAX, &t->timeout_s, x->err);
  if (rc)
    return rc;
  /* the compile tier does not time, so its sample counts are not checked against each other */
  if (index > 0 && t->min_samples > t->max_samples) {
    kb_json_path(full, sizeof full, path, "min_samples");
    return kb_jsonfile_fail(f, x->err, full,
                            "\"%s\" (%d) must not exceed \"%s.max_samples\" (%d)", full,
                            t->min_samples, path, t->max_samples);
  }
  return KB_OK;
}

static int parse_ladder(struct ctx *x, json_t *root) {
  json_t *arr = NULL;
  int rc = kb_json_get_array(x->f, root, "", "ladder", 0, 1, KB_MAX_TIERS, &arr, x->err);
  if (rc || arr == NULL)
    return rc;
  for (size_t i = 0; i < json_array_size(arr); i++) {
    rc = parse_tier(x, arr, (int)i);
    if (rc)
      return rc;
  }
  x->c->n_tiers = (int)json_array_size(arr);
  return KB_OK;
}

static const char *const budget_fields[] = {"gpu_seconds", "llm_tokens", NULL};

static int parse_budget(struct ctx *x, json_t *root) {
  json_t *budget = NULL;
  int rc = kb_json_get_object(x->f, root, "", "budget", 1, &budget, x->err);
  if (rc == KB_OK)
    rc = kb_jsonfile_check_unknown(x->f, budget, "budget", budget_fields, x->err);
  double seconds = 0;
  if (rc == KB_OK)
    rc = kb_json_get_number(x->f, budget, "budget", "gpu_seconds", 1, DBL_MIN, GPU_SECONDS_MAX,
                            &seconds, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_int(x->f, budget, "budget", "llm_tokens", 0, 0, INT64_MAX,
                         &x->c->budget_llm_tokens, x->err);
  if (rc)
    return rc;
  x->c->budget_gpu_ms = llround(seconds * 1000.0);
  if (x->c->budget_gpu_ms < 1)
    x->c->budget_gpu_ms = 1; /* a positive budget never rounds down to nothing */
  return KB_OK;
}

static const char *const generator_fields[] = {"seed", "low_water", "max_per_task", "tune",
                                               "llm", "archive", NULL};
static const char *const archive_fields[] = {"path", "propose", "examples", "save", "tags",
                                             NULL};
static const char *const tune_fields[] = {"weight", NULL};
static const char *const llm_fields[] = {"weight",      "api",          "endpoint",
                                         "model",       "key_env",      "key_file",
                                         "auth",
                                         "concurrency", "max_tokens",   "temperature",
                                         "timeout_seconds", "max_retries", "backoff_seconds",
                                         "backoff_max_seconds", "format", NULL};

/* A copy of the string field `key` of `obj` into `*out` (new), when present. */
static int dup_string(struct ctx *x, json_t *obj, const char *path, const char *key, int required,
                      char **out) {
  const char *v = NULL;
  int rc = kb_json_get_string(x->f, obj, path, key, required, &v, x->err);
  if (rc || v == NULL)
    return rc;
  char full[KB_JSON_PATH_MAX];
  kb_json_path(full, sizeof full, path, key);
  if (v[0] == '\0')
    return kb_jsonfile_fail(x->f, x->err, full, "\"%s\" must be a non-empty string", full);
  *out = kb_strdup(v);
  return *out ? KB_OK : nomem(x);
}

static int env_name_valid(const char *s) {
  if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
    return 0;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
          *p == '_'))
      return 0;
  return 1;
}

static int parse_llm(struct ctx *x, json_t *llm) {
  const struct kb_jsonfile *f = x->f;
  const char *path = "generators.llm";
  struct kb_gen_llm_cfg *l = &x->c->gen.llm;
  int rc = kb_jsonfile_check_unknown(f, llm, path, llm_fields, x->err);
  if (rc)
    return rc;
  l->enabled = 1;
  static const char *const apis[] = {"openai", "anthropic", NULL};
  rc = kb_json_get_number(f, llm, path, "weight", 0, 0, 1e6, &l->weight, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_enum(f, llm, path, "api", 1, apis, &l->api, x->err);
  if (rc == KB_OK)
    rc = dup_string(x, llm, path, "endpoint", 1, &l->endpoint);
  if (rc == KB_OK && strncmp(l->endpoint, "http://", 7) != 0 &&
      strncmp(l->endpoint, "https://", 8) != 0)
    rc = kb_jsonfile_fail(f, x->err, "generators.llm.endpoint",
                          "\"generators.llm.endpoint\" must be an http:// or https:// URL");
  if (rc == KB_OK)
    rc = dup_string(x, llm, path, "model", 1, &l->model);
  if (rc == KB_OK)
    rc = dup_string(x, llm, path, "key_env", 0, &l->key_env);
  if (rc == KB_OK && l->key_env && !env_name_valid(l->key_env))
    rc = kb_jsonfile_fail(f, x->err, "generators.llm.key_env",
                          "\"generators.llm.key_env\" must name an environment variable "
                          "([A-Za-z_][A-Za-z0-9_]*), not hold the key");
  if (rc == KB_OK)
    rc = dup_string(x, llm, path, "key_file", 0, &l->key_file);
  if (rc == KB_OK && l->key_file && l->key_file[0] != '/')
    rc = kb_jsonfile_fail(f, x->err, "generators.llm.key_file",
                          "\"generators.llm.key_file\" must be an absolute path");
  static const char *const auths[] = {"key", "none", NULL};
  int auth = 0;
  if (rc == KB_OK)
    rc = kb_json_get_enum(f, llm, path, "auth", 0, auths, &auth, x->err);
  l->auth_none = auth == 1;
  if (rc == KB_OK && l->auth_none && (l->key_env || l->key_file))
    rc = kb_jsonfile_fail(f, x->err, l->key_env ? "generators.llm.key_env"
                                                : "generators.llm.key_file",
                          "\"%s\" has \"auth\": \"none\": it takes no \"key_env\" or "
                          "\"key_file\"", path);
  if (rc == KB_OK && !l->auth_none && (l->key_env == NULL) == (l->key_file == NULL))
    rc = kb_jsonfile_fail(f, x->err, path,
                          "\"%s\" needs exactly one of \"key_env\" and \"key_file\" (or "
                          "\"auth\": \"none\" for an endpoint without a key)", path);
  int64_t v = l->concurrency;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, llm, path, "concurrency", 0, 1, 256, &v, x->err);
  l->concurrency = (int)v;
  v = l->max_tokens;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, llm, path, "max_tokens", 0, 1, 1000000, &v, x->err);
  l->max_tokens = (int)v;
  if (rc == KB_OK)
    rc = kb_json_get_number(f, llm, path, "temperature", 0, 0, 2, &l->temperature, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, llm, path, "timeout_seconds", 0, DBL_MIN, 86400, &l->timeout_s,
                            x->err);
  v = l->max_retries;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, llm, path, "max_retries", 0, 0, 20, &v, x->err);
  l->max_retries = (int)v;
  if (rc == KB_OK)
    rc = kb_json_get_number(f, llm, path, "backoff_seconds", 0, DBL_MIN, 3600, &l->backoff_s,
                            x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, llm, path, "backoff_max_seconds", 0, DBL_MIN, 3600,
                            &l->backoff_max_s, x->err);
  /* the answer format; "kernelbench" needs pytorch-oracle tasks (kb_submission_load checks) */
  static const char *const formats[] = {"native", "kernelbench", NULL};
  if (rc == KB_OK)
    rc = kb_json_get_enum(f, llm, path, "format", 0, formats, &l->format, x->err);
  if (rc == KB_OK && x->c->budget_llm_tokens <= 0)
    rc = kb_jsonfile_fail(f, x->err, path,
                          "\"%s\" needs a positive \"budget.llm_tokens\" to pay for requests",
                          path);
  return rc;
}

static int parse_archive(struct ctx *x, json_t *arch) {
  const struct kb_jsonfile *f = x->f;
  const char *path = "generators.archive";
  struct kb_gen_archive_cfg *a = &x->c->gen.archive;
  a->enabled = 1;
  int rc = kb_jsonfile_check_unknown(f, arch, path, archive_fields, x->err);
  if (rc == KB_OK)
    rc = dup_string(x, arch, path, "path", 0, &a->path);
  if (rc == KB_OK && a->path && a->path[0] != '/')
    rc = kb_jsonfile_fail(f, x->err, "generators.archive.path",
                          "\"generators.archive.path\" must be an absolute path (the scheduler "
                          "may run in another folder or on another node)");
  if (rc == KB_OK && a->path && x->check_files) {
    struct stat st;
    if (stat(a->path, &st) != 0 || !S_ISDIR(st.st_mode))
      rc = kb_jsonfile_fail(f, x->err, "generators.archive.path",
                            "\"generators.archive.path\": \"%s\" is not an existing folder",
                            a->path);
  }
  int64_t v = a->propose;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, arch, path, "propose", 0, 0, 1000, &v, x->err);
  a->propose = (int)v;
  v = a->examples;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, arch, path, "examples", 0, 0, 8, &v, x->err);
  a->examples = (int)v;
  v = a->save;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, arch, path, "save", 0, 0, 100, &v, x->err);
  a->save = (int)v;
  json_t *tags = NULL;
  if (rc == KB_OK)
    rc = kb_json_get_array(f, arch, path, "tags", 0, 0, KB_ARCHIVE_CFG_TAGS, &tags, x->err);
  for (size_t i = 0; rc == KB_OK && i < json_array_size(tags); i++) {
    char at[64];
    kb_json_index_path(at, sizeof at, "generators.archive.tags", i);
    const char *t = json_string_value(json_array_get(tags, i));
    int ok = t != NULL && t[0] != '\0' && strlen(t) < sizeof a->tags[0];
    for (const char *p = t; ok && *p; p++)
      ok = *p >= 0x20 && *p <= 0x7e;
    if (!ok)
      rc = kb_jsonfile_fail(f, x->err, at, "\"%s\" must be 1 to 40 printable ASCII characters",
                            at);
    else
      snprintf(a->tags[a->n_tags++], sizeof a->tags[0], "%s", t);
  }
  return rc;
}

static int parse_generators(struct ctx *x, json_t *root) {
  struct kb_generators *g = &x->c->gen;
  g->seed = 1;
  g->low_water = 2;
  g->max_per_task = 64;
  g->tune_weight = 1;
  g->llm.weight = 1;
  g->llm.concurrency = 4;
  g->llm.max_tokens = 4096;
  g->llm.temperature = 0.7;
  g->llm.timeout_s = 120;
  g->llm.max_retries = 5;
  g->llm.backoff_s = 1;
  g->llm.backoff_max_s = 60;
  g->archive.propose = 4;
  g->archive.examples = 2;
  g->archive.save = 3;
  json_t *gen = NULL;
  int rc = kb_json_get_object(x->f, root, "", "generators", 0, &gen, x->err);
  if (rc || gen == NULL)
    return rc;
  rc = kb_jsonfile_check_unknown(x->f, gen, "generators", generator_fields, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_bool(x->f, gen, "generators", "seed", 0, &g->seed, x->err);
  int64_t v = g->low_water;
  if (rc == KB_OK)
    rc = kb_json_get_int(x->f, gen, "generators", "low_water", 0, 0, 10000, &v, x->err);
  g->low_water = (int)v;
  v = g->max_per_task;
  if (rc == KB_OK)
    rc = kb_json_get_int(x->f, gen, "generators", "max_per_task", 0, 1, 100000, &v, x->err);
  g->max_per_task = (int)v;
  json_t *tune = NULL, *llm = NULL;
  if (rc == KB_OK)
    rc = kb_json_get_object(x->f, gen, "generators", "tune", 0, &tune, x->err);
  if (rc == KB_OK && tune) {
    g->tune = 1;
    rc = kb_jsonfile_check_unknown(x->f, tune, "generators.tune", tune_fields, x->err);
    if (rc == KB_OK)
      rc = kb_json_get_number(x->f, tune, "generators.tune", "weight", 0, 0, 1e6,
                              &g->tune_weight, x->err);
  }
  if (rc == KB_OK)
    rc = kb_json_get_object(x->f, gen, "generators", "llm", 0, &llm, x->err);
  if (rc == KB_OK && llm)
    rc = parse_llm(x, llm);
  json_t *arch = NULL;
  if (rc == KB_OK)
    rc = kb_json_get_object(x->f, gen, "generators", "archive", 0, &arch, x->err);
  if (rc == KB_OK && arch)
    rc = parse_archive(x, arch);
  if (rc == KB_OK && g->llm.enabled && g->llm.backoff_max_s < g->llm.backoff_s)
    rc = kb_jsonfile_fail(x->f, x->err, "generators.llm.backoff_max_seconds",
                          "\"generators.llm.backoff_max_seconds\" must not be below "
                          "\"generators.llm.backoff_seconds\"");
  if (rc == KB_OK && !g->seed)
    rc = kb_jsonfile_fail(x->f, x->err, "generators.seed",
                          "\"generators.seed\" cannot be false: every generator starts from the "
                          "seeds (the llm generator translates from the reference, but the "
                          "baseline is a seed)");
  return rc;
}

/* Checks the task folders exist and hold a task.json, and that no two entries name the same
 * folder once paths are resolved (the schema only sees equal strings). */
static int resolve_tasks(struct ctx *x, json_t *tasks) {
  struct kb_campaign *c = x->c;
  size_t n = json_array_size(tasks);
  c->task_dirs = kb_calloc(n, sizeof *c->task_dirs);
  if (c->task_dirs == NULL)
    return nomem(x);
  for (size_t i = 0; i < n; i++) {
    char path[KB_JSON_PATH_MAX];
    kb_json_index_path(path, sizeof path, "tasks", i);
    const char *rel = json_string_value(json_array_get(tasks, i));
    char *abs = kb_path_resolve(c->dir, rel);
    if (abs == NULL)
      return nomem(x);
    struct stat st;
    const char *why = NULL;
    if (stat(abs, &st) != 0)
      why = strerror(errno);
    else if (!S_ISDIR(st.st_mode))
      why = "not a folder";
    if (why != NULL) {
      kb_free(abs);
      return kb_jsonfile_fail(x->f, x->err, path, "\"%s\": no task folder \"%s\": %s", path, rel,
                              why);
    }
    char real[PATH_MAX];
    int have_real = realpath(abs, real) != NULL;
    kb_free(abs);
    if (!have_real)
      return kb_jsonfile_fail(x->f, x->err, path, "\"%s\": cannot resolve \"%s\": %s", path,
                              rel, strerror(errno));
    char json_path[PATH_MAX + 16];
    int len = snprintf(json_path, sizeof json_path, "%s/task.json", real);
    if (len < 0 || (size_t)len >= sizeof json_path)
      return kb_jsonfile_fail(x->f, x->err, path, "\"%s\": task folder \"%s\": path too long",
                              path, rel);
    if (access(json_path, R_OK) != 0)
      return kb_jsonfile_fail(x->f, x->err, path,
                              "\"%s\": task folder \"%s\" has no readable task.json: %s", path,
                              rel, strerror(errno));
    /* a folder, FIFO or device named task.json would pass access() and hang or fail the read */
    if (stat(json_path, &st) != 0 || !S_ISREG(st.st_mode))
      return kb_jsonfile_fail(x->f, x->err, path,
                              "\"%s\": the task.json of task folder \"%s\" is not a regular file",
                              path, rel);
    for (int j = 0; j < c->n_tasks; j++) {
      if (strcmp(c->task_dirs[j], real) == 0) {
        char other[KB_JSON_PATH_MAX];
        kb_json_index_path(other, sizeof other, "tasks", (size_t)j);
        return kb_jsonfile_fail(x->f, x->err, path,
                                "\"%s\" names the same task folder as \"%s\"", path, other);
      }
    }
    c->task_dirs[i] = kb_strdup(real);
    if (c->task_dirs[i] == NULL)
      return nomem(x);
    c->n_tasks = (int)i + 1;
  }
  return KB_OK;
}

void kb_search_defaults(struct kb_search *s) {
  s->eta = 3;
  s->confidence_z = KB_SEARCH_Z;
  s->floor_share = 0.25;
  s->explore = 1.0;
  s->window = 32;
  s->rebalance_s = 5.0;
  s->stagnation = 100;
  s->min_improvement = 0.01;
  s->baseline_gate = 1;
  s->eta_max = KB_SEARCH_ETA_MAX;
  s->keep_top = 5;
}

static const char *const search_fields[] = {"eta",         "confidence_z",
                                            "floor_share", "explore",
                                            "window",      "rebalance_seconds",
                                            "stagnation_evaluations", "min_improvement",
                                            "baseline_gate", "eta_max", "keep_top", NULL};

/* The "search" section (docs/search.md); defaults for what it leaves out. */
static int parse_search(struct ctx *x, json_t *root) {
  const struct kb_jsonfile *f = x->f;
  struct kb_search *s = &x->c->search;
  kb_search_defaults(s);
  json_t *o = NULL;
  int rc = kb_json_get_object(f, root, "", "search", 0, &o, x->err);
  if (rc || o == NULL)
    return rc;
  const char *p = "search";
  rc = kb_jsonfile_check_unknown(f, o, p, search_fields, x->err);
  int64_t eta = s->eta, window = s->window, stagnation = s->stagnation, eta_max = s->eta_max,
          keep_top = s->keep_top;
  if (rc == KB_OK)
    rc = kb_json_get_int(f, o, p, "eta", 0, 1, 100, &eta, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, p, "confidence_z", 0, 0, 10, &s->confidence_z, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, p, "floor_share", 0, 0, 1, &s->floor_share, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, p, "explore", 0, 0, 100, &s->explore, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_int(f, o, p, "window", 0, 1, 10000, &window, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, p, "rebalance_seconds", 0, DBL_MIN, 86400, &s->rebalance_s,
                            x->err);
  if (rc == KB_OK)
    rc = kb_json_get_int(f, o, p, "stagnation_evaluations", 0, 0, 1000000, &stagnation, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, o, p, "min_improvement", 0, 0, 1, &s->min_improvement, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_bool(f, o, p, "baseline_gate", 0, &s->baseline_gate, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_int(f, o, p, "eta_max", 0, 1, 100, &eta_max, x->err);
  if (rc == KB_OK)
    rc = kb_json_get_int(f, o, p, "keep_top", 0, 1, 1000, &keep_top, x->err);
  s->eta = (int)eta;
  s->eta_max = (int)eta_max;
  s->keep_top = (int)keep_top;
  s->window = (int)window;
  s->stagnation = (int)stagnation;
  return rc;
}

static const char *const campaign_fields[] = {
    "schema",        "id",          "name",   "backend",    "tasks",          "budget",
    "deadline",      "max_attempts", "lease_seconds", "results_dir", "ladder", "generators",
    "target_speedup", "search", "sandbox", NULL};

int kb_confinement_rank(const char *level) {
  static const char *const names[] = {"none", "seccomp", "seccomp+landlock"};
  for (int i = 0; level != NULL && i < 3; i++)
    if (strcmp(level, names[i]) == 0)
      return i;
  return -1;
}

int kb_confinement_check(const char *cid, const char *required, const char *reached,
                         struct kb_error *err) {
  if (kb_confinement_rank(reached) >= kb_confinement_rank(required))
    return KB_OK;
  return kb_error_set(err, KB_ECONFINE, "campaign \"%s\" requires sandbox confinement \"%s\", "
                      "this node reaches \"%s\" (kb-runner --list-devices says why; "
                      "docs/sandbox.md)", cid, required, reached);
}

static const char *const sandbox_fields[] = {"require", NULL};

static int parse_sandbox(struct ctx *x, json_t *root) {
  snprintf(x->c->sandbox_require, sizeof x->c->sandbox_require, "none");
  json_t *sb = NULL;
  int rc = kb_json_get_object(x->f, root, "", "sandbox", 0, &sb, x->err);
  if (rc || sb == NULL)
    return rc;
  rc = kb_jsonfile_check_unknown(x->f, sb, "sandbox", sandbox_fields, x->err);
  static const char *const levels[] = {"none", "seccomp", "seccomp+landlock", NULL};
  int level = 0;
  if (rc == KB_OK)
    rc = kb_json_get_enum(x->f, sb, "sandbox", "require", 0, levels, &level, x->err);
  if (rc == KB_OK)
    snprintf(x->c->sandbox_require, sizeof x->c->sandbox_require, "%s", levels[level]);
  return rc;
}

/* The "tasks" list as text (into *tasks, borrowed from the tree): non-empty strings, no two
 * alike. The folders they name are checked later, by resolve_tasks. */
static int check_task_list(struct ctx *x, json_t *root, json_t **tasks) {
  const struct kb_jsonfile *f = x->f;
  int rc = kb_json_get_array(f, root, "", "tasks", 1, 1, KB_MAX_TASKS, tasks, x->err);
  if (rc)
    return rc;
  for (size_t i = 0; i < json_array_size(*tasks); i++) {
    char path[KB_JSON_PATH_MAX];
    kb_json_index_path(path, sizeof path, "tasks", i);
    json_t *t = json_array_get(*tasks, i);
    if (!json_is_string(t) || json_string_length(t) == 0)
      return kb_jsonfile_fail(f, x->err, path, "\"%s\" must be a non-empty string", path);
    for (size_t j = 0; j < i; j++) {
      if (strcmp(json_string_value(json_array_get(*tasks, j)), json_string_value(t)) == 0) {
        char other[KB_JSON_PATH_MAX];
        kb_json_index_path(other, sizeof other, "tasks", j);
        return kb_jsonfile_fail(f, x->err, path, "\"%s\" names the same task folder as \"%s\"",
                                path, other);
      }
    }
  }
  return KB_OK;
}

/* "deadline", "max_attempts", "lease_seconds" and "results_dir", with their defaults. */
static int parse_limits(struct ctx *x, json_t *root) {
  const struct kb_jsonfile *f = x->f;
  struct kb_campaign *c = x->c;
  const char *deadline = NULL;
  int rc = kb_json_get_string(f, root, "", "deadline", 0, &deadline, x->err);
  if (rc)
    return rc;
  if (deadline != NULL && !parse_rfc3339(deadline, &c->deadline))
    return kb_jsonfile_fail(f, x->err, "deadline",
                            "\"deadline\" must be an RFC 3339 UTC time like "
                            "\"2026-12-01T08:00:00Z\": \"%s\"",
                            deadline);
  if (deadline != NULL)
    kb_jsonfile_position(f, "deadline", 0, &c->deadline_line, &c->deadline_col);
  int64_t v = 3;
  rc = kb_json_get_int(f, root, "", "max_attempts", 0, 1, 20, &v, x->err);
  if (rc)
    return rc;
  c->max_attempts = (int)v;
  v = 120;
  rc = kb_json_get_int(f, root, "", "lease_seconds", 0, 5, 86400, &v, x->err);
  if (rc)
    return rc;
  c->lease_seconds = (int)v;
  const char *results = "results";
  rc = kb_json_get_string(f, root, "", "results_dir", 0, &results, x->err);
  if (rc)
    return rc;
  if (results[0] == '\0')
    return kb_jsonfile_fail(f, x->err, "results_dir", "\"results_dir\" must be a non-empty string");
  c->results_dir = kb_path_resolve(c->dir, results);
  if (c->results_dir == NULL)
    return nomem(x);
  struct stat st;
  if (x->check_files && stat(c->results_dir, &st) == 0 && !S_ISDIR(st.st_mode))
    return kb_jsonfile_fail(f, x->err, "results_dir",
                            "\"results_dir\" names \"%s\", which exists and is not a folder",
                            c->results_dir);
  return KB_OK;
}

int kb_campaign_check_deadline(const struct kb_campaign *c, int64_t now, struct kb_error *err) {
  if (c->deadline == 0 || c->deadline > now)
    return KB_OK;
  char when[32] = "";
  time_t t = (time_t)c->deadline;
  struct tm tm;
  if (gmtime_r(&t, &tm) != NULL)
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return kb_error_set(err, KB_EPARSE,
                      "%s:%d:%d: \"deadline\" %s is in the past (%lld s ago): the campaign "
                      "would end before it starts",
                      c->path, c->deadline_line, c->deadline_col, when,
                      (long long)(now - c->deadline));
}

static int parse_campaign(struct ctx *x) {
  const struct kb_jsonfile *f = x->f;
  struct kb_campaign *c = x->c;
  json_t *root = f->root;
  int rc = kb_jsonfile_check_document(f, "a campaign", campaign_fields, CAMPAIGN_SCHEMA, x->err);
  if (rc == KB_OK)
    rc = kb_id_get(f, root, "", "id", c->id, x->err);
  if (rc)
    return rc;
  const char *name = c->id;
  rc = kb_json_get_string(f, root, "", "name", 0, &name, x->err);
  if (rc)
    return rc;
  if (name[0] == '\0')
    return kb_jsonfile_fail(f, x->err, "name", "\"name\" must be a non-empty string");
  long at = kb_text_control_at(name);
  if (at >= 0)
    return kb_jsonfile_fail(f, x->err, "name", "\"name\" has a control character (0x%02x at "
                            "offset %ld): it is shown on terminals",
                            (unsigned)(unsigned char)name[at], at);
  c->name = kb_strdup(name);
  if (c->name == NULL)
    return nomem(x);
  static const char *const backends[] = {"host", "cuda", NULL};
  rc = kb_json_get_enum(f, root, "", "backend", 1, backends, &c->backend, x->err);
  if (rc)
    return rc;

  json_t *tasks = NULL;
  rc = check_task_list(x, root, &tasks);
  if (rc == KB_OK)
    rc = parse_budget(x, root);
  if (rc == KB_OK)
    rc = parse_limits(x, root);
  if (rc)
    return rc;
  kb_campaign_default_ladder(c);
  rc = parse_ladder(x, root);
  if (rc == KB_OK)
    rc = parse_generators(x, root);
  if (rc == KB_OK)
    rc = kb_json_get_number(f, root, "", "target_speedup", 0, DBL_MIN, DBL_MAX,
                            &c->target_speedup, x->err);
  if (rc == KB_OK)
    rc = parse_search(x, root);
  if (rc == KB_OK)
    rc = parse_sandbox(x, root);
  /* the file system last: every check of the text itself comes first */
  if (rc == KB_OK && x->check_files)
    rc = resolve_tasks(x, tasks);
  return rc;
}

/* Fills `c` from the parsed `f`; `path` is where the text came from. */
static int campaign_from_file(struct kb_jsonfile *f, const char *path, const char *dir,
                              int check_files, struct kb_campaign *c, struct kb_error *err) {
  struct ctx x = {.f = f, .check_files = check_files, .c = c, .err = err};
  int rc = KB_OK;
  if (dir != NULL) {
    c->path = kb_path_resolve(dir, path);
    c->dir = kb_strdup(dir);
  } else {
    char real[PATH_MAX];
    if (realpath(path, real) != NULL)
      c->path = kb_strdup(real);
    else
      c->path = kb_path_resolve(NULL, path);
    if (c->path != NULL) {
      char *slash = strrchr(c->path, '/');
      size_t len = slash != NULL && slash != c->path ? (size_t)(slash - c->path) : 1;
      c->dir = kb_strndup(c->path, len);
    }
  }
  if (c->path == NULL || c->dir == NULL)
    rc = nomem(&x);
  if (rc == KB_OK)
    rc = parse_campaign(&x);
  if (rc == KB_OK) {
    c->spec_json = f->text;
    f->text = NULL;
  }
  return rc;
}

int kb_campaign_load(const char *path, struct kb_campaign *c, struct kb_error *err) {
  memset(c, 0, sizeof *c);
  struct kb_jsonfile f;
  int rc = kb_jsonfile_load(&f, path, err);
  if (rc)
    return rc;
  rc = campaign_from_file(&f, path, NULL, 1, c, err);
  kb_jsonfile_release(&f);
  if (rc)
    kb_campaign_release(c);
  return rc;
}

int kb_campaign_parse(const char *name, const char *text, const char *dir, int check_files,
                      struct kb_campaign *c, struct kb_error *err) {
  memset(c, 0, sizeof *c);
  struct kb_jsonfile f;
  int rc = kb_jsonfile_parse(&f, name, text, err);
  if (rc)
    return rc;
  rc = campaign_from_file(&f, name, dir, check_files, c, err);
  kb_jsonfile_release(&f);
  if (rc)
    kb_campaign_release(c);
  return rc;
}
