/* kb_schema_emit: prints JSON made by libkb, one document per line, for validate.py --jsonl.
 *
 *   kb_schema_emit candidate good   candidates built with kb_candidate_init/to_json
 *   kb_schema_emit result good      results of every kind (ok, compile_error with a log,
 *                                   wrong_output, timed ok, timeout, infra_error, rejected)
 *   kb_schema_emit candidate bad    one good document with one field broken per line; each
 *   kb_schema_emit result bad       must be rejected by kb_*_from_json (checked here) and by
 *                                   the schema (checked by validate.py --invalid)
 *
 * Together the four keep the C code and schemas/{candidate,result}.schema.json from drifting:
 * what C writes the schema accepts, and what C refuses the schema refuses. Exits 1 (naming the
 * case) when the library fails to encode, refuses its own output, or accepts a broken field.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kb/alloc.h"
#include "kb/candidate.h"
#include "kb/error.h"
#include "kb/result.h"

/* One broken field: `key` is "name" or "object.name"; `value` is JSON text, NULL deletes. */
struct mutation {
  const char *key;
  const char *value;
};

static const char long64[] = "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"";
static const char long160[] =
    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"";
static const char upper_id[] =
    "\"BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD\"";

static const struct mutation candidate_mutations[] = {
    {"schema", "\"kernelbrain.candidate/2\""},
    {"id", NULL},
    {"id", "\"abc\""},
    {"id", upper_id},
    {"task", "\"Sum\""},
    {"task", "\"sum\\n\""},
    {"task", NULL},
    {"name", "\"\""},
    {"name", long64},
    {"name", "\"tab\\there\""},
    {"name", "\"caf\\u00e9\""},
    {"name", "\"naive\\n\""},
    {"generator", "\"magic\""},
    {"generator", NULL},
    {"parents", NULL},
    {"parents", "\"none\""},
    {"parents", "[\"x\"]"},
    {"knobs", "1"},
    {"knobs", NULL},
    {"flags", "null"},
    {"created", "-1"},
    {"created", "\"now\""},
    {"created", NULL},
    {"source", "5"},
    {"source", NULL},
    {"score", "1"},
};

static const struct mutation result_mutations[] = {
    {"schema", "\"kernelbrain.result/2\""},
    {"campaign", NULL},
    {"campaign", "\"Demo\""},
    {"campaign", "\"demo\\n\""},
    {"task", "\"\""},
    {"candidate", "\"abc\""},
    {"candidate", upper_id},
    {"tier", "-1"},
    {"tier", "8"},
    {"tier", "\"1\""},
    {"tier", "1.5"},
    {"tier_name", "\"Full\""},
    {"attempt", "0"},
    {"attempt", "1001"},
    {"charge_id", "\"\""},
    {"charge_id", long160},
    {"runner", "\"\""},
    {"runner", long64},
    {"runner", "\"a\\tb\""},
    {"runner", "\"node7:4242\\n\""},
    {"backend", "\"tpu\""},
    {"device", long64},
    {"device", "\"caf\\u00e9\""},
    {"status", "\"fine\""},
    {"status", "null"},
    {"reason", "5"},
    {"reason", NULL},
    {"compile", "\"x\""},
    {"compile.seconds", "-1"},
    {"compile.cached", "1"},
    {"compile.registers", "-1"},
    {"compile.registers", "2147483648"},
    {"compile.spills", "1.5"},
    {"compile.shared_bytes", "\"0\""},
    {"compile.log", "3"},
    {"compile.extra", "1"},
    {"check.sets", NULL},
    {"check.sets", "33"},
    {"check.max_abs_err", "-1"},
    {"check.max_rel_err", "\"0\""},
    {"check.extra", "1"},
    {"timing.samples", "0"},
    {"timing.samples", NULL},
    {"timing.warmup", "-1"},
    {"timing.warmup", NULL},
    {"timing.median_us", "-1"},
    {"timing.noise", "\"x\""},
    {"timing.extra", "1"},
    {"cost_ms", "-1"},
    {"cost_ms", "1.5"},
    {"cost_ms", NULL},
    {"started", "-1"},
    {"finished", "\"x\""},
    {"extra", "1"},
};

