/* LLM requests over libcurl's multi interface, with retries (see llm_client.h). */
#include "llm_client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/clock.h"
#include "kb/error.h"
#include "kb/log.h"
#include "llm_api.h"

#define MAX_BODY (8u << 20)     /* bytes of one reply at most */
#define RETRY_AFTER_MAX 600.0   /* seconds */

enum req_state { REQ_WAITING, REQ_RUNNING };

struct req {
  struct req *next;
  void *user;
  char *body;              /* owned */
  enum req_state state;
  double start_at;         /* monotonic seconds: when a waiting request may start */
  CURL *easy;              /* while running */
  struct kb_buf reply;     /* body received */
  double retry_after;      /* seconds from the last answer's Retry-After, -1 when none */
  int attempts;
  int64_t tokens_in, tokens_out; /* reported, summed over attempts (capped) */
  int unreported;          /* attempts the API may have billed without a readable usage */
  long http_status;
  char error[256];
};

struct kb_llm_client {
  struct kb_llm_client_opts o;
  char *endpoint;           /* owned */
  char auth[1024];          /* header line with the key; wiped on free */
  CURLM *multi;
  struct curl_slist *headers;
  struct req *reqs;         /* every request not yet finished */
  int running;              /* requests in the multi handle */
  int n;                    /* requests in the list */
  unsigned rng;             /* jitter */
};

double kb__llm_retry_delay(int attempt, double base, double max, double jitter,
                          double retry_after) {
  double d = base;
  for (int i = 1; i < attempt && d < max; i++)
    d *= 2;
  if (d > max)
    d = max;
  d *= jitter;
  if (retry_after > RETRY_AFTER_MAX)
    retry_after = RETRY_AFTER_MAX;
  return retry_after > d ? retry_after : d;
}

double kb__llm_parse_retry_after(const char *value, double now) {
  while (*value == ' ' || *value == '\t')
    value++;
  char *end = NULL;
  double secs = strtod(value, &end);
  if (end != value) {
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
      end++;
    if (*end == '\0' && secs >= 0)
      return secs;
  }
  time_t t = curl_getdate(value, NULL);
  if (t < 0)
    return -1;
  double d = (double)t - now;
  return d > 0 ? d : 0;
}

static double jitter(struct kb_llm_client *c) {
  c->rng = c->rng * 1103515245u + 12345u;
  return 0.5 + 0.5 * (double)((c->rng >> 8) & 0xffff) / 65535.0;
}

