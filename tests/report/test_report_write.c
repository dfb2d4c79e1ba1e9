/* Unit tests of the report reader and writers (submitter/report/): a task file is
 * written with the real store (scheduler/store.c) holding hostile names, sources and reasons,
 * read back with kb__report_load, and written in every format into memory; the tests check the
 * escaping, the numbers, and what unknown values become. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb/error.h"
#include "kb/result.h"
#include "report/report.h"
#include "store.h"

#define HOSTILE_NAME "x</script><img src=x onerror=alert(1)>&\"'"
#define HOSTILE_SOURCE                                                                             \
  "/* </script><script>alert(1)</script> <!-- ]]> */\nint kb_forward(void) { return 0; }\n"
#define FORMULA_NAME "=HYPERLINK(\"x\"),a|b"
#define SPEC                                                                                       \
  "{\"id\": \"t\", \"name\": \"task <b>\", \"category\": \"cat\", \"baseline\": \"naive\"}"

struct fixture {
  char dir[64];
  struct kb_report r;
};

static void cand(struct kb_store *s, int k, const char *name, const char *gen, const char *parent,
                 const char *source) {
  struct kb_candidate c;
  memset(&c, 0, sizeof c);
  snprintf(c.id, sizeof c.id, "%064x", k + 1);
  snprintf(c.task, sizeof c.task, "t");
  snprintf(c.name, sizeof c.name, "%s", name);
  snprintf(c.generator, sizeof c.generator, "%s", gen);
  if (parent)
    snprintf(c.parents[0], sizeof c.parents[0], "%s", parent);
  c.knobs = (char *)"-DX=1";
  c.flags = (char *)"";
  c.source = (char *)source;
  c.created = 1700000000.0 + k;
  struct kb_error err = {0};
  assert_int_equal(kb__store_add_candidate(s, &c, NULL, &err), KB_OK);
}

static void eval(struct kb_store *s, int k, int tier, int status, double median_us,
                 const char *reason) {
  static const char *const names[] = {"compile", "smoke"};
  struct kb_result r;
  kb_result_init(&r);
  snprintf(r.campaign, sizeof r.campaign, "camp");
  snprintf(r.task, sizeof r.task, "t");
  snprintf(r.candidate, sizeof r.candidate, "%064x", k + 1);
  r.tier = tier;
  snprintf(r.tier_name, sizeof r.tier_name, "%s", names[tier]);
  r.attempt = 1;
  snprintf(r.charge_id, sizeof r.charge_id, "c%d:%d#1", k, tier);
  snprintf(r.runner, sizeof r.runner, "host:1");
  r.backend = KB_BACKEND_HOST;
  snprintf(r.device, sizeof r.device, "cpu");
  r.status = status;
  snprintf(r.reason, sizeof r.reason, "%s", reason);
  if (median_us > 0) {
    r.timing.samples = 5;
    r.timing.median_us = r.timing.p10_us = r.timing.p90_us = median_us;
    r.timing.mean_us = r.timing.min_us = median_us;
    r.timing.noise = 0.01;
    r.sets_checked = 1;
    r.max_abs_err = 1e-6;
  }
  r.cost_ms = 10;
  /* the top tier (smoke here) times torch after ok evaluations: eager 300 and 500 us (median
   * 400), torch.compile only after candidate 1, 150 us */
  if (tier == 1 && status == KB_STATUS_OK) {
    r.torch_eager_us = 300 + 200 * k;
    r.torch_compile_us = k == 1 ? 150 : NAN;
  }
  struct kb_kernel_rec kr[2];
  if (k == 1 && tier == 1) { /* a CUPTI profile: metrics, trace summary, two kernel records */
    memset(kr, 0, sizeof kr);
    snprintf(kr[0].name, sizeof kr[0].name, "_Z6reduceILi256EEvPKfPf<x>");
    snprintf(kr[1].name, sizeof kr[1].name, "_Z8finalizePf");
    for (int i = 0; i < 2; i++) {
      kr[i].grid[0] = 1024 >> (9 * i);
      kr[i].grid[1] = kr[i].grid[2] = 1;
      kr[i].block[0] = 256;
      kr[i].block[1] = kr[i].block[2] = 1;
      kr[i].registers = 40 + i;
      kr[i].static_smem = 1024;
      kr[i].start_ns = 1000 + 10000 * i;
      kr[i].end_ns = kr[i].start_ns + 7500;
      kr[i].stream = 13;
      kr[i].correlation = 5 + i;
    }
    r.kernels = kr;
    r.n_kernels = 2;
    r.dram_pct = 81.5;
    r.sm_pct = 22.25;
    r.occupancy_pct = 63;
    r.l2_hit_pct = 12.5;
    r.kernel_us = 7.5;
    r.baseline_median_us = 210;
    r.same_run_speedup = 2.1;
    r.trace = (struct kb_trace_summary){6, 2, 15000, 0, 0, 0};
  }
  r.started = 1700000100.0 + k + tier;
  r.finished = r.started + 0.5;
  struct kb_error err = {0};
  assert_int_equal(kb__store_add_evaluation(s, &r, NULL, &err), KB_OK);
  r.kernels = NULL; /* borrowed from the stack */
  r.n_kernels = 0;
}

