/* Two-phase ledger charges (see ledger.h). */
#include "ledger.h"

#include <stdio.h>
#include <string.h>

#include "kb/error.h"
#include "kb/keys.h"
#include "kb/log.h"
#include "kb/redis.h"

const char *kb__currency_name(int currency) {
  return currency == KB_LLM_TOKENS ? "llm_tokens" : "gpu_ms";
}

static int charge(struct kb_queue *q, const char *op, int currency, const char *charge_id,
                  int64_t amount, const char *who, int *dup, struct kb_error *err) {
  if (currency != KB_GPU_MS && currency != KB_LLM_TOKENS)
    return kb_error_set(err, KB_EINVAL, "unknown currency %d", currency);
  char keys[4][200];
  const char *kp[4] = {keys[0], keys[1], keys[2], keys[3]};
  kb_queue_key(q, keys[0], sizeof keys[0], KB_KEY_LEDGER);
  kb_queue_key(q, keys[1], sizeof keys[1], KB_KEY_LEDGER_LOG);
  /* GPU charges share the hash of claim/complete; other currencies have their own. */
  if (currency == KB_GPU_MS)
    kb_queue_key(q, keys[2], sizeof keys[2], KB_KEY_CHARGES);
  else
    kb_queue_key(q, keys[2], sizeof keys[2], KB_KEY_CHARGES_LLM);
  kb_queue_key(q, keys[3], sizeof keys[3], KB_KEY_META);
  char amount_s[32];
  snprintf(amount_s, sizeof amount_s, "%lld", (long long)amount);
  const char *args[] = {op, kb__currency_name(currency), charge_id, amount_s, who};
  redisReply *rep = NULL;
  int rc = kb_redis_script(q->redis, "charge", 4, kp, 5, args, NULL, &rep, err);
  if (rc)
    return rc;
  if (dup)
    *dup = rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
           rep->element[0]->type == REDIS_REPLY_STRING && strcmp(rep->element[0]->str, "dup") == 0;
  /* {"ok", settled, overrun}: a post beyond its reservation was charged whole */
  if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
      rep->element[2]->type == REDIS_REPLY_INTEGER && rep->element[2]->integer > 0)
    kb_warn("charge %s: %lld %s posted, %lld beyond its reservation: the overrun was charged "
            "(ledger:log \"overrun\")", charge_id, (long long)amount,
            kb__currency_name(currency), (long long)rep->element[2]->integer);
  freeReplyObject(rep);
  return KB_OK;
}

int kb__ledger_reserve(struct kb_queue *q, int currency, const char *charge_id, int64_t amount,
                      const char *who, int *dup, struct kb_error *err) {
  return charge(q, "reserve", currency, charge_id, amount, who, dup, err);
}

int kb__ledger_post(struct kb_queue *q, int currency, const char *charge_id, int64_t actual,
                   const char *who, int *dup, struct kb_error *err) {
  return charge(q, "post", currency, charge_id, actual, who, dup, err);
}

int kb__ledger_void(struct kb_queue *q, int currency, const char *charge_id, const char *who,
                   int *dup, struct kb_error *err) {
  return charge(q, "void", currency, charge_id, 0, who, dup, err);
}