int kb__llm_client_new(const struct kb_llm_client_opts *o, struct kb_llm_client **out,
                      struct kb_error *err) {
  *out = NULL;
  if (o->concurrency < 1 || o->timeout_s <= 0 || o->max_retries < 0 || o->backoff_s <= 0 ||
      o->endpoint == NULL || o->key == NULL)
    return kb_error_set(err, KB_EINVAL, "llm client: bad options");
  /* reference-counted by libcurl; undone in kb__llm_client_free */
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    return kb_error_set(err, KB_EINTERNAL, "llm client: curl_global_init failed");
  struct kb_llm_client *c = kb_calloc(1, sizeof *c);
  if (c == NULL) {
    curl_global_cleanup();
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  c->o = *o;
  c->rng = (unsigned)(kb_now_mono() * 1e6);
  c->endpoint = kb_strdup(o->endpoint);
  int rc = c->endpoint ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
  c->o.endpoint = c->endpoint;
  c->o.key = NULL;
  if (rc == KB_OK && o->key[0])
    rc = kb__llm_auth_header(o->api, o->key, c->auth, sizeof c->auth, err);
  if (rc == KB_OK) {
    c->multi = curl_multi_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (h && kb__llm_version_header(o->api))
      h = curl_slist_append(h, kb__llm_version_header(o->api));
    if (h && c->auth[0])
      h = curl_slist_append(h, c->auth);
    /* "Expect: 100-continue" would cost a round trip per large prompt */
    if (h)
      h = curl_slist_append(h, "Expect:");
    c->headers = h;
    if (c->multi == NULL || c->headers == NULL)
      rc = kb_error_set(err, KB_EINTERNAL, "llm client: libcurl init failed");
  }
  if (rc) {
    kb__llm_client_free(c);
    return rc;
  }
  *out = c;
  return KB_OK;
}

static void req_free(struct kb_llm_client *c, struct req *r) {
  if (r->easy) {
    curl_multi_remove_handle(c->multi, r->easy);
    curl_easy_cleanup(r->easy);
    c->running--;
  }
  kb_buf_release(&r->reply);
  kb_free(r->body);
  kb_free(r);
}

void kb__llm_client_free(struct kb_llm_client *c) {
  if (c == NULL)
    return;
  while (c->reqs) {
    struct req *r = c->reqs;
    c->reqs = r->next;
    req_free(c, r);
  }
  if (c->multi)
    curl_multi_cleanup(c->multi);
  if (c->headers) {
    /* the header list holds a copy of the key: wipe it before it goes back to the allocator */
    for (struct curl_slist *h = c->headers; h; h = h->next)
      memset(h->data, 0, strlen(h->data));
    curl_slist_free_all(c->headers);
  }
  memset(c->auth, 0, sizeof c->auth);
  kb_free(c->endpoint);
  kb_free(c);
  curl_global_cleanup();
}

int kb__llm_client_submit(struct kb_llm_client *c, const char *body, void *user,
                         struct kb_error *err) {
  struct req *r = kb_calloc(1, sizeof *r);
  if (r == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  r->body = kb_strdup(body);
  if (r->body == NULL) {
    kb_free(r);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  kb_buf_init(&r->reply);
  r->user = user;
  r->state = REQ_WAITING;
  r->start_at = 0;
  r->retry_after = -1;
  /* append, so requests start in submission order */
  struct req **tail = &c->reqs;
  while (*tail)
    tail = &(*tail)->next;
  *tail = r;
  c->n++;
  return KB_OK;
}

int kb__llm_client_pending(const struct kb_llm_client *c) { return c ? c->n : 0; }

static size_t on_body(char *data, size_t size, size_t n, void *arg) {
  struct req *r = arg;
  size_t len = size * n;
  if (r->reply.len + len > MAX_BODY || kb_buf_add(&r->reply, data, len) != KB_OK)
    return 0; /* makes curl fail the transfer: CURLE_WRITE_ERROR */
  return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg) {
  struct req *r = arg;
  size_t len = size * n;
  static const char name[] = "retry-after:";
  if (len > sizeof name - 1 && len < 200) {
    size_t i = 0;
    for (; i < sizeof name - 1; i++) {
      char ch = data[i];
      if (ch >= 'A' && ch <= 'Z')
        ch = (char)(ch + 32);
      if (ch != name[i])
        break;
    }
    if (i == sizeof name - 1) {
      char value[200];
      memcpy(value, data + i, len - i);
      value[len - i] = '\0';
      r->retry_after = kb__llm_parse_retry_after(value, kb_now_wall());
    }
  }
  return len;
}

static int start(struct kb_llm_client *c, struct req *r, struct kb_error *err) {
  CURL *e = curl_easy_init();
  if (e == NULL)
    return kb_error_set(err, KB_EINTERNAL, "llm client: curl_easy_init failed");
  kb_buf_reset(&r->reply);
  r->retry_after = -1;
  r->http_status = 0;
  curl_easy_setopt(e, CURLOPT_URL, c->endpoint);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->body));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(c->o.timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->o.timeout_s * 1000 < 10000
                                                             ? c->o.timeout_s * 1000
                                                             : 10000));
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_PRIVATE, r);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
    curl_easy_cleanup(e);
    return kb_error_set(err, KB_EINTERNAL, "llm client: curl_multi_add_handle failed");
  }
  r->easy = e;
  r->state = REQ_RUNNING;
  r->attempts++;
  c->running++;
  return KB_OK;
}

/* Unlinks `r` and reports it through `fn`. */
static void finish(struct kb_llm_client *c, struct req *r, int code, char *text,
                   kb_llm_done_fn fn, void *arg) {
  for (struct req **p = &c->reqs; *p; p = &(*p)->next)
    if (*p == r) {
      *p = r->next;
      break;
    }
  c->n--;
  struct kb_llm_done d = {.user = r->user, .code = code, .text = text,
                          .tokens_in = r->tokens_in, .tokens_out = r->tokens_out,
                          .unreported = r->unreported,
                          .attempts = r->attempts, .http_status = r->http_status};
  snprintf(d.error, sizeof d.error, "%s", code == KB_OK ? "" : r->error);
  fn(&d, arg);
  kb_free(d.text);
  req_free(c, r);
}

