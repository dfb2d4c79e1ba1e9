/* The llm generator (see gen_llm.h). */
#include "gen_llm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gen_rank.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/catalog.h"
#include "kb/compress.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "ledger.h"
#include "kb/log.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "llm_api.h"
#include "llm_audit.h"
#include "llm_client.h"
#include "llm_extract.h"
#include "llm_prompt.h"

#define LOG_KEEP 4000   /* bytes of a compile log kept for a repair prompt */

/* What the results said about one candidate. */
struct obs {
  char id[KB_CAND_ID_LEN + 1];
  char task[KB_ID_MAX];
  char generator[16];
  int status;             /* of the latest result at the highest tier seen */
  int tier;
  char tier_name[KB_ID_MAX];
  char reason[256];
  char *log;              /* compile log excerpt, failures only (owned) */
  int registers, spills, shared_bytes;
  double dram_pct, sm_pct, occupancy_pct; /* hardware metrics of the latest result that had
                                             them (percent; NAN: none yet) */
  int repaired;           /* 1 once a repair was requested */
};

struct pending {
  struct kb_gen_llm *l;
  char task[KB_ID_MAX];
  int kind;
  int format;             /* enum kb_cand_format of the answer asked for */
  long seq;
  char charge[KB_CHARGE_ID_MAX];
  char parents[2][KB_CAND_ID_LEN + 1];
  char *prompt;           /* system + user, for the audit (owned) */
  int64_t est_in;         /* tokens reserved for the prompt: request bytes / 3 + 16 */
  int64_t est_out;        /* tokens reserved for the answer: max_tokens */
};

struct kb_gen_llm {
  struct kb_queue *q;
  const struct kb_gen_llm_cfg *cfg;
  struct kb_llm_client *client;
  unsigned rng;
  struct obs *obs;
  int n_obs, cap_obs;
  struct pending **pend;  /* requests in flight (owned) */
  int n_pend, cap_pend;
  int out_of_tokens;
  char key_open[200];     /* hash: open charge id -> task */
  char key_seq[200];
  struct kb__gen_llm_stats stats;
  /* set while kb__gen_llm_poll runs */
  kb_gen_emit_fn emit;
  void *emit_arg;
  struct kb_error poll_err;
  struct kb_gen_llm_archive archive; /* hooks; zeroed when none */
};

static unsigned rnd(struct kb_gen_llm *l) {
  l->rng ^= l->rng << 13;
  l->rng ^= l->rng >> 17;
  l->rng ^= l->rng << 5;
  return l->rng;
}

static int recover(struct kb_gen_llm *l, struct kb_error *err) {
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(l->q->redis, &rep, err, "HGETALL %s", l->key_open);
  for (size_t i = 0; rc == KB_OK && rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements;
       i += 2) {
    const char *charge = rep->element[i]->str;
    struct kb_error verr = {0};
    int v = kb__ledger_void(l->q, KB_LLM_TOKENS, charge, "scheduler", NULL, &verr);
    if (v != KB_OK && v != KB_ENOTFOUND && v != KB_ESTATE) {
      rc = kb_error_set(err, v, "%s", verr.msg);
      break;
    }
    kb_warn("llm: voided charge %s left open by an earlier scheduler", charge);
    redisReply *del = NULL;
    rc = kb_redis_commandf(l->q->redis, &del, err, "HDEL %s %s", l->key_open, charge);
    if (del)
      freeReplyObject(del);
  }
  if (rep)
    freeReplyObject(rep);
  int lost = 0;
  if (rc == KB_OK) /* requests in flight when it stopped: their prompts into the audit */
    rc = kb__llm_audit_lost(l->q, NULL, "the scheduler stopped before the answer came (no "
                            "tokens charged)", &lost, err);
  if (lost > 0)
    kb_warn("llm: %d request%s of an earlier scheduler audited as lost", lost,
            lost == 1 ? "" : "s");
  return rc;
}

