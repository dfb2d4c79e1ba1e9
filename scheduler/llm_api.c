/* Request bodies and reply parsing for the two LLM APIs (see llm_api.h). */
#include "llm_api.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/campaign.h"
#include "kb/error.h"
#include "kb/jsonfile.h"

int kb__llm_request_body(int api, const char *model, const char *system, const char *user,
                        int max_tokens, double temperature, char **out, struct kb_error *err) {
  *out = NULL;
  if (!kb_json_utf8_valid(model, strlen(model)) || !kb_json_utf8_valid(system, strlen(system)) ||
      !kb_json_utf8_valid(user, strlen(user)))
    return kb_error_set(err, KB_EINVAL, "llm request: prompt or model is not utf-8");
  json_t *o = NULL;
  if (api == KB_LLM_ANTHROPIC)
    o = json_pack("{s:s, s:i, s:f, s:s, s:[{s:s, s:s}]}", "model", model, "max_tokens",
                  max_tokens, "temperature", temperature, "system", system, "messages", "role",
                  "user", "content", user);
  else
    o = json_pack("{s:s, s:i, s:f, s:[{s:s, s:s}, {s:s, s:s}]}", "model", model, "max_tokens",
                  max_tokens, "temperature", temperature, "messages", "role", "system",
                  "content", system, "role", "user", "content", user);
  if (o == NULL)
    return kb_error_set(err, KB_ENOMEM, "llm request: out of memory");
  int rc = kb_json_dump_compact(o, out);
  json_decref(o);
  return rc ? kb_error_set(err, rc, "llm request: out of memory") : KB_OK;
}

int kb__llm_auth_header(int api, const char *key, char *out, size_t size, struct kb_error *err) {
  for (const char *p = key; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return kb_error_set(err, KB_EINVAL, "llm api key holds a control character");
  int n = api == KB_LLM_ANTHROPIC ? snprintf(out, size, "x-api-key: %s", key)
                                  : snprintf(out, size, "Authorization: Bearer %s", key);
  if (n < 0 || (size_t)n >= size)
    return kb_error_set(err, KB_EINVAL, "llm api key too long");
  return KB_OK;
}

const char *kb__llm_version_header(int api) {
  return api == KB_LLM_ANTHROPIC ? "anthropic-version: 2023-06-01" : NULL;
}

void kb__llm_reply_release(struct kb_llm_reply *r) {
  if (r == NULL)
    return;
  kb_free(r->text);
  memset(r, 0, sizeof *r);
}

int64_t kb__llm_tokens_add(int64_t a, int64_t b) {
  return a + b > KB_LLM_TOKENS_MAX ? KB_LLM_TOKENS_MAX : a + b;
}

/* Count `key` of `usage` into `*out` (capped at KB_LLM_TOKENS_MAX); 0 when it is not a whole
 * number of at least `min`. */
static int usage_count(json_t *usage, const char *key, int64_t min, int64_t *out) {
  json_t *v = json_object_get(usage, key);
  if (!json_is_integer(v) || json_integer_value(v) < min)
    return 0;
  json_int_t n = json_integer_value(v);
  *out = n > KB_LLM_TOKENS_MAX ? KB_LLM_TOKENS_MAX : (int64_t)n;
  return 1;
}

/* Reads `usage` into `r`: both counts of an answer, or none and `unreported` when either is
 * missing or unusable (a prompt costs at least one token); an "error" reply is charged
 * whichever counts it carries, and nothing else. */
static void read_usage(int api, json_t *usage, int is_error, struct kb_llm_reply *r) {
  int64_t in = 0, out = 0;
  int in_ok = json_is_object(usage) &&
              usage_count(usage, api == KB_LLM_ANTHROPIC ? "input_tokens" : "prompt_tokens", 1,
                          &in);
  int out_ok = json_is_object(usage) &&
               usage_count(usage, api == KB_LLM_ANTHROPIC ? "output_tokens"
                                                          : "completion_tokens", 0, &out);
  if (is_error || (in_ok && out_ok)) {
    r->tokens_in = in;
    r->tokens_out = out;
  } else {
    r->unreported = 1;
  }
}

/* Appends the text parts of `content` (a string, or an array of {"type":"text","text":...}). */
static int add_text(struct kb_buf *b, json_t *content, int *found) {
  if (json_is_string(content)) {
    *found = 1;
    return kb_buf_add(b, json_string_value(content), json_string_length(content));
  }
  size_t i;
  json_t *part;
  json_array_foreach(content, i, part) {
    json_t *type = json_object_get(part, "type");
    json_t *text = json_object_get(part, "text");
    if (json_is_string(text) && (type == NULL || strcmp(json_string_value(type), "text") == 0)) {
      *found = 1;
      int rc = kb_buf_add(b, json_string_value(text), json_string_length(text));
      if (rc)
        return rc;
    }
  }
  return KB_OK;
}

int kb__llm_parse_reply(int api, const char *body, size_t len, struct kb_llm_reply *r,
                       struct kb_error *err) {
  memset(r, 0, sizeof *r);
  json_error_t jerr;
  json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
  if (root == NULL) {
    r->unreported = 1; /* an answer cut short or garbled: billed all the same */
    return kb_error_set(err, KB_EPARSE, "llm reply is not json (%d bytes): %s at %d:%d",
                        (int)len, jerr.text, jerr.line, jerr.column);
  }
  int rc = KB_OK;
  struct kb_buf b;
  kb_buf_init(&b);
  json_t *usage = json_object_get(root, "usage");
  json_t *error = json_object_get(root, "error");
  int found = 0;
  if (!json_is_object(root)) {
    r->unreported = 1;
    rc = kb_error_set(err, KB_EPARSE, "llm reply is not a json object");
    goto out;
  }
  read_usage(api, usage, error != NULL && !json_is_null(error), r);
  if (error != NULL && !json_is_null(error)) {
    json_t *msg = json_object_get(error, "message");
    rc = kb_error_set(err, KB_EPARSE, "llm reply is an error: %.200s",
                      json_is_string(msg) ? json_string_value(msg) : "(no message)");
    goto out;
  }
  const char *stop = NULL;
  if (api == KB_LLM_ANTHROPIC) {
    rc = add_text(&b, json_object_get(root, "content"), &found);
    stop = json_string_value(json_object_get(root, "stop_reason"));
    r->truncated = stop && strcmp(stop, "max_tokens") == 0;
  } else {
    json_t *choice = json_array_get(json_object_get(root, "choices"), 0);
    json_t *msg = json_object_get(choice, "message");
    rc = add_text(&b, json_object_get(msg, "content"), &found);
    stop = json_string_value(json_object_get(choice, "finish_reason"));
    r->truncated = stop && strcmp(stop, "length") == 0;
  }
  if (rc) {
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    goto out;
  }
  if (!found) {
    rc = kb_error_set(err, KB_EPARSE, "llm reply holds no text (%s format)",
                      api == KB_LLM_ANTHROPIC ? "anthropic" : "openai");
    goto out;
  }
  r->text = kb_buf_detach(&b);
  if (r->text == NULL)
    rc = kb_error_set(err, KB_ENOMEM, "out of memory");
out:
  kb_buf_release(&b);
  json_decref(root);
  return rc;
}
