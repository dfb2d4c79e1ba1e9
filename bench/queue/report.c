/* The queue benchmark's table and final JSON line (see bench_queue.h). */
#include <stdio.h>

#include "bench_queue.h"
#include "kb/buf.h"
#include "kb/error.h"

static void phase_row(FILE *out, const char *name, const struct kb_bench_phase_stats *ps) {
  fprintf(out, "  %-24s %10.1f %10llu %6.2f", name, ps->per_s, (unsigned long long)ps->ops,
          ps->wall_s);
  int per = ps->wall_s > 0 && ps->ops > 0;
  if (ps->redis_cpu_s >= 0 && per)
    fprintf(out, " %8.0f%% %8.2f", 100.0 * ps->redis_cpu_s / ps->wall_s,
            1e6 * ps->redis_cpu_s / (double)ps->ops);
  else
    fprintf(out, " %9s %8s", "-", "-");
  if (ps->client_cpu_s >= 0 && per)
    fprintf(out, " %8.2f", 1e6 * ps->client_cpu_s / (double)ps->ops);
  else
    fprintf(out, " %8s", "-");
  if (ps->machine_busy >= 0)
    fprintf(out, " %6.0f%%", 100.0 * ps->machine_busy);
  else
    fprintf(out, " %7s", "-");
  fprintf(out, " %5ld\n", ps->forks);
}

static void cmd_rows(FILE *out, const struct kb_bench_cmd *cmds, int n, const char *per) {
  fprintf(out, "    %-22s %10s %10s %10s\n", "command", "calls", per, "us each");
  for (int i = 0; i < n; i++)
    fprintf(out, "    %-22s %10.2f %10.2f %10.2f\n", cmds[i].name, cmds[i].calls_per_op,
            cmds[i].usec_per_op,
            cmds[i].calls_per_op > 0 ? cmds[i].usec_per_op / cmds[i].calls_per_op : 0.0);
}

static void script_rows(FILE *out, const char *name, const struct kb_bench_script_profile *p) {
  if (p->n == 0)
    return;
  fprintf(out, "\n  %s alone (%d calls in a row from one connection, runners gone): %.1f us of "
               "server\n  time each (fastest of %d batches); latency p50 %.3f ms, p99 %.3f ms\n",
          name, p->n, p->usec, 5, p->p50_ms, p->p99_ms);
  cmd_rows(out, p->cmds, p->n_cmds, "us/call");
}

/* The exactly-once lines: items, the results stream, the ledger, lost and double charges, kills. */
static void verify_rows(FILE *out, const struct kb_bench_queue_opts *o,
                        const struct kb_bench_queue_result *r) {
  const struct kb__bench_verify *v = &r->verify;
  fprintf(out, "\n  items                     %ld enqueued; %ld queued, %ld leased, %ld done, "
               "%ld dead\n",
          r->enqueued, v->queued, v->leased, v->done, v->dead);
  fprintf(out, "  results stream            %ld entries, %ld distinct items; %ld charges "
               "posted\n",
          v->results, v->results_distinct, v->charges_posted);
  fprintf(out, "  ledger (gpu ms)           total %lld = available %lld + held %lld + spent "
               "%lld: %s\n",
          (long long)v->total, (long long)v->available, (long long)v->held,
          (long long)v->spent, v->ledger_exact ? "exact" : "NOT EXACT");
  fprintf(out, "  lost                      %ld\n", r->lost);
  fprintf(out, "  double charged            %ld\n", r->double_charged);
  if (o->kills) {
    fprintf(out, "  kills                     %d kill -9s; %ld leases reaped; %llu completes "
                 "refused (lease lost); drain %.1f s\n",
            r->kills, r->reaped, (unsigned long long)r->lease_lost, r->drain_s);
  }
}

/* The --fill lines: candidates written, their sizes, Redis memory per candidate. */
static void fill_rows(FILE *out, const struct kb_bench_queue_opts *o,
                      const struct kb_bench_queue_result *r) {
  const struct kb_bench_fill_stats *f = &r->fill;
  fprintf(out, "\n  fill                      %ld candidates (%d tasks x %d) in %.0f s, "
               "%.0f/s\n",
          f->candidates, o->tasks, o->per_task, f->seconds,
          f->seconds > 0 ? (double)f->candidates / f->seconds : 0.0);
  if (f->candidates > 0 && f->sampled > 0)
    fprintf(out, "  source                    %.0f bytes mean; candidate JSON %.0f -> zstd "
                 "%.0f bytes (ratio %.2f, %ld sampled)\n",
            f->source_bytes / (double)f->candidates, f->json_bytes / (double)f->sampled,
            f->zstd_bytes / (double)f->sampled,
            f->zstd_bytes > 0 ? f->json_bytes / f->zstd_bytes : 0.0, f->sampled);
  fprintf(out, "  used_memory               %lld bytes (%.2f GB); %lld before the fill\n",
          r->used_memory, (double)r->used_memory / 1e9, r->used_memory_before);
  fprintf(out, "  bytes per candidate       %.0f (all of used_memory / candidates)\n",
          r->bytes_per_candidate);
  fprintf(out, "  of which                  candidate key %.0f (sampled MEMORY USAGE), "
               "items hash %.0f, queues %.0f\n",
          r->cand_key_bytes,
          f->candidates ? (double)r->items_hash_bytes / (double)f->candidates : 0.0,
          f->candidates ? (double)r->queues_bytes / (double)f->candidates : 0.0);
}

