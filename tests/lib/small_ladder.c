/* The tests' 3-tier ladder (see small_ladder.h). */
#include "small_ladder.h"

#include <stdio.h>

void kbt_small_ladder(struct kb_tier tiers[KBT_SMALL_LADDER_TIERS]) {
  static const char *const names[KBT_SMALL_LADDER_TIERS] = {"compile", "smoke", "full"};
  static const int64_t cost_ms[KBT_SMALL_LADDER_TIERS] = {0, 10, 100};
  for (int i = 0; i < KBT_SMALL_LADDER_TIERS; i++) {
    tiers[i] = (struct kb_tier){.cost_ms = cost_ms[i]};
    snprintf(tiers[i].name, sizeof tiers[i].name, "%s", names[i]);
    tiers[i].min_samples = 1;
    tiers[i].max_samples = 1;
    tiers[i].max_seconds = 1;
    tiers[i].noise = 1;
    tiers[i].timeout_s = 1;
  }
}
