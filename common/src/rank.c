/* The ranking rule (see kb/rank.h). */
#include "kb/rank.h"

#include <math.h>
#include <stddef.h>

int kb_rank_timed(int ok, int samples, double median_us) {
  return ok && samples > 0 && median_us > 0;
}

int kb_rank_tier(const struct kb_rank *c) {
  for (int k = KB_MAX_TIERS - 1; c && k >= 0; k--)
    if (c->median_us[k] > 0)
      return k;
  return -1;
}

int kb_rank_cmp(const struct kb_rank *a, const struct kb_rank *b) {
  int ta = kb_rank_tier(a), tb = kb_rank_tier(b);
  if (ta != tb)
    return ta > tb ? -1 : 1;
  if (ta < 0)
    return 0;
  double ma = a->median_us[ta], mb = b->median_us[tb];
  return ma < mb ? -1 : ma > mb ? 1 : 0;
}

int kb_rank_better(const struct kb_rank *a, const struct kb_rank *b) {
  return kb_rank_cmp(a, b) < 0;
}

double kb_rank_speedup(const struct kb_rank *c, const struct kb_rank *base, int *tier) {
  if (tier)
    *tier = -1;
  for (int k = kb_rank_tier(c); base && k >= 0; k--)
    if (c->median_us[k] > 0 && base->median_us[k] > 0) {
      if (tier)
        *tier = k;
      return base->median_us[k] / c->median_us[k];
    }
  return 0;
}

double kb_rank_eager_speedup(double median_us, double own_eager_us, double task_eager_us,
                             int *own) {
  int mine = isfinite(own_eager_us) && own_eager_us > 0;
  double eager = mine ? own_eager_us : task_eager_us;
  if (own)
    *own = mine;
  if (!(median_us > 0) || !isfinite(median_us) || !(eager > 0) || !isfinite(eager))
    return 0;
  return eager / median_us;
}
