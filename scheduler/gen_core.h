/* The generator framework of the scheduler: when a campaign's queue runs low and its budget
 * allows, ask the generators the campaign chose (generators section, kb/campaign.h) for new
 * candidates, weighted by their "weight"; store each new candidate in the catalog (lineage:
 * parents, generator) and enqueue it at tier 0.
 *
 * When: every call of kb__gen_tick() while the campaign is running and fewer than
 * `low_water` x (number of tasks) items are open (LLM requests in flight count as open: the
 * queue keeps about `low_water` items per task for the runners), and the GPU budget left can
 * pay for a candidate's first timed tier. Which task: round robin over the campaign's tasks,
 * skipping those that stopped (kb_task_pop.stopped: target or stagnation), those that reached `max_per_task` generation attempts (a tune proposal or an llm
 * request, whatever came of it: a new candidate, a duplicate or a failed generation; counted in
 * Redis, KB_KEY_GEN_COUNT of kb/keys.h, so a restart keeps the count) or whose GPU cap from the budget
 * split (kb_queue_set_task_cap) cannot pay for a new candidate's compile and smoke tiers. Which generator:
 * drawn by weight among those that can still propose for that task (tune: a knob set not
 * proposed yet; llm: tokens left and fewer than `concurrency` requests in flight).
 * A candidate whose id is already in the catalog is not enqueued again (ids are content
 * hashes: the same kernel proposed twice is evaluated once, and an item once evaluated at a
 * tier is never run again at that tier).
 *
 * The archive (gen_archive.h; generators.archive, or $KB_ARCHIVE when the section is absent):
 * a task's fitting archived kernels are proposed before any other generator is asked (they cost
 * no tokens and are known good elsewhere), each proposal an attempt; the llm generator gets
 * archive examples and archived crossover parents; kb__gen_finish adds each task's verified best
 * kernels to the archive when the campaign ends.
 */
#ifndef KB_SCHED_GEN_CORE_H
#define KB_SCHED_GEN_CORE_H

#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/queue.h"
#include "kb/result.h"
#include "population.h"

struct kb_error;
struct kb_tune;
struct kb_gen_llm;
struct kb_gen_archive;

struct kb_gen_task {
  char id[KB_ID_MAX];
  struct kb_task spec;   /* loaded on first use (owned) */
  char *reference;       /* reference source (owned) */
  int loaded;
};

struct kb_gen {
  struct kb_queue *q;              /* borrowed */
  const char *work_dir;            /* where task specs are materialized (borrowed) */
  struct kb_campaign camp;         /* parsed from the campaign's stored spec (owned) */
  struct kb_tune *tune;            /* NULL when off (owned) */
  struct kb_gen_llm *llm;          /* NULL when off (owned) */
  struct kb_gen_archive *archive;  /* NULL when off or its folder is missing (owned) */
  struct kb_gen_task *tasks;       /* campaign order (owned) */
  int n_tasks;
  int next_task;                   /* round robin */
  unsigned rng;
  char key_count[200];             /* hash: task -> generated candidates */
  long generated;                  /* candidates enqueued since start */
};

/* Sets up the generators of campaign `q` (borrowed; must outlive `g`) from its stored spec:
 * reads the llm key (llm_key.h rules), voids llm charges a killed predecessor left.
 * Errors: KB_EPARSE (stored spec), KB_ENOTFOUND / KB_EINVAL (the key), KB_ECONN, KB_ENOMEM. */
int kb__gen_init(struct kb_gen *g, struct kb_queue *q, const char *work_dir,
                struct kb_error *err);
/* Frees the contents of `g`; in-flight llm requests are abandoned and their reservations
 * voided. NULL and a zeroed struct are fine. */
void kb__gen_release(struct kb_gen *g);
/* Adds each task's verified best kernels in `pop` (borrowed) to the archive, when there is
 * one; called once the campaign is over. A task whose kernels cannot be written is logged
 * and skipped: the campaign's own results are not affected. Returns the entries written. */
int kb__gen_finish(struct kb_gen *g, const struct kb_population *pop);
/* 1 when any generator other than seed is on. */
int kb__gen_enabled(const struct kb_gen *g);
/* 1 while llm requests are in flight (the caller should come back soon). */
int kb__gen_busy(const struct kb_gen *g);

/* Feeds one result (borrowed, with its candidate) to the generators that learn from results. */
int kb__gen_observe(struct kb_gen *g, const struct kb_result *r, const struct kb_candidate *c,
                   struct kb_error *err);

/* Drives llm requests for up to `timeout_ms`, then asks for new candidates when the queue is
 * low (see above). `pop` (borrowed) ranks parents; `st` (borrowed) is a fresh status.
 * `*enqueued` (may be NULL) gets the number of new candidates. Errors: KB_ECONN, KB_EREDIS,
 * KB_ENOMEM; a campaign closed meanwhile is not an error. */
int kb__gen_tick(struct kb_gen *g, struct kb_population *pop, const struct kb_queue_status *st,
                int timeout_ms, int *enqueued, struct kb_error *err);

/* 1 while generators may still add work: requests in flight, or some task could get a new
 * candidate under the budget in `st` (borrowed). The campaign is not over while this holds. */
int kb__gen_active(struct kb_gen *g, struct kb_population *pop, const struct kb_queue_status *st);

#endif