int kb__gen_llm_new(struct kb_queue *q, const struct kb_gen_llm_cfg *cfg, const char *key,
                   unsigned seed, struct kb_gen_llm **out, struct kb_error *err) {
  *out = NULL;
  struct kb_gen_llm *l = kb_calloc(1, sizeof *l);
  if (l == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  l->q = q;
  l->cfg = cfg;
  l->rng = seed ? seed : 0x2545f491u;
  kb_queue_key(q, l->key_open, sizeof l->key_open, KB_KEY_GEN_LLM_OPEN);
  kb_queue_key(q, l->key_seq, sizeof l->key_seq, KB_KEY_GEN_LLM_SEQ);
  struct kb_llm_client_opts o = {.api = cfg->api, .endpoint = cfg->endpoint, .key = key,
                                 .concurrency = cfg->concurrency, .timeout_s = cfg->timeout_s,
                                 .max_retries = cfg->max_retries, .backoff_s = cfg->backoff_s,
                                 .backoff_max_s = cfg->backoff_max_s};
  int rc = kb__llm_client_new(&o, &l->client, err);
  if (rc == KB_OK)
    rc = recover(l, err);
  if (rc) {
    kb__gen_llm_free(l);
    return rc;
  }
  *out = l;
  return KB_OK;
}

static void pending_free(struct pending *p) {
  if (p == NULL)
    return;
  kb_free(p->prompt);
  kb_free(p);
}

void kb__gen_llm_free(struct kb_gen_llm *l) {
  if (l == NULL)
    return;
  kb__llm_client_free(l->client);
  for (int i = 0; i < l->n_pend; i++) {
    struct kb_error verr = {0};
    if (kb__ledger_void(l->q, KB_LLM_TOKENS, l->pend[i]->charge, "scheduler", NULL, &verr) ==
        KB_OK) {
      redisReply *del = NULL;
      if (kb_redis_commandf(l->q->redis, &del, &verr, "HDEL %s %s", l->key_open,
                            l->pend[i]->charge) == KB_OK)
        freeReplyObject(del);
    }
    if (kb__llm_audit_lost(l->q, l->pend[i]->charge, "abandoned when the scheduler stopped "
                           "(no tokens charged)", NULL, &verr) != KB_OK)
      kb_warn("llm: %s", verr.msg);
    pending_free(l->pend[i]);
  }
  kb_free(l->pend);
  for (int i = 0; i < l->n_obs; i++)
    kb_free(l->obs[i].log);
  kb_free(l->obs);
  kb_free(l);
}

int kb__gen_llm_pending(const struct kb_gen_llm *l) { return l ? l->n_pend : 0; }

void kb__gen_llm_set_archive(struct kb_gen_llm *l, const struct kb_gen_llm_archive *h) {
  l->archive = *h;
}

int kb__gen_llm_pending_task(const struct kb_gen_llm *l, const char *task) {
  int n = 0;
  for (int i = 0; l && i < l->n_pend; i++)
    n += strcmp(l->pend[i]->task, task) == 0;
  return n;
}

int kb__gen_llm_out_of_tokens(const struct kb_gen_llm *l) { return l ? l->out_of_tokens : 1; }

void kb__gen_llm_stats(const struct kb_gen_llm *l, struct kb__gen_llm_stats *out) {
  *out = l->stats;
}

static struct obs *find_obs(struct kb_gen_llm *l, const char *id) {
  for (int i = 0; i < l->n_obs; i++)
    if (strcmp(l->obs[i].id, id) == 0)
      return &l->obs[i];
  return NULL;
}

int kb__gen_llm_observe(struct kb_gen_llm *l, const struct kb_result *r,
                       const struct kb_candidate *c) {
  struct obs *o = find_obs(l, r->candidate);
  if (o == NULL) {
    if (l->n_obs == l->cap_obs) {
      int cap = l->cap_obs ? l->cap_obs * 2 : 16;
      struct obs *p = kb_reallocarray(l->obs, (size_t)cap, sizeof *p);
      if (p == NULL)
        return KB_ENOMEM;
      l->obs = p;
      l->cap_obs = cap;
    }
    o = &l->obs[l->n_obs++];
    memset(o, 0, sizeof *o);
    snprintf(o->id, sizeof o->id, "%s", r->candidate);
    snprintf(o->task, sizeof o->task, "%s", r->task);
    snprintf(o->generator, sizeof o->generator, "%s", c->generator);
    o->tier = -1;
    o->registers = o->spills = o->shared_bytes = -1;
    o->dram_pct = o->sm_pct = o->occupancy_pct = NAN;
  }
  if (r->tier < o->tier)
    return KB_OK;
  o->tier = r->tier;
  o->status = r->status;
  snprintf(o->tier_name, sizeof o->tier_name, "%s", r->tier_name);
  snprintf(o->reason, sizeof o->reason, "%s", r->reason);
  if (r->registers >= 0)
    o->registers = r->registers;
  if (r->spills >= 0)
    o->spills = r->spills;
  if (r->shared_bytes >= 0)
    o->shared_bytes = r->shared_bytes;
  /* the metrics pass runs for some last-tier evaluations only (docs/search.md): a result
   * without them keeps the ones an earlier result had */
  if (isfinite(r->dram_pct) || isfinite(r->sm_pct) || isfinite(r->occupancy_pct)) {
    o->dram_pct = r->dram_pct;
    o->sm_pct = r->sm_pct;
    o->occupancy_pct = r->occupancy_pct;
  }
  kb_free(o->log);
  o->log = NULL;
  if (r->status != KB_STATUS_OK && r->compile_log && r->compile_log[0]) {
    size_t n = strlen(r->compile_log);
    o->log = kb_strndup(r->compile_log + (n > LOG_KEEP ? n - LOG_KEEP : 0), LOG_KEEP);
  }
  return KB_OK;
}

/* ---- Choosing what to ask ------------------------------------------------------------------ */

static int repairable(int status) {
  return status == KB_STATUS_COMPILE_ERROR || status == KB_STATUS_WRONG_OUTPUT ||
         status == KB_STATUS_CRASH || status == KB_STATUS_TIMEOUT ||
         status == KB_STATUS_REJECTED;
}

/* The best timed members of `pop`, best first, up to `max`. */
static int best_members(const struct kb_task_pop *pop, const struct kb_member **out, int max) {
  int n = 0;
  for (int i = 0; i < pop->n; i++) {
    const struct kb_member *m = &pop->members[i];
    if (kb__gen_rank_tier(m) < 0)
      continue;
    int pos = n;
    while (pos > 0 && kb__gen_rank_better(m, out[pos - 1]))
      pos--;
    if (pos >= max)
      continue;
    for (int j = (n < max ? n : max - 1); j > pos; j--)
      out[j] = out[j - 1];
    out[pos] = m;
    if (n < max)
      n++;
  }
  return n;
}

static int has_llm_member(const struct kb_gen_llm *l, const struct kb_task_pop *pop) {
  for (int i = 0; i < pop->n; i++)
    if (strcmp(pop->members[i].generator, "llm") == 0)
      return 1;
  for (int i = 0; i < l->n_pend; i++)
    if (strcmp(l->pend[i]->task, pop->task) == 0)
      return 1;
  return 0;
}

static void profile_of(const struct kb_task *task, const struct kb_task_pop *pop,
                       const struct kb_member *m, const struct obs *o, struct kb_profile *p) {
  kb__profile_init(p);
  p->cuda = task->backend == KB_BACKEND_CUDA;
  int k = kb__gen_rank_tier(m);
  if (k >= 0) {
    p->median_us = m->tiers[k].median_us;
    p->noise = m->tiers[k].noise;
    const struct kb_member *base = kb__population_baseline(pop);
    if (base && base->tiers[k].evaluated && base->tiers[k].median_us > 0)
      p->baseline_us = base->tiers[k].median_us;
  }
  double bytes = 0;
  for (int i = 0; i < task->n_inputs + task->n_outputs; i++) {
    const struct kb_tensor_spec *ts =
        i < task->n_inputs ? &task->inputs[i] : &task->outputs[i - task->n_inputs];
    double n = kb_dtype_size(ts->dtype);
    for (int d = 0; d < ts->ndim; d++)
      n *= (double)ts->shape[d];
    bytes += n;
  }
  p->bytes = bytes;
  if (o) {
    p->registers = o->registers;
    p->spills = o->spills;
    p->shared_bytes = o->shared_bytes;
    /* the hardware metrics (fractions in the prompt, percent in results); NAN stays unknown */
    p->dram_util = o->dram_pct / 100.0;
    p->sm_util = o->sm_pct / 100.0;
    p->occupancy = o->occupancy_pct / 100.0;
  }
}

/* One-line summary of a member for crossover prompts. */
static void summary_of(const struct kb_member *m, char *out, size_t size) {
  int k = kb__gen_rank_tier(m);
  if (k < 0)
    snprintf(out, size, "not timed");
  else
    snprintf(out, size, "median %.3f us at tier %d", m->tiers[k].median_us, k);
}

/* Everything a request needs, chosen and loaded. */
struct plan {
  int kind;
  int format;                    /* of the answer: the cfg's (translate), else the parents' */
  struct kb_candidate parent[2]; /* loaded sources (owned) */
  int n_parents;
  struct obs *repair;            /* the failure being repaired (borrowed) */
  const struct kb_member *pm[2];
  char archived[256];            /* parent B's summary when it comes from the archive */
};

/* Loads candidate `id` into `c`; 1 when it is there, 0 when it is gone or corrupt (logged: the
 * request is chosen without it), -1 on another error (in `err`). */
static int load_parent(struct kb_gen_llm *l, const char *id, struct kb_candidate *c,
                       struct kb_error *err) {
  struct kb_error lerr = {0};
  int rc = kb_catalog_get_candidate(l->q, id, c, &lerr);
  if (rc == KB_OK)
    return 1;
  if (rc == KB_ENOTFOUND || rc == KB_EPARSE) {
    kb_warn("llm: parent %.12s: %s; not used", id, lerr.msg);
    return 0;
  }
  kb_error_set(err, rc, "%s", lerr.msg);
  return -1;
}

static int choose(struct kb_gen_llm *l, const struct kb_task_pop *pop, struct plan *pl,
                  struct kb_error *err) {
  memset(pl, 0, sizeof *pl);
  /* 1. a failed candidate of ours, not repaired yet */
  for (int i = 0; i < l->n_obs; i++) {
    struct obs *o = &l->obs[i];
    if (strcmp(o->task, pop->task) == 0 && strcmp(o->generator, "llm") == 0 && !o->repaired &&
        repairable(o->status)) {
      o->repaired = 1; /* tried once, whatever comes of it */
      int got = load_parent(l, o->id, &pl->parent[0], err);
      if (got < 0)
        return err->code;
      if (got == 0)
        break;
      o->repaired = 0; /* set again once the request is on its way */
      pl->kind = KB_PROMPT_REPAIR;
      pl->format = pl->parent[0].format;
      pl->n_parents = 1;
      pl->repair = o;
      return KB_OK;
    }
  }
  const struct kb_member *best[3];
  int n_best = best_members(pop, best, 3);
  if (!has_llm_member(l, pop) || n_best == 0) {
    pl->kind = KB_PROMPT_TRANSLATE;
    pl->format = l->cfg->format;
    return KB_OK;
  }
  if (l->archive.parent && rnd(l) % 3 == 0) { /* crossover with an archived kernel */
    int found = 0;
    if (l->archive.parent(l->archive.arg, pop, &pl->parent[1], pl->archived,
                          sizeof pl->archived, &found, err) != KB_OK)
      return err->code;
    int got = found ? load_parent(l, best[0]->id, &pl->parent[0], err) : 0;
    if (got < 0)
      return err->code;
    if (got == 1 && pl->parent[0].format != pl->parent[1].format) { /* only like with like */
      kb_candidate_release(&pl->parent[0]);
      got = 0;
    }
    if (got == 1) {
      pl->format = pl->parent[0].format;
      pl->kind = KB_PROMPT_CROSSOVER;
      pl->pm[0] = best[0];
      pl->n_parents = 2;
      return KB_OK;
    }
    kb_candidate_release(&pl->parent[1]);
    pl->archived[0] = '\0';
  }
  if (n_best >= 2 && rnd(l) % 3 == 0) {
    pl->kind = KB_PROMPT_CROSSOVER;
    pl->pm[0] = best[0];
    pl->pm[1] = best[1];
    pl->n_parents = 2;
  } else {
    pl->kind = KB_PROMPT_MUTATE;
    pl->pm[0] = best[rnd(l) % (unsigned)n_best];
    pl->n_parents = 1;
  }
  for (int i = 0; i < pl->n_parents; i++) {
    int got = load_parent(l, pl->pm[i]->id, &pl->parent[i], err);
    if (got < 0)
      return err->code;
    if (got == 0) {
      kb_candidate_release(&pl->parent[0]);
      memset(pl, 0, sizeof *pl);
      pl->kind = KB_PROMPT_TRANSLATE;
      pl->format = l->cfg->format;
      return KB_OK;
    }
  }
  /* a mutation or crossover answers in its parents' format; two of different formats are not
   * crossed: parent A is mutated instead */
  pl->format = pl->parent[0].format;
  if (pl->n_parents == 2 && pl->parent[1].format != pl->format) {
    kb_candidate_release(&pl->parent[1]);
    pl->kind = KB_PROMPT_MUTATE;
    pl->n_parents = 1;
  }
  return KB_OK;
}

static void plan_release(struct plan *pl) {
  kb_candidate_release(&pl->parent[0]);
  kb_candidate_release(&pl->parent[1]);
}

/* The texts a prompt's variables point to (prompt_vars). */
struct vars_text {
  char diag[256], metrics[1024], m2[256];
};

/* Fills `v` for plan `pl`: its first parent, and by kind the diagnosis and metrics (mutate),
 * both parents with their summaries (crossover) or the failure (repair). `v` points into `pl`
 * and `t` (both caller-owned, to outlive `v`). */
static void prompt_vars(struct kb_gen_llm *l, const struct kb_task *task,
                        const struct kb_task_pop *pop, const struct plan *pl,
                        struct kb_prompt_vars *v, struct vars_text *t) {
  if (pl->n_parents > 0) {
    v->parent_name = pl->parent[0].name;
    v->parent_source = pl->parent[0].source;
    v->parent_knobs = pl->parent[0].knobs;
  }
  if (pl->kind == KB_PROMPT_MUTATE) {
    struct kb_profile prof;
    profile_of(task, pop, pl->pm[0], find_obs(l, pl->pm[0]->id), &prof);
    kb__profile_diagnose(&prof, t->diag, sizeof t->diag, t->metrics, sizeof t->metrics);
    v->diagnosis = t->diag;
    v->metrics = t->metrics;
  } else if (pl->kind == KB_PROMPT_CROSSOVER) {
    summary_of(pl->pm[0], t->metrics, sizeof t->metrics);
    if (pl->archived[0])
      snprintf(t->m2, sizeof t->m2, "%s", pl->archived);
    else
      summary_of(pl->pm[1], t->m2, sizeof t->m2);
    v->metrics = t->metrics;
    v->metrics2 = t->m2;
    v->parent2_name = pl->parent[1].name;
    v->parent2_source = pl->parent[1].source;
  } else if (pl->kind == KB_PROMPT_REPAIR) {
    v->failed_tier = pl->repair->tier_name;
    v->failure_status = kb_status_name(pl->repair->status);
    v->failure = pl->repair->log && pl->repair->log[0] ? pl->repair->log : pl->repair->reason;
    if (v->failure[0] == '\0')
      v->failure = "(no details)";
  }
}

/* Numbers request `p` of task `task_id` (its seq and charge id), lists its charge as open, then
 * reserves `estimate` tokens under it; on a refused reservation the charge is unlisted again.
 * KB_EBUDGET (logged once, `err` untouched) when the budget cannot hold it. */
static int open_charge(struct kb_gen_llm *l, struct pending *p, const char *task_id,
                       int64_t estimate, struct kb_error *err) {
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(l->q->redis, &rep, err, "INCR %s", l->key_seq);
  if (rc)
    return rc;
  p->seq = rep->type == REDIS_REPLY_INTEGER ? (long)rep->integer : 0;
  freeReplyObject(rep);
  snprintf(p->charge, sizeof p->charge, "llm:%s:%ld", task_id, p->seq);
  /* listed as open before the reservation, so a crash in between leaves nothing unknown */
  rc = kb_redis_commandf(l->q->redis, &rep, err, "HSET %s %s %s", l->key_open, p->charge,
                         task_id);
  if (rc)
    return rc;
  freeReplyObject(rep);
  struct kb_error rerr = {0};
  rc = kb__ledger_reserve(l->q, KB_LLM_TOKENS, p->charge, estimate, "scheduler", NULL, &rerr);
  if (rc == KB_OK)
    return KB_OK;
  struct kb_error derr = {0};
  if (kb_redis_commandf(l->q->redis, &rep, &derr, "HDEL %s %s", l->key_open, p->charge) == KB_OK)
    freeReplyObject(rep);
  if (rc == KB_EBUDGET) {
    if (!l->out_of_tokens)
      kb_info("llm: the token budget cannot hold another request (%lld tokens)",
              (long long)estimate);
    l->out_of_tokens = 1;
  } else {
    kb_error_set(err, rc, "%s", rerr.msg);
  }
  return rc;
}

/* The write-ahead audit record of `p` (llm_audit.h), before it is sent. */
static int record_ahead(struct kb_gen_llm *l, const struct pending *p, struct kb_error *err) {
  char parents[2 * KB_CAND_ID_LEN + 2];
  snprintf(parents, sizeof parents, "%s%s%s", p->parents[0], p->parents[1][0] ? "," : "",
           p->parents[1]);
  struct kb_llm_sent s = {.task = p->task, .charge = p->charge,
                          .kind = kb__prompt_kind_name(p->kind), .model = l->cfg->model,
                          .parents = parents, .prompt = p->prompt};
  return kb__llm_audit_ahead(l->q, &s, err);
}

int kb__gen_llm_request(struct kb_gen_llm *l, const struct kb_task *task, const char *reference,
                       const struct kb_task_pop *pop, struct kb_error *err) {
  struct plan pl;
  char *sys = NULL, *user = NULL, *body = NULL, *examples = NULL;
  struct pending *p = NULL;
  int rc = choose(l, pop, &pl, err);
  struct vars_text vt = {"", "", ""};
  struct kb_prompt_vars v = {.task = task, .reference = reference};
  if (rc)
    goto out;
  prompt_vars(l, task, pop, &pl, &v, &vt);
  v.format = pl.format;
  /* archive examples are native kernels: shown in native prompts only */
  if (l->archive.examples && pl.format == KB_FORMAT_NATIVE &&
      (pl.kind == KB_PROMPT_TRANSLATE || pl.kind == KB_PROMPT_MUTATE))
    rc = l->archive.examples(l->archive.arg, task, &examples, err);
  v.examples = examples;
  if (rc == KB_OK)
    rc = kb__prompt_render(pl.kind, &v, &sys, &user, err);
  if (rc == KB_OK)
    rc = kb__llm_request_body(l->cfg->api, l->cfg->model, sys, user, l->cfg->max_tokens,
                             l->cfg->temperature, &body, err);
  p = rc == KB_OK ? kb_calloc(1, sizeof *p) : NULL;
  if (rc == KB_OK && p == NULL)
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  if (rc)
    goto out;
  p->l = l;
  p->kind = pl.kind;
  p->format = pl.format;
  snprintf(p->task, sizeof p->task, "%s", task->id);
  for (int i = 0; i < pl.n_parents; i++)
    snprintf(p->parents[i], sizeof p->parents[i], "%s", pl.parent[i].id);
  struct kb_buf both;
  kb_buf_init(&both);
  if (kb_buf_addf(&both, "[system]\n%s\n[user]\n%s", sys, user) != KB_OK) {
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    goto out;
  }
  p->prompt = kb_buf_detach(&both);
  p->est_in = (int64_t)(strlen(body) / 3) + 16;
  p->est_out = l->cfg->max_tokens;
  int64_t estimate = p->est_in + p->est_out;
  rc = open_charge(l, p, task->id, estimate, err);
  if (rc)
    goto out;
  if (pl.kind == KB_PROMPT_REPAIR)
    pl.repair->repaired = 1;
  if (l->n_pend == l->cap_pend) {
    int cap = l->cap_pend ? l->cap_pend * 2 : 8;
    struct pending **np = kb_reallocarray(l->pend, (size_t)cap, sizeof *np);
    if (np == NULL) {
      kb__ledger_void(l->q, KB_LLM_TOKENS, p->charge, "scheduler", NULL, NULL);
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
      goto out;
    }
    l->pend = np;
    l->cap_pend = cap;
  }
  rc = record_ahead(l, p, err);
  if (rc == KB_OK)
    rc = kb__llm_client_submit(l->client, body, p, err);
  if (rc) {
    kb__ledger_void(l->q, KB_LLM_TOKENS, p->charge, "scheduler", NULL, NULL);
    goto out;
  }
  l->pend[l->n_pend++] = p;
  l->stats.requests++;
  kb_info("llm: %s request %s for %s%s%s (reserved %lld tokens)", kb__prompt_kind_name(pl.kind),
          p->charge, task->id, pl.n_parents ? " from " : "",
          pl.n_parents ? pl.parent[0].name : "", (long long)estimate);
  p = NULL;
out:
  pending_free(p);
  plan_release(&pl);
  kb_free(examples);
  kb_free(sys);
  kb_free(user);
  kb_free(body);
  return rc;
}

/* ---- Finished requests --------------------------------------------------------------------- */

/* XADD of the audit entry; prompt and response compressed. */
static int audit(struct kb_gen_llm *l, const struct pending *p, const char *status,
                 const struct kb_llm_done *d, const char *cand_id, struct kb_error *err) {
  char key[200], suffix[100];
  snprintf(suffix, sizeof suffix, KB_KEY_LLM_AUDIT_FMT, p->task);
  kb_queue_key(l->q, key, sizeof key, suffix);
  void *zp = NULL, *zr = NULL;
  size_t zp_len = 0, zr_len = 0;
  const char *resp = d->text ? d->text : "";
  int rc = kb_compress(p->prompt, strlen(p->prompt), &zp, &zp_len, err);
  if (rc == KB_OK)
    rc = kb_compress(resp, strlen(resp), &zr, &zr_len, err);
  if (rc == KB_OK) {
    char attempts[16], tin[24], tout[24], unrep[16], parents[2 * KB_CAND_ID_LEN + 2];
    snprintf(attempts, sizeof attempts, "%d", d->attempts);
    snprintf(unrep, sizeof unrep, "%d", d->unreported);
    snprintf(tin, sizeof tin, "%lld", (long long)d->tokens_in);
    snprintf(tout, sizeof tout, "%lld", (long long)d->tokens_out);
    snprintf(parents, sizeof parents, "%s%s%s", p->parents[0], p->parents[1][0] ? "," : "",
             p->parents[1]);
    const char *argv[] = {"XADD",       key,        "*",          "kind",
                          kb__prompt_kind_name(p->kind), "charge", p->charge, "status",
                          status,       "attempts", attempts,     "tokens_in",
                          tin,          "tokens_out", tout,       "candidate",
                          cand_id,      "parents",  parents,      "error",
                          d->error,     "prompt",   zp,           "response",
                          zr,           "model",    l->cfg->model, "unreported", unrep};
    size_t lens[29];
    int n = (int)(sizeof argv / sizeof argv[0]);
    for (int i = 0; i < n; i++)
      lens[i] = i == 22 ? zp_len : i == 24 ? zr_len : strlen(argv[i]);
    redisReply *rep = NULL;
    rc = kb_redis_command(l->q->redis, n, argv, lens, 0, &rep, err);
    if (rep)
      freeReplyObject(rep);
  }
  kb_free(zp);
  kb_free(zr);
  return rc;
}

static int settle(struct kb_gen_llm *l, const struct pending *p, int64_t tokens,
                  struct kb_error *err) {
  struct kb_error lerr = {0};
  int rc = tokens > 0
               ? kb__ledger_post(l->q, KB_LLM_TOKENS, p->charge, tokens, "scheduler", NULL, &lerr)
               : kb__ledger_void(l->q, KB_LLM_TOKENS, p->charge, "scheduler", NULL, &lerr);
  if (rc)
    return kb_error_set(err, rc, "%s", lerr.msg);
  if (tokens > 0)
    l->stats.tokens += tokens;
  redisReply *rep = NULL;
  rc = kb_redis_commandf(l->q->redis, &rep, err, "HDEL %s %s", l->key_open, p->charge);
  if (rep)
    freeReplyObject(rep);
  return rc;
}

/* What request `p` is charged, into `d`'s counts (so the audit shows it): what the API
 * reported, plus the reservation (`est_in` + `est_out`) for each attempt it may have billed
 * without a readable usage, each count capped at KB_LLM_TOKENS_MAX. Never less than the API
 * billed where the reservation holds an attempt's real use. */
static int64_t charged_tokens(const struct pending *p, struct kb_llm_done *d) {
  for (int i = 0; i < d->unreported; i++) {
    d->tokens_in = kb__llm_tokens_add(d->tokens_in, p->est_in);
    d->tokens_out = kb__llm_tokens_add(d->tokens_out, p->est_out);
  }
  if (d->unreported > 0)
    kb_warn("llm: %s: %d attempt%s answered without a readable usage; charged %lld tokens "
            "each (the reservation)", p->charge, d->unreported, d->unreported == 1 ? "" : "s",
            (long long)(p->est_in + p->est_out));
  return d->tokens_in + d->tokens_out;
}

static int finished(struct kb_gen_llm *l, struct pending *p, struct kb_llm_done *d,
                    struct kb_error *err) {
  int64_t tokens = charged_tokens(p, d);
  int rc = settle(l, p, tokens, err);
  if (rc)
    return rc;
  const char *status = "ok";
  char *code = NULL;
  struct kb_candidate c;
  memset(&c, 0, sizeof c);
  if (d->code != KB_OK) {
    status = "failed";
    l->stats.failed++;
    kb_warn("llm: request %s failed after %d attempt%s: %s", p->charge, d->attempts,
            d->attempts == 1 ? "" : "s", d->error);
  } else {
    l->stats.answered++;
    struct kb_error xerr = {0};
    int got = p->format == KB_FORMAT_KERNELBENCH ? kb__llm_extract_python(d->text, &code, &xerr)
                                                 : kb__llm_extract_code(d->text, &code, &xerr);
    if (got != KB_OK) {
      status = "no_code";
      l->stats.no_code++;
      snprintf(d->error, sizeof d->error, "%.250s", xerr.msg);
      kb_warn("llm: answer to %s is a failed generation: %s (%lld tokens charged)", p->charge,
              xerr.msg, (long long)tokens);
    } else {
      char name[KB_ID_MAX];
      snprintf(name, sizeof name, "llm-%s-%ld", kb__prompt_kind_name(p->kind), p->seq);
      struct kb_error cerr = {0};
      if (kb_candidate_init(&c, p->task, name, "llm", code, "", "", &cerr) != KB_OK ||
          kb_candidate_set_format(&c, p->format, &cerr) != KB_OK) {
        status = "no_code";
        l->stats.no_code++;
        snprintf(d->error, sizeof d->error, "%.250s", cerr.msg);
        kb_warn("llm: answer to %s: %s", p->charge, cerr.msg);
      } else {
        memcpy(c.parents, p->parents, sizeof c.parents);
      }
    }
  }
  rc = audit(l, p, status, d, c.id, err);
  if (rc == KB_OK)
    rc = kb__llm_audit_settled(l->q, p->charge, err);
  if (rc == KB_OK && c.id[0]) {
    l->stats.candidates++;
    rc = l->emit(&c, l->emit_arg, err);
  }
  kb_candidate_release(&c);
  kb_free(code);
  return rc;
}

static void on_done(struct kb_llm_done *d, void *arg) {
  struct kb_gen_llm *l = arg;
  struct pending *p = d->user;
  for (int i = 0; i < l->n_pend; i++)
    if (l->pend[i] == p) {
      l->pend[i] = l->pend[--l->n_pend];
      break;
    }
  if (l->poll_err.code == KB_OK)
    finished(l, p, d, &l->poll_err);
  else /* an earlier step failed: leave the charge open for the next start to void */
    kb_warn("llm: %s not settled after an earlier error", p->charge);
  pending_free(p);
}

int kb__gen_llm_poll(struct kb_gen_llm *l, int timeout_ms, kb_gen_emit_fn emit, void *arg,
                    struct kb_error *err) {
  l->emit = emit;
  l->emit_arg = arg;
  kb_error_clear(&l->poll_err);
  int rc = kb__llm_client_poll(l->client, timeout_ms, on_done, l, err);
  if (rc == KB_OK && l->poll_err.code)
    rc = kb_error_set(err, l->poll_err.code, "%s", l->poll_err.msg);
  return rc;
}
