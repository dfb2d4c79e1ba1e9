/* Helpers shared by the queue fault tests: a campaign to test on, runner processes, and the
 * end-of-run audit that checks every invariant of the queue and ledger from Redis alone.
 *
 * Functions named kbq_assert_* use cmocka asserts: call them only from the test process, never
 * from a forked runner (a failed assert would unwind into the child's copy of the test runner).
 */
#ifndef KB_TEST_QUEUE_HELPERS_H
#define KB_TEST_QUEUE_HELPERS_H

#include <stdint.h>
#include <sys/types.h>

struct kb_redis;
struct kb_queue;

/* Connects to `addr` (borrowed) with a `retry_ms` reconnect budget; fails the test when it
 * cannot. Returns a new connection (kb_redis_free). */
struct kb_redis *kbq_connect(const char *addr, int retry_ms);

/* Registers campaign `cid` with a 3-tier ladder (compile 0 ms, smoke 10 ms, full 100 ms), a GPU
 * budget of `gpu_ms`, leases of `lease_ms` and `max_attempts`, moves it to running and opens it
 * into `q`. */
void kbq_make_campaign(struct kb_redis *r, const char *cid, long gpu_ms, long lease_ms,
                       int max_attempts, struct kb_queue *q);

/* The 64-hex candidate id number `i` into `out`. */
void kbq_cand_id(int i, char out[65]);

/* Enqueues `n` items over the 3 tiers (item i at tier i % 3, at the tier's cost), priority i. */
void kbq_enqueue_items(struct kb_queue *q, int n, int first_cand);

/* Milliseconds on the monotonic clock. */
int64_t kbq_now_ms(void);
void kbq_sleep_ms(long ms);

/* The seed of a run: $KB_TEST_SEED when set, else from the time and pid. Printed with `what`
 * so a failure can be replayed. */
unsigned kbq_seed(const char *what);

/* ---- Runner processes ---------------------------------------------------------------------- */

enum kbq_phase {
  KBQ_IDLE = 0,     /* connecting, sleeping, between items: holds no lease */
  KBQ_IN_CLAIM,     /* inside kb_queue_claim: a lease may or may not exist */
  KBQ_WORKING,      /* holds a lease it knows about: between claim and complete */
  KBQ_IN_COMPLETE,  /* inside kb_queue_complete (or complete_and_claim): it may or may not
                       have run (nor leased the next item) */
};

/* One runner slot in memory shared between the test and its runners (MAP_SHARED). Counters
 * accumulate over the generations of a slot (a killed runner's successor continues them). */
struct kbq_slot {
  volatile int phase;           /* enum kbq_phase, set by the runner */
  volatile pid_t pid;           /* current runner process, 0 when none */
  volatile long ok;             /* completes that posted (duplicate == 0) */
  volatile long dup;            /* completes answered duplicate == 1 */
  volatile long lease_lost;     /* completes refused with KB_ELEASE */
  volatile long charge_missing; /* completes refused with KB_ENOTFOUND (claim lost by redis) */
  volatile long claims;         /* claims that returned an item */
};

struct kbq_runner_cfg {
  const char *addr;   /* redis address (borrowed) */
  const char *cid;    /* campaign */
  int work_max_ms;    /* each evaluation sleeps 0..work_max_ms */
  int retry_ms;       /* reconnect budget of the runner's connection */
  int allow_missing;  /* KB_ENOTFOUND from complete is survivable (redis lost writes) */
  int fused;          /* 1: complete with kb_queue_complete_and_claim, which leases the next
                         item (a runner's path); 0: kb_queue_complete, then kb_queue_claim */
};

/* Forks a runner process on `slot`: it connects itself, then claims, "works" and completes until
 * the campaign has no open item, and exits 0; on an unexpected error it prints it and exits
 * non-zero. `seed` drives its random work times. Returns the pid (also in slot->pid). */
pid_t kbq_spawn_runner(const struct kbq_runner_cfg *cfg, struct kbq_slot *slot,
                       const char *name, unsigned seed);

/* Kills (SIGKILL) and reaps every runner this process spawned that is still alive: for a
 * teardown after a failed test, so that no runner outlives it. */
void kbq_kill_runners(void);
/* A cmocka group teardown: kbq_kill_runners(), then kbt_redis_group_teardown()
 * (redis_group.h). Returns 0. */
int kbq_group_teardown(void **state);

/* Shared memory for `n` slots, zeroed (munmap with kbq_free_slots). */
struct kbq_slot *kbq_alloc_slots(int n);
void kbq_free_slots(struct kbq_slot *s, int n);

/* ---- The audit ----------------------------------------------------------------------------- */

struct kbq_audit {
  int64_t done, dead;        /* from the items hash */
  int64_t posted, voided;    /* charges by final kind */
  int64_t spent, total;      /* gpu_ms */
  int64_t log_entries;       /* entries of the ledger:log stream */
  int64_t results;           /* entries of the results stream */
};

/* One ledger move of the audit stream in the per-move form of schemas/ledger-entry.schema.json
 * (strings cut to their fields' sizes). */
struct kbq_move {
  char eid[32];              /* the stream entry's id */
  char op[16];               /* fund, reserve, post, void, overrun */
  char currency[16];         /* gpu_ms, llm_tokens */
  char charge[160];          /* charge_id */
  char who[128];
  int64_t ts_ms;             /* Redis TIME, unix milliseconds */
  int64_t amount;
  int64_t available, held, spent, total; /* the balances right after this move */
  int from_moves;            /* 1: from a "moves" field (balances derived), 0: an "entry" */
};

/* Every move of campaign `cid`'s audit stream (kb:{cid}:ledger:log), in order: each "entry"
 * field (ledger-entry schema) as it is; each "moves" field (ledger-moves schema: a runner's
 * cycle, its moves and the balances after the last) expanded into its moves with the balances
 * after each, derived backward from the entry's, a settle as its post, overrun and void (what
 * complete_claim wrote as separate entries before). Fails the test on a field, op or JSON it
 * does not know, a stream entry without a move, or a "moves" entry whose balances break
 * available + held + spent == total. Returns a new array (free it), its length in `*n`. */
struct kbq_move *kbq_ledger_moves(struct kb_redis *r, const char *cid, size_t *n);

/* Checks, from Redis alone, that campaign `cid` with `n_items` items ended consistently:
 *  - status: open 0, done + dead == n_items, no lease left, nothing held, and
 *    available + held + spent == total;
 *  - items hash: n_items items, each "done" or "dead", counts agreeing with meta;
 *  - results stream: each item exactly once; a done item's result names the charge that was
 *    posted (runners write {"item","charge"}), a dead item's is an infra_error;
 *  - charges hash: every charge posted (P) or voided (V), none still held; per item exactly
 *    one P when done and none when dead; posted amounts sum to spent;
 *  - ledger:log: per charge exactly one reserve and at most one post, and reserve == post +
 *    void; the replay from scratch (fund, reserve, post, void) gives the ledger hash exactly,
 *    for both currencies, and every entry's balances satisfy available + held + spent == total;
 *  - taskbudget: no task holds anything; each task's spent equals its items' posts.
 * Fills `out` (may be NULL). */
void kbq_assert_final(struct kb_redis *r, const char *cid, int n_items, struct kbq_audit *out);

/* available + held + spent == total for gpu_ms, all non-negative. */
void kbq_assert_ledger_invariant(struct kb_queue *q);

#endif
