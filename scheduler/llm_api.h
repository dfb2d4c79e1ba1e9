/* The two wire formats the llm generator speaks: OpenAI-compatible Chat Completions
 * (POST .../chat/completions) and Anthropic Messages (POST .../v1/messages). This module only
 * builds request bodies and headers and reads replies; llm_client.c moves the bytes.
 */
#ifndef KB_SCHED_LLM_API_H
#define KB_SCHED_LLM_API_H

#include <stddef.h>
#include <stdint.h>

struct kb_error;

/* The most tokens one count (prompt or completion) of a request is charged: a reported count
 * above it (no request comes near) is taken as it, so sums of counts never overflow and the
 * ledger's Lua numbers stay exact. */
#define KB_LLM_TOKENS_MAX (INT64_C(1) << 40)

/* What one reply said. */
struct kb_llm_reply {
  char *text;          /* the assistant's text, all text parts joined (owned; NULL if none) */
  int64_t tokens_in;   /* prompt tokens the API reports (usage), 0 when absent */
  int64_t tokens_out;  /* completion tokens the API reports, 0 when absent */
  int truncated;       /* 1 when the API says it stopped at max_tokens */
  int unreported;      /* 1 when the reply is an answer (not an "error" object) without a
                        * usable usage: none, a count missing, not a whole number or below 0,
                        * no prompt token, or a body that is not JSON; the API billed it, by
                        * an amount the scheduler cannot know */
};

/* a + b for token counts (each in 0..KB_LLM_TOKENS_MAX), capped at KB_LLM_TOKENS_MAX. */
int64_t kb__llm_tokens_add(int64_t a, int64_t b);

/* Builds the JSON body of one request for `api` (enum kb_llm_api) into `*out` (new; kb_free).
 * `system` and `user` are the two prompt parts (borrowed, UTF-8). Errors: KB_EINVAL (text not
 * UTF-8), KB_ENOMEM. */
int kb__llm_request_body(int api, const char *model, const char *system, const char *user,
                        int max_tokens, double temperature, char **out, struct kb_error *err);

/* Writes the header line carrying `key` (borrowed) into `out`: "Authorization: Bearer KEY" for
 * OpenAI, "x-api-key: KEY" for Anthropic. Returns KB_OK or KB_EINVAL (does not fit, or the key
 * holds a control character). Never log what it writes. */
int kb__llm_auth_header(int api, const char *key, char *out, size_t size, struct kb_error *err);

/* Extra fixed header the API needs ("anthropic-version: 2023-06-01"), or NULL. Static. */
const char *kb__llm_version_header(int api);

/* Parses a 200 reply body (`len` bytes, borrowed) into `r` (caller-owned, zeroed first). Usage
 * is read even when the rest is unusable, so tokens are charged as used; a usage that cannot be
 * read sets `r->unreported` (see there) and leaves both counts 0. Errors: KB_EPARSE (not JSON,
 * e.g. truncated; an "error" object; no text), KB_ENOMEM. On error `r->text` is NULL but the
 * token counts or `unreported` may be set. */
int kb__llm_parse_reply(int api, const char *body, size_t len, struct kb_llm_reply *r,
                       struct kb_error *err);
/* Frees the contents of `r`; NULL is fine. */
void kb__llm_reply_release(struct kb_llm_reply *r);

#endif