/* The --search lines: one row per runner count tried, then the answer. */
static void search_rows(FILE *out, const struct kb_bench_queue_opts *o,
                        const struct kb_bench_queue_result *r) {
  fprintf(out, "\n  runner-count search (batch K=%d, evaluations of %.0f ms, claim p99 bound %.3f "
               "ms, %.1f s per step):\n",
          o->batch, o->eval_ms, o->p99_ms, r->seconds);
  fprintf(out, "    %8s %12s %12s %10s %10s %9s %5s\n", "runners", "items/s", "calls/s",
          "p50 ms", "p99 ms", "samples", "");
  for (int i = 0; i < r->n_steps; i++) {
    const struct kb_bench_search_step *st = &r->steps[i];
    fprintf(out, "    %8d %12.1f %12.1f %10.3f %10.3f %9llu %5s\n", st->runners,
            st->items_per_s, st->calls_per_s, st->p50_ms, st->p99_ms,
            (unsigned long long)st->samples, st->pass ? "pass" : "over");
  }
  fprintf(out, "  max runners within p99    %d%s\n", r->max_runners,
          r->max_capped ? " (the search's limit: more may pass)" : "");
}

void kb__bench_queue_print_table(FILE *out, const struct kb_bench_queue_opts *o,
                                 const struct kb_bench_queue_result *r) {
  fprintf(out, "kb-bench-queue: %d runners (%s), %.1f s per phase, campaign %s%s\n", r->runners,
          o->kills        ? "processes"
          : o->event_loop ? "one event loop: hiredis async, a connection each"
                          : "threads",
          r->seconds, r->cid,
          o->eval_ms > 0 ? ", simulated evaluation" : "");
  if (o->eval_ms > 0)
    fprintf(out, "  each cycle sleeps %.1f ms between claim and complete\n", o->eval_ms);
  fprintf(out, "\n  %-24s %10s %10s %6s %9s %8s %8s %7s %5s\n", "phase", "ops/s", "ops",
          "wall s", "redis cpu", "redis us", "bench us", "machine", "forks");
  char batch_name[32];
  snprintf(batch_name, sizeof batch_name, "batch K=%d%s (items)", o->batch,
           o->kills ? " kills" : "");
  phase_row(out, "warm-up (cycles)", &r->warmup);
  phase_row(out, o->batch > 1 ? batch_name
                 : o->two_call ? (o->kills ? "claim->complete (kills)" : "claim->complete")
                               : (o->kills ? "complete+claim (kills)" : "complete+claim"),
            &r->cycles);
  phase_row(out, "raw \"return 1\"", &r->ret1);
  phase_row(out, "raw HINCRBY debit (ref)", &r->debit);
  fprintf(out, "  (redis cpu: share of one CPU the redis main thread used; redis us and bench us:\n"
               "   CPU microseconds per op of that thread and of this process with its runner\n"
               "   threads; machine: share of all CPUs busy; forks: AOF rewrites redis started;\n"
               "   a cycle is %s)\n",
          o->batch > 1  ? "one item; a call completes up to K and claims K (kb_queue_cycle_batch)"
          : o->two_call ? "one claim plus one complete: two script calls"
                        : "one complete+claim call (kb_queue_complete_and_claim)");
  if (r->cycles.forks > 0)
    fprintf(out, "  an AOF rewrite during the cycles stopped redis for %.1f ms (the latest fork)\n",
            r->cycles.fork_ms);
  fprintf(out, "\n  ratio cycles/raw debit    %.3f    (cycles/raw return 1: %.3f)\n", r->ratio,
          r->ret1.per_s > 0 ? r->cycles.per_s / r->ret1.per_s : 0.0);
  fprintf(out, "  items per second          %.1f in %.1f script calls per second (batch K=%d)\n",
          r->cycles.per_s, r->calls_per_s, o->batch);
  fprintf(out, "  claim latency ms          p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n",
          r->claim_p50_ms, r->claim_p90_ms, r->claim_p99_ms, r->claim_max_ms);
  if (o->two_call)
    fprintf(out, "  complete latency ms       p50 %.3f  p99 %.3f\n", r->complete_p50_ms,
            r->complete_p99_ms);
  else if (o->batch > 1)
    fprintf(out, "  (the claim latency is that of each batch call: K completed and K claimed)\n");
  else
    fprintf(out, "  (one call per cycle: the claim latency is that of the complete+claim call)\n");
  fprintf(out, "  latency samples           %llu kept of %llu measured cycles\n",
          (unsigned long long)r->kept, (unsigned long long)r->samples);
  if (r->empty)
    fprintf(out, "  empty claims              %llu (the queue ran dry: rates are too low)\n",
            (unsigned long long)r->empty);
  if (r->n_cmds > 0) {
    fprintf(out, "\n  server time per cycle (INFO commandstats; calls per cycle; a command a script\n"
                 "  runs is counted on its own line and inside evalsha too):\n");
    cmd_rows(out, r->cmds, r->n_cmds, "us/cycle");
  }
  script_rows(out, "claim", &r->claim);
  script_rows(out, "complete", &r->complete);
  script_rows(out, "complete+claim", &r->fused);
  if (o->batch > 1 && r->batched.n > 0) {
    char name[64];
    snprintf(name, sizeof name, "batch K=%d (complete K, claim K)", o->batch);
    script_rows(out, name, &r->batched);
    fprintf(out, "  per item: %.1f us of server time against %.1f us for complete+claim\n",
            r->batched.usec / o->batch, r->fused.usec);
  }
  if (o->search)
    search_rows(out, o, r);
  verify_rows(out, o, r);
  if (o->fill)
    fill_rows(out, o, r);
  fprintf(out, "\n  result                    %s\n\n",
          kb__bench_queue_passed(r) ? "pass (nothing lost, nothing charged twice, ledger exact)"
                                   : "FAIL");
}

