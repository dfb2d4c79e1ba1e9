/* Member ranking for the generators (see gen_rank.h). */
#include "gen_rank.h"

#include <string.h>

int kb__gen_rank_tier(const struct kb_member *m) {
  if (m == NULL)
    return -1;
  struct kb_rank r;
  kb__member_rank(m, &r);
  return kb_rank_tier(&r);
}

int kb__gen_rank_better(const struct kb_member *a, const struct kb_member *b) {
  struct kb_rank ra, rb;
  if (a)
    kb__member_rank(a, &ra);
  if (b)
    kb__member_rank(b, &rb);
  return kb_rank_better(a ? &ra : NULL, b ? &rb : NULL);
}

const struct kb_member *kb__gen_rank_find(const struct kb_task_pop *pop, const char *id) {
  for (int i = 0; i < pop->n; i++)
    if (strcmp(pop->members[i].id, id) == 0)
      return &pop->members[i];
  return NULL;
}
