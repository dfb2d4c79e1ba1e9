/* Generator test helpers (see gen_fixture.h). */
#include "gen_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "kb/catalog.h"
#include "kb/error.h"
#include "kb/redis.h"
#include "kb/result.h"
#include "small_ladder.h"

struct kb_redis *kbg_connect(const char *addr) {
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  struct kb_redis_opts ro = {.addr = addr, .retry_ms = 5000};
  if (kb_redis_connect(&ro, &r, &err))
    fail_msg("connect: %s", err.msg);
  return r;
}

void kbg_campaign(struct kb_redis *r, const char *cid, const char *spec, int64_t llm_tokens,
                  struct kb_queue *q) {
  struct kb_tier tiers[KBT_SMALL_LADDER_TIERS];
  kbt_small_ladder(tiers);
  struct kb_error err = {0};
  struct kb_campaign_reg reg = {.cid = cid, .spec_json = spec, .tiers = tiers, .n_tiers = 3,
                                .max_attempts = 3, .lease_ms = 60000,
                                .backend = KB_BACKEND_HOST, .gpu_ms = 1000000,
                                .llm_tokens = llm_tokens};
  if (kb_queue_register(r, &reg, "test", NULL, &err))
    fail_msg("register %s: %s", cid, err.msg);
  if (kb_queue_open(q, r, cid, &err))
    fail_msg("open %s: %s", cid, err.msg);
  if (kb_queue_set_state(q, "submitting", "running", "test", "test", &err))
    fail_msg("set_state %s: %s", cid, err.msg);
}

void kbg_candidate(struct kb_queue *q, const char *task, const char *name, const char *generator,
                   const char *source, const char *knobs, struct kb_candidate *c) {
  struct kb_error err = {0};
  if (kb_candidate_init(c, task, name, generator, source, knobs, "", &err))
    fail_msg("candidate %s: %s", name, err.msg);
  if (kb_catalog_put_candidate(q, c, &err))
    fail_msg("put %s: %s", name, err.msg);
}

void kbg_result(struct kb_population *pop, const struct kb_candidate *c, int tier,
                double median_us, int status) {
  struct kb_result r;
  kb_result_init(&r);
  snprintf(r.task, sizeof r.task, "%s", c->task);
  snprintf(r.candidate, sizeof r.candidate, "%s", c->id);
  r.tier = tier;
  r.attempt = 1;
  r.status = status;
  if (median_us > 0) {
    r.timing.samples = 5;
    r.timing.median_us = median_us;
    r.timing.noise = 0.01;
  }
  if (kb__population_add(pop, &r, c->name, c->generator) == NULL)
    fail_msg("population: out of memory");
}
