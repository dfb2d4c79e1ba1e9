/* kb-submit subcommands (see commands.h). */
#include "commands.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kb/campaign.h"
#include "kb/cli.h"
#include "kb/error.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "kb/signals.h"
#include "kb/submit.h"
#include "locate.h"
#include "oracle_check.h"
#include "watch/watch.h"

static void print_json(json_t *obj) {
  char *text = json_dumps(obj, JSON_COMPACT);
  if (text)
    printf("%s\n", text);
  free(text);
  json_decref(obj);
}

static json_t *summary_json(const struct kb_submission *s) {
  const struct kb_campaign *c = &s->campaign;
  json_t *tasks = json_array();
  for (int i = 0; i < s->n_tasks; i++)
    json_array_append_new(tasks, json_pack("{s:s, s:i}", "id", s->tasks[i].id, "seeds",
                                           s->tasks[i].n_seeds));
  return json_pack("{s:s, s:s, s:o, s:i, s:i, s:I, s:I}", "campaign", c->id, "backend",
                   kb_backend_name(c->backend), "tasks", tasks, "candidates", s->n_candidates,
                   "tiers", c->n_tiers, "gpu_ms", (json_int_t)c->budget_gpu_ms, "llm_tokens",
                   (json_int_t)c->budget_llm_tokens);
}

/* kb_submission_load, then what only a campaign about to start must pass: a deadline not yet
 * past. On failure `s` is released. */
static int load_new(const char *campaign_path, struct kb_submission *s, struct kb_error *err) {
  int rc = kb_submission_load(campaign_path, s, err);
  if (rc)
    return rc;
  rc = kb_campaign_check_deadline(&s->campaign, (int64_t)time(NULL), err);
  if (rc)
    kb_submission_release(s);
  return rc;
}

int kb__cmd_validate(const struct kb_submit_opts *o, const char *campaign_path) {
  struct kb_error err = {0};
  struct kb_submission s;
  if (load_new(campaign_path, &s, &err))
    return kb_cli_fail("kb-submit", &err);
  if (kb__oracles_check(&s, &err)) {
    kb_submission_release(&s);
    return kb_cli_fail("kb-submit", &err);
  }
  if (o->json) {
    json_t *j = summary_json(&s);
    json_object_set_new(j, "valid", json_true());
    print_json(j);
  } else {
    printf("%s: campaign \"%s\" is valid: %d tasks, %d seed candidates, %d tiers\n",
           campaign_path, s.campaign.id, s.n_tasks, s.n_candidates, s.campaign.n_tiers);
  }
  kb_submission_release(&s);
  return KB_EXIT_OK;
}

static int connect_redis(const struct kb_submit_opts *o, struct kb_redis **r,
                         struct kb_error *err) {
  struct kb_redis_opts ro = {.addr = o->redis, .retry_ms = 3000};
  return kb_redis_connect(&ro, r, err);
}

int kb__cmd_submit(const struct kb_submit_opts *o, const char *campaign_path) {
  struct kb_error err = {0};
  struct kb_submission s;
  if (load_new(campaign_path, &s, &err))
    return kb_cli_fail("kb-submit", &err);
  struct kb_redis *r = NULL;
  char who[256];
  kb_cli_who("kb-submit", who, sizeof who);
  int resumed = 0;
  int rc = connect_redis(o, &r, &err);
  if (rc == KB_OK)
    rc = kb_submission_register(&s, r, who, &resumed, &err);
  if (rc == KB_OK) {
    if (o->json) {
      json_t *j = summary_json(&s);
      json_object_set_new(j, "submitted", json_true());
      json_object_set_new(j, "resumed", json_boolean(resumed));
      json_object_set_new(j, "redis", json_string(kb_redis_addr(r)));
      print_json(j);
    } else {
      printf("%s campaign \"%s\" at %s: %d tasks, %d seed candidates enqueued\n",
             resumed ? "resumed" : "submitted", s.campaign.id, kb_redis_addr(r), s.n_tasks,
             s.n_candidates);
    }
  }
  kb_redis_free(r);
  kb_submission_release(&s);
  return rc ? kb_cli_fail("kb-submit", &err) : KB_EXIT_OK;
}

