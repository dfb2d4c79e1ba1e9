/* Per-task populations (see population.h). */
#include "population.h"

#include <math.h>
#include <string.h>

#include "kb/alloc.h"

void kb__population_init(struct kb_population *p, int n_tiers) {
  memset(p, 0, sizeof *p);
  p->n_tiers = n_tiers;
}

void kb__population_release(struct kb_population *p) {
  if (p == NULL)
    return;
  for (int i = 0; i < p->n; i++)
    kb_free(p->tasks[i].members);
  kb_free(p->tasks);
  memset(p, 0, sizeof *p);
}

struct kb_task_pop *kb__population_task(struct kb_population *p, const char *task) {
  for (int i = 0; i < p->n; i++)
    if (strcmp(p->tasks[i].task, task) == 0)
      return &p->tasks[i];
  if (p->n == p->cap) {
    int cap = p->cap ? p->cap * 2 : 16;
    struct kb_task_pop *t = kb_reallocarray(p->tasks, (size_t)cap, sizeof *t);
    if (t == NULL)
      return NULL;
    p->tasks = t;
    p->cap = cap;
  }
  struct kb_task_pop *t = &p->tasks[p->n++];
  memset(t, 0, sizeof *t);
  t->torch_tier = -1;
  snprintf(t->task, sizeof t->task, "%s", task);
  return t;
}

struct kb_member *kb__population_member(struct kb_task_pop *t, const char *id, const char *name,
                                       const char *generator) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->members[i].id, id) == 0)
      return &t->members[i];
  if (t->n == t->cap) {
    int cap = t->cap ? t->cap * 2 : 16;
    struct kb_member *m = kb_reallocarray(t->members, (size_t)cap, sizeof *m);
    if (m == NULL)
      return NULL;
    t->members = m;
    t->cap = cap;
  }
  struct kb_member *m = &t->members[t->n++];
  memset(m, 0, sizeof *m);
  snprintf(m->id, sizeof m->id, "%s", id);
  snprintf(m->name, sizeof m->name, "%s", name ? name : "");
  snprintf(m->generator, sizeof m->generator, "%s", generator ? generator : "");
  return m;
}

struct kb_member *kb__population_add(struct kb_population *p, const struct kb_result *r,
                                    const char *name, const char *generator) {
  struct kb_task_pop *t = kb__population_task(p, r->task);
  struct kb_member *m = t ? kb__population_member(t, r->candidate, name, generator) : NULL;
  if (m == NULL || r->tier < 0 || r->tier >= KB_MAX_TIERS)
    return m;
  struct kb_member_tier *mt = &m->tiers[r->tier];
  if (mt->evaluated && mt->attempt == r->attempt)
    return m;
  mt->evaluated = 1;
  mt->attempt = r->attempt;
  mt->status = r->status;
  mt->median_us = r->timing.samples > 0 ? r->timing.median_us : 0;
  mt->noise = r->timing.samples > 0 && r->timing.noise > 0 ? r->timing.noise : 0;
  mt->p10_us = r->timing.samples > 0 && r->timing.p10_us > 0 ? r->timing.p10_us : 0;
  mt->p90_us = r->timing.samples > 0 && r->timing.p90_us > 0 ? r->timing.p90_us : 0;
  mt->samples = r->timing.samples;
  mt->eager_us = r->timing.samples > 0 && r->torch_eager_us > 0 ? r->torch_eager_us : 0;
  if (r->tier > m->promoted_to)
    m->promoted_to = r->tier;
  kb_result_keep_torch(r, &t->torch_eager_us, &t->torch_compile_us, &t->torch_tier);
  t->evaluations++;
  return m;
}

const struct kb_member *kb__population_baseline(const struct kb_task_pop *t) {
  if (t->baseline[0] == '\0')
    return NULL;
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->members[i].generator, "seed") == 0 &&
        strcmp(t->members[i].name, t->baseline) == 0)
      return &t->members[i];
  return NULL;
}

void kb__member_rank(const struct kb_member *m, struct kb_rank *out) {
  for (int k = 0; k < KB_MAX_TIERS; k++) {
    const struct kb_member_tier *mt = &m->tiers[k];
    out->median_us[k] =
        mt->evaluated && kb_rank_timed(mt->status == KB_STATUS_OK, mt->samples, mt->median_us)
            ? mt->median_us
            : 0;
  }
}

const struct kb_member *kb__population_best(const struct kb_task_pop *t, int *tier) {
  const struct kb_member *best = NULL;
  struct kb_rank best_rank, r;
  for (int i = 0; i < t->n; i++) {
    kb__member_rank(&t->members[i], &r);
    if (kb_rank_tier(&r) >= 0 && (best == NULL || kb_rank_better(&r, &best_rank))) {
      best = &t->members[i];
      best_rank = r;
    }
  }
  *tier = best ? kb_rank_tier(&best_rank) : -1;
  return best;
}
