/* How the generators rank members of a population: the one ranking rule of kb/rank.h (the
 * highest tier a member passed with a timing, then its median there), over population members.
 * Shared by the tune and llm generators. */
#ifndef KB_SCHED_GEN_RANK_H
#define KB_SCHED_GEN_RANK_H

#include "population.h"

/* The highest tier `m` (borrowed; may be NULL) passed with a timing (kb_rank_tier), or -1. */
int kb__gen_rank_tier(const struct kb_member *m);
/* 1 when `a` ranks above `b` (kb_rank_better; either may be NULL, which ranks last), else 0. */
int kb__gen_rank_better(const struct kb_member *a, const struct kb_member *b);
/* The member `id` of `pop`, or NULL. Borrowed from `pop`: valid until the next member is added
 * to it (population.h). */
const struct kb_member *kb__gen_rank_find(const struct kb_task_pop *pop, const char *id);

#endif
