/* Member ranking for the generators (see gen_rank.h). */
#include "gen_rank.h"

#include <string.h>

int kb__gen_rank_tier(const struct kb_member *m) {
  int best = -1;
  for (int k = 1; m && k < KB_MAX_TIERS; k++)
    if (m->tiers[k].evaluated && m->tiers[k].status == KB_STATUS_OK && m->tiers[k].median_us > 0)
      best = k;
  return best;
}

int kb__gen_rank_better(const struct kb_member *a, const struct kb_member *b) {
  int ta = kb__gen_rank_tier(a), tb = kb__gen_rank_tier(b);
  if (ta != tb)
    return ta > tb;
  if (ta < 0)
    return 0;
  return a->tiers[ta].median_us < b->tiers[tb].median_us;
}

const struct kb_member *kb__gen_rank_find(const struct kb_task_pop *pop, const char *id) {
  for (int i = 0; i < pop->n; i++)
    if (strcmp(pop->members[i].id, id) == 0)
      return &pop->members[i];
  return NULL;
}
