/* Promotion policy (see policy.h). */
#include "policy.h"

#include <string.h>

#include "kb/result.h"

int kb_policy_promote(const struct kb_policy *p, const struct kb_task_pop *t,
                      const struct kb_member *m, int tier) {
  if (tier + 1 >= p->n_tiers)
    return 0;
  const struct kb_member_tier *mt = &m->tiers[tier];
  if (!mt->evaluated || mt->status != KB_STATUS_OK)
    return 0;
  if (tier == 0)
    return 1;
  if (m == kb_population_baseline(t))
    return 1;
  if (mt->samples == 0)
    return 0;
  int cohort = 0, faster = 0;
  for (int i = 0; i < t->n; i++) {
    const struct kb_member_tier *o = &t->members[i].tiers[tier];
    if (!o->evaluated || o->status != KB_STATUS_OK || o->samples == 0)
      continue;
    cohort++;
    if (o->median_us < mt->median_us)
      faster++;
  }
  int eta = p->eta > 1 ? p->eta : 3;
  int keep = (cohort + eta - 1) / eta; /* ceil(cohort / eta), at least 1 */
  return faster < keep;
}

double kb_policy_priority(const struct kb_task_pop *t, const struct kb_member *m, int tier) {
  const struct kb_member *base = kb_population_baseline(t);
  if (base == NULL || tier < 0)
    return 1.0;
  double mine = m->tiers[tier].median_us, theirs = base->tiers[tier].median_us;
  if (mine <= 0 || theirs <= 0)
    return 1.0;
  return mine / theirs;
}
