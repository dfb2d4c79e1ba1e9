/* kb-launch's option rules and dispatch (see launch.h). */
#include "launch.h"

#include <stddef.h>

#include "kb/buf.h"
#include "kb/campaign.h"
#include "kb/error.h"
#include "gpus.h"
#include "local.h"
#include "render.h"

static int refuse(enum kb_launch_refusal *how, enum kb_launch_refusal as, struct kb_error *err,
                  const char *msg) {
  *how = as;
  return kb_error_set(err, KB_EINVAL, "%s", msg);
}

/* The Slurm words an #SBATCH line takes as they are. */
static int check_words(const struct kb_slurm_opts *so, enum kb_launch_refusal *how,
                       struct kb_error *err) {
  const char *words[][2] = {{"--partition", so->partition}, {"--cpu-partition", so->cpu_partition},
                            {"--account", so->account},
                            {"--gres", so->gres}};
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    if (words[i][1] && !kb__slurm_word_ok(words[i][1])) {
      *how = KB_LAUNCH_SAY;
      return kb_error_set(err, KB_EINVAL, "%s \"%s\" cannot go into an #SBATCH line: use "
                          "letters, digits and _ . / : + , = @ -", words[i][0], words[i][1]);
    }
  return KB_OK;
}

int kb__launch_check(const struct kb_launch_args *a, enum kb_launch_refusal *how,
                    struct kb_error *err) {
  *how = KB_LAUNCH_SAY;
  if (a->n_modes > 1)
    return refuse(how, KB_LAUNCH_SAY_USAGE, err, "give one of --local, --slurm, --stop, --cancel");
  if (a->n_modes != 1 || a->n_operands != 1)
    return refuse(how, KB_LAUNCH_USAGE, err,
                  "give one of --local, --slurm, --stop, --cancel and one CAMPAIGN.json");
  if (a->gpus && a->mode != KB_LAUNCH_LOCAL)
    return refuse(how, KB_LAUNCH_SAY, err,
                  "--gpus goes with --local (with --slurm, Slurm assigns GPUs)");
  if (a->gpus) {
    int ids[KB_GPUS_MAX], n;
    int rc = kb__gpus_parse(a->gpus, ids, &n, err);
    if (rc)
      return rc;
  }
  if (a->gpus && a->runners)
    return refuse(how, KB_LAUNCH_SAY, err,
                  "give --runners (host campaigns) or --gpus (cuda campaigns), not both");
  if (a->slurm_only && a->mode != KB_LAUNCH_SLURM) {
    *how = KB_LAUNCH_SAY;
    return kb_error_set(err, KB_EINVAL, "%s goes with --slurm", a->slurm_only);
  }
  int rc = check_words(&a->slurm, how, err);
  if (rc)
    return rc;
  if (a->redis && a->redis_job)
    return refuse(how, KB_LAUNCH_SAY, err, "give --redis or --redis-job, not both");
  if (a->mode == KB_LAUNCH_LOCAL && a->runners > 64)
    return refuse(how, KB_LAUNCH_SAY, err, "--local runs 1..64 runners");
  if (a->mode == KB_LAUNCH_LOCAL && a->wait_s)
    return refuse(how, KB_LAUNCH_SAY, err, "--wait goes with --slurm, --stop, --cancel");
  if ((a->mode == KB_LAUNCH_STOP || a->mode == KB_LAUNCH_CANCEL) &&
      (a->redis || a->runners || a->restart))
    return refuse(how, KB_LAUNCH_SAY, err, "--stop and --cancel take only --wait and --json");
  return KB_OK;
}

int kb__launch_check_backend(const struct kb_launch_args *a, int backend, const char *cid,
                             struct kb_error *err) {
  if (a->mode != KB_LAUNCH_LOCAL)
    return KB_OK;
  if (backend != KB_BACKEND_CUDA && a->gpus)
    return kb_error_set(err, KB_EINVAL, "campaign \"%s\" uses the host backend; --gpus goes "
                        "with cuda campaigns (use --runners N)", cid);
  if (backend == KB_BACKEND_CUDA && a->runners > 0)
    return kb_error_set(err, KB_EINVAL, "campaign \"%s\" uses the cuda backend: it runs one "
                        "runner per GPU; choose them with --gpus LIST instead of --runners", cid);
  return KB_OK;
}

int kb__launch_check_campaign(const struct kb_launch_args *a, struct kb_error *err) {
  if (a->mode != KB_LAUNCH_LOCAL || (a->gpus == NULL && a->runners == 0))
    return KB_OK;
  struct kb_campaign c;
  struct kb_error ignored = {0};
  if (kb_campaign_load(a->campaign, &c, &ignored) != KB_OK)
    return KB_OK; /* kb__local_run loads it again and says what is wrong with it */
  int rc = kb__launch_check_backend(a, (int)c.backend, c.id, err);
  kb_campaign_release(&c);
  return rc;
}

int kb__launch_run(const struct kb_launch_args *a, const char *bin_dir,
                  volatile sig_atomic_t *stop, struct kb_error *err) {
  switch (a->mode) {
  case KB_LAUNCH_LOCAL: {
    struct kb_local_opts lo = {.campaign_path = a->campaign, .bin_dir = bin_dir,
                               .redis = a->redis, .runners = a->runners, .gpus = a->gpus,
                               .restart = a->restart, .json = a->json, .stop = stop};
    return kb__local_run(&lo, err);
  }
  case KB_LAUNCH_SLURM: {
    struct kb_slurm_opts so = a->slurm;
    so.campaign_path = a->campaign;
    so.bin_dir = bin_dir;
    so.redis = a->redis;
    so.runners = a->runners;
    so.wait_s = a->wait_s;
    so.restart = a->restart;
    so.json = a->json;
    return kb__slurm_launch(&so, err);
  }
  case KB_LAUNCH_STOP:
  case KB_LAUNCH_CANCEL: {
    struct kb_slurm_stop_opts to = {.campaign_path = a->campaign,
                                    .cancel = a->mode == KB_LAUNCH_CANCEL,
                                    .wait_s = a->wait_s, .json = a->json};
    return kb__slurm_stop(&to, err);
  }
  case KB_LAUNCH_NONE:
    break;
  }
  return kb_error_set(err, KB_EINVAL, "no mode given");
}

int kb__launch_redis_config(FILE *out, struct kb_error *err) {
  struct kb_buf line;
  kb_buf_init(&line);
  int rc = KB_OK;
  for (int i = 0; rc == KB_OK; i++) {
    int got = kb__redis_conf_line(i, &line);
    if (got == 0)
      break;
    if (got < 0)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    else if (fprintf(out, "%s\n", line.data) < 0)
      rc = kb_error_set(err, KB_EIO, "cannot write the redis settings");
  }
  kb_buf_release(&line);
  if (rc == KB_OK && fflush(out) != 0)
    rc = kb_error_set(err, KB_EIO, "cannot write the redis settings");
  return rc;
}