static const char seed_src[] =
    "#include \"kb_kernel.h\"\r\n"
    "int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *s) {  \r\n"
    "  (void)n_in; (void)n_out; (void)s;\r\n"
    "  ((float *)out[0].data)[0] = ((const float *)in[0].data)[0];\r\n"
    "  return 0;\r\n"
    "}\r\n\r\n";

/* The `text` (new) an encoder made with code `rc`; on a failure, says `err` and exits. */
static char *encoded(int rc, char *text, const struct kb_error *err) {
  if (rc != KB_OK) {
    fprintf(stderr, "kb_schema_emit: %s\n", err->msg);
    exit(1);
  }
  return text;
}

/* Encodes `c`; returns the text (new). */
static char *candidate_text(const struct kb_candidate *c) {
  struct kb_error err = {0};
  char *text = NULL;
  int rc = kb_candidate_to_json(c, &text, &err);
  return encoded(rc, text, &err);
}

static void make_candidate(struct kb_candidate *c, const char *name, const char *gen,
                           const char *knobs, int parents) {
  struct kb_error err = {0};
  if (kb_candidate_init(c, "sum", name, gen, seed_src, knobs, parents ? "-O3" : "", &err)) {
    fprintf(stderr, "kb_schema_emit: %s\n", err.msg);
    exit(1);
  }
  for (int i = 0; i < parents; i++)
    memset(c->parents[i], i ? 'b' : 'a', KB_CAND_ID_LEN);
}

static void candidates_good(void) {
  static const struct {
    const char *name, *gen, *knobs;
    int parents;
  } kinds[] = {{"naive", "seed", "", 0},
               {"tune: BLOCK=128", "tune", "-DBLOCK=128 -DUNROLL=4", 1},
               {"llm-17", "llm", "", 1},
               {"cross a*b", "crossover", "-DBLOCK=64", 2},
               {"archive:sum/best", "archive", "", 0}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    struct kb_candidate c;
    make_candidate(&c, kinds[i].name, kinds[i].gen, kinds[i].knobs, kinds[i].parents);
    struct kb_error err = {0};
    /* the last one also in KernelBench's format: "format" is written and accepted */
    if (i + 1 == sizeof kinds / sizeof kinds[0] &&
        kb_candidate_set_format(&c, KB_FORMAT_KERNELBENCH, &err) != KB_OK) {
      fprintf(stderr, "kb_schema_emit: %s\n", err.msg);
      exit(1);
    }
    char *text = candidate_text(&c);
    printf("%s\n", text);
    kb_free(text);
    kb_candidate_release(&c);
  }
}

/* The common part of every result below. */
static void base_result(struct kb_result *r, int tier, const char *tier_name, int status) {
  kb_result_init(r);
  snprintf(r->campaign, sizeof r->campaign, "demo");
  snprintf(r->task, sizeof r->task, "sum");
  memset(r->candidate, 'c', KB_CAND_ID_LEN);
  r->candidate[KB_CAND_ID_LEN] = '\0';
  r->tier = tier;
  snprintf(r->tier_name, sizeof r->tier_name, "%s", tier_name);
  r->attempt = 1;
  snprintf(r->charge_id, sizeof r->charge_id, "item:%.12s:%d#1", r->candidate, tier);
  snprintf(r->runner, sizeof r->runner, "node7:4242");
  r->backend = KB_BACKEND_HOST;
  snprintf(r->device, sizeof r->device, "cpu");
  r->status = status;
  r->started = 1764460800.125;
  r->finished = 1764460801.5;
}

