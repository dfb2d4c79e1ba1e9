/* Shared archive test fixtures (see archive_fixture.h). */
#include "archive_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb/candidate.h"
#include "kb/error.h"

#define TASK_JSON \
    "{\"schema\": \"kernelbrain.task/1\", \"id\": \"%s\", \"name\": \"t\", \"category\": " \
    "\"%s\", \"backend\": \"host\", \"oracle\": {\"kind\": \"c\", \"source\": \"o.c\"}, " \
    "\"reference\": \"o.c\", \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": " \
    "[%d]}], \"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [1]}], " \
    "\"tolerance\": {\"atol\": 1, \"rtol\": 0}, \"input_sets\": [{\"seed\": 1, " \
    "\"distribution\": \"uniform\", \"low\": 0, \"high\": 1}], \"seeds\": [{\"name\": " \
    "\"naive\", \"source\": \"o.c\"}], \"baseline\": \"naive\"}"

void kbt_archive_task(const char *id, const char *category, int n, struct kb_task *t) {
  char text[2048];
  snprintf(text, sizeof text, TASK_JSON, id, category, n);
  struct kb_error err = {0};
  if (kb_task_parse("task.json", text, "/tmp", 0, t, &err))
    fail_msg("%s", err.msg);
}

void kbt_archive_source(int k, char *out, size_t size) {
  snprintf(out, size,
           "#include \"kb_kernel.h\"\n/* kernel %d */\nint kb_forward(const kb_tensor *in, int "
           "n_in, kb_tensor *out, int n_out, void *s) {\n#pragma unroll\n  return %d * 0;\n}\n",
           k, k);
}

/* An entry for `t` of kernel number `k`, verified at `speedup` on `gpu`. */
void kbt_archive_entry(const struct kb_task *t, int k, double speedup, const char *gpu,
                       struct kb_archive_entry *e) {
  char src[512], name[32];
  kbt_archive_source(k, src, sizeof src);
  snprintf(name, sizeof name, "k%d", k);
  struct kb_candidate c;
  struct kb_error err = {0};
  if (kb_candidate_init(&c, t->id, name, "llm", src, "", "", &err) ||
      kb_archive_entry_from(e, t, &c, &err))
    fail_msg("%s", err.msg);
  kb_candidate_release(&c);
  snprintf(e->gpu, sizeof e->gpu, "%s", gpu);
  snprintf(e->tier, sizeof e->tier, "full");
  snprintf(e->campaign, sizeof e->campaign, "c1");
  e->baseline_us = 100;
  e->median_us = speedup > 0 ? 100 / speedup : 0;
  e->speedup = speedup;
}

void kbt_archive_modelnew(const struct kb_task *t, int k, double speedup,
                          struct kb_archive_entry *e) {
  char src[512], name[32];
  snprintf(src, sizeof src,
           "import torch\n# solution %d\nclass ModelNew(torch.nn.Module):\n"
           "    def forward(self, x):\n        return x.sum().reshape(1)\n",
           k);
  snprintf(name, sizeof name, "kb%d", k);
  struct kb_candidate c;
  struct kb_error err = {0};
  if (kb_candidate_init(&c, t->id, name, "llm", src, "", "", &err) ||
      kb_candidate_set_format(&c, KB_FORMAT_KERNELBENCH, &err) ||
      kb_archive_entry_from(e, t, &c, &err))
    fail_msg("%s", err.msg);
  kb_candidate_release(&c);
  snprintf(e->gpu, sizeof e->gpu, "cpu");
  snprintf(e->tier, sizeof e->tier, "full");
  snprintf(e->campaign, sizeof e->campaign, "c1");
  e->baseline_us = 100;
  e->median_us = 100 / speedup;
  e->speedup = speedup;
}

void kbt_archive_tmpdir(char *out, size_t size) {
  snprintf(out, size, "/tmp/kb-archive-XXXXXX");
  assert_non_null(mkdtemp(out));
}

