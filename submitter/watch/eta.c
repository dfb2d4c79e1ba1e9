/* The ETA of a campaign (see eta.h). */
#include "eta.h"

#include <math.h>

/* Observed promotion rate out of tier k: items that reached k + 1 (evaluated, waiting or under
 * way) per result at k; the prior when nothing was evaluated at k yet. Never above 1 (one
 * result promotes at most one item). */
static double rate_out(const struct kb_eta_in *in, int k) {
  if (k + 1 >= in->n_tiers)
    return 0;
  if (in->evaluated[k] <= 0)
    return k == 0 ? 1.0 : KB_ETA_PRIOR_RATE;
  double next = (double)(in->evaluated[k + 1] + in->ready[k + 1] + in->leased[k + 1]);
  double r = next / (double)in->evaluated[k];
  return r > 1 ? 1 : r;
}

/* The expected settled cost of a result at tier k: its observed mean; before a result there,
 * the mean of the highest tier below it with one plus the planning difference between the two
 * (a result's fixed part, the compile, start-up and input generation, carries over; the timed
 * part grows as planned); with none below either, the planning estimate. */
static double cost_at(const struct kb_eta_in *in, int k) {
  if (in->cost_ms[k] > 0)
    return in->cost_ms[k];
  for (int j = k - 1; j >= 0; j--)
    if (in->cost_ms[j] > 0 && in->plan_ms[j] > 0) {
      double c = in->cost_ms[j] + in->plan_ms[k] - in->plan_ms[j];
      return c > in->plan_ms[k] ? c : in->plan_ms[k];
    }
  return in->plan_ms[k];
}

void kb__eta_estimate(const struct kb_eta_in *in, struct kb_eta *out) {
  double rate[KB_MAX_TIERS];
  int n = in->n_tiers > KB_MAX_TIERS ? KB_MAX_TIERS : in->n_tiers;
  for (int k = 0; k < n; k++)
    rate[k] = rate_out(in, k);
  /* Each open item at tier k is expected to cost its tier's mean, then to climb with the
   * observed rates: prod rate[k..j-1] items at each tier j above. */
  double work = 0, leased_work = 0;
  for (int k = 0; k < n; k++) {
    leased_work += (double)in->leased[k] * cost_at(in, k);
    double items = (double)(in->ready[k] + in->leased[k]);
    for (int j = k; j < n && items > 0; j++) {
      work += items * cost_at(in, j);
      items *= rate[j];
    }
  }
  out->work_ms = work;
  double spend = in->spend_rate > 0 ? in->spend_rate : in->gpu_rate;
  out->exhaust_s = spend > 0 ? in->gpu_left_ms / spend : -1;
  out->bound = 0;
  /* The leased items have run since the last settlement: that much of the work is done, up to
   * their own expected cost (past it, they are overdue: any moment now). */
  out->eta_s = -1;
  if (in->gpu_rate > 0) {
    double done = in->since_settled_s > 0 ? in->since_settled_s : 0;
    if (done > leased_work / in->gpu_rate)
      done = leased_work / in->gpu_rate;
    out->eta_s = work / in->gpu_rate - done;
    if (out->eta_s < 0)
      out->eta_s = 0;
  }
  if (work <= 0 && !in->generating)
    out->eta_s = 0;
  /* Generators keep proposing until the budget (or a stop rule, which cannot be foreseen). */
  if (in->generating && out->exhaust_s >= 0 && (out->eta_s < 0 || out->exhaust_s > out->eta_s))
    out->eta_s = out->exhaust_s, out->bound = 1;
  if (out->exhaust_s >= 0 && out->eta_s > out->exhaust_s)
    out->eta_s = out->exhaust_s, out->bound = 1;
  if (in->deadline_s >= 0 && (out->eta_s < 0 || out->eta_s > in->deadline_s))
    out->eta_s = in->deadline_s, out->bound = 2;
}

double kb__eta_rate(const int64_t *t_ms, const int64_t *spent, int n, int64_t created_ms) {
  if (n <= 0)
    return 0;
  int64_t now = t_ms[n - 1];
  int i = 0;
  while (i < n - 1 && t_ms[i] < now - KB_ETA_RATE_WINDOW_MS)
    i++;
  int64_t t0 = t_ms[i], s0 = spent[i];
  if (now - t0 < KB_ETA_RATE_MIN_SPAN_MS) {
    if (created_ms <= 0 || now <= created_ms)
      return 0;
    t0 = created_ms;
    s0 = 0;
  }
  return now > t0 ? (double)(spent[n - 1] - s0) * 1000.0 / (double)(now - t0) : 0;
}

double kb__eta_work_rate(const int64_t *t_ms, const int64_t *spent, int n, int64_t created_ms,
                         double *since_s) {
  *since_s = 0;
  if (n <= 0)
    return 0;
  int j = n - 1;
  while (j > 0 && spent[j - 1] == spent[n - 1])
    j--;
  *since_s = (double)(t_ms[n - 1] - t_ms[j]) / 1000.0;
  return kb__eta_rate(t_ms, spent, j + 1, created_ms);
}

double kb__eta_smooth(double prev_end_s, double pred_end_s, double dt_s) {
  if (prev_end_s < 0 || dt_s <= 0)
    return pred_end_s;
  double a = 1.0 - exp(-dt_s / KB_ETA_SMOOTH_S);
  return prev_end_s + a * (pred_end_s - prev_end_s);
}
