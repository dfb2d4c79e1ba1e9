/* Unit tests of kb-launch's option rules (slurm/launch.c, kb__launch_check): each refused
 * combination gives KB_EINVAL, the message kb-launch prints and how it prints it; the accepted
 * ones give KB_OK. No Slurm, no redis: the rules read only the parsed options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb/campaign.h"
#include "kb/error.h"
#include "launch.h"
#include "leaderboard.h"

/* A command line "kb-launch <mode> CAMPAIGN.json" with nothing else given. */
static struct kb_launch_args one(enum kb_launch_mode mode) {
  struct kb_launch_args a;
  memset(&a, 0, sizeof a);
  a.mode = mode;
  a.n_modes = 1;
  a.n_operands = 1;
  a.campaign = "c.json";
  return a;
}

/* Checks `a` is refused with KB_EINVAL, a message holding `want`, printed as `how_want`. */
static void refused(const struct kb_launch_args *a, const char *want,
                    enum kb_launch_refusal how_want) {
  struct kb_error err = {0};
  enum kb_launch_refusal how = KB_LAUNCH_SAY;
  assert_int_equal(kb__launch_check(a, &how, &err), KB_EINVAL);
  assert_int_equal(err.code, KB_EINVAL);
  if (strstr(err.msg, want) == NULL)
    fail_msg("message \"%s\" lacks \"%s\"", err.msg, want);
  assert_int_equal(how, how_want);
}

static void accepted(const struct kb_launch_args *a) {
  struct kb_error err = {0};
  enum kb_launch_refusal how;
  int rc = kb__launch_check(a, &how, &err);
  if (rc != KB_OK)
    fail_msg("refused: %s", err.msg);
}

static void test_accepts_plain_modes(void **state) {
  (void)state;
  enum kb_launch_mode modes[] = {KB_LAUNCH_LOCAL, KB_LAUNCH_SLURM, KB_LAUNCH_STOP,
                                 KB_LAUNCH_CANCEL};
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
    struct kb_launch_args a = one(modes[i]);
    accepted(&a);
  }
  struct kb_launch_args a = one(KB_LAUNCH_LOCAL);
  a.gpus = "0-3,5";
  accepted(&a);
  a = one(KB_LAUNCH_SLURM);
  a.runners = 8;
  a.slurm.throttle = 4;
  a.slurm.partition = "gpu";
  a.slurm.all.time = "4:00:00";
  a.slurm.gres = "gpu:a100:1";
  a.slurm_only = "--gres";
  a.wait_s = 30;
  accepted(&a);
  a = one(KB_LAUNCH_STOP);
  a.wait_s = 10;
  a.json = 1;
  accepted(&a);
}

static void test_modes_and_operands(void **state) {
  (void)state;
  struct kb_launch_args a = one(KB_LAUNCH_LOCAL);
  a.n_modes = 2;
  refused(&a, "give one of --local, --slurm, --stop, --cancel", KB_LAUNCH_SAY_USAGE);
  a = one(KB_LAUNCH_NONE);
  a.n_modes = 0;
  refused(&a, "CAMPAIGN.json", KB_LAUNCH_USAGE);
  a = one(KB_LAUNCH_SLURM);
  a.n_operands = 0;
  a.campaign = NULL;
  refused(&a, "CAMPAIGN.json", KB_LAUNCH_USAGE);
  a = one(KB_LAUNCH_SLURM);
  a.n_operands = 2;
  refused(&a, "CAMPAIGN.json", KB_LAUNCH_USAGE);
}

static void test_gpus(void **state) {
  (void)state;
  struct kb_launch_args a = one(KB_LAUNCH_SLURM);
  a.gpus = "0";
  refused(&a, "--gpus goes with --local", KB_LAUNCH_SAY);
  a = one(KB_LAUNCH_LOCAL);
  a.gpus = "0,0";
  refused(&a, "--gpus", KB_LAUNCH_SAY);
  a = one(KB_LAUNCH_LOCAL);
  a.gpus = "x";
  refused(&a, "--gpus", KB_LAUNCH_SAY);
  a = one(KB_LAUNCH_LOCAL);
  a.gpus = "0";
  a.runners = 2;
  refused(&a, "not both", KB_LAUNCH_SAY);
}

/* --gpus with a host campaign and --runners with a cuda one: usage errors (exit 2). */
static void test_backend_rule(void **state) {
  (void)state;
  struct kb_error err = {0};
  struct kb_launch_args a = one(KB_LAUNCH_LOCAL);
  a.gpus = "0";
  assert_int_equal(kb__launch_check_backend(&a, KB_BACKEND_HOST, "c", &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "host backend; --gpus goes with cuda campaigns"));
  assert_int_equal(kb__launch_check_backend(&a, KB_BACKEND_CUDA, "c", &err), KB_OK);
  a = one(KB_LAUNCH_LOCAL);
  a.runners = 2;
  kb_error_clear(&err);
  assert_int_equal(kb__launch_check_backend(&a, KB_BACKEND_CUDA, "c", &err), KB_EINVAL);
  assert_non_null(strstr(err.msg, "instead of --runners"));
  assert_int_equal(kb__launch_check_backend(&a, KB_BACKEND_HOST, "c", &err), KB_OK);
}

