/* The 3-tier ladder of the queue and generator tests and of the queue benchmark: compile
 * (0 ms), smoke (10 ms), full (100 ms), one sample each, 1 s limits. */
#ifndef KB_TEST_SMALL_LADDER_H
#define KB_TEST_SMALL_LADDER_H

#include "kb/campaign.h"

#define KBT_SMALL_LADDER_TIERS 3

/* Fills tiers[0..2] (caller-owned). */
void kbt_small_ladder(struct kb_tier tiers[KBT_SMALL_LADDER_TIERS]);

#endif
