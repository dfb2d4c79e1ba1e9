/* Budget split across tasks (see budget.h). */
#include "budget.h"

#include <math.h>

void kb__budget_split(const struct kb_search *s, int64_t total_ms, int64_t available_ms,
                     int64_t min_grant_ms, const struct kb_budget_task *tasks, int n,
                     int64_t *caps) {
  if (n <= 0)
    return;
  double avail = available_ms > 0 ? (double)available_ms : 0;
  double floor_ms = s->floor_share * (double)total_ms / n;
  double need_sum = 0, best_rate = 0;
  long results = 0;
  int running = 0;
  for (int i = 0; i < n; i++) {
    if (tasks[i].stopped)
      continue;
    running++;
    double need = floor_ms - (double)tasks[i].used_ms;
    need_sum += need > 0 ? need : 0;
    if (tasks[i].rate > best_rate)
      best_rate = tasks[i].rate;
    results += tasks[i].results;
  }
  /* Unused floors first; the rest of the available budget is the bandit's pool. */
  double floor_scale = need_sum > avail ? avail / need_sum : 1.0;
  double pool = avail - need_sum * floor_scale;
  double score_sum = 0;
  double log_all = log(1.0 + (double)results);
  for (int i = 0; i < n; i++) {
    if (tasks[i].stopped)
      continue;
    double exploit = best_rate > 0 ? tasks[i].rate / best_rate : 0;
    double explore = s->explore * sqrt(log_all / (1.0 + (double)tasks[i].results));
    score_sum += exploit + explore;
  }
  for (int i = 0; i < n; i++) {
    caps[i] = -1;
    if (tasks[i].stopped)
      continue;
    caps[i] = tasks[i].used_ms;
    double need = floor_ms - (double)tasks[i].used_ms;
    double share = (need > 0 ? need : 0) * floor_scale;
    double exploit = best_rate > 0 ? tasks[i].rate / best_rate : 0;
    double explore = s->explore * sqrt(log_all / (1.0 + (double)tasks[i].results));
    share += score_sum > 0 ? pool * (exploit + explore) / score_sum : pool / running;
    /* Every running task can start at least its dearest evaluation each period, so a task
     * with work left is never starved by shares computed for tasks that have none. */
    if (share < (double)min_grant_ms && (double)min_grant_ms <= avail)
      share = (double)min_grant_ms;
    caps[i] += (int64_t)floor(share);
  }
}
