/* The host backend (see host_backend.h): the generic backend of backend.h with the host
 * compiler and a host sandbox. */
#include "host_backend.h"

#include "evaluator.h"
#include "kb/alloc.h"
#include "kb/error.h"

struct kb_host_backend {
  struct kb_evaluator *b;
};

int kb_host_backend_new(const char *cache_dir, const char *cc, struct kb_host_backend **out,
                        struct kb_error *err) {
  *out = NULL;
  struct kb_host_backend *h = kb_calloc(1, sizeof *h);
  if (h == NULL)
    return kb_error_set(err, KB_ENOMEM, "cannot create the host backend: out of memory");
  struct kb_evaluator_opts o = {.kind = KB_BACKEND_HOST, .cache_dir = cache_dir, .compiler = cc};
  int rc = kb__evaluator_new(&o, &h->b, err);
  if (rc) {
    kb_free(h);
    return rc;
  }
  *out = h;
  return KB_OK;
}

void kb_host_backend_free(struct kb_host_backend *h) {
  if (h == NULL)
    return;
  kb__evaluator_free(h->b);
  kb_free(h);
}

void kb_host_backend_set_compile_timeout(struct kb_host_backend *h, double seconds) {
  kb__evaluator_set_compile_timeout(h->b, seconds);
}

void kb_host_backend_set_stop(struct kb_host_backend *h, volatile sig_atomic_t *stop) {
  kb__evaluator_set_stop(h->b, stop);
}

const char *kb_host_backend_device(const struct kb_host_backend *h) {
  return kb__evaluator_device(h->b);
}

struct kb_evaluator *kb_host_backend_generic(struct kb_host_backend *h) { return h->b; }

int kb_host_backend_evaluate(struct kb_host_backend *h, const struct kb_task *task,
                             const struct kb_candidate *c, const struct kb_tier *tier,
                             int tier_index, struct kb_result *r, struct kb_error *err) {
  return kb__evaluator_evaluate(h->b, task, c, tier, tier_index, 0, r, err);
}