/* An argument naming an existing .json file is a campaign file: its id is used. */
static int resolve_id(const char *arg, char *id, size_t size, struct kb_error *err) {
  size_t n = strlen(arg);
  struct stat st;
  if (n > 5 && strcmp(arg + n - 5, ".json") == 0 && stat(arg, &st) == 0) {
    struct kb_campaign c;
    int rc = kb_campaign_load(arg, &c, err);
    if (rc)
      return rc;
    snprintf(id, size, "%s", c.id);
    kb_campaign_release(&c);
    return KB_OK;
  }
  if (!kb_id_valid(arg))
    return kb_error_set(err, KB_EINVAL, "\"%s\" is neither a campaign file (an existing .json) "
                        "nor a campaign id (1 to 63 characters of a-z, 0-9, \"_\", \".\", \"-\", "
                        "starting with a letter or digit)", arg);
  if (snprintf(id, size, "%s", arg) >= (int)size)
    return kb_error_set(err, KB_EINVAL, "campaign id \"%s\" is too long", arg);
  return KB_OK;
}

/* Resolves `id_or_path`, connects and attaches to the campaign. On success `*r` is the
 * connection (new; the caller frees it, also on failure). */
static int open_campaign(const struct kb_submit_opts *o, const char *id_or_path, char *id,
                         size_t id_size, struct kb_redis **r, struct kb_queue *q,
                         struct kb_error *err) {
  *r = NULL;
  int rc = resolve_id(id_or_path, id, id_size, err);
  if (rc == KB_OK)
    rc = connect_redis(o, r, err);
  if (rc == KB_OK)
    rc = kb_queue_open(q, *r, id, err);
  return rc;
}

/* Status and watch: attach, then show snapshots until the campaign ends (or once). */
static int progress(const struct kb_submit_opts *o, const char *id_or_path, int once) {
  static volatile sig_atomic_t stop;
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  struct kb_error err = {0};
  char id[KB_ID_MAX];
  struct kb_redis *r = NULL;
  struct kb_watch_opts wo;
  kb__watch_opts_for(stdout, o->json, &wo);
  wo.interval = o->interval > 0 ? o->interval : 2.0;
  wo.once = once;
  if (once && wo.mode == KB_WATCH_LINES)
    wo.mode = KB_WATCH_SCREEN; /* one snapshot: the screen, without cursor movement */
  if (!once)
    kb_signals_catch(&stop, sigs, 3);
  int rc = resolve_id(id_or_path, id, sizeof id, &err);
  /* No --redis and no $KB_REDIS: the address kb-launch --local wrote for this campaign. */
  char addr[1024] = "", results[4096] = "";
  const char *env = getenv("KB_REDIS");
  struct kb_submit_opts local = *o;
  if (rc == KB_OK && o->redis == NULL && (env == NULL || *env == '\0') &&
      kb__locate_redis(id_or_path, addr, sizeof addr))
    local.redis = addr;
  struct kb_error lerr = {0};
  if (rc == KB_OK &&
      kb__locate_results(id_or_path, NULL, local.redis, results, sizeof results, &lerr) == KB_OK)
    wo.results = results;
  if (rc == KB_OK)
    rc = connect_redis(&local, &r, &err);
  if (rc == KB_ECONN && kb__watch_ended_by_summary(wo.results, id, stdout)) {
    kb_error_clear(&err);
    rc = KB_OK;
  } else if (rc == KB_OK) {
    rc = kb__watch(r, id, &wo, stdout, &stop, &err);
  }
  kb_redis_free(r);
  if (rc == KB_EINTERRUPTED)
    return KB_EXIT_INTERRUPTED;
  return rc ? kb_cli_fail("kb-submit", &err) : KB_EXIT_OK;
}

int kb__cmd_status(const struct kb_submit_opts *o, const char *id_or_path) {
  return progress(o, id_or_path, 1);
}

int kb__cmd_watch(const struct kb_submit_opts *o, const char *id_or_path) {
  return progress(o, id_or_path, 0);
}

/* Moves the campaign to `to` from any of `from`, as the user kb_cli_who() names. */
static int change_state(const struct kb_submit_opts *o, const char *id_or_path, const char *from,
                        const char *to, const char *reason) {
  struct kb_error err = {0};
  char id[KB_ID_MAX], who[256];
  struct kb_redis *r = NULL;
  struct kb_queue q;
  kb_cli_who("kb-submit", who, sizeof who);
  int rc = open_campaign(o, id_or_path, id, sizeof id, &r, &q, &err);
  if (rc == KB_OK)
    rc = kb_queue_set_state(&q, from, to, reason, who, &err);
  if (rc == KB_OK && !o->quiet)
    printf("campaign \"%s\" %s\n", id, to);
  kb_redis_free(r);
  return rc ? kb_cli_fail("kb-submit", &err) : KB_EXIT_OK;
}

int kb__cmd_cancel(const struct kb_submit_opts *o, const char *id_or_path) {
  return change_state(o, id_or_path, "submitting,running,draining", "cancelled",
                      "cancelled by user");
}

int kb__cmd_drain(const struct kb_submit_opts *o, const char *id_or_path) {
  return change_state(o, id_or_path, "running", "draining", "drained by user");
}
