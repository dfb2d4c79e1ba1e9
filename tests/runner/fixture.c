/* The host-backend tests' shared fixture (see fixture.h). */
#include "fixture.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "evaluator.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/candidate.h"
#include "kb/error.h"

int fixture_setup(struct runner_fixture *fx, const char *cache_template) {
  struct kb_error err = {0};
  memset(fx, 0, sizeof *fx);
  setenv("KB_INCLUDE_DIR", KB_SOURCE_DIR "/common/include", 1);
  int n = snprintf(fx->cache, sizeof fx->cache, "%s", cache_template);
  if (n < 0 || (size_t)n >= sizeof fx->cache || mkdtemp(fx->cache) == NULL) {
    fprintf(stderr, "fixture: cannot create the cache folder from \"%s\"\n", cache_template);
    fx->cache[0] = '\0';
    return -1;
  }
  if (kb_host_backend_new(fx->cache, NULL, &fx->backend, &err) != KB_OK) {
    fprintf(stderr, "fixture: backend: %s\n", err.msg);
    return -1;
  }
  if (kb_task_load(KB_SOURCE_DIR "/tasks/host/sum", &fx->sum, &err) != KB_OK ||
      kb_task_load(KB_SOURCE_DIR "/tasks/host/matmul", &fx->matmul, &err) != KB_OK ||
      kb_task_load(KB_SOURCE_DIR "/tasks/host/row_sum", &fx->row_sum, &err) != KB_OK) {
    fprintf(stderr, "fixture: task: %s\n", err.msg);
    return -1;
  }
  kb_campaign_default_ladder(&fx->ladder);
  return 0;
}

void fixture_teardown(struct runner_fixture *fx) {
  kb_host_backend_free(fx->backend);
  fx->backend = NULL;
  kb_task_release(&fx->sum);
  kb_task_release(&fx->matmul);
  kb_task_release(&fx->row_sum);
  if (fx->cache[0] != '\0')
    kb_remove_tree(fx->cache, NULL);
}

int fixture_eval(struct runner_fixture *fx, const struct kb_task *task, const char *source,
                 const char *cflags, const struct kb_tier *tier, int index, int eval_flags,
                 struct kb_result *r, struct kb_error *err) {
  struct kb_candidate c;
  if (kb_candidate_init(&c, task->id, "test", "seed", source, "", cflags, err) != KB_OK)
    fail_msg("candidate: %s", err->msg);
  kb_result_init(r);
  int rc = kb__evaluator_evaluate(kb_host_backend_generic(fx->backend), task, &c, tier, index,
                                 eval_flags, r, err);
  kb_candidate_release(&c);
  return rc;
}

void fixture_eval_file(struct runner_fixture *fx, const struct kb_task *task, const char *path,
                       const char *cflags, int index, struct kb_result *r) {
  struct kb_error err = {0};
  char *source = tu_slurp(path);
  int rc = fixture_eval(fx, task, source, cflags, &fx->ladder.tiers[index], index, 0, r, &err);
  kb_free(source);
  if (rc != KB_OK)
    fail_msg("evaluate %s: %s", path, err.msg);
}

void fixture_expect(const struct kb_result *r, int status, const char *in_reason) {
  if (r->status != status)
    fail_msg("status %s, expected %s; reason: %s", kb_status_name(r->status),
             kb_status_name(status), r->reason);
  if (in_reason != NULL && strstr(r->reason, in_reason) == NULL)
    fail_msg("reason \"%s\" does not mention \"%s\"", r->reason, in_reason);
  if (r->status != KB_STATUS_OK)
    print_message("%s: %s\n", kb_status_name(r->status), r->reason);
}