/* The leaderboard's names: three tuned variants that differ only after 16 characters, and
 * two past the column's 40, print as five different rows; the budget in gpu_seconds. */
static void test_leaderboard_names(void **state) {
  (void)state;
  static const char *names[] = {
      "tuned~BK=64,BJ=2,BI=8", "tuned~BK=64,BJ=2,BI=4", "tuned~BK=64,BJ=2,BI=16",
      "tuned~BLOCK_K=64,BLOCK_J=2,BLOCK_I=8,UNROLL=4,VEC=1",
      "tuned~BLOCK_K=64,BLOCK_J=2,BLOCK_I=8,UNROLL=4,VEC=2"};
  char path[] = "/tmp/kb-leaderboard-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "{\"campaign\": \"c\", \"state\": \"done\", \"reason\": \"r\", "
             "\"gpu_ms\": {\"total\": 120000, \"spent\": 1500}, \"tasks\": [{\"task\": \"t\", "
             "\"baseline\": \"naive\", \"evaluations\": 5, \"file\": \"t.h5\", \"leaderboard\": [");
  for (int i = 0; i < 5; i++)
    fprintf(f, "%s{\"rank\": %d, \"name\": \"%s\", \"generator\": \"tune\", \"status\": "
               "\"ok\", \"median_us\": 10.0, \"speedup\": 2.0, \"tier_name\": \"full\"}",
            i ? ", " : "", i + 1, names[i]);
  fprintf(f, "]}]}\n");
  fclose(f);
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  struct kb_error err = {0};
  assert_int_equal(kb__leaderboard_print(path, out, 0, &err), KB_OK);
  fclose(out);
  unlink(path);
  assert_non_null(strstr(text, "budget: 1.500 of 120.000 gpu_seconds spent"));
  char rows[5][200];
  int n = 0;
  for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    if (strstr(line, " tune ") && n < 5)
      snprintf(rows[n++], sizeof rows[0], "%s", line);
  }
  assert_int_equal(n, 5);
  for (int i = 0; i < 3; i++)
    assert_non_null(strstr(rows[i], names[i])); /* under 40: whole */
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      if (strcmp(rows[i] + 6, rows[j] + 6) == 0) /* past the rank column */
        fail_msg("rows %d and %d read the same: %s", i, j, rows[i]);
  free(text);
}

static void test_slurm_only_options(void **state) {
  (void)state;
  const char *opts[] = {"--throttle", "--partition", "--time", "--dry-run", "--redis-job"};
  enum kb_launch_mode modes[] = {KB_LAUNCH_LOCAL, KB_LAUNCH_STOP, KB_LAUNCH_CANCEL};
  for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
      struct kb_launch_args a = one(modes[m]);
      a.slurm_only = opts[i];
      char want[64];
      snprintf(want, sizeof want, "%s goes with --slurm", opts[i]);
      refused(&a, want, KB_LAUNCH_SAY);
    }
}