/* Fills `r` with result number `i` of the good set; returns 0 past the last. */
static int good_result(int i, struct kb_result *r) {
  switch (i) {
  case 0: /* ok at the compile tier: compiler facts only */
    base_result(r, 0, "compile", KB_STATUS_OK);
    r->compile_s = 0.75;
    r->registers = 24;
    r->spills = 0;
    r->shared_bytes = 0;
    r->cost_ms = 0;
    return 1;
  case 1: /* compile_error with the compiler's log */
    base_result(r, 0, "compile", KB_STATUS_COMPILE_ERROR);
    snprintf(r->reason, sizeof r->reason, "cc exited with status 1");
    r->compile_s = 0.25;
    r->compile_log = kb_strdup("cand.c:3:5: error: 'x' undeclared\n    3 |   x = 1;\n      |   ^");
    return 1;
  case 2: /* wrong_output at smoke */
    base_result(r, 1, "smoke", KB_STATUS_WRONG_OUTPUT);
    snprintf(r->reason, sizeof r->reason, "output \"sum\"[0]: got 3.5, want 3.25 (atol 1)");
    r->compile_cached = 1;
    r->compile_s = 0;
    r->sets_checked = 1;
    r->max_abs_err = 0.25;
    r->max_rel_err = 0.0769;
    r->cost_ms = 50;
    return 1;
  case 3: /* timed ok at full */
    base_result(r, 3, "full", KB_STATUS_OK);
    r->attempt = 2;
    r->backend = KB_BACKEND_CUDA;
    snprintf(r->device, sizeof r->device, "NVIDIA H200");
    r->compile_cached = 1;
    r->registers = 40;
    r->spills = 8;
    r->shared_bytes = 49152;
    r->sets_checked = 3;
    r->max_abs_err = 1.9e-7;
    r->max_rel_err = 3.1e-6;
    r->timing = (struct kb_timing){.samples = 180,
                                   .warmup = 3,
                                   .median_us = 41.25,
                                   .p10_us = 40.5,
                                   .p90_us = 43.0,
                                   .mean_us = 41.6,
                                   .min_us = 40.1,
                                   .noise = 0.0093};
    r->cost_ms = 1000;
    return 1;
  case 4: /* timeout: one sample, so no noise estimate */
    base_result(r, 2, "screen", KB_STATUS_TIMEOUT);
    snprintf(r->reason, sizeof r->reason, "watchdog: 30 s");
    r->timing.samples = 1;
    r->timing.median_us = 3e7;
    r->cost_ms = 200;
    r->finished = NAN;
    return 1;
  case 5: /* infra_error: almost nothing is known */
    base_result(r, 1, "smoke", KB_STATUS_INFRA_ERROR);
    snprintf(r->reason, sizeof r->reason, "sandbox child: fork failed");
    r->device[0] = '\0';
    r->started = NAN;
    r->finished = NAN;
    return 1;
  case 6: /* rejected, with non-ASCII text in the reason */
    base_result(r, 0, "compile", KB_STATUS_REJECTED);
    snprintf(r->reason, sizeof r->reason, "imports \xe2\x80\x9cpthread_create\xe2\x80\x9d");
    return 1;
  case 7: /* rejected at full with a CUPTI profile: trace summary and kernel records */
    base_result(r, 3, "full", KB_STATUS_REJECTED);
    r->backend = KB_BACKEND_CUDA;
    snprintf(r->reason, sizeof r->reason, "work the timer did not see");
    r->dram_pct = 71.5;
    r->trace = (struct kb_trace_summary){4, 1, 12000, 3500, 0, 0};
    r->kernels = kb_calloc(2, sizeof *r->kernels);
    if (r->kernels == NULL)
      return 0;
    r->n_kernels = 2;
    r->kernels_dropped = 3;
    for (int k = 0; k < 2; k++) {
      snprintf(r->kernels[k].name, sizeof r->kernels[k].name, "_Z4copyPKfPf%d", k);
      r->kernels[k].grid[0] = 80 * (k + 1);
      r->kernels[k].grid[1] = r->kernels[k].grid[2] = 1;
      r->kernels[k].block[0] = 256;
      r->kernels[k].block[1] = r->kernels[k].block[2] = 1;
      r->kernels[k].registers = 16;
      r->kernels[k].start_ns = 1700000000000000000 + 5000 * k;
      r->kernels[k].end_ns = r->kernels[k].start_ns + 3500;
      r->kernels[k].stream = 13 + k;
      r->kernels[k].correlation = 77 + k;
    }
    return 1;
  default:
    return 0;
  }
}

