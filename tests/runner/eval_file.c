/* See eval_file.h. */
#include "eval_file.h"

#include <string.h>

#include "kb/buf.h"
#include "kb/candidate.h"
#include "kb/clock.h"

int kb_test_eval_open(const char *task_dir, const char *backend, const char *cache,
                      struct kb_task *task, struct kb_campaign *ladder,
                      struct kb_evaluator **ev, double *start_s, struct kb_error *err) {
  if (kb_task_load(task_dir, task, err) != KB_OK)
    return err->code;
  memset(ladder, 0, sizeof *ladder);
  kb_campaign_default_ladder(ladder);
  struct kb_evaluator_opts o = {.kind = kb_backend_from_name(backend), .cache_dir = cache};
  double t0 = kb_now_mono();
  if (kb__evaluator_new(&o, ev, err) != KB_OK) {
    kb_task_release(task);
    return err->code;
  }
  if (start_s != NULL)
    *start_s = kb_now_mono() - t0;
  return KB_OK;
}

int kb_test_eval_file(struct kb_evaluator *ev, const struct kb_task *task, const char *name,
                      const char *path, const char *flags, const struct kb_campaign *ladder,
                      int tier, struct kb_result *r, double *wall, struct kb_error *err) {
  kb_result_init(r);
  *wall = 0;
  struct kb_buf src;
  kb_buf_init(&src);
  if (kb_buf_read_file(&src, path, err) != KB_OK) {
    kb_buf_release(&src);
    return 1;
  }
  struct kb_candidate c;
  int rc = kb_candidate_init(&c, task->id, name, "seed", src.data, "", flags, err);
  kb_buf_release(&src);
  if (rc == KB_OK && kb_cand_format_of_path(path) != KB_FORMAT_NATIVE &&
      (rc = kb_candidate_set_format(&c, kb_cand_format_of_path(path), err)) != KB_OK)
    kb_candidate_release(&c);
  if (rc)
    return 1;
  int eval_flags = tier == ladder->n_tiers - 1 ? KB_EVAL_FULL : 0;
  double t0 = kb_now_mono();
  rc = kb__evaluator_evaluate(ev, task, &c, &ladder->tiers[tier], tier, eval_flags, r, err);
  *wall = kb_now_mono() - t0;
  kb_candidate_release(&c);
  return rc ? 2 : 0;
}
