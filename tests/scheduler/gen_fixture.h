/* Helpers for the generator tests: a registered campaign in a throwaway Redis, candidates in its
 * catalog, and results fed to a population. cmocka asserts: call from the test process only. */
#ifndef KB_TEST_GEN_FIXTURE_H
#define KB_TEST_GEN_FIXTURE_H

#include <stdint.h>

#include "kb/candidate.h"
#include "kb/queue.h"
#include "population.h"

struct kb_redis;

/* Connects to `addr` (borrowed); fails the test when it cannot. New connection. */
struct kb_redis *kbg_connect(const char *addr);
/* Registers campaign `cid` (3 tiers: compile 0 ms, smoke 10 ms, full 100 ms; `llm_tokens`),
 * with `spec` (borrowed) as its stored campaign text, moves it to running, opens it into `q`. */
void kbg_campaign(struct kb_redis *r, const char *cid, const char *spec, int64_t llm_tokens,
                  struct kb_queue *q);
/* Makes candidate `name` of `task` with `source` (borrowed), stores it in the catalog, and
 * returns it in `c` (caller releases). */
void kbg_candidate(struct kb_queue *q, const char *task, const char *name, const char *generator,
                   const char *source, const char *knobs, struct kb_candidate *c);
/* Feeds an ok result of `c` at `tier` with median `median_us` (0: untimed) to `pop`. */
void kbg_result(struct kb_population *pop, const struct kb_candidate *c, int tier,
                double median_us, int status);

#endif