static void test_sbatch_words(void **state) {
  (void)state;
  /* Each word an #SBATCH line takes (in the order of `fields` below), with a value it cannot
   * take and the message's start. */
  const struct {
    const char *value, *want;
  } cases[] = {
      {"gpu\n#SBATCH --uid=0", "--partition \"gpu"},
      {"a b", "--account \"a b\" cannot go into an #SBATCH line"},
      {"$(x)", "--cpu-partition"},
      {"gpu 1", "--gres"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct kb_launch_args a = one(KB_LAUNCH_SLURM);
    const char **fields[] = {&a.slurm.partition, &a.slurm.account, &a.slurm.cpu_partition,
                             &a.slurm.gres};
    *fields[i] = cases[i].value;
    refused(&a, cases[i].want, KB_LAUNCH_SAY);
  }
}

/* The per-job #SBATCH options: for every job or one, checked as they are taken. */
static void test_job_options(void **state) {
  (void)state;
  struct kb_slurm_opts o;
  memset(&o, 0, sizeof o);
  struct kb_error err = {0};
  assert_int_equal(kb__slurm_job_option(&o, "--time", "runners=8:00:00", &err), KB_OK);
  assert_int_equal(kb__slurm_job_option(&o, "--time", "1:00:00", &err), KB_OK);
  assert_int_equal(kb__slurm_job_option(&o, "--mem", "scheduler=4G", &err), KB_OK);
  assert_int_equal(kb__slurm_job_option(&o, "--constraint", "h200|h100", &err), KB_OK);
  assert_int_equal(kb__slurm_job_option(&o, "--cpus-per-task", "redis=2", &err), KB_OK);
  assert_int_equal(kb__slurm_job_option(&o, "--sbatch-arg", "--mail-type=END", &err), KB_OK);
  assert_int_equal(kb__slurm_job_option(&o, "--sbatch-arg", "runners=--exclusive", &err), KB_OK);
  assert_string_equal(o.job[KB_SLURM_RUNNERS].time, "8:00:00");
  assert_string_equal(o.all.time, "1:00:00");
  assert_string_equal(o.job[KB_SLURM_SCHEDULER].mem, "4G");
  assert_null(o.all.mem);
  assert_string_equal(o.all.constraint, "h200|h100");
  assert_string_equal(o.job[KB_SLURM_REDIS].cpus, "2");
  assert_int_equal(o.all.n_extra, 1);
  assert_string_equal(o.job[KB_SLURM_RUNNERS].extra[0], "--exclusive");
  const struct {
    const char *opt, *value, *want;
  } bad[] = {
      {"--time", "1:00;rm", "--time \"1:00;rm\" cannot go into an #SBATCH line"},
      {"--qos", "a b", "--qos \"a b\""},
      {"--mem", "runners=$(x)", "--mem \"$(x)\""},
      {"--constraint", "h200 && rm", "--constraint"},
      {"--cpus-per-task", "0", "not a whole number from 1 to 1024"},
      {"--cpus-per-task", "runners=x", "\"x\" is not a whole number"},
      {"--sbatch-arg", "exclusive", "starting with \"--\""},
      {"--sbatch-arg", "--comment=a\n#SBATCH --uid=0", "without spaces, newlines"},
      {"--sbatch-arg", "--comment=a b", "without spaces"},
      {"--sbatch-arg", "--array=0-3", "use --runners and --throttle"},
      {"--sbatch-arg", "--output=x", "kb-launch sets --output itself"},
      {"--sbatch-arg", "runners=--time=1:00", "use --time"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kb_error_clear(&err);
    assert_int_equal(kb__slurm_job_option(&o, bad[i].opt, bad[i].value, &err), KB_EINVAL);
    if (strstr(err.msg, bad[i].want) == NULL)
      fail_msg("%s %s: message \"%s\" lacks \"%s\"", bad[i].opt, bad[i].value, err.msg,
               bad[i].want);
  }
  assert_int_equal(kb__slurm_default_cpus(KB_SLURM_RUNNERS, 1), 4);
  assert_int_equal(kb__slurm_default_cpus(KB_SLURM_RUNNERS, 0), 2);
  assert_int_equal(kb__slurm_default_cpus(KB_SLURM_SCHEDULER, 1), 1);
}

static void test_redis_and_mode_limits(void **state) {
  (void)state;
  struct kb_launch_args a = one(KB_LAUNCH_SLURM);
  a.redis = "h:6379";
  a.redis_job = 1;
  a.slurm_only = "--redis-job";
  refused(&a, "give --redis or --redis-job, not both", KB_LAUNCH_SAY);
  a = one(KB_LAUNCH_LOCAL);
  a.runners = 65;
  refused(&a, "--local runs 1..64 runners", KB_LAUNCH_SAY);
  a.runners = 64;
  accepted(&a);
  a = one(KB_LAUNCH_LOCAL);
  a.wait_s = 5;
  refused(&a, "--wait goes with --slurm, --stop, --cancel", KB_LAUNCH_SAY);
  enum kb_launch_mode ends[] = {KB_LAUNCH_STOP, KB_LAUNCH_CANCEL};
  for (size_t i = 0; i < 2; i++) {
    a = one(ends[i]);
    a.redis = "h:1";
    refused(&a, "--stop and --cancel take only --wait and --json", KB_LAUNCH_SAY);
    a = one(ends[i]);
    a.runners = 2;
    refused(&a, "--stop and --cancel take only", KB_LAUNCH_SAY);
    a = one(ends[i]);
    a.restart = 1;
    refused(&a, "--stop and --cancel take only", KB_LAUNCH_SAY);
  }
}

static void test_run_without_mode(void **state) {
  (void)state;
  struct kb_launch_args a = one(KB_LAUNCH_NONE);
  struct kb_error err = {0};
  assert_int_equal(kb__launch_run(&a, "/nonexistent", NULL, &err), KB_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_accepts_plain_modes), cmocka_unit_test(test_modes_and_operands),
      cmocka_unit_test(test_gpus),                cmocka_unit_test(test_slurm_only_options),
      cmocka_unit_test(test_sbatch_words),        cmocka_unit_test(test_redis_and_mode_limits),
      cmocka_unit_test(test_run_without_mode),    cmocka_unit_test(test_backend_rule),
      cmocka_unit_test(test_leaderboard_names),   cmocka_unit_test(test_job_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