/* The LLM exchange that made candidate 1 (the hostile one), with hostile texts. */
static void llm(struct kb_store *s) {
  static const char prompt[] = "[system]\nwrite a kernel\n[user]\n</pre><script>alert(2)</script>";
  static const char response[] = "```c\nint kb_forward(void) { return 0; }\n```";
  char id[KB_CAND_ID_LEN + 1];
  snprintf(id, sizeof id, "%064x", 2);
  struct kb_store_llm x = {.request = "llm:t:1", .entry = "1700000000000-0", .time = 1700000000,
                           .kind = "translate", .status = "ok", .model = "fake-coder",
                           .attempts = 2, .tokens_in = 120, .tokens_out = 30, .candidate = id,
                           .prompt = prompt, .prompt_len = sizeof prompt - 1,
                           .response = response, .response_len = sizeof response - 1};
  struct kb_error err = {0};
  assert_int_equal(kb__store_add_llm(s, &x, NULL, &err), KB_OK);
}

static int setup(void **state) {
  struct fixture *f = calloc(1, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/kb-rep-XXXXXX");
  if (mkdtemp(f->dir) == NULL)
    return -1;
  char path[128], base[KB_CAND_ID_LEN + 1];
  snprintf(path, sizeof path, "%s/t.h5", f->dir);
  struct kb_store_task_info info = {"camp", "t", SPEC, "reference </textarea> & more"};
  struct kb_store *s = NULL;
  struct kb_error err = {0};
  if (kb__store_open(path, &info, &s, &err) != KB_OK)
    return -1;
  snprintf(base, sizeof base, "%064x", 1);
  cand(s, 0, "naive", "seed", NULL, "int kb_forward(void) { return 1; }\n");
  cand(s, 1, HOSTILE_NAME, "llm", base, HOSTILE_SOURCE);
  cand(s, 2, FORMULA_NAME, "llm", base, "int kb_forward(void) { return 2; }\n");
  cand(s, 3, "never", "llm", base, "int kb_forward(void) { return 3; }\n");
  eval(s, 0, 0, KB_STATUS_OK, 0, "");
  eval(s, 0, 1, KB_STATUS_OK, 200, "");
  eval(s, 1, 0, KB_STATUS_OK, 0, "");
  eval(s, 1, 1, KB_STATUS_OK, 100, "");
  eval(s, 2, 0, KB_STATUS_COMPILE_ERROR, 0, "line one\nline | two </td>");
  llm(s);
  if (kb__store_flush(s, &err) != KB_OK)
    return -1;
  kb__store_close(s);
  if (kb__report_load(f->dir, &f->r, &err) != KB_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  char path[128];
  kb__report_release(&f->r);
  snprintf(path, sizeof path, "%s/t.h5", f->dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/t.h5.lock", f->dir);
  unlink(path);
  rmdir(f->dir);
  free(f);
  return 0;
}

/* Runs writer `w` into a string (new; free()). */
static char *render(int (*w)(const struct kb_report *, FILE *, struct kb_error *),
                    const struct kb_report *r) {
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  assert_non_null(out);
  struct kb_error err = {0};
  assert_int_equal(w(r, out, &err), KB_OK);
  fclose(out);
  return buf;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

/* Checks `text` holds every string of `want` (NULL-terminated), naming the first it lacks. */
static void holds(const char *text, const char *const *want) {
  for (; *want; want++)
    if (strstr(text, *want) == NULL)
      fail_msg("no \"%s\" in the output", *want);
}

/* Checks `text` holds none of `unwanted` (NULL-terminated), naming the first it holds. */
static void lacks(const char *text, const char *const *unwanted) {
  for (; *unwanted; unwanted++)
    if (strstr(text, *unwanted) != NULL)
      fail_msg("\"%s\" in the output", *unwanted);
}

static void test_load(void **state) {
  struct fixture *f = *state;
  const struct kb_report *r = &f->r;
  assert_string_equal(r->campaign, "camp");
  assert_string_equal(r->state, "unknown"); /* no summary.json */
  assert_int_equal(r->n_tasks, 1);
  assert_int_equal(r->n_tiers, 2);
  assert_string_equal(r->tier_names[1], "smoke");
  assert_int_equal(r->gpu_spent_ms, 50);
  const struct kb_rep_task *t = &r->tasks[0];
  assert_string_equal(t->baseline, "naive");
  assert_int_equal(t->baseline_cand, 0);
  assert_int_equal(t->n_cands, 4);
  assert_int_equal(t->n_evals, 5);
  /* Ranked: the hostile one (100 us at smoke), naive (200 us), then the untimed in file order. */
  assert_string_equal(t->cands[t->order[0]].name, HOSTILE_NAME);
  assert_true(fabs(t->cands[t->order[0]].speedup - 2.0) < 1e-9);
  assert_string_equal(t->cands[t->order[1]].name, "naive");
  assert_string_equal(t->cands[t->order[2]].name, FORMULA_NAME);
  assert_string_equal(t->cands[t->order[3]].name, "never");
  assert_true(isnan(t->cands[3].speedup));
  assert_string_equal(t->cands[1].source, HOSTILE_SOURCE);
  assert_string_equal(t->cands[2].evals[0].reason, "line one\nline | two </td>");
}

static void test_html(void **state) {
  struct fixture *f = *state;
  char *html = render(kb__report_write_html, &f->r);
  /* Exactly the page's three scripts; nothing of the hostile texts as markup. */
  assert_int_equal(count(html, "<script"), 3);
  assert_int_equal(count(html, "</script>"), 3);
  lacks(html, (const char *const[]){"<img", "<script>alert", NULL});
  holds(html, (const char *const[]){
                  "x&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;",
                  "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;",
                  "line one\nline | two &lt;/td&gt;", "task &lt;b&gt;", NULL});
  /* The data block: '<' only as \u003c inside it. */
  const char *data = strstr(html, "id=\"kb-data\">");
  assert_non_null(data);
  const char *end = strstr(data, "</script>");
  assert_non_null(end);
  for (const char *p = data + strlen("id=\"kb-data\">"); p < end; p++)
    assert_true(*p != '<' && *p != '>' && *p != '&');
  assert_non_null(strstr(data, "x\\u003c/script\\u003e\\u003cimg"));
  /* CSP: scripts by hash only, no network. Every chart has its canvas; a page per candidate;
   * no budget total known, so the burn chart shows only what was spent. */
  holds(html, (const char *const[]){"default-src 'none'; script-src 'sha256-",
                                    "id=\"chart-funnel\"", "id=\"chart-burn\"",
                                    "id=\"chart-dist\"", "id=\"chart-task-0\"",
                                    "\"label\":\"gpu_seconds spent\"", NULL});
  lacks(html, (const char *const[]){"script-src 'unsafe-inline", "sourceMappingURL", NULL});
  assert_int_equal(count(html, "<article class=\"cand\""), 4);
  free(html);
}

static void test_profile_llm(void **state) {
  struct fixture *f = *state;
  const struct kb_rep_task *t = &f->r.tasks[0];
  assert_int_equal(t->format, 3);
  assert_int_equal(t->n_llm, 1);
  assert_string_equal(t->llm[0].model, "fake-coder");
  assert_int_equal(t->llm[0].tokens_in, 120);
  assert_non_null(strstr(t->llm[0].prompt, "</pre><script>alert(2)</script>"));
  const struct kb_rep_eval *e = &t->cands[1].evals[1];
  assert_int_equal(e->n_kernels, 2);
  assert_string_equal(e->kernels[1].name, "_Z8finalizePf");
  assert_int_equal(e->kernels[0].grid[0], 1024);
  assert_int_equal(e->kernels[1].grid[0], 2);
  assert_true(e->dram_pct == 81.5 && e->same_run_speedup == 2.1);
  assert_int_equal(e->trace_own_kernels, 2);
  assert_int_equal(t->cands[0].evals[1].n_kernels, 0);
  assert_true(isnan(t->cands[0].evals[1].dram_pct));
  char *html = render(kb__report_write_html, &f->r);
  assert_int_equal(count(html, "<table class=\"kernels\">"), 1);
  holds(html, (const char *const[]){"<code>_Z6reduceILi256EEvPKfPf&lt;x&gt;</code>",
                                    "<td class=\"n\">81.5%</td><td class=\"n\">22.2%</td>",
                                    "Same-run speedup 2.10x",
                                    "&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;", NULL});
  assert_int_equal(count(html, "<h4>LLM exchange</h4>"), 1);
  assert_int_equal(count(html, "<script"), 3);
  free(html);
  char *jl = render(kb__export_write_jsonl, &f->r);
  assert_int_equal(count(jl, "\"NCU_Profile\":null"), 2);
  assert_int_equal(count(jl, "\"lts__t_sector_hit_rate.pct\":12.5"), 1);
  free(jl);
}

static void test_json(void **state) {
  struct fixture *f = *state;
  char *text = render(kb__report_write_json, &f->r);
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  assert_non_null(j);
  json_t *cands = json_object_get(json_array_get(json_object_get(j, "tasks"), 0), "candidates");
  assert_int_equal(json_array_size(cands), 4);
  json_t *first = json_array_get(cands, 0);
  assert_string_equal(json_string_value(json_object_get(first, "name")), HOSTILE_NAME);
  assert_string_equal(json_string_value(json_object_get(first, "source")), HOSTILE_SOURCE);
  assert_true(json_is_null(json_object_get(json_array_get(cands, 3), "speedup")));
  assert_true(json_is_null(json_object_get(json_array_get(cands, 3), "median_us")));
  json_t *funnel = json_object_get(j, "funnel");
  assert_int_equal(json_integer_value(json_object_get(json_array_get(funnel, 0), "evaluated")), 3);
  assert_int_equal(json_integer_value(json_object_get(json_array_get(funnel, 0), "ok")), 2);
  assert_int_equal(json_integer_value(json_object_get(json_array_get(funnel, 1), "evaluated")), 2);
  assert_true(json_is_null(json_object_get(json_object_get(j, "gpu_ms"), "total")));
  json_decref(j);
  free(text);
}

static void test_csv_md(void **state) {
  struct fixture *f = *state;
  char *csv = render(kb__report_write_csv, &f->r);
  assert_int_equal(count(csv, "\r\n"), 5); /* header + 4 candidates */
  /* Quotes doubled, the field quoted, a formula defused. */
  holds(csv, (const char *const[]){",\"'=HYPERLINK(\"\"x\"\"),a|b\",",
                                   ",\"x</script><img src=x onerror=alert(1)>&\"\"'\",", NULL});
  free(csv);
  char *md = render(kb__report_write_md, &f->r);
  holds(md, (const char *const[]){"| x&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&amp;\"' |",
                                  "| =HYPERLINK(\"x\"),a\\|b |", "| 2.00x |", NULL});
  free(md);
}

static void test_export(void **state) {
  struct fixture *f = *state;
  char *text = render(kb__export_write_jsonl, &f->r);
  assert_int_equal(count(text, "\n"), 3); /* "never" was not evaluated */
  char *line = text;
  int n = 0;
  for (char *nl = strchr(line, '\n'); nl; line = nl + 1, nl = strchr(line, '\n')) {
    *nl = '\0';
    json_t *o = json_loads(line, 0, NULL);
    assert_non_null(o);
    const char *name = json_string_value(json_object_get(o, "Kernel_Name"));
    assert_string_equal(json_string_value(json_object_get(o, "Op_Name")), "t");
    assert_false(json_is_null(json_object_get(o, "PyTorch_Native_Runtime"))); /* test_torch */
    /* the hostile one has a CUPTI profile (setup) */
    assert_true(json_is_null(json_object_get(o, "NCU_Profile")) ==
                (strcmp(name, HOSTILE_NAME) != 0));
    assert_string_equal(json_string_value(json_object_get(o, "PyTorch_Code_Module")),
                        "reference </textarea> & more");
    if (strcmp(name, FORMULA_NAME) == 0) {
      assert_true(json_is_false(json_object_get(o, "Correct")));
      assert_true(json_is_null(json_object_get(o, "CUDA_Runtime")));
      assert_string_equal(json_string_value(json_object_get(o, "Error")),
                          "line one\nline | two </td>");
    } else {
      assert_true(json_is_true(json_object_get(o, "Correct")));
      assert_true(json_is_null(json_object_get(o, "Error")));
    }
    if (strcmp(name, HOSTILE_NAME) == 0) {
      assert_true(fabs(json_real_value(json_object_get(o, "CUDA_Runtime")) - 0.1) < 1e-12);
      assert_true(fabs(json_real_value(json_object_get(o, "KB_Speedup_Baseline")) - 2.0) < 1e-9);
      assert_true(fabs(json_real_value(json_object_get(o, "Max_Diff")) - 1e-6) < 1e-15);
    }
    json_decref(o);
    n++;
  }
  assert_int_equal(n, 3);
  free(text);
}

/* The torch baselines: /torch medians, each candidate's speedups at the tier torch was timed
 * at, in every format, and fast_p. */
static void test_torch(void **state) {
  struct fixture *f = *state;
  const struct kb_rep_task *t = &f->r.tasks[0];
  assert_int_equal(t->format, 3);
  assert_float_equal(t->torch_eager_us, 400, 1e-9);
  assert_float_equal(t->torch_compile_us, 150, 1e-9);
  assert_int_equal(t->torch_tier, 1);
  assert_int_equal(t->torch_best, 1);
  /* against the eager timed with each evaluation, not the task's median (400) */
  assert_float_equal(t->cands[0].speedup_eager, 1.5, 1e-9); /* 300 / 200 */
  assert_float_equal(t->cands[1].speedup_eager, 5.0, 1e-9); /* 500 / 100 */
  assert_float_equal(t->cands[1].speedup_compile, 1.5, 1e-9);
  assert_true(isnan(t->cands[2].speedup_eager)); /* not correct */
  assert_true(isnan(t->cands[0].evals[0].torch_eager_us));
  assert_float_equal(t->cands[1].evals[1].torch_eager_us, 500, 1e-9);
  assert_float_equal(kb__rep_torch_speedup(t, 1), 1.5, 1e-9);
  struct kb_fastp_row rows[KB_FASTP_ROWS];
  assert_int_equal(kb__report_fastp(&f->r, 1, rows, KB_FASTP_ROWS), 2); /* none, all */
  assert_float_equal(rows[1].fast[1], 1.0, 1e-12);
  assert_float_equal(rows[1].fast[2], 0.0, 1e-12); /* 1.5x is not more than 1.5x */
  char *md = render(kb__report_write_md, &f->r);
  holds(md, (const char *const[]){"torch eager 400.000 us, torch.compile 150.000 us",
                                  "| 2.00x | 5.00x | 1.50x |", "## fast_p against torch eager",
                                  "| all | 1 | 1 | 1.00 | 1.00 | 1.00 | 1.00 | 5.00x |",
                                  "| all | 1 | 1 | 1.00 | 1.00 | 0.00 | 0.00 | 1.50x |", NULL});
  free(md);
  char *html = render(kb__report_write_html, &f->r);
  holds(html, (const char *const[]){"fast_p against torch.compile", "<th>vs torch eager</th>",
                                    "<td class=\"n\">5.00x</td><td class=\"n\">1.50x</td>",
                                    NULL});
  free(html);
  char *csv = render(kb__report_write_csv, &f->r);
  holds(csv, (const char *const[]){",speedup_eager,speedup_compile\r\n", ",5,1.5\r\n", NULL});
  free(csv);
  json_t *j = kb__report_json(&f->r, 0);
  json_t *all = json_array_get(json_object_get(json_object_get(j, "fast_p"), "eager"), 1);
  assert_true(json_is_null(json_object_get(all, "level")));
  assert_float_equal(json_real_value(json_object_get(all, "fast_2")), 1.0, 1e-12);
  json_t *jt = json_array_get(json_object_get(j, "tasks"), 0);
  assert_float_equal(json_real_value(json_object_get(jt, "torch_eager_us")), 400, 1e-9);
  json_decref(j);
  char *text = render(kb__export_write_jsonl, &f->r);
  int seen = 0;
  char *line = text;
  for (char *nl = strchr(line, '\n'); nl; line = nl + 1, nl = strchr(line, '\n')) {
    *nl = '\0';
    json_t *o = json_loads(line, 0, NULL);
    /* the eager timed with the row's timing (0.3 and 0.5 ms), else the task's (0.4 ms) */
    double native = json_real_value(json_object_get(o, "PyTorch_Native_Runtime"));
    json_t *speedup = json_object_get(o, "CUDA_Speedup_Native");
    if (json_is_real(speedup))
      assert_float_equal(json_real_value(speedup),
                         native / json_real_value(json_object_get(o, "CUDA_Runtime")), 1e-9);
    else
      assert_float_equal(native, 0.4, 1e-12);
    assert_float_equal(json_real_value(json_object_get(o, "PyTorch_Compile_Runtime")), 0.15,
                       1e-12);
    if (strcmp(json_string_value(json_object_get(o, "Kernel_Name")), HOSTILE_NAME) == 0) {
      assert_float_equal(native, 0.5, 1e-12);
      assert_float_equal(json_real_value(json_object_get(o, "CUDA_Speedup_Native")), 5.0, 1e-9);
      assert_float_equal(json_real_value(json_object_get(o, "CUDA_Speedup_Compile")), 1.5, 1e-9);
      seen++;
    } else if (strcmp(json_string_value(json_object_get(o, "Kernel_Name")), FORMULA_NAME) == 0) {
      assert_true(json_is_null(json_object_get(o, "CUDA_Speedup_Native")));
    }
    json_decref(o);
  }
  assert_int_equal(seen, 1);
  free(text);
}

static void test_top(void **state) {
  struct fixture *f = *state;
  f->r.top = 1;
  char *html = render(kb__report_write_html, &f->r);
  assert_int_equal(count(html, "<article class=\"cand\""), 1);
  assert_non_null(strstr(html, "3 more candidates not shown (--top 1)"));
  assert_int_equal(count(html, "href=\"#c-"), 1); /* its row; its parent has no page */
  free(html);
  char *md = render(kb__report_write_md, &f->r);
  assert_null(strstr(md, "| naive |"));
  assert_non_null(strstr(md, "3 more candidates not shown (--top 1)"));
  free(md);
  char *csv = render(kb__report_write_csv, &f->r); /* csv lists all */
  assert_int_equal(count(csv, "\r\n"), 5);
  free(csv);
  f->r.top = 0;
}

/* The torch speedups' candidate is the task's best by the ranking rule (kb/rank.h), and only
 * when that best is timed at the torch tier: a candidate faster at the torch tier but ranked
 * below one timed at a higher tier is not it (fast_p and the summary name the same best). */
static void test_torch_best_rank(void **state) {
  (void)state;
  struct kb_rep_eval e[3] = {{.tier = 1, .attempt = 1, .samples = 3, .median_us = 50},
                             {.tier = 1, .attempt = 1, .samples = 3, .median_us = 80},
                             {.tier = 2, .attempt = 1, .samples = 3, .median_us = 90}};
  for (int i = 0; i < 3; i++)
    snprintf(e[i].status, sizeof e[i].status, "ok");
  struct kb_rep_cand c[2] = {{.evals = &e[0], .n_evals = 1}, {.evals = &e[1], .n_evals = 2}};
  struct kb_rep_task t = {.cands = c, .n_cands = 2, .torch_tier = 1, .torch_eager_us = 100};
  assert_int_equal(kb__rep_torch_best(&t), -1); /* rank 1 (c[1]) ranks at tier 2 */
  t.torch_tier = 2;
  assert_int_equal(kb__rep_torch_best(&t), 1);
  c[1].n_evals = 1; /* c[1] timed at tier 1 only: the lower median there ranks first */
  t.torch_tier = 1;
  assert_int_equal(kb__rep_torch_best(&t), 0);
}

/* Level_ID and Task_ID of a task imported from KernelBench (tools/kb-import-kernelbench). */
static void test_export_kernelbench(void **state) {
  (void)state;
  struct kb_rep_eval e = {.tier = 1,
                          .attempt = 1,
                          .samples = 3,
                          .median_us = 50,
                          .max_abs_err = 0,
                          .started = 1,
                          .finished = 2};
  snprintf(e.status, sizeof e.status, "ok");
  snprintf(e.tier_name, sizeof e.tier_name, "smoke");
  struct kb_rep_cand c = {.best_tier = 1,
                          .timed_tier = 1,
                          .median_us = 50,
                          .speedup = NAN,
                          .rank = 1,
                          .evals = &e,
                          .n_evals = 1,
                          .source = (char *)"src"};
  snprintf(c.name, sizeof c.name, "stub");
  int order = 0;
  struct kb_rep_task t = {.baseline_cand = -1, .cands = &c, .n_cands = 1, .order = &order};
  snprintf(t.id, sizeof t.id, "l1_23_softmax");
  snprintf(t.category, sizeof t.category, "kernelbench-level1");
  kb__rep_kernelbench_ids(&t);
  struct kb_report r = {.tasks = &t, .n_tasks = 1};
  char *text = render(kb__export_write_jsonl, &r);
  json_t *o = json_loads(text, 0, NULL);
  assert_non_null(o);
  assert_int_equal(json_integer_value(json_object_get(o, "Level_ID")), 1);
  assert_int_equal(json_integer_value(json_object_get(o, "Task_ID")), 23);
  assert_true(fabs(json_real_value(json_object_get(o, "CUDA_Runtime")) - 0.05) < 1e-12);
  assert_true(json_is_null(json_object_get(o, "PyTorch_Code_Module")));
  json_decref(o);
  free(text);
  snprintf(t.category, sizeof t.category, "kernelbench");
  kb__rep_kernelbench_ids(&t);
  text = render(kb__export_write_jsonl, &r);
  o = json_loads(text, 0, NULL);
  assert_true(json_is_null(json_object_get(o, "Level_ID")));
  assert_true(json_is_null(json_object_get(o, "Task_ID")));
  json_decref(o);
  free(text);
  /* --tier: a tier the candidate was not evaluated at gives no line; its own tier one */
  r.tier_only = 1;
  r.tier = 2;
  text = render(kb__export_write_jsonl, &r);
  assert_string_equal(text, "");
  free(text);
  r.tier = 1;
  text = render(kb__export_write_jsonl, &r);
  o = json_loads(text, 0, NULL);
  assert_string_equal(json_string_value(json_object_get(o, "KB_Tier")), "smoke");
  assert_true(fabs(json_real_value(json_object_get(o, "CUDA_Runtime")) - 0.05) < 1e-12);
  json_decref(o);
  free(text);
}

static void test_load_errors(void **state) {
  (void)state;
  struct kb_report r;
  struct kb_error err = {0};
  assert_int_equal(kb__report_load("/nonexistent/kb-report", &r, &err), KB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "/nonexistent/kb-report"));
  char dir[] = "/tmp/kb-rep-bad-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/x.h5", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("not hdf5\n", f);
  fclose(f);
  kb_error_clear(&err);
  assert_int_equal(kb__report_load(dir, &r, &err), KB_EHDF5);
  assert_non_null(strstr(err.msg, path));
  snprintf(path, sizeof path, "%s/summary.json", dir);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs("{\"tasks\": [\n", f);
  fclose(f);
  kb_error_clear(&err);
  assert_int_equal(kb__report_load(dir, &r, &err), KB_EPARSE);
  assert_non_null(strstr(err.msg, "summary.json:"));
  unlink(path);
  snprintf(path, sizeof path, "%s/x.h5", dir);
  unlink(path);
  rmdir(dir);
}

int main(void) {
/* A test on the fixture's report file. */
#define ON_FILE(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      ON_FILE(test_load),   ON_FILE(test_html),   ON_FILE(test_profile_llm), ON_FILE(test_json),
      ON_FILE(test_csv_md), ON_FILE(test_export), ON_FILE(test_torch), ON_FILE(test_top),
      cmocka_unit_test(test_export_kernelbench), cmocka_unit_test(test_torch_best_rank),
      cmocka_unit_test(test_load_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
