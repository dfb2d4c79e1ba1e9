/* Many LLM requests in flight over libcurl's multi interface, with retries.
 *
 * A request is a JSON body POSTed to the endpoint. It is retried, up to `max_retries` times,
 * after HTTP 429, any 5xx, a timeout or a broken connection, and after a 200 whose body is not a
 * usable reply (truncated or garbage JSON): the delay doubles from `backoff_s` up to
 * `backoff_max_s`, with jitter (a random 50..100% of it), and is never shorter than the
 * server's Retry-After (seconds or an HTTP date; capped at 600 s). Other statuses (400, 401,
 * 403, 404, ...) fail at once. Tokens that replies report are summed over all attempts, and
 * attempts the API may have billed without saying how much (an answer without a readable usage,
 * a body cut short, a timeout or a broken connection after the request went out) are counted,
 * so the caller can charge every token the API billed.
 *
 * Single-threaded: the scheduler's loop calls kb__llm_client_poll() between its other work.
 */
#ifndef KB_SCHED_LLM_CLIENT_H
#define KB_SCHED_LLM_CLIENT_H

#include <stdint.h>

struct kb_error;
struct kb_llm_client; /* opaque */

struct kb_llm_client_opts {
  int api;               /* enum kb_llm_api */
  const char *endpoint;  /* full URL (borrowed; copied) */
  const char *key;       /* API key (borrowed; copied, wiped on free); "" sends no key */
  int concurrency;       /* transfers at once, >= 1 */
  double timeout_s;      /* per attempt, seconds */
  int max_retries;       /* retries after the first attempt */
  double backoff_s;      /* first retry delay, seconds */
  double backoff_max_s;  /* cap of the computed delay, seconds */
};

/* The outcome of one request, handed to the completion callback (borrowed: valid during the
 * call; the callback may steal `text` by setting it to NULL). */
struct kb_llm_done {
  void *user;           /* what kb__llm_client_submit was given */
  int code;             /* KB_OK, or why it failed: KB_ETIMEOUT, KB_EPARSE, KB_EIO */
  char *text;           /* the answer's text when code is KB_OK (owned by the client) */
  int64_t tokens_in;    /* prompt tokens reported, summed over attempts */
  int64_t tokens_out;   /* completion tokens reported, summed over attempts */
  int unreported;       /* attempts the API may have billed but reported no usable usage for:
                         * a 200 without one (llm_api.h), or no answer after the request went
                         * out (timeout, connection cut, answer too long); not 429, 5xx, 4xx,
                         * an "error" reply or a connection never made */
  int attempts;         /* attempts made */
  long http_status;     /* of the last attempt, 0 when none answered */
  char error[256];      /* for code != KB_OK: what the last attempt got */
};

typedef void (*kb_llm_done_fn)(struct kb_llm_done *done, void *arg);

/* Creates a client (new; kb__llm_client_free). Errors: KB_EINVAL (bad options), KB_ENOMEM,
 * KB_EINTERNAL (libcurl). */
int kb__llm_client_new(const struct kb_llm_client_opts *o, struct kb_llm_client **out,
                      struct kb_error *err);
/* Aborts what is in flight (no callbacks) and frees; NULL is fine. */
void kb__llm_client_free(struct kb_llm_client *c);
/* Queues a request with JSON `body` (borrowed; copied) and `user` (borrowed, handed back).
 * It starts as soon as fewer than `concurrency` transfers run. Errors: KB_ENOMEM. */
int kb__llm_client_submit(struct kb_llm_client *c, const char *body, void *user,
                         struct kb_error *err);
/* Drives transfers for up to `timeout_ms` (0: only what is ready now), calling `fn(done, arg)`
 * for each request that finished, successfully or not. Errors: KB_EINTERNAL (libcurl). */
int kb__llm_client_poll(struct kb_llm_client *c, int timeout_ms, kb_llm_done_fn fn, void *arg,
                       struct kb_error *err);
/* Requests queued, waiting for a retry or in flight. */
int kb__llm_client_pending(const struct kb_llm_client *c);

/* The delay before retry number `attempt` (1 = first retry): min(max, base * 2^(attempt-1))
 * scaled by `jitter` (0.5..1.0), then raised to `retry_after` (seconds, < 0 when none; capped at
 * 600). Exposed for tests. */
double kb__llm_retry_delay(int attempt, double base, double max, double jitter,
                          double retry_after);
/* Parses a Retry-After header value (delta-seconds or an HTTP date, relative to `now`, unix
 * seconds): seconds to wait, or -1 when unparseable. */
double kb__llm_parse_retry_after(const char *value, double now);

#endif