/* Encodes `r`; returns the text (new). */
static char *result_text(const struct kb_result *r) {
  struct kb_error err = {0};
  char *text = NULL;
  int rc = kb_result_to_json(r, &text, &err);
  return encoded(rc, text, &err);
}

static void results_good(void) {
  struct kb_result r;
  for (int i = 0; good_result(i, &r); i++) {
    char *text = result_text(&r);
    printf("%s\n", text);
    kb_free(text);
    kb_result_release(&r);
  }
}

/* Returns `good` with mutation `m` applied (new, free()). */
static char *mutate(const char *good, const struct mutation *m) {
  json_t *root = json_loads(good, 0, NULL);
  json_t *obj = root;
  const char *leaf = m->key;
  const char *dot = strchr(m->key, '.');
  if (dot != NULL) {
    char parent[64];
    snprintf(parent, sizeof parent, "%.*s", (int)(dot - m->key), m->key);
    obj = json_object_get(root, parent);
    leaf = dot + 1;
  }
  if (obj == NULL) {
    fprintf(stderr, "kb_schema_emit: mutation %s: no such object in %s\n", m->key, good);
    exit(1);
  }
  if (m->value == NULL)
    json_object_del(obj, leaf);
  else
    json_object_set_new(obj, leaf, json_loads(m->value, JSON_DECODE_ANY, NULL));
  char *text = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  return text;
}

static int candidate_rejects(const char *text, struct kb_error *err) {
  struct kb_candidate c;
  int rc = kb_candidate_from_json(text, "mutation", &c, err);
  kb_candidate_release(&c);
  return rc;
}

static int result_rejects(const char *text, struct kb_error *err) {
  struct kb_result r;
  int rc = kb_result_from_json(text, "mutation", &r, err);
  kb_result_release(&r);
  return rc;
}

/* Prints each mutation of `good`, after checking `decode` refuses it with KB_EPARSE. */
static int emit_bad(const char *good, const struct mutation *ms, size_t n,
                    int (*decode)(const char *, struct kb_error *)) {
  int failed = 0;
  for (size_t i = 0; i < n; i++) {
    char *text = mutate(good, &ms[i]);
    struct kb_error err = {0};
    int rc = decode(text, &err);
    if (rc != KB_EPARSE) {
      fprintf(stderr, "kb_schema_emit: %s=%s: the library gave %s, want PARSE: %s\n",
              ms[i].key, ms[i].value ? ms[i].value : "(deleted)", kb_err_name(rc), text);
      failed = 1;
    }
    printf("%s\n", text);
    free(text);
  }
  return failed;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "candidate") != 0 && strcmp(argv[1], "result") != 0) ||
      (strcmp(argv[2], "good") != 0 && strcmp(argv[2], "bad") != 0)) {
    fprintf(stderr, "usage: kb_schema_emit candidate|result good|bad\n");
    return 2;
  }
  int candidate = strcmp(argv[1], "candidate") == 0;
  if (strcmp(argv[2], "good") == 0) {
    if (candidate)
      candidates_good();
    else
      results_good();
    return 0;
  }
  int failed;
  if (candidate) {
    struct kb_candidate c;
    make_candidate(&c, "cross a*b", "crossover", "-DBLOCK=64", 2);
    char *good = candidate_text(&c);
    kb_candidate_release(&c);
    failed = emit_bad(good, candidate_mutations,
                      sizeof candidate_mutations / sizeof candidate_mutations[0],
                      candidate_rejects);
    kb_free(good);
  } else {
    struct kb_result r;
    good_result(3, &r); /* timed ok: every part present */
    char *good = result_text(&r);
    kb_result_release(&r);
    /* give the full result a compile log too, so "compile.log" has something to break */
    char *with_log = mutate(good, &(struct mutation){"compile.log", "\"ptxas: 40 registers\""});
    failed = emit_bad(with_log, result_mutations,
                      sizeof result_mutations / sizeof result_mutations[0], result_rejects);
    free(with_log);
    kb_free(good);
  }
  return failed;
}
