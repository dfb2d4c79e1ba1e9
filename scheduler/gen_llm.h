/* The llm generator: asks a model for kernels and turns its answers into candidates.
 *
 * Each request has a kind (llm_prompt.h), chosen per task in this order:
 *   repair     a candidate this generator made failed (compile_error, wrong_output, crash,
 *              timeout, rejected) and was not repaired yet: its source and compile log or reason;
 *   translate  the task has no llm candidate yet, or no timed member: from the reference source;
 *   crossover  one request in three when two members passed a timed tier: the two best;
 *   mutate     otherwise: one of the three best timed members, with its profile's diagnosis.
 * Before a request is sent, its tokens are reserved on the ledger's llm_tokens currency
 * (prompt bytes / 3 + max_tokens, under the charge id "llm:<task>:<n>"); when it ends, what the
 * API reported (prompt + completion tokens, summed over retries) is posted, or the reservation
 * is voided when nothing was reported. An answer without a code block that defines kb_forward
 * is a failed generation: logged, tokens still charged.
 *
 * Formats (kb_cand_format): a translate request asks for the campaign's llm "format" (native:
 * a kernel of the ABI; kernelbench: a ModelNew Python file, KernelBench's conventions,
 * llm_prompt.h); mutate, crossover and repair answer in their parents' format (two parents of
 * different formats are not crossed: parent A is mutated). A kernelbench answer must hold a
 * python block defining ModelNew (llm_extract.h), else it is a failed generation like the
 * above; its candidate has format kernelbench. Archive examples go in native prompts only. Open charges are listed in
 * kb:{cid}:gen:llm:open (KB_KEY_GEN_LLM_OPEN, kb/keys.h), so a restarted scheduler voids
 * those its predecessor left.
 *
 * Audit: every prompt and answer goes, zstd-compressed, to the stream kb:{cid}:llm:<task>
 * (KB_KEY_LLM_AUDIT_FMT; fields: kind, charge, status, attempts, tokens_in, tokens_out, candidate, parents, error,
 * prompt, response). Not yet in the task's HDF5 file (see docs/generators.md).
 */
#ifndef KB_SCHED_GEN_LLM_H
#define KB_SCHED_GEN_LLM_H

#include "kb/campaign.h"
#include "kb/candidate.h"
#include "kb/result.h"
#include "population.h"

struct kb_error;
struct kb_queue;
struct kb_gen_llm; /* opaque */

/* Creates the generator for campaign `q` (borrowed; must outlive it) with settings `cfg`
 * (borrowed; must outlive it) and API key `key` (borrowed; copied). Voids the llm charges an
 * earlier scheduler left open. Returns it in `*out` (new; kb__gen_llm_free). Errors: KB_EINVAL,
 * KB_ECONN, KB_EREDIS, KB_ENOMEM. */
int kb__gen_llm_new(struct kb_queue *q, const struct kb_gen_llm_cfg *cfg, const char *key,
                   unsigned seed, struct kb_gen_llm **out, struct kb_error *err);
/* Aborts requests in flight (their reservations are voided when Redis answers) and frees;
 * NULL is fine. */
void kb__gen_llm_free(struct kb_gen_llm *l);

/* Records what a result says about its candidate (`r` and `c` borrowed): failures to repair,
 * compile metrics for diagnoses. */
int kb__gen_llm_observe(struct kb_gen_llm *l, const struct kb_result *r,
                       const struct kb_candidate *c);

/* Starts one request for `task` (borrowed) whose reference source is `reference` (borrowed),
 * choosing the kind from `pop` (borrowed). Returns KB_OK when submitted, KB_EBUDGET when the
 * ledger cannot hold the request's tokens. Errors: KB_ECONN, KB_EREDIS, KB_ENOMEM. */
int kb__gen_llm_request(struct kb_gen_llm *l, const struct kb_task *task, const char *reference,
                       const struct kb_task_pop *pop, struct kb_error *err);

/* Called with each candidate an answer produced (borrowed during the call). Its return code
 * stops kb__gen_llm_poll when not KB_OK. */
typedef int (*kb_gen_emit_fn)(const struct kb_candidate *c, void *arg, struct kb_error *err);

/* Drives requests for up to `timeout_ms`; settles each finished request's tokens, writes its
 * audit entry, and emits its candidate. Errors: from settling, auditing or `emit`. */
int kb__gen_llm_poll(struct kb_gen_llm *l, int timeout_ms, kb_gen_emit_fn emit, void *arg,
                    struct kb_error *err);
/* Requests submitted and not finished. */
int kb__gen_llm_pending(const struct kb_gen_llm *l);
/* Requests submitted and not finished for `task`. */
int kb__gen_llm_pending_task(const struct kb_gen_llm *l, const char *task);
/* 1 once a reservation was refused for lack of tokens (the budget only shrinks). */
int kb__gen_llm_out_of_tokens(const struct kb_gen_llm *l);

/* Where the llm generator finds archived kernels (gen_archive.h); both hooks optional.
 * examples: prompt examples for `task` into `*out` (new; NULL when none).
 * parent: a crossover parent for the task of `pop` from outside it (`*found` = 1 with `c`
 *   filled, caller-owned, and a one-line `summary`). */
struct kb_gen_llm_archive {
  int (*examples)(void *arg, const struct kb_task *task, char **out, struct kb_error *err);
  int (*parent)(void *arg, const struct kb_task_pop *pop, struct kb_candidate *c, char *summary,
                size_t size, int *found, struct kb_error *err);
  void *arg;
};
/* Sets the hooks (`h` borrowed; copied). With a parent hook, one mutate request in three for a
 * task with a timed member becomes a crossover of its best member and an archived kernel it
 * has not evaluated. */
void kb__gen_llm_set_archive(struct kb_gen_llm *l, const struct kb_gen_llm_archive *h);

/* Counters since start, for logs and tests. */
struct kb__gen_llm_stats {
  long requests, answered, no_code, failed, candidates;
  int64_t tokens;        /* posted */
};
void kb__gen_llm_stats(const struct kb_gen_llm *l, struct kb__gen_llm_stats *out);

#endif