int kb__bench_queue_json(const struct kb_bench_queue_opts *o,
                        const struct kb_bench_queue_result *r, struct kb_buf *out) {
  int rc = kb_buf_addf(out,
                       "{\"runners\":%d,\"cycles_per_s\":%.1f,\"raw_script_per_s\":%.1f,"
                       "\"ratio\":%.4f,\"claim_p50_ms\":%.3f,\"claim_p99_ms\":%.3f,\"lost\":%ld,"
                       "\"double_charged\":%ld",
                       r->runners, r->cycles.per_s, r->debit.per_s, r->ratio, r->claim_p50_ms,
                       r->claim_p99_ms, r->lost, r->double_charged);
  if (rc == KB_OK)
    rc = kb_buf_addf(out, ",\"calls_per_cycle\":%d,\"batch\":%d,\"eval_ms\":%g,"
                          "\"items_per_s\":%.1f,\"calls_per_s\":%.1f",
                     o->two_call ? 2 : 1, o->batch, o->eval_ms, r->cycles.per_s,
                     r->calls_per_s);
  if (rc == KB_OK && o->event_loop)
    rc = kb_buf_addf(out, ",\"event_loop\":1");
  if (rc == KB_OK && o->batch > 1 && r->batched.n > 0)
    rc = kb_buf_addf(out, ",\"alone_us_per_item\":%.1f,\"fused_alone_us\":%.1f",
                     r->batched.usec / o->batch, r->fused.usec);
  if (rc == KB_OK && o->search) {
    rc = kb_buf_addf(out, ",\"p99_bound_ms\":%g,\"max_runners\":%d,\"max_capped\":%s,"
                          "\"steps\":[",
                     o->p99_ms, r->max_runners, r->max_capped ? "true" : "false");
    for (int i = 0; rc == KB_OK && i < r->n_steps; i++)
      rc = kb_buf_addf(out, "%s{\"runners\":%d,\"items_per_s\":%.1f,\"p99_ms\":%.3f}",
                       i ? "," : "", r->steps[i].runners, r->steps[i].items_per_s,
                       r->steps[i].p99_ms);
    if (rc == KB_OK)
      rc = kb_buf_adds(out, "]");
  }
  if (rc == KB_OK && o->kills)
    rc = kb_buf_addf(out, ",\"kills\":%d", r->kills);
  if (rc == KB_OK && o->fill)
    rc = kb_buf_addf(out, ",\"candidates\":%ld,\"used_memory_bytes\":%lld,"
                          "\"bytes_per_candidate\":%.0f",
                     r->fill.candidates, r->used_memory, r->bytes_per_candidate);
  if (rc == KB_OK)
    rc = kb_buf_adds(out, "}");
  return rc;
}
