/* kb-submit watch's screen (submitter/watch/progress_view.c): every row fits the terminal's
 * width and a task row keeps its torch speedups however long the best candidate's name (the
 * name is cut in the middle instead; report_campaign once lost "vs eager" to a tuned name). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kb/buf.h"
#include "kb/error.h"
#include "watch/progress.h"
#include "watch/progress_view.h"

/* Columns of `line` (up to its "\n"), UTF-8 continuation bytes not counted. */
static int columns(const char *line) {
  int n = 0;
  for (const char *s = line; *s && *s != '\n'; s++)
    n += (*s & 0xC0) != 0x80;
  return n;
}

/* `wide`: the row has room for the long form of the torch speedups. */
static void screen_with(const char *best_name, int width, int best_tier, int rank_tier,
                        int wide) {
  static struct kb_progress p; /* large: kept off the stack */
  memset(&p, 0, sizeof p);
  p.q.n_tiers = 2;
  snprintf(p.q.tiers[0].name, sizeof p.q.tiers[0].name, "%s", "compile");
  snprintf(p.q.tiers[1].name, sizeof p.q.tiers[1].name, "%s", "full");
  p.eta_s = -1;
  struct kb_progress_task t;
  memset(&t, 0, sizeof t);
  snprintf(t.id, sizeof t.id, "%s", "sum");
  snprintf(t.best_name, sizeof t.best_name, "%s", best_name);
  t.results = 12;
  t.best_tier = best_tier;
  t.rank_tier = rank_tier;
  t.best_speedup = 2.25;
  t.best_vs_eager = 1.23;
  t.best_vs_compile = 0.80;
  p.tasks = &t;
  p.n_tasks = 1;
  struct kb_view_opts o = {.color = 0, .width = width, .height = 0};
  struct kb_buf out;
  kb_buf_init(&out);
  assert_int_equal(kb__progress_screen(&p, &o, &out), KB_OK);
  const char *row = strstr(out.data, "\nsum ");
  assert_non_null(row);
  row++;
  const char *end = strchr(row, '\n');
  assert_non_null(end);
  char line[512];
  snprintf(line, sizeof line, "%.*s", (int)(end - row), row);
  if (strstr(line, "vs eager 1.23x, compile 0.80x") == NULL &&
      (wide || strstr(line, "eager 1.23x compile 0.80x") == NULL))
    fail_msg("width %d: the row lost its torch speedups: \"%s\"", width, line);
  for (const char *l = out.data; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
    if (columns(l) > width)
      fail_msg("a line of %d columns on a screen of %d: \"%.*s\"", columns(l), width,
               (int)(strchr(l, '\n') ? strchr(l, '\n') - l : (long)strlen(l)), l);
  if (strlen(best_name) <= 8)
    assert_non_null(strstr(line, best_name));
  kb_buf_release(&out);
}

static void long_name_keeps_torch(void **state) {
  (void)state;
  screen_with("tuned~LANES=64,UNROLL=4,VEC=2,BLOCK=256", 80, 1, 1, 0);
  screen_with("tuned~LANES=64,UNROLL=4,VEC=2,BLOCK=256", 100, 1, 1, 1);
  screen_with("unrolled", 90, 1, 1, 1);
}

static void ranked_elsewhere(void **state) {
  (void)state;
  screen_with("tuned~LANES=64,UNROLL=4,VEC=2,BLOCK=256", 100, 0, 1, 0);
  screen_with("tuned~LANES=64,UNROLL=4,VEC=2,BLOCK=256", 120, 0, 1, 1);
  screen_with("tuned~LANES=64,UNROLL=4,VEC=2,BLOCK=256", 100, -1, 1, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(long_name_keeps_torch),
      cmocka_unit_test(ranked_elsewhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