/* One attempt of `r` ended with `res`: finish it, or schedule a retry. */
static void attempt_done(struct kb_llm_client *c, struct req *r, CURLcode res,
                         kb_llm_done_fn fn, void *arg) {
  long sent = 0; /* bytes of the request that went out: 0 when it never reached the server */
  curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->http_status);
  curl_easy_getinfo(r->easy, CURLINFO_REQUEST_SIZE, &sent);
  curl_multi_remove_handle(c->multi, r->easy);
  curl_easy_cleanup(r->easy);
  r->easy = NULL;
  c->running--;
  int retry = 0, code = KB_OK;
  char *text = NULL;
  if (res != CURLE_OK) {
    code = res == CURLE_OPERATION_TIMEDOUT ? KB_ETIMEOUT : KB_EIO;
    snprintf(r->error, sizeof r->error, "%s", curl_easy_strerror(res));
    retry = 1;
    /* the server had the request and no refusal came back (a timeout, a connection cut
     * mid-answer, an answer too long): it may have generated and billed the answer */
    if (sent > 0 && (r->http_status == 0 || r->http_status == 200))
      r->unreported++;
  } else if (r->http_status == 429 || r->http_status >= 500) {
    code = KB_EIO;
    snprintf(r->error, sizeof r->error, "http %ld: %.160s", r->http_status, r->reply.data);
    retry = 1;
  } else if (r->http_status != 200) {
    code = KB_EIO;
    snprintf(r->error, sizeof r->error, "http %ld: %.160s", r->http_status, r->reply.data);
  } else {
    struct kb_llm_reply rep;
    struct kb_error perr = {0};
    code = kb__llm_parse_reply(c->o.api, r->reply.data, r->reply.len, &rep, &perr);
    r->tokens_in = kb__llm_tokens_add(r->tokens_in, rep.tokens_in);
    r->tokens_out = kb__llm_tokens_add(r->tokens_out, rep.tokens_out);
    r->unreported += rep.unreported;
    if (code == KB_OK) {
      text = rep.text;
      rep.text = NULL;
    } else {
      snprintf(r->error, sizeof r->error, "%.250s", perr.msg);
      retry = code == KB_EPARSE;
    }
    kb__llm_reply_release(&rep);
  }
  if (code != KB_OK && retry && r->attempts <= c->o.max_retries) {
    double d = kb__llm_retry_delay(r->attempts, c->o.backoff_s, c->o.backoff_max_s, jitter(c),
                                  r->retry_after);
    kb_warn("llm request attempt %d failed (%s); retrying in %.2f s", r->attempts, r->error, d);
    r->state = REQ_WAITING;
    r->start_at = kb_now_mono() + d;
    return;
  }
  finish(c, r, code, text, fn, arg);
}

int kb__llm_client_poll(struct kb_llm_client *c, int timeout_ms, kb_llm_done_fn fn, void *arg,
                       struct kb_error *err) {
  double until = kb_now_mono() + timeout_ms / 1000.0;
  for (;;) {
    double now = kb_now_mono();
    double next_start = -1;
    for (struct req *r = c->reqs; r && c->running < c->o.concurrency; r = r->next) {
      if (r->state != REQ_WAITING)
        continue;
      if (r->start_at <= now) {
        int rc = start(c, r, err);
        if (rc)
          return rc;
      }
    }
    int still = 0;
    if (curl_multi_perform(c->multi, &still) != CURLM_OK)
      return kb_error_set(err, KB_EINTERNAL, "llm client: curl_multi_perform failed");
    CURLMsg *m;
    int left = 0;
    while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
      if (m->msg != CURLMSG_DONE)
        continue;
      struct req *r = NULL;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
      attempt_done(c, r, m->data.result, fn, arg);
    }
    for (struct req *r = c->reqs; r; r = r->next)
      if (r->state == REQ_WAITING && (next_start < 0 || r->start_at < next_start))
        next_start = r->start_at;
    now = kb_now_mono();
    if (now >= until || c->n == 0)
      return KB_OK;
    double wait = until - now;
    if (next_start >= 0 && c->running < c->o.concurrency && next_start - now < wait)
      wait = next_start - now;
    if (wait < 0)
      wait = 0;
    if (c->running == 0 && wait > 0) {
      kb_sleep_ms((long)(wait * 1000) + 1);
      continue;
    }
    if (curl_multi_poll(c->multi, NULL, 0, (int)(wait * 1000) + 1, NULL) != CURLM_OK)
      return kb_error_set(err, KB_EINTERNAL, "llm client: curl_multi_poll failed");
  }
}
