/* The benchmark's runs and metrics (see ladder.h). */
#include "ladder.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/result.h"

static void totals_add(struct kb_bench_totals *t, double ratio, double top5, long winners,
                       long pruned) {
  t->log_ratio_sum += log(ratio);
  t->ratio_min = t->runs == 0 || ratio < t->ratio_min ? ratio : t->ratio_min;
  t->runs++;
  t->top5_sum += top5;
  t->winners += winners;
  t->pruned += pruned;
}

static int write_curve(const char *dir, const char *pool, const char *task, int seed,
                       const struct kb_bench_run *flat, const struct kb_bench_run *ours) {
  char path[1024];
  if (snprintf(path, sizeof path, "%s/%s-%s-seed%d.csv", dir, pool, task, seed) >=
      (int)sizeof path)
    return -1;
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return -1;
  fprintf(f, "method,gpu_s,best_true_us,best_measured_us\n");
  const struct kb_bench_run *runs[2] = {flat, ours};
  const char *names[2] = {"flat", "ladder"};
  for (int m = 0; m < 2; m++)
    for (int i = 0; i < runs[m]->n_curve; i++)
      fprintf(f, "%s,%.3f,%.3f,%.3f\n", names[m], runs[m]->curve[i].gpu_s,
              runs[m]->curve[i].best_true_us, runs[m]->curve[i].best_measured_us);
  for (int m = 0; m < 2; m++) /* the end of each run, so curves span the whole spend */
    if (runs[m]->n_curve > 0)
      fprintf(f, "%s,%.3f,%.3f,%.3f\n", names[m], runs[m]->gpu_s,
              runs[m]->curve[runs[m]->n_curve - 1].best_true_us,
              runs[m]->curve[runs[m]->n_curve - 1].best_measured_us);
  return fclose(f) == 0 ? 0 : -1;
}

/* Indexes of flat's top five by measured top-tier median (fewer when fewer were timed). */
static int top_five(const struct kb_bench_run *flat, int n, int *out) {
  int k = 0;
  for (int r = 0; r < 5; r++) {
    int best = -1;
    for (int i = 0; i < n; i++) {
      if (!flat->at_top[i])
        continue;
      int taken = 0;
      for (int j = 0; j < k; j++)
        taken |= out[j] == i;
      if (!taken && (best < 0 || flat->top_median[i] < flat->top_median[best]))
        best = i;
    }
    if (best < 0)
      break;
    out[k++] = best;
  }
  return k;
}

/* Prints where the GPU seconds of both runs went, up to the 95% target and in all: per tier,
 * candidates compiled by then, and (ladder) promotions from each timed tier by rule. */
static void explain(const struct kb_bench_run *flat, const struct kb_bench_run *ours,
                    double target, int n_tiers) {
  const struct kb_bench_run *runs[2] = {flat, ours};
  const char *names[2] = {"flat", "ladder"};
  for (int m = 0; m < 2; m++) {
    const struct kb_bench_curve_point *pt = kb__bench_point_at(runs[m], target);
    printf("    %-6s t95:", names[m]);
    if (pt == NULL) {
      printf(" never");
    } else {
      printf(" %.1f s after %ld candidates (", pt->gpu_s, pt->evaluated);
      for (int k = 1; k < n_tiers; k++)
        printf("%s%.1f", k > 1 ? "/" : "", pt->tier_gpu_s[k]);
      printf(" s by tier)");
    }
    printf("  whole run: %.1f s (", runs[m]->gpu_s);
    for (int k = 1; k < n_tiers; k++)
      printf("%s%.1f", k > 1 ? "/" : "", runs[m]->tier_gpu_s[k]);
    printf(" s; evaluations");
    for (int k = 0; k < n_tiers; k++)
      printf(" %ld", runs[m]->tier_evals[k]);
    printf(")\n");
  }
  printf("    ladder promotions from tier k (rank+bound, not):");
  for (int k = 1; k + 1 < n_tiers; k++)
    printf(" %d: %ld+%ld, %ld", k, ours->promoted[k][KB_PROMOTE_RANK],
           ours->promoted[k][KB_PROMOTE_BOUND], ours->promoted[k][KB_PROMOTE_NO]);
  printf("\n");
}

