/* The archive generator (see gen_archive.h). */
#include "gen_archive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/archive.h"
#include "kb/buf.h"
#include "kb/catalog.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/log.h"
#include "kb/queue.h"
#include "kb/redis.h"

#define EXAMPLE_MAX_BYTES 12000 /* longer sources are not shown as examples */

/* What the archive holds for one task of the campaign. */
struct arch_task {
  char id[KB_ID_MAX];
  char fingerprint[KB_CAND_ID_LEN + 1];
  int *match;   /* indexes of fitting entries, best first, one per candidate id (owned) */
  int n_match;
  int next;     /* next to propose */
};

/* A device seen timing a candidate ok at the ladder's last tier. */
struct seen {
  char id[KB_CAND_ID_LEN + 1];
  char device[KB_ID_MAX];
};

struct kb_gen_archive {
  struct kb_queue *q;
  const struct kb_gen_archive_cfg *cfg;
  char *dir;
  struct kb_archive arch;
  struct arch_task *tasks;
  int n_tasks, cap_tasks;
  struct seen *seen;
  int n_seen, cap_seen;
};

static void warn_skip(const char *msg, void *arg) {
  (void)arg;
  kb_warn("archive: %s; entry skipped", msg);
}

int kb__gen_archive_new(struct kb_queue *q, const struct kb_gen_archive_cfg *cfg, const char *dir,
                       struct kb_gen_archive **out, struct kb_error *err) {
  *out = NULL;
  struct kb_gen_archive *a = kb_calloc(1, sizeof *a);
  if (a == NULL || (a->dir = kb_strdup(dir)) == NULL) {
    kb_free(a);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  a->q = q;
  a->cfg = cfg;
  int rc = kb_archive_load(dir, &a->arch, warn_skip, NULL, err);
  if (rc) {
    kb__gen_archive_free(a);
    return rc;
  }
  *out = a;
  return KB_OK;
}

void kb__gen_archive_free(struct kb_gen_archive *a) {
  if (a == NULL)
    return;
  for (int i = 0; i < a->n_tasks; i++)
    kb_free(a->tasks[i].match);
  kb_free(a->tasks);
  kb_free(a->seen);
  kb_archive_release(&a->arch);
  kb_free(a->dir);
  kb_free(a);
}

const char *kb__gen_archive_dir(const struct kb_gen_archive *a) { return a->dir; }

int kb__gen_archive_size(const struct kb_gen_archive *a) { return a ? a->arch.n : 0; }

static struct arch_task *find_task(struct kb_gen_archive *a, const char *id) {
  for (int i = 0; i < a->n_tasks; i++)
    if (strcmp(a->tasks[i].id, id) == 0)
      return &a->tasks[i];
  return NULL;
}

/* The archive's view of `task`, built on first use: its fitting entries. NULL on ENOMEM or a
 * failed fingerprint (logged: the task gets nothing from the archive). */
static struct arch_task *bind_task(struct kb_gen_archive *a, const struct kb_task *task) {
  struct arch_task *t = find_task(a, task->id);
  if (t)
    return t;
  if (a->n_tasks == a->cap_tasks) {
    int cap = a->cap_tasks ? a->cap_tasks * 2 : 8;
    struct arch_task *v = kb_reallocarray(a->tasks, (size_t)cap, sizeof *v);
    if (v == NULL)
      return NULL;
    a->tasks = v;
    a->cap_tasks = cap;
  }
  t = &a->tasks[a->n_tasks];
  memset(t, 0, sizeof *t);
  snprintf(t->id, sizeof t->id, "%s", task->id);
  struct kb_error ferr = {0};
  if (kb_task_fingerprint(task, t->fingerprint, &ferr) != KB_OK) {
    kb_warn("archive: task %s: %s; nothing proposed from the archive", task->id, ferr.msg);
    return NULL;
  }
  t->match = kb_calloc((size_t)a->arch.n + 1, sizeof *t->match);
  if (t->match == NULL)
    return NULL;
  /* entries are sorted by task, then speedup: the first of each candidate id is its best */
  for (int i = 0; i < a->arch.n; i++) {
    const struct kb_archive_entry *e = &a->arch.entries[i];
    if (strcmp(e->task, task->id) != 0 || strcmp(e->fingerprint, t->fingerprint) != 0)
      continue;
    /* a ModelNew solution runs in the PyTorch worker only: pytorch-oracle tasks */
    if (e->format == KB_FORMAT_KERNELBENCH && task->oracle_kind != KB_ORACLE_PYTORCH) {
      kb_info("archive: task %s: entry %.12s is a kernelbench solution and the task has no "
              "pytorch oracle; not proposed", task->id, e->id);
      continue;
    }
    int dup = 0;
    for (int j = 0; j < t->n_match && !dup; j++)
      dup = strcmp(a->arch.entries[t->match[j]].candidate, e->candidate) == 0;
    if (!dup)
      t->match[t->n_match++] = i;
  }
  a->n_tasks++;
  int other = 0;
  for (int i = 0; i < a->arch.n; i++)
    other += strcmp(a->arch.entries[i].task, task->id) == 0;
  if (other > t->n_match)
    kb_info("archive: task %s: %d kernel%s fit; %d more entr%s for this task id (another spec, "
            "or a kernel timed on several GPUs)",
            task->id, t->n_match, t->n_match == 1 ? "" : "s", other - t->n_match,
            other - t->n_match == 1 ? "y" : "ies");
  return t;
}

int kb__gen_archive_can_propose(struct kb_gen_archive *a, const struct kb_task *task) {
  if (a == NULL)
    return 0;
  struct arch_task *t = bind_task(a, task); /* also for the crossover parents */
  return t && a->cfg->propose > 0 && t->next < t->n_match && t->next < a->cfg->propose;
}

/* 1 when candidate `id` is in the campaign's catalog, 0 when not, -1 on error (in `err`). */
static int known(struct kb_gen_archive *a, const char *id, struct kb_error *err) {
  char key[200], suffix[100];
  snprintf(suffix, sizeof suffix, KB_KEY_CAND_FMT, id);
  kb_queue_key(a->q, key, sizeof key, suffix);
  redisReply *rep = NULL;
  if (kb_redis_commandf(a->q->redis, &rep, err, "EXISTS %s", key) != KB_OK)
    return -1;
  int yes = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
  freeReplyObject(rep);
  return yes;
}

int kb__gen_archive_propose(struct kb_gen_archive *a, const struct kb_task *task,
                           struct kb_candidate *c, struct kb_error *err) {
  memset(c, 0, sizeof *c);
  struct arch_task *t = a ? bind_task(a, task) : NULL;
  while (t && t->next < t->n_match && t->next < a->cfg->propose) {
    const struct kb_archive_entry *e = &a->arch.entries[t->match[t->next++]];
    struct kb_error cerr = {0};
    int rc = kb_archive_entry_candidate(e, task->id, c, &cerr);
    if (rc == KB_ENOMEM)
      return kb_error_set(err, rc, "%s", cerr.msg);
    if (rc) {
      kb_warn("archive: entry %.12s: %s; not proposed", e->id, cerr.msg);
      continue;
    }
    int k = known(a, c->id, err);
    if (k < 0) {
      kb_candidate_release(c);
      return err->code;
    }
    if (k == 1) {
      kb_info("archive: %s/%s is candidate %.12s, already known: not proposed again", task->id,
              e->name, c->id);
      kb_candidate_release(c);
      continue;
    }
    kb_info("archive: proposing %s for %s (entry %.12s: %.2fx at tier %s on %s, campaign %s)",
            e->name, task->id, e->id, e->speedup, e->tier[0] ? e->tier : "-",
            e->gpu[0] ? e->gpu : "-", e->campaign[0] ? e->campaign : "-");
    return KB_OK;
  }
  return KB_EEMPTY;
}

int kb__gen_archive_observe(struct kb_gen_archive *a, const struct kb_result *r) {
  if (a == NULL || r->status != KB_STATUS_OK || r->tier != a->q->n_tiers - 1)
    return KB_OK;
  for (int i = 0; i < a->n_seen; i++)
    if (strcmp(a->seen[i].id, r->candidate) == 0) {
      snprintf(a->seen[i].device, sizeof a->seen[i].device, "%s", r->device);
      return KB_OK;
    }
  if (a->n_seen == a->cap_seen) {
    int cap = a->cap_seen ? a->cap_seen * 2 : 16;
    struct seen *v = kb_reallocarray(a->seen, (size_t)cap, sizeof *v);
    if (v == NULL)
      return KB_ENOMEM;
    a->seen = v;
    a->cap_seen = cap;
  }
  struct seen *s = &a->seen[a->n_seen++];
  snprintf(s->id, sizeof s->id, "%s", r->candidate);
  snprintf(s->device, sizeof s->device, "%s", r->device);
  return KB_OK;
}

static int speedup_desc(const void *pa, const void *pb) {
  const struct kb_archive_entry *const *a = pa, *const *b = pb;
  if ((*a)->speedup != (*b)->speedup)
    return (*a)->speedup > (*b)->speedup ? -1 : 1;
  return strcmp((*a)->id, (*b)->id);
}

static int tags_text(struct kb_buf *b, const struct kb_archive_entry *e) {
  int rc = KB_OK;
  for (int i = 0; i < e->n_tags && rc == KB_OK; i++)
    rc = kb_buf_addf(b, "%s%s", i ? ", " : "", e->tags[i]);
  return rc;
}

int kb__gen_archive_examples(struct kb_gen_archive *a, const struct kb_task *task, char **out,
                            struct kb_error *err) {
  *out = NULL;
  if (a == NULL || a->cfg->examples <= 0)
    return KB_OK;
  const struct kb_archive_entry **pick = kb_calloc((size_t)a->arch.n + 1, sizeof *pick);
  if (pick == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  const char *category = task->category ? task->category : "other";
  int n = 0;
  for (int i = 0; i < a->arch.n; i++) {
    const struct kb_archive_entry *e = &a->arch.entries[i];
    /* verified entries of the category and backend, the best (first) of each task */
    /* native kernels only: the examples go in native prompts (gen_llm.h) */
    if (e->speedup <= 0 || e->backend != task->backend || strcmp(e->category, category) != 0 ||
        e->format != KB_FORMAT_NATIVE || strlen(e->source) > EXAMPLE_MAX_BYTES)
      continue;
    if (n > 0 && strcmp(pick[n - 1]->task, e->task) == 0)
      continue;
    pick[n++] = e;
  }
  qsort(pick, (size_t)n, sizeof *pick, speedup_desc);
  if (n > a->cfg->examples)
    n = a->cfg->examples;
  struct kb_buf b;
  kb_buf_init(&b);
  int rc = KB_OK;
  if (n > 0)
    rc = kb_buf_addf(&b,
                     "\n\nVerified kernels from the archive of earlier campaigns, for tasks of "
                     "the same category (\"%s\"), as examples of what worked. Their tasks may "
                     "differ from this one: take the ideas, not the code.\n",
                     category);
  for (int i = 0; i < n && rc == KB_OK; i++) {
    const struct kb_archive_entry *e = pick[i];
    rc = kb_buf_addf(&b, "\nArchive example %d: task \"%s\", \"%s\", %.2fx faster than its "
                         "baseline at tier \"%s\" on %s; tags: ",
                     i + 1, e->task, e->name, e->speedup, e->tier, e->gpu);
    if (rc == KB_OK)
      rc = tags_text(&b, e);
    if (rc == KB_OK)
      rc = kb_buf_addf(&b, "%s%s\n```%s\n%s```\n", e->knobs[0] ? "; built with " : "",
                       e->knobs, e->backend == KB_BACKEND_CUDA ? "cuda" : "c", e->source);
  }
  kb_free(pick);
  if (rc) {
    kb_buf_release(&b);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  if (n == 0)
    return KB_OK;
  *out = kb_buf_detach(&b);
  return *out ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
}

int kb__gen_archive_parent(struct kb_gen_archive *a, const struct kb_task_pop *pop,
                          struct kb_candidate *c, char *summary, size_t size, int *found,
                          struct kb_error *err) {
  *found = 0;
  memset(c, 0, sizeof *c);
  struct arch_task *t = a ? find_task(a, pop->task) : NULL;
  for (int i = 0; t && i < t->n_match; i++) {
    const struct kb_archive_entry *e = &a->arch.entries[t->match[i]];
    if (e->speedup <= 0)
      continue;
    int rc = kb_archive_entry_candidate(e, pop->task, c, err);
    if (rc)
      return rc;
    int member = 0;
    for (int j = 0; j < pop->n && !member; j++)
      member = strcmp(pop->members[j].id, c->id) == 0;
    if (member) {
      kb_candidate_release(c);
      continue;
    }
    snprintf(summary, size, "from the archive: %.2fx over its baseline at tier %s on %s, "
             "campaign %s; not yet timed here", e->speedup, e->tier, e->gpu,
             e->campaign[0] ? e->campaign : "-");
    *found = 1;
    return KB_OK;
  }
  return KB_OK;
}

static const char *seen_device(const struct kb_gen_archive *a, const char *id) {
  for (int i = 0; i < a->n_seen; i++)
    if (strcmp(a->seen[i].id, id) == 0)
      return a->seen[i].device;
  return "unknown";
}

/* The archive entry `c` was proposed from, when it came from the archive, or NULL. */
static const struct kb_archive_entry *origin(const struct kb_gen_archive *a,
                                             const struct kb_candidate *c) {
  if (strcmp(c->generator, "archive") != 0)
    return NULL;
  for (int i = 0; i < a->arch.n; i++)
    if (strcmp(a->arch.entries[i].candidate, c->id) == 0)
      return &a->arch.entries[i];
  return NULL;
}

/* Writes the entry of member `m` (timed at tier `top`, baseline `base_us`). */
static int save_one(struct kb_gen_archive *a, const struct kb_task *task,
                    const struct kb_member *m, int top, double base_us, struct kb_error *err) {
  struct kb_candidate c;
  int rc = kb_catalog_get_candidate(a->q, m->id, &c, err);
  if (rc)
    return rc;
  struct kb_archive_entry e;
  rc = kb_archive_entry_from(&e, task, &c, err);
  if (rc == KB_OK) {
    const struct kb_archive_entry *o = origin(a, &c);
    if (o) { /* re-verified here: keep who made it and its tags */
      snprintf(e.name, sizeof e.name, "%s", o->name);
      snprintf(e.generator, sizeof e.generator, "%s", o->generator);
      e.n_tags = 0;
      for (int i = 0; i < o->n_tags; i++)
        kb_archive_entry_add_tag(&e, o->tags[i], &(struct kb_error){0});
    }
    for (int i = 0; i < a->cfg->n_tags; i++)
      kb_archive_entry_add_tag(&e, a->cfg->tags[i], &(struct kb_error){0});
    snprintf(e.gpu, sizeof e.gpu, "%s", seen_device(a, m->id));
    snprintf(e.tier, sizeof e.tier, "%s", a->q->tiers[top].name);
    snprintf(e.campaign, sizeof e.campaign, "%s", a->q->cid);
    e.median_us = m->tiers[top].median_us;
    e.baseline_us = base_us;
    e.speedup = base_us / m->tiers[top].median_us;
    char path[4200];
    rc = kb_archive_put(a->dir, &e, path, sizeof path, err);
    if (rc == KB_OK)
      kb_info("archive: added %s/%s (%.2fx at tier %s on %s) as %s", task->id, c.name,
              e.speedup, e.tier, e.gpu, path);
  }
  kb_archive_entry_release(&e);
  kb_candidate_release(&c);
  return rc;
}

/* The median of `m` at tier `k` when it passed there with a timing (kb/rank.h), else 0. */
static double timed_us(const struct kb_member *m, int k) {
  struct kb_rank r;
  kb__member_rank(m, &r);
  return r.median_us[k];
}

int kb__gen_archive_save(struct kb_gen_archive *a, const struct kb_task *task,
                        const struct kb_task_pop *pop, int *added, struct kb_error *err) {
  if (added)
    *added = 0;
  if (a == NULL || a->cfg->save <= 0)
    return KB_OK;
  int top = a->q->n_tiers - 1;
  const struct kb_member *base = kb__population_baseline(pop);
  double base_us = top >= 1 && base ? timed_us(base, top) : 0;
  if (base_us <= 0)
    return KB_OK; /* no baseline timed at the last tier: nothing is known to beat it */
  const struct kb_member **best = kb_calloc((size_t)a->cfg->save, sizeof *best);
  if (best == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  int n = 0;
  for (int i = 0; i < pop->n; i++) {
    const struct kb_member *m = &pop->members[i];
    const struct kb_member_tier *mt = &m->tiers[top];
    double us = timed_us(m, top);
    if (m == base || us <= 0 || us >= base_us)
      continue;
    int pos = n;
    while (pos > 0 && best[pos - 1]->tiers[top].median_us > mt->median_us)
      pos--;
    if (pos >= a->cfg->save)
      continue;
    for (int j = (n < a->cfg->save ? n : a->cfg->save - 1); j > pos; j--)
      best[j] = best[j - 1];
    best[pos] = m;
    if (n < a->cfg->save)
      n++;
  }
  int rc = KB_OK;
  for (int i = 0; i < n && rc == KB_OK; i++) {
    rc = save_one(a, task, best[i], top, base_us, err);
    if (rc == KB_OK && added)
      (*added)++;
  }
  kb_free(best);
  return rc;
}