/* Replays one task of a pool with one seed; prints a table row and adds to `all` and `mine`. */
static int run_one(const struct kb_bench_pool *p, const int *idx, int n,
                   const struct kb_bench_replay_opts *o, const char *csv_dir, int seed, int level,
                   struct kb_bench_totals *all, struct kb_bench_totals *mine,
                   struct kb_error *err) {
  struct kb_bench_run flat, ours;
  int rc = kb__bench_replay(p, idx, n, o, 1, &flat, err);
  if (rc == KB_OK)
    rc = kb__bench_replay(p, idx, n, o, 0, &ours, err);
  if (rc) {
    kb__bench_run_release(&flat);
    return rc;
  }
  double pool_best = 0;
  for (int i = 0; i < n; i++) {
    const struct kb_bench_pool_cand *c = &p->c[idx[i]];
    if (c->status == KB_STATUS_OK && (pool_best == 0 || c->true_us < pool_best))
      pool_best = c->true_us;
  }
  double flat_final = flat.best >= 0 ? p->c[idx[flat.best]].true_us : pool_best;
  double target = flat_final / 0.95;
  double t_flat = kb__bench_time_to(&flat, target), t_ours = kb__bench_time_to(&ours, target);
  /* Not reached: count it as if the ladder had to fall back to flat evaluation's whole spend. */
  int reached = t_ours >= 0;
  double t_ours_eff = reached ? t_ours : flat.gpu_s;
  double ratio = t_ours_eff > 0 ? t_flat / t_ours_eff : 1.0;
  if (t_ours_eff <= 0 && t_flat > 0)
    ratio = t_flat / 0.001; /* reached before spending anything: only the baseline, free */
  int five[5];
  int k = top_five(&flat, n, five);
  int kept = 0;
  for (int j = 0; j < k; j++)
    kept += ours.at_top[five[j]];
  double top5 = k > 0 ? (double)kept / k : 1.0;
  long winners = 0, pruned = 0;
  for (int i = 0; i < n; i++) {
    const struct kb_bench_pool_cand *c = &p->c[idx[i]];
    if (c->status != KB_STATUS_OK || c->true_us > pool_best / 0.95)
      continue;
    winners++;
    pruned += !ours.at_top[i];
  }
  double ours_final = ours.best >= 0 ? p->c[idx[ours.best]].true_us : 0;
  if (level >= 1)
    printf("%-17s %-8s %4d %9.1f %9.1f %8.1f %8.1f%s %7.2f %5.2f %4ld/%-4ld %8.3f\n", p->name,
           p->c[idx[0]].task, seed, flat.gpu_s, ours.gpu_s, t_flat, t_ours_eff,
           reached ? " " : "*", ratio, top5, pruned, winners,
           ours_final > 0 ? flat_final / ours_final : 0.0);
  if (level >= 2)
    explain(&flat, &ours, target, o->n_tiers);
  totals_add(all, ratio, top5, winners, pruned);
  totals_add(mine, ratio, top5, winners, pruned);
  if (csv_dir && write_curve(csv_dir, p->name, p->c[idx[0]].task, seed, &flat, &ours) != 0)
    rc = kb_error_set(err, KB_EIO, "cannot write a curve into \"%s\": %s", csv_dir,
                      strerror(errno));
  kb__bench_run_release(&flat);
  kb__bench_run_release(&ours);
  return rc;
}

int kb__bench_ladder_pool(const struct kb_bench_pool *p, struct kb_bench_replay_opts *o,
                         int first_seed, int n_seeds,
                         const char *csv, int level, struct kb_bench_totals *all,
                         struct kb_error *err) {
  struct kb_bench_totals mine = {0};
  int *idx = kb_calloc((size_t)p->n, sizeof *idx);
  char *done = kb_calloc((size_t)p->n, 1);
  int rc = idx && done ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
  for (int first = 0; rc == KB_OK && first < p->n; first++) {
    if (done[first])
      continue;
    int n = 0, baselines = 0;
    for (int i = first; i < p->n; i++)
      if (!done[i] && strcmp(p->c[i].task, p->c[first].task) == 0) {
        idx[n++] = i;
        done[i] = 1;
        baselines += p->c[i].baseline;
      }
    if (baselines != 1) {
      rc = kb_error_set(err, KB_EPARSE, "%s: task \"%s\" has %d baselines, want 1", p->name,
                        p->c[first].task, baselines);
      break;
    }
    for (int seed = first_seed; rc == KB_OK && seed < first_seed + n_seeds; seed++) {
      o->seed = (uint64_t)seed;
      rc = run_one(p, idx, n, o, csv, seed, level, all, &mine, err);
    }
  }
  if (rc == KB_OK && level >= 1 && mine.runs > 0)
    printf("%-17s %-8s gpu_s_ratio %.2f (geometric mean; min %.2f), top5_survival %.2f, "
           "false_prune_rate %.3f\n\n", p->name, "all", exp(mine.log_ratio_sum / mine.runs),
           mine.ratio_min, mine.top5_sum / mine.runs,
           mine.winners ? (double)mine.pruned / mine.winners : 0.0);
  kb_free(idx);
  kb_free(done);
  return rc;
}

void kb__bench_ladder_json(FILE *out, const struct kb_bench_totals *all) {
  fprintf(out, "{\"gpu_s_ratio\":%.3f,\"top5_survival\":%.3f,\"false_prune_rate\":%.4f}\n",
          all->runs ? exp(all->log_ratio_sum / all->runs) : 0.0,
          all->runs ? all->top5_sum / all->runs : 0.0,
          all->winners ? (double)all->pruned / all->winners : 0.0);
}
